"""The typer application every command module registers on, and the one-line error policy."""
from __future__ import annotations

import os
import sys

import typer

app = typer.Typer(
    name="advisor",
    help="Design advisor for transactional streaming deployments (S-Store style).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(message: str, code: int = 2) -> "typer.Exit":
    """Print one line to stderr and return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def run_app(argv: list[str] | None = None) -> int:
    """Run the CLI: user errors (anything with an `exit_code`) become one line, no traceback."""
    try:
        app(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return int(exc.code or 0)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except Exception as exc:  # noqa: BLE001 - the policy is: never a traceback for users
        code = getattr(exc, "exit_code", None)
        if isinstance(code, int) and callable(getattr(exc, "format_message", None)):
            # a usage error from the option parser: one line, with the command it concerns
            ctx = getattr(exc, "ctx", None)
            where = f"{ctx.command_path}: " if ctx is not None else ""
            typer.echo(f"error: {where}{exc.format_message()}", err=True)
            return code
        if isinstance(code, int):
            typer.echo(f"error: {exc}", err=True)
            return code
        if type(exc).__name__ == "Abort":
            typer.echo("aborted", err=True)
            return 1
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        typer.echo(f"internal error: {type(exc).__name__}: {exc} "
                   "(set ADVISOR_DEBUG=1 for a traceback)", err=True)
        return 1
    return 0


def main() -> None:
    sys.exit(run_app())
