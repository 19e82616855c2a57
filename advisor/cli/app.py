"""The typer application every command module registers on, and the one-line error policy."""
from __future__ import annotations

import inspect
import os
import signal
import sys
import threading

import typer

from costmodel.errors import DISK_ERRNOS, UserError, describe_os_error, interrupt_behind
from costmodel.files import errno_of
from costmodel.text import elided, visible_line

app = typer.Typer(
    name="advisor",
    help="Design advisor for transactional streaming deployments (S-Store style).",
    no_args_is_help=True,
    add_completion=True,  # `advisor --install-completion` (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        from advisor import __version__

        typer.echo(f"advisor {__version__}")
        raise typer.Exit(0)


def _flags_show_no_value() -> None:
    """A flag's row in `--help` shows no type. Typer (0.29) shows every option's type, a flag's
    as `<bool>` (`--replicate <bool>`), which reads as an option that takes a value:
    `--replicate true` was then a usage error ("unexpected extra argument"). Where typer has
    no such method (another version), its own rendering stays."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_show_no_value", False):
        return

    def display_type_rich(self, ctx):
        if getattr(self, "is_flag", False) and not getattr(self, "count", False):
            return None
        return shown(self, ctx)

    display_type_rich.flags_show_no_value = True
    TyperOption.display_type_rich = display_type_rich


_flags_show_no_value()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version,
                                          is_eager=True, help="print the version and exit")) -> None:
    pass


# -- options several commands share, with the same help everywhere ----------------------------
SEED_HELP = "seed of every random choice (same seed, same result)"
JSON_HELP = "print the result as JSON instead of a summary"
PPM_HELP = "partitions per machine (default: the source's)"
WEIGHT_HELP = {"alpha": "weight of state co-location (distributed transactions)",
               "beta": "weight of processing co-location (MOVEs)", "gamma": "weight of load balancing"}


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP: the terminal closed), raised wherever the command is, so that it
    unwinds as Ctrl-C does: every `finally` runs (Spark stopped, engine processes stopped,
    temporary files removed)."""


_TERMINATED: list[int] = []  # SIGTERMs and SIGHUPs this process caught (typer hides what interrupted it)
ENDINGS = {signal.SIGTERM: ("terminated", 143), signal.SIGHUP: ("hung up", 129)}  # else Ctrl-C: 130


def _raise_interrupt(signum, frame) -> None:
    if _in_an_extension_s_import(frame):
        _send_again_soon(signum)
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    _TERMINATED.append(signum)
    raise Terminated()


def _in_an_extension_s_import(frame) -> bool:
    """Whether the signal landed while a compiled module initialises. Why: Cython 3's
    memoryview code, run as such a module loads (pandas', pyarrow's), registers its types
    with `collections.abc` inside a bare `except: pass`, and a Ctrl-C or SIGTERM raised there
    was dropped: the command went on to its end and wrote its output, exit 0 (1 in about 60
    signals sent to `advisor run` in its first two seconds, as it imported pandas)."""
    from importlib.machinery import ExtensionFileLoader

    while frame is not None:
        if frame.f_code.co_name in ("create_module", "exec_module") and isinstance(
                frame.f_locals.get("self"), ExtensionFileLoader):
            return True
        frame = frame.f_back
    return False


def _send_again_soon(signum: int) -> None:
    """Send `signum` to the main thread again a moment later, from a thread of its own."""
    later = threading.Timer(0.01, signal.pthread_kill, (threading.main_thread().ident, signum))
    later.daemon = True
    later.start()


MAX_COLUMNS = 1_000  # a wider terminal is a typo: 10**20 overflowed the help's renderer, 10**6 padded it to 33 MB


def _sane_columns() -> None:
    """A `COLUMNS` past MAX_COLUMNS is taken as MAX_COLUMNS, here and by the help's renderer."""
    value = os.environ.get("COLUMNS", "").strip()
    if value.isdigit() and int(value) > MAX_COLUMNS:
        os.environ["COLUMNS"] = str(MAX_COLUMNS)


def run_app(argv: list[str] | None = None, application: typer.Typer | None = None) -> int:
    """Run the CLI (`application`, default `app`) and return its exit status: a user error
    (`UserError`) or a usage error of the option parser is one line and its exit status;
    Ctrl-C and SIGTERM clean up and end in one line with 130 and 143; anything else is an
    internal error, still without a traceback."""
    main_thread = threading.current_thread() is threading.main_thread()
    _sane_columns()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt) if main_thread else None
    hangup = signal.signal(signal.SIGHUP, _raise_interrupt) if main_thread else None
    ctrl_c = signal.signal(signal.SIGINT, _raise_interrupt) if main_thread and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler else None
    _TERMINATED.clear()
    unraisable = sys.unraisablehook
    if main_thread:
        sys.unraisablehook = _interrupt_again(unraisable)
    try:
        return _run(argv, application)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
            signal.signal(signal.SIGHUP, signal.SIG_DFL if hangup is None else hangup)
            if ctrl_c is not None:
                signal.signal(signal.SIGINT, ctrl_c)
            sys.unraisablehook = unraisable


def _interrupt_again(hook):
    """An unraisable-exception hook that raises a Ctrl-C or SIGTERM again: one that lands while
    a finaliser (`__del__`, a weakref callback) runs is printed and dropped by Python, and the
    command would go on as if it had not come."""
    def again(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            # sent again from a thread a moment later: raised here, it would be dropped again
            _send_again_soon((_TERMINATED[-1] if _TERMINATED else signal.SIGTERM) if isinstance(
                unraisable.exc_value, Terminated) else signal.SIGINT)
            return
        hook(unraisable)
    return again


def _interrupted() -> int:
    said, code = ENDINGS[_TERMINATED[0]] if _TERMINATED else ("interrupted", 130)
    typer.echo(said, err=True)
    return code


def say_error(line: str) -> None:
    """An error line on stderr, what it quotes shown as `visible` shows human output: a path or
    a workload name the user typed (`recommend voter\u202e`) is quoted in it, and printed raw a
    right-to-left override reversed the rest of the line. One line always (`visible_line`): a
    line break in what it quotes (a path, an option's value) is shown as `\\n`; past
    MAX_LINE_CHARS, its middle is left out (`elided`)."""
    typer.echo(elided(visible_line(line)), err=True)


def _internal(exc: Exception) -> int:
    if os.environ.get("ADVISOR_DEBUG"):
        raise exc
    say_error(f"internal error: {type(exc).__name__}: {exc} (set ADVISOR_DEBUG=1 for a traceback)")
    return 1


def _refuse_empty_values(argv: list[str]) -> None:
    """One UserError line where an argument or an option's value is empty (`--out "$DIR"`
    with DIR unset). Why: a path option read `""` as `Path("")`, the working directory:
    `trace synth --out ""` replaced an empty working directory with the trace, and a refusal
    named `.` (`report --validation ""` refused the report's own output as inside input `.`)."""
    for k, word in enumerate(argv):
        if word == "--":
            return
        if word.startswith("--") and word.endswith("="):
            raise UserError(f"{word[:-1]} is given an empty value (an unset shell variable?): give it one")
        if word == "":
            after = f" after {visible_line(argv[k - 1])}" if k > 0 else ""
            raise UserError(f"an empty argument{after} (an unset shell variable?): give a workload, a path "
                            "or a value there, or leave it out")


def _run(argv: list[str] | None, application: typer.Typer | None) -> int:
    try:
        _refuse_empty_values(sys.argv[1:] if argv is None else list(argv))
        code = (application or app)(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        return _interrupted() if exc.exit_code == 130 else exc.exit_code
    except SystemExit as exc:
        return int(exc.code or 0)
    except KeyboardInterrupt:
        return _interrupted()
    except typer.Abort:  # end of input inside a prompt
        typer.echo("aborted", err=True)
        return 1
    except UserError as exc:
        say_error(f"error: {exc}")
        return exc.exit_code
    except typer.TyperException as exc:  # a usage error: one line, with the command it concerns
        ctx = getattr(exc, "ctx", None)
        where = f"{ctx.command_path}: " if ctx is not None else ""
        said = exc.format_message().replace("Value error, ", "")  # (the validator's own prefix)
        if said:  # (no arguments at all: the help was the answer)
            say_error(f"error: {where}{said}")
        return exc.exit_code
    except OSError as exc:
        if interrupt_behind(exc) is not None:  # a clean-up after a Ctrl-C failed
            return _interrupted()
        number = errno_of(exc)  # (pyarrow's say it in the message only)
        if number not in DISK_ERRNOS or os.environ.get("ADVISOR_DEBUG"):
            return _internal(exc)
        said = exc.strerror if exc.errno is not None else os.strerror(number)
        say_error(f"error: {describe_os_error(OSError(number, said, exc.filename))}")
        return 1  # a full or read-only disk
    except Exception as exc:  # noqa: BLE001 - the policy is: never a traceback for users
        if interrupt_behind(exc) is not None:  # a clean-up after a Ctrl-C failed
            return _interrupted()
        return _internal(exc)
    # without standalone mode, typer returns the status of a `typer.Exit`; Ctrl-C (and so
    # SIGTERM) is 130, with nothing said
    if code == 130:
        return _interrupted()
    return code if isinstance(code, int) else 0


def one_line_summaries(application: typer.Typer) -> None:
    """Give every command of `application` (and of its groups) a one-line summary for the
    command list: the first paragraph of its docstring, its line breaks removed. Why: the
    list keeps a docstring's line breaks, so a summary written over two source lines showed
    as a broken line whatever the terminal's width (a command's own --help joins them)."""
    for info in application.registered_commands:
        doc = inspect.getdoc(info.callback) or ""
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.split("\n\n")[0].split())
    for group in application.registered_groups:
        one_line_summaries(group.typer_instance)


def main(application: typer.Typer | None = None) -> None:
    _matplotlib_config_dir()
    code = run_app(None, application)
    _outcome_final()
    if code in (129, 130, 143):
        _forget_the_interrupt()
    sys.exit(code)


# matplotlib's own lines when it cannot make its directory under HOME (format strings, 3.x)
_MATPLOTLIB_HOME_LINES = ("mkdir -p failed for path %s: %s", "%s is not a writable directory")
_MATPLOTLIB_TEMPORARY = "Matplotlib created a temporary cache directory at "


def _matplotlib_config_dir() -> None:
    """Where matplotlib cannot make its directory under HOME (a HOME that is missing or not
    writable, as under some service accounts), it makes a temporary one, removed at exit, as
    it should, but says so in two lines of its own on every command that draws (`report`,
    `demo`) after a run that went well. Those lines are left out; one about a MPLCONFIGDIR the
    user set is not (that one is theirs to mend)."""
    if "MPLCONFIGDIR" in os.environ:
        return
    import logging

    logging.getLogger("matplotlib").addFilter(_not_about_matplotlibs_home)


def _not_about_matplotlibs_home(record) -> bool:
    template = str(record.msg)
    return template not in _MATPLOTLIB_HOME_LINES and not template.startswith(_MATPLOTLIB_TEMPORARY)


LATE_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _outcome_final() -> None:
    """From here on the command's outcome is final (its output written, its line said): a
    Ctrl-C, SIGTERM or SIGHUP that comes now is ignored and the process ends with the command's
    own status, after its exit clean-up (atexit: the Spark JVM stopped, temporary directories
    removed). Why: one that came during that clean-up was a traceback ("Exception ignored in
    atexit callback", through PySpark's SIGINT handler), and one that came after it, while
    Python finalises (its handlers are back to the defaults then), killed the process silently
    (-2) after a complete run: 24 of 30 Ctrl-Cs sent in the 0.6 s after `trace aggregate`
    wrote its statistics. The clean-up is bounded (a JVM is killed, not asked). `main` ends
    the process: a caller that catches its SystemExit gets these signals back ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in LATE_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def _forget_the_interrupt() -> None:
    """A Ctrl-C that ended while code of a string `exec` ran (a dataclass or a namedtuple being
    made during a late import: they are built that way) leaves CPython's "unhandled
    KeyboardInterrupt" flag set though we handled it, and `python -m advisor` then ends by
    killing itself with SIGINT instead of exiting 130 (a shell sees 130 either way; a parent
    process sees -2). Every string `exec` clears that flag when it starts."""
    exec("None", {})  # noqa: S102 - a constant: run only to clear the flag
