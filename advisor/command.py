"""The `advisor` console script. Why a module of its own: the CLI's modules take a few tenths
of a second to import (numpy, typer), and a Ctrl-C or SIGTERM then, before the CLI's own
handling (`advisor.cli.app.run_app`) is in place, was a Python traceback. Here it is one line
and the CLI's exit status, 130 or 143, as anywhere later."""
from __future__ import annotations

import signal
import sys


def main() -> None:
    terminated: list[int] = []

    def on_sigterm(signum, _frame) -> None:
        terminated.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        from advisor.cli import main as run_cli
    except KeyboardInterrupt:
        sys.stderr.write("terminated\n" if terminated else "interrupted\n")
        sys.exit(143 if terminated else 130)
    finally:
        signal.signal(signal.SIGTERM, previous)
    run_cli()
