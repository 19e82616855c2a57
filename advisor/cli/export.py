"""`advisor export`: a design in a real system's terms (VoltDB DDL, CSV, GraphML)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

import typer

from advisor.cli.app import app
from advisor.cli.grammar import (DesignCommand, design_option, file_out_option, json_option, not_applicable,
                                 workload_argument, workload_for)
from advisor.cli.terminal import say
from costmodel.text import visible_line


@app.command(cls=DesignCommand)
@not_applicable(calibration="translates the placement; nothing is priced or simulated",
                seed="translates the placement; nothing is random")
def export(
    design: Path = design_option(),
    workload: Optional[str] = workload_argument(),
    fmt: Literal["voltdb", "csv", "graphml"] = typer.Option(
        ..., "--format", "-f", help="voltdb (DDL), csv (placement table) or graphml"),
    out: Path = file_out_option(..., "file to write (its directory must exist)"),
    as_json: bool = json_option("print {out, format, not_expressible} as JSON instead of a summary"),
) -> None:
    """Export a design for a real system; print what the target cannot express."""
    from costmodel.design import Design
    from advisor.export import check_format, check_output, export_design
    from costmodel.files import check_not_an_input

    check_format(fmt)
    check_output(out)  # both before any work: a bad option costs nothing
    check_not_an_input(out, (design, workload))
    result = export_design(Design.load(design), workload_for(design, workload), fmt)
    result.write(out)
    if as_json:
        typer.echo(json.dumps({"out": str(out), "format": fmt,
                               "not_expressible": list(result.not_expressible)}, indent=2))
        return
    say(f"wrote {visible_line(str(out))} ({fmt})")
    if result.not_expressible:
        say(f"not expressible in {fmt} ({len(result.not_expressible)}, also at the top of {visible_line(str(out))}):")
        for line in shown_by_kind(result.not_expressible, str(out)):
            say(f"  {line}")


SHOWN_PER_KIND = 3  # of the notes on one kind of item (`table ...`, `stream ...`), printed; the file has all
NOTE_CHARS = 300  # of one note, printed (one listed where each of 100 SPs runs)


def shown_by_kind(notes: list[str], out: str) -> list[str]:
    """The notes as printed: the first few on each kind of item (the note's first word), then
    how many more there are. Why: a 100-SP design printed 295 lines, 164 of them the same
    sentence about one table after another, and the few that differ were lost among them."""
    kinds: dict[str, int] = {}
    for note in notes:
        kind = note.split(" ", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    lines, seen = [], dict.fromkeys(kinds, 0)
    for note in notes:
        kind = note.split(" ", 1)[0]
        seen[kind] += 1
        if seen[kind] <= SHOWN_PER_KIND:
            clipped = len(note) > NOTE_CHARS
            lines.append(f"- {note[:NOTE_CHARS]}" + (f" ... (in full at the top of {visible_line(out)})"
                                                      if clipped else ""))
        if seen[kind] == SHOWN_PER_KIND and kinds[kind] > SHOWN_PER_KIND:
            lines.append(f"  ... and {kinds[kind] - SHOWN_PER_KIND:,} more '{kind} ...' notes, every one at "
                         f"the top of {visible_line(out)}")
    return lines
