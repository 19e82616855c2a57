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
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import typer

from advisor.sigterm import off_this_thread as sigterm_off_this_thread
from costmodel.text import visible

HANGING_INDENT = 4  # a wrapped line's continuation, past the line's own indent
SPINNER_AFTER_S = 2.0  # a step slower than this shows a spinner (on a terminal only)
SPINNER_ENV = "ADVISOR_SPINNER_AFTER_S"  # another delay in seconds (0: always; a large one: never)
SPINNER_FRAMES = "|/-\\"


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
    """`typer.echo` for human output, its control characters shown escaped
    (`costmodel.text.visible`) and fitted to the terminal's width."""
    typer.echo(fit_lines(visible(str(text)), output_width(err)), err=err, nl=nl)


@contextmanager
def working(message: str, after_s: float | None = None) -> Iterator[None]:
    """While the block runs, a spinner line on stderr once it has taken `after_s` seconds
    (default `SPINNER_AFTER_S`, or `$ADVISOR_SPINNER_AFTER_S`), erased when it ends: a slow
    step is never silent. Only on a terminal (a pipe or a log file gets nothing); `--json`
    output goes to stdout, untouched."""
    if after_s is None:
        try:
            after_s = max(float(os.environ.get(SPINNER_ENV, SPINNER_AFTER_S)), 0.0)
        except ValueError:
            after_s = SPINNER_AFTER_S
    stream = sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()):
        yield
        return
    stop = threading.Event()
    shown = []

    def spin() -> None:
        with sigterm_off_this_thread():  # SIGTERM is the main thread's (`advisor.sigterm`)
            spinning()

    def spinning() -> None:
        if stop.wait(after_s):
            return
        started, i = time.monotonic() - after_s, 0
        while not stop.is_set():
            line = f"{message} {SPINNER_FRAMES[i % len(SPINNER_FRAMES)]} {time.monotonic() - started:.0f} s"
            stream.write("\r" + line)
            stream.flush()
            shown.append(len(line))
            i += 1
            stop.wait(0.1)

    thread = threading.Thread(target=spin, name="advisor-spinner", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if shown:
            stream.write("\r" + " " * max(shown) + "\r")
            stream.flush()
