"""`advisor diff`, `advisor check`: a deployed design against a new one and against the
workload now."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from advisor.cli.app import SEED_HELP, JSON_HELP, app
from advisor.cli.terminal import say, working


def _calibration(path: Optional[Path]):
    if path is None:
        return None
    from engine_sim.sim import Calibration

    return Calibration.load(path)


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


@app.command()
def diff(
    current: Path = typer.Argument(..., help="the deployed design JSON"),
    new: Path = typer.Argument(..., help="the design to move to"),
    source: str = typer.Argument(..., help="bundled workload name, spec .toml, or statistics directory"),
    calibration: Optional[Path] = typer.Option(None, help="calibration.json: its prices for the copy time "
                                               "and the prediction (default: the reference cluster)"),
    relabel: bool = typer.Option(True, "--relabel/--no-relabel",
                                 help="rename the new design's machines and partitions to move least"),
    seed: int = typer.Option(0, help=SEED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """What moves from one design to another: SPs, state items, bytes, copy time, speed."""
    from advisor.api import diff as run

    with working("comparing the designs"):
        d = run(current, new, source, calibration=_calibration(calibration), seed=seed, relabel=relabel)
    if as_json:
        typer.echo(json.dumps(d.to_dict(), indent=2))
        return
    for line in diff_lines(d, str(current), str(new)):
        say(line)


@app.command()
def check(
    design: Path = typer.Argument(..., help="the deployed design JSON"),
    source: str = typer.Argument(..., help="the workload now: statistics directory of a new trace, or a spec"),
    tolerance: float = typer.Option(0.10, help="how far below the best is still fine (0.10 = 10 %)"),
    since: Optional[str] = typer.Option(None, help="the source the design was made from, to say what "
                                        "changed (default: the profile kept in the design)"),
    calibration: Optional[Path] = typer.Option(None, help="calibration.json for the simulator"),
    seed: int = typer.Option(0, help=SEED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Is the deployed design still within --tolerance of the best one now? Exit 0 when it
    is, 3 when it is not (for a scheduled job)."""
    from reports.drift import check_drift

    with working("checking the design against the workload"):
        result = check_drift(design, source, tolerance=tolerance, since=since,
                             calibration=_calibration(calibration), seed=seed)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        for line in result.describe():
            say(line)
    if not result.within:
        raise typer.Exit(3)
