"""The `advisor` console script. Why a module of its own: the CLI's modules take a few tenths
of a second to import (numpy, typer), and a Ctrl-C or SIGTERM then, before the CLI's own
handling (`advisor.cli.app.run_app`) is in place, was a Python traceback. Here it is one line
and the CLI's exit status, 130, 143 or 129 (SIGHUP), as anywhere later."""
from __future__ import annotations

import signal
import sys


def main() -> None:
    terminated: list[int] = []

    def on_sigterm(signum, _frame) -> None:
        terminated.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    hangup = signal.signal(signal.SIGHUP, on_sigterm)
    try:
        from advisor.cli import main as run_cli
    except KeyboardInterrupt:
        said, code = {signal.SIGTERM: ("terminated", 143), signal.SIGHUP: ("hung up", 129)}.get(
            terminated[0] if terminated else None, ("interrupted", 130))
        sys.stderr.write(said + "\n")
        exec("None", {})  # noqa: S102 - clears CPython's flag as `advisor.cli.app._forget_the_interrupt` says
        sys.exit(code)
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGHUP, hangup)
    run_cli()
