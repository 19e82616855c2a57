"""The typer application every command module registers on, and the one-line error policy."""
from __future__ import annotations

import os
import sys

import typer

from common.errors import UserError

app = typer.Typer(
    name="advisor",
    help="Design advisor for transactional streaming deployments (S-Store style).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        from advisor import __version__

        typer.echo(f"advisor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version,
                                          is_eager=True, help="print the version and exit")) -> None:
    pass


def run_app(argv: list[str] | None = None, application: typer.Typer | None = None) -> int:
    """Run the CLI (`application`, default `app`) and return its exit status: a user error
    (`UserError`) or a usage error of the option parser is one line and its exit status;
    anything else is an internal error, still without a traceback."""
    try:
        code = (application or app)(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return int(exc.code or 0)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except typer.Abort:  # end of input inside a prompt
        typer.echo("aborted", err=True)
        return 1
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except typer.TyperException as exc:  # a usage error: one line, with the command it concerns
        ctx = getattr(exc, "ctx", None)
        where = f"{ctx.command_path}: " if ctx is not None else ""
        if exc.format_message():  # (no arguments at all: the help was the answer)
            typer.echo(f"error: {where}{exc.format_message()}", err=True)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - the policy is: never a traceback for users
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        typer.echo(f"internal error: {type(exc).__name__}: {exc} "
                   "(set ADVISOR_DEBUG=1 for a traceback)", err=True)
        return 1
    # without standalone mode, typer returns the status of a `typer.Exit` (Ctrl-C: 130)
    return code if isinstance(code, int) else 0


def main() -> None:
    sys.exit(run_app())
