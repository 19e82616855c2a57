"""Ctrl-C and SIGTERM during an engine run: the command says so in one line and exits 130 or
143, and leaves no partition process and no log or socket directory behind."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from costmodel.design import Design

pytestmark = pytest.mark.process

ADVISOR = [sys.executable, "-m", "advisor"]


def _leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(("eng-", "engs-", "pymp-")))


@pytest.mark.parametrize("sig, code, says", [(signal.SIGTERM, 143, "terminated"),
                                             (signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGHUP, 129, "hung up")])
def test_a_signal_mid_run_stops_everything_and_cleans_up(tmp_path, short_tmp_path, sig, code, says):
    """SIGHUP (the terminal closed) reaches every process of the terminal's group, as here;
    it ended the run with no word and left its temporary directories behind."""
    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1}).save(tmp_path / "d.json")
    tmp = short_tmp_path
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen([*ADVISOR, "run", "move-micro", "--design", str(design), "--batches", "5000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    me = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    partitions: list[psutil.Process] = []
    while time.monotonic() < deadline and len(partitions) < 2:  # wait for both partitions to serve
        time.sleep(0.2)
        partitions = [c for c in me.children(recursive=True) if c.ppid() != proc.pid]  # the forkserver's
    assert len(partitions) >= 2, "the run never started its partitions"
    time.sleep(1.0)
    if sig == signal.SIGHUP:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code
    assert err.decode().strip().splitlines() == [says]
    everyone = partitions + me.children(recursive=True) if me.is_running() else partitions
    gone, alive = psutil.wait_procs(everyone, timeout=10)
    assert not alive, f"partition processes left running: {[p.pid for p in alive]}"
    assert _leftovers(tmp) == []


def test_what_a_killed_run_leaves_is_cleaned_by_the_next(tmp_path, short_tmp_path, monkeypatch):
    """SIGKILL runs no clean-up: the run's log and socket directories stay, marked with the
    dead driver's pid; the next run removes them (and leaves a live run's alone)."""
    import tempfile

    from advisor.sources import load_workload
    from engine_sim.engine import run_workload

    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    path = design.save(tmp_path / "d.json")
    tmp = short_tmp_path
    proc = subprocess.Popen([*ADVISOR, "run", "move-micro", "--design", str(path), "--batches", "5000000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(tmp)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(p.name.startswith("engs-") for p in tmp.iterdir()):
        time.sleep(0.2)
    time.sleep(1.0)
    proc.kill()
    proc.wait(30)
    left = [n for n in _leftovers(tmp) if not n.startswith("pymp-")]
    assert any(n.startswith("eng-") for n in left) and any(n.startswith("engs-") for n in left)
    live = tmp / "eng-live"
    live.mkdir()
    (live / ".owner-pid").write_text(f"{os.getpid()}\n")  # a run of this process: still going
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    r = run_workload(load_workload("move-micro"), design, batches=20, in_process=True)
    assert r.history_check == "ok"
    assert [n for n in _leftovers(tmp) if not n.startswith("pymp-")] == ["eng-live"]


def test_an_interrupt_as_the_runtime_is_built_leaves_no_socket_directory(short_tmp_path, monkeypatch):
    """The socket directory is made as the multi-process runtime is built, but only `run`'s
    clean-up removed it: Ctrl-C in between (`advisor validate` at ~1 s) left an `engs-*`
    directory in TMPDIR."""
    import tempfile

    from advisor.sources import load_workload
    from engine_sim.engine import multiproc
    from engine_sim.engine.runner import run_workload

    monkeypatch.setenv("TMPDIR", str(short_tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(multiproc, "Driver", interrupted)  # after the socket directory is made
    w = load_workload("move-micro")
    d = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    with pytest.raises(KeyboardInterrupt):
        run_workload(w, d, batches=5)
    assert [n for n in _leftovers(short_tmp_path) if n.startswith("engs-")] == []


CTRL_C_AS_THE_FORKSERVER_STARTS = """
import os
import signal
import time
from multiprocessing import forkserver

from engine_sim.engine import forkserver as engine_forkserver

start = forkserver.ensure_running


def started_then_ctrl_c():
    start()  # the forkserver now imports its preload
    os.killpg(0, signal.SIGINT)  # a Ctrl-C reaches the whole group: this process and the forkserver
    time.sleep(0.2)


forkserver.ensure_running = started_then_ctrl_c
try:
    engine_forkserver.forkserver_context()
    time.sleep(1.0)
    print("went on")
except KeyboardInterrupt:
    time.sleep(2.0)  # the forkserver's preload done: it would have said its traceback by now
    print("interrupted")
"""


def test_a_ctrl_c_as_the_forkserver_starts_reaches_the_command_and_only_it(tmp_path, short_tmp_path):
    """The forkserver is started with Ctrl-C kept from it (its own traceback under the command's
    line); that was done by ignoring SIGINT in this process meanwhile, and a Ctrl-C then was
    lost: `advisor run` went on to its end and exited 0 (SIGINT at 0.57 and 0.8 s)."""
    script = tmp_path / "ctrl_c_as_forkserver_starts.py"
    script.write_text(CTRL_C_AS_THE_FORKSERVER_STARTS)
    env = {**os.environ, "TMPDIR": str(short_tmp_path),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env=env, start_new_session=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (done.stdout, done.stderr) == ("interrupted\n", "")



def _ctrl_c(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("where", ["history directory", "site settings"])
def test_an_interrupt_as_the_run_makes_its_directories_leaves_none(short_tmp_path, monkeypatch, where):
    """The run's log directory and its history directory were made before the `try` that
    removes them: SIGTERM at 0.72 s into `advisor run` (as the second was made) left both
    in TMPDIR, the history one without its owner file, so no later run swept it."""
    import tempfile

    from advisor.sources import load_workload
    from engine_sim.engine import runner, spool

    monkeypatch.setenv("TMPDIR", str(short_tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    made = spool.new_spool_dir

    def made_then_ctrl_c():  # the history directory made, the signal as its owner file is written
        monkeypatch.setattr(Path, "write_text", _ctrl_c)
        return made()

    if where == "history directory":
        monkeypatch.setattr(runner, "new_spool_dir", made_then_ctrl_c)
    else:  # both made
        monkeypatch.setattr(runner, "SiteConfig", _ctrl_c)
    d = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    with pytest.raises(KeyboardInterrupt):
        runner.run_workload(load_workload("move-micro"), d, batches=5, in_process=True)
    monkeypatch.undo()
    assert sorted(p.name for p in short_tmp_path.iterdir()) == []


@pytest.fixture
def sigterm_raises():
    """SIGTERM raises KeyboardInterrupt here, as the CLI's handler does."""
    def raise_(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_)
    yield
    signal.signal(signal.SIGTERM, previous)


def _signalled_then(real):
    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs in the clean-up
        return real(*args, **kwargs)
    return signalled


@pytest.mark.parametrize("in_process", [True, False])
def test_a_signal_during_a_finished_run_s_clean_up_still_cleans_everything(short_tmp_path, monkeypatch,
                                                                           sigterm_raises, in_process):
    """A signal that lands as a run that finished removes its directories and stops its
    partitions cut that clean-up short: SIGTERM 1.77 s into `advisor validate --engine` left
    the run's log directory (logs, snapshots) in TMPDIR, SIGINT at 1.66 s part of it, and one
    during the partitions' stop left the socket directory. It now waits for the clean-up."""
    import tempfile

    import psutil

    from advisor.sources import load_workload
    from engine_sim.engine import multiproc, runner

    monkeypatch.setenv("TMPDIR", str(short_tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    if in_process:
        monkeypatch.setattr(runner, "remove_spool_dir", _signalled_then(runner.remove_spool_dir))
    else:
        monkeypatch.setattr(multiproc, "_drain", _signalled_then(multiproc._drain))
    before = {c.pid for c in psutil.Process().children(recursive=True)}
    d = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    with pytest.raises(KeyboardInterrupt):
        runner.run_workload(load_workload("move-micro"), d, batches=20, in_process=in_process)
    partitions = [c for c in psutil.Process().children(recursive=True)  # (the forkserver's children)
                  if c.pid not in before and c.ppid() != os.getpid()]
    assert partitions == []
    assert [n for n in _leftovers(short_tmp_path) if not n.startswith("pymp-")] == []  # (the forkserver's stays)
