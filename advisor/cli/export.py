"""`advisor export`: a design in a real system's terms (VoltDB DDL, CSV, GraphML)."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer

from advisor.cli.app import app
from advisor.cli.terminal import say


@app.command()
def export(
    design: Path = typer.Argument(..., help="design JSON (any, hand-written included)"),
    source: str = typer.Argument(..., help="bundled workload name, spec .toml, or statistics directory"),
    fmt: Literal["voltdb", "csv", "graphml"] = typer.Option(
        ..., "--format", "-f", help="voltdb (DDL), csv (placement table) or graphml"),
    out: Path = typer.Option(..., "--out", "-o", help="file to write (its directory must exist)"),
) -> None:
    """Export a design for a real system; print what the target cannot express."""
    from costmodel.design import Design
    from advisor.export import check_format, check_output, export_design

    check_format(fmt)
    check_output(out)  # both before any work: a bad option costs nothing
    result = export_design(Design.load(design), source, fmt)
    result.write(out)
    say(f"wrote {out} ({fmt})")
    if result.not_expressible:
        say(f"not expressible in {fmt} ({len(result.not_expressible)}, also at the top of {out}):")
        for line in result.not_expressible:
            say(f"  - {line}")
