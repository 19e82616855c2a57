"""The CLI's error policy on a small application of its own: a user error is one line and
its exit status, a usage error one line and 2, a bug one line and 1, never a traceback."""
from __future__ import annotations

import errno
import os
import signal
import time

import pytest
import typer

from advisor.cli.app import run_app
from costmodel.errors import UserError
from engine_sim.engine.errors import EngineFailure
from traces.errors import TraceError


def application() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.command()
    def act(what: str) -> None:
        if what == "user":
            raise UserError("the file is wrong")
        if what == "trace":
            raise TraceError("the trace is wrong")
        if what == "failed":
            raise EngineFailure("the run failed")
        if what == "exit":
            raise typer.Exit(1)
        if what == "bug":
            raise KeyError("oops")
        if what == "ctrl-c":
            raise KeyboardInterrupt
        if what == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this ends
        if what == "eof":
            raise EOFError
        if what == "full":
            raise OSError(errno.ENOSPC, "No space left on device", "/data/out.json")
        if what == "readonly":
            raise OSError(errno.EROFS, "Read-only file system")
        if what == "refused":
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
        if what in ("cleanup failed", "cleanup os error"):  # Py4J's clean-up after a Ctrl-C mid-call
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt:
                if what == "cleanup os error":
                    raise OSError(errno.EBADF, "Bad file descriptor")  # (a socket closed under it)
                raise RuntimeError("Gateway must be connected to send cancel cmd.")
        typer.echo("fine")

    @app.command()
    def other() -> None:
        pass

    return app


@pytest.mark.parametrize("what, code, err", [
    ("user", 2, "error: the file is wrong\n"),
    ("trace", 2, "error: the trace is wrong\n"),
    ("failed", 1, "error: the run failed\n"),
    ("exit", 1, ""),
    ("bug", 1, "internal error: KeyError: 'oops' (set ADVISOR_DEBUG=1 for a traceback)\n"),
    ("ctrl-c", 130, "interrupted\n"),
    ("sigterm", 143, "terminated\n"),
    ("full", 1, "error: cannot write /data/out.json: No space left on device (ENOSPC)\n"),
    ("readonly", 1, "error: Read-only file system (EROFS)\n"),
    ("refused", 1, "internal error: ConnectionRefusedError: [Errno 111] Connection refused "
                   "(set ADVISOR_DEBUG=1 for a traceback)\n"),
    ("cleanup failed", 130, "interrupted\n"),
    ("cleanup os error", 130, "interrupted\n"),
    ("fine", 0, ""),
])
def test_each_kind_of_ending_has_its_status_and_at_most_one_line(what, code, err, capsys,
                                                                 monkeypatch):
    monkeypatch.delenv("ADVISOR_DEBUG", raising=False)
    assert run_app(["act", what], application()) == code
    assert capsys.readouterr().err == err


def test_end_of_input_is_aborted_and_a_usage_error_names_the_command(capsys):
    assert run_app(["act", "eof"], application()) == 1
    assert capsys.readouterr().err.strip().endswith("aborted")
    assert run_app(["act"], application()) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "act" in err and err.count("\n") == 1


def test_debug_lets_a_bug_through(monkeypatch):
    monkeypatch.setenv("ADVISOR_DEBUG", "1")
    with pytest.raises(KeyError):
        run_app(["act", "bug"], application())


def test_version_is_the_installed_distribution_s(capsys):
    from importlib.metadata import version

    from advisor import __version__

    assert run_app(["--version"]) == 0
    assert capsys.readouterr().out == f"advisor {version('sstore-advisor')}\n"
    assert __version__ == version("sstore-advisor")


@pytest.mark.process
def test_version_from_the_installed_command():
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).with_name("advisor")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("advisor ") and done.stderr == ""


INTERRUPTED_IN_AN_EXEC = """
import typer
from advisor.cli.app import main

app = typer.Typer(add_completion=False)


@app.command()
def build() -> None:
    exec("raise KeyboardInterrupt")  # Ctrl-C while a dataclass is built (by a string exec)


main(app)
"""


@pytest.mark.process
def test_ctrl_c_inside_a_string_exec_still_exits_130_under_python_m(tmp_path):
    """CPython remembers a KeyboardInterrupt that left a string `exec` even when it is
    handled, and `python -m` then ends by SIGINT (-2): the report's Ctrl-C test saw it about
    once in eight runs."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "interrupted_cli.py").write_text(INTERRUPTED_IN_AN_EXEC)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "interrupted_cli"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and done.stderr == "interrupted\n", (done.returncode, done.stderr)


FINISHED_THEN_SIGNALLED = """
import atexit
import os
import signal
import sys
import time

import typer
from advisor.cli.app import main

app = typer.Typer(add_completion=False)
HOW = sys.argv.pop(1)


class SignalledAsPythonEnds:
    def __del__(self):  # run as the module is torn down, after Python's signal handlers are gone
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)


@app.command()
def act() -> None:
    typer.echo("done")
    if HOW == "exit clean-up":  # Ctrl-C while the exit's clean-up runs (the Spark JVM stopped)
        atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.2)))
    else:
        globals()["late"] = SignalledAsPythonEnds()


main(app)
"""


@pytest.mark.process
@pytest.mark.parametrize("how", ["exit clean-up", "finalising"])
def test_a_ctrl_c_after_the_command_finished_changes_nothing(tmp_path, how):
    """The command's output is written and its status decided: a Ctrl-C during the exit's
    clean-up was a traceback ("Exception ignored in atexit callback", at the end of `trace
    aggregate`), and one while Python finalised killed the process silently (-2)."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "finished_cli.py").write_text(FINISHED_THEN_SIGNALLED)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "finished_cli", how], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "done\n", "")


def test_no_arguments_show_the_help_without_an_empty_error_line(capsys):
    assert run_app([]) == 2
    captured = capsys.readouterr()
    assert "Usage: " in captured.out and "recommend" in captured.out and captured.err == ""


def test_sigterm_is_restored_after_the_command():
    before = signal.getsignal(signal.SIGTERM)
    assert run_app(["act", "fine"], application()) == 0
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.parametrize("command, listed", [
    ("recommend", "<throughput|cost>"), ("simulate", "<spread|recommend>"), ("simulate", "<dls|central>"),
    ("simulate", "<rpc|txn>"), ("export", "<voltdb|csv|graphml>"), ("run", "<dls|central>"),
    ("run", "<rpc|txn>"), ("run", "<strong|weak|off>"), ("run", "<live|restart|compare>"),
])
def test_help_lists_the_valid_values_of_a_choice(command, listed, capsys, monkeypatch):
    import advisor.cli  # noqa: F401  registers every command

    monkeypatch.setenv("COLUMNS", "200")
    assert run_app([command, "--help"]) == 0
    assert listed in capsys.readouterr().out


@pytest.mark.parametrize("argv, said", [
    (["recommend", "tpcdi-trade", "--objective", "speed"], "'speed' is not one of 'throughput', 'cost'."),
    # each command said it its own way ("machines must be an integer >= 1, got 0" here,
    # "--machines must be >= 1, got 0" in simulate and tune): the option's range, as --jobs says it
    *[([command, *args, option, "0"], f"Invalid value for '{option}' / '{short}': Input should be greater than or equal to 1")
      for command, *args in (["recommend", "tpcdi-trade"], ["tune", "tpcdi-trade", "-m", "2"],
                             ["simulate", "-d", "x.json"])
      for option, short in (("--machines", "-m"), ("--partitions-per-machine", "-p"))
      if (command, option) != ("simulate", "--partitions-per-machine")],
])
def test_a_value_outside_the_choices_is_one_plain_line(argv, said, capsys):
    import advisor.cli  # noqa: F401  registers every command

    assert run_app(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "Value error" not in err, err


def every_option():
    """(`command [subcommand] --name`, the option) for every option of every command."""
    import typer.main

    import advisor.cli  # noqa: F401  registers every command
    from advisor.cli.app import app

    for name, command in typer.main.get_command(app).commands.items():
        subcommands = command.commands.items() if hasattr(command, "commands") else [("", command)]
        for sub, c in subcommands:
            for p in c.params:
                if p.param_type_name == "option":
                    yield f"{name} {sub} --{p.name}".replace("  ", " "), p


def test_every_option_of_every_command_has_help_text():
    assert [label for label, p in every_option() if not getattr(p, "help", None)] == []


def test_the_shared_choices_are_the_simulator_s():
    """`advisor run` and `advisor simulate` share --scheduler and --move: the words they
    offer are the ones the simulator takes (the engine's are checked in test_engine_cli)."""
    from typing import get_args

    from advisor.cli.choices import MoveMode, Scheduler
    from engine_sim.sim.compiled import MOVES, SCHEDULERS

    assert get_args(Scheduler) == SCHEDULERS and get_args(MoveMode) == MOVES


# the options left as text, and why: each takes more than a word from a fixed set
FREE_TEXT = {
    "run --crash_at": "a grammar, ROLE,STEP[,N]",
    "report --spec": "a source: a bundled name or a path",
    "report --title": "any title",
    "check --since": "a source: a bundled name or a path",
    "trace aggregate --granularity": "a grammar, table | fragment:N | tuple[:N]",
    "trace aggregate --spark_master": "a URL",
    "trace aggregate --spark_conf": "key=value pairs",
    "trace validate --spark_master": "a URL",
    "trace validate --spark_conf": "key=value pairs",
}


def test_every_text_option_is_free_text_and_every_word_choice_a_literal():
    """A new option taking one of a fixed set of words must be a `Literal` (listed in --help,
    refused by the parser), not a `str` checked later: a text option must be listed above."""
    text = {label for label, p in every_option() if p.bare_type() in ("str", "list[str]")}
    assert text == set(FREE_TEXT)


def test_a_sigterm_that_lands_in_a_finaliser_still_ends_the_command(capsys):
    """Python prints and drops an exception raised while a finaliser runs, so a SIGTERM whose
    handler raised there was lost and the command went on (exit 0): `run_app` raises it again."""
    from advisor.cli.app import Terminated

    application = typer.Typer()
    went_on = []

    class Finalised:
        def __del__(self):
            raise Terminated()  # what the SIGTERM handler raises, where the signal landed

    @application.command()
    def work() -> None:
        Finalised()  # dropped at once: its finaliser runs here
        deadline = time.monotonic() + 2.0  # (the signal comes again a moment later)
        while time.monotonic() < deadline:
            pass
        went_on.append(True)

    assert run_app([], application) == 143
    assert not went_on
    assert capsys.readouterr().err.strip().splitlines()[-1] == "terminated"


class _InterruptedImport:
    """A meta path finder that interrupts the import of `advisor.cli` (a Ctrl-C, or a SIGTERM
    sent to this process, while the CLI's modules load)."""

    def __init__(self, how: str):
        self.how = how

    def find_spec(self, name, path=None, target=None):
        if name != "advisor.cli":
            return None
        if self.how == "sigterm":
            import os
            import signal

            os.kill(os.getpid(), signal.SIGTERM)
        raise KeyboardInterrupt


@pytest.mark.parametrize("how, said, status", [("ctrl-c", "interrupted\n", 130), ("sigterm", "terminated\n", 143)])
def test_an_interrupt_while_the_cli_loads_is_one_line(how, said, status, monkeypatch, capsys):
    """Before the CLI's own handling was in place, it was a Python traceback."""
    import signal
    import sys

    from advisor.command import main

    monkeypatch.delitem(sys.modules, "advisor.cli")
    monkeypatch.setattr(sys, "meta_path", [_InterruptedImport(how), *sys.meta_path])
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == status and capsys.readouterr().err == said
    assert signal.getsignal(signal.SIGTERM) == before


SIGNALLED_AS_A_COMPILED_MODULE_LOADS = """
import abc
import os
import signal
import sys

import typer
from advisor.cli.app import main

app = typer.Typer(add_completion=False)
SIGNAL = getattr(signal, sys.argv.pop(1))
register = abc.ABCMeta.register


def signalled_register(cls, subclass):
    # where Cython's memoryview code registers its types, inside its bare `except: pass`
    if subclass.__name__ == "_memoryviewslice" and not getattr(abc, "signalled", False):
        abc.signalled = True
        os.kill(os.getpid(), SIGNAL)
        for _ in range(100):  # the handler runs here
            pass
    return register(cls, subclass)


abc.ABCMeta.register = signalled_register


@app.command()
def act() -> None:
    import pandas._libs.window.indexers  # noqa: F401  a compiled module with memoryviews
    assert getattr(abc, "signalled", False), "the signal was not sent where meant"
    typer.echo("done")


main(app)
"""


@pytest.mark.process
@pytest.mark.parametrize("sig, code, said", [("SIGTERM", 143, "terminated\n"), ("SIGINT", 130, "interrupted\n")])
def test_a_signal_while_a_compiled_module_loads_still_ends_the_command(tmp_path, sig, code, said):
    """Cython's module initialisation drops any exception raised as it registers its
    memoryview types (a bare `except: pass`): a SIGTERM or Ctrl-C that landed there, while
    `advisor run` imported pandas, was lost and the command ran to its end (exit 0)."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "compiled_cli.py").write_text(SIGNALLED_AS_A_COMPILED_MODULE_LOADS)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "compiled_cli", sig], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (code, "", said)


INTERRUPTED_IN_AN_EXEC_AS_THE_CLI_LOADS = """
import sys


class InterruptedImport:
    def find_spec(self, name, path=None, target=None):
        if name == "advisor.cli":
            exec("raise KeyboardInterrupt", {})  # Ctrl-C while a dataclass is built (by a string exec)
        return None


sys.meta_path.insert(0, InterruptedImport())
from advisor.command import main

main()
"""


@pytest.mark.process
def test_ctrl_c_inside_a_string_exec_as_the_cli_loads_exits_130(tmp_path):
    """The same CPython flag as above, where the console script catches a Ctrl-C that comes
    while the CLI's modules load: `python -m advisor run ...` sent SIGINT 0.1 s in said
    `interrupted` and then ended by SIGINT (-2), 2 times in 11."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "loading_cli.py").write_text(INTERRUPTED_IN_AN_EXEC_AS_THE_CLI_LOADS)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "loading_cli"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "interrupted\n")


INTERRUPTED_AS_THE_VERSION_IS_READ = """
import sys


class InterruptedImport:
    def find_spec(self, name, path=None, target=None):
        if name == "importlib.metadata":
            raise KeyboardInterrupt  # a Ctrl-C as the installed version is read
        return None


assert "importlib.metadata" not in sys.modules, "nothing to interrupt"
sys.meta_path.insert(0, InterruptedImport())
sys.argv[1:] = ["--version"]
from advisor.command import main  # what the console script runs

main()
"""


@pytest.mark.process
def test_ctrl_c_as_the_version_is_read_is_one_line(tmp_path):
    """`import advisor` read the installed version (importlib.metadata, most of its 20 ms)
    before the console script could catch a Ctrl-C: one in the command's first moments was a
    Python traceback. The version is read when asked for, under the CLI's handling."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "versioned_cli.py").write_text(INTERRUPTED_AS_THE_VERSION_IS_READ)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "versioned_cli.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "interrupted\n")
