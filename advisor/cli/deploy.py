"""`advisor diff`, `advisor check`: a deployed design against a new one and against the
workload now."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from advisor.cli.app import app
from advisor.cli.grammar import (DeployedAndNewCommand, DesignCommand, calibration_option, design_option,
                                 file_out_option, json_option, load_calibration, print_result, design_seed_option,
                                 workload_argument, workload_for)
from advisor.cli.terminal import working
from costmodel.text import visible_line


def diff_lines(d, current_label: str, new_label: str) -> list[str]:
    """The human form of a DesignDiff: the summary, then one line per move."""
    from advisor.migration import place_label

    lines = [f"{current_label} -> {new_label}", *d.summary()]
    if d.moves:
        width = max(len(m.name) for m in d.moves)
        lines.append("")
        lines.append(f"  {'kind':<9}  {'name':<{width}}  {'from':<13}  {'to':<13}  {'MB':>10}")
        for m in d.moves:
            mb = f"{m.bytes / 1e6:,.3f}" if m.kind != "procedure" else "-"
            lines.append(f"  {m.kind:<9}  {m.name:<{width}}  {place_label(m.from_partition, m.from_machine):<13}  "
                         f"{place_label(m.to_partition, m.to_machine):<13}  {mb:>10}")
    return lines


@app.command(cls=DeployedAndNewCommand)
def diff(
    current: Path = typer.Option(..., "--current", help="the deployed design JSON"),
    new: Path = design_option("the design JSON to move to"),
    workload: Optional[str] = workload_argument(),
    calibration: Optional[Path] = calibration_option("calibration.json: its prices for the copy time "
                                                     "and the prediction (default: the reference cluster)"),
    relabel: bool = typer.Option(True, "--relabel/--no-relabel",
                                 help="rename the new design's machines and partitions to move least"),
    seed: Optional[int] = design_seed_option(),
    out: Optional[Path] = file_out_option(None, "write the new design as its moves are counted here "
                                                "(renamed to move least: what to deploy)"),
    as_json: bool = json_option(),
) -> None:
    """What moves from the deployed design (--current) to another (--design): SPs, state items,
    bytes, copy time, speed."""
    from advisor.api import diff as run
    from costmodel.files import check_writable

    if out is not None:  # said now, not after the comparison
        check_writable(out, inputs=(current, new, calibration, workload))
    source = workload_for(new, workload)
    with working("comparing the designs"):
        d = run(current, new, source, calibration=load_calibration(calibration), seed=seed, relabel=relabel)
    if out is not None:  # (the moves are counted against the renamed design: --design as given moves more)
        d.new.save(out)
    print_result(d.to_dict(), lambda: diff_lines(d, str(current), str(new)) + (
        [f"wrote {visible_line(str(out))}: the new design as its moves are counted"] if out is not None else []), as_json)


@app.command(cls=DesignCommand)
def check(
    design: Path = design_option("the deployed design JSON"),
    source: str = workload_argument(optional=False, text="the workload now: statistics directory of a "
                                                         "new trace, or a spec"),
    tolerance: float = typer.Option(0.10, help="how far below the best is still fine (0.10 = 10 %)"),
    since: Optional[str] = typer.Option(None, help="the source the design was made from, to say what "
                                        "changed (default: the profile kept in the design)"),
    calibration: Optional[Path] = calibration_option("calibration.json for the simulator"),
    seed: Optional[int] = design_seed_option(),
    as_json: bool = json_option(),
) -> None:
    """Is the deployed design still within --tolerance of the best one now? Exit 0 when it
    is, 3 when it is not (for a scheduled job)."""
    from reports.drift import check_drift

    with working("checking the design against the workload"):
        result = check_drift(design, source, tolerance=tolerance, since=since,
                             calibration=load_calibration(calibration), seed=seed)
    print_result(result.to_dict(), result.describe, as_json)
    if not result.within:
        raise typer.Exit(3)
