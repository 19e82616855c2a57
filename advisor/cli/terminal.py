"""Human output that fits the terminal: every line wrapped to its width.

Only on a terminal (or where `COLUMNS` says how wide the output is): output piped to a file,
to grep or to another program stays one line per record, as written. JSON is never wrapped
(its commands print it with `typer.echo`). Kept free of heavy imports: `advisor --help` loads
this module.
"""
from __future__ import annotations

import os
import shutil
import sys
import textwrap

import typer

HANGING_INDENT = 4  # a wrapped line's continuation, past the line's own indent


def output_width(err: bool = False) -> int | None:
    """The terminal's width in columns, or None when the output is not a terminal and
    `COLUMNS` is not set (then nothing is wrapped)."""
    stream = sys.stderr if err else sys.stdout
    interactive = hasattr(stream, "isatty") and stream.isatty()
    if not interactive and not os.environ.get("COLUMNS", "").strip().isdigit():
        return None
    return max(shutil.get_terminal_size(fallback=(80, 24)).columns, 20)


def fit_lines(text: str, width: int | None) -> str:
    """`text` with each line past `width` wrapped at spaces (a word longer than the line
    is broken), its continuation indented under the line's own indent."""
    if width is None:
        return text
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")))
        out.extend(textwrap.wrap(line, width, initial_indent="", subsequent_indent=indent + " " * HANGING_INDENT,
                                 break_long_words=True, break_on_hyphens=False, drop_whitespace=True)
                   or [line[:width]])
    return "\n".join(out)


def shorten(text: str, width: int | None) -> str:
    """One line cut to `width` with '...' (for listings of one line per record)."""
    if width is None or len(text) <= width:
        return text
    return text[:max(width - 3, 0)] + "..."


def say(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """`typer.echo` for human output, fitted to the terminal's width."""
    typer.echo(fit_lines(str(text), output_width(err)), err=err, nl=nl)
