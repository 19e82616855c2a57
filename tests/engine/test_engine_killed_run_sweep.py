"""A multi-process engine run killed with SIGKILL runs no clean-up: its log, socket and
history directories and multiprocessing's own `pymp-*` directory stay in the temporary
directory. Each is marked with the dead driver's pid, so the next run recognises and removes
them all, and leaves alone what a live process (or someone else) keeps there."""
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from costmodel.design import Design

pytestmark = pytest.mark.process

ADVISOR = [sys.executable, "-m", "advisor"]
PREFIXES = ("eng", "pymp-")


def _ours(tmp) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith(PREFIXES))


def test_the_next_run_removes_what_a_killed_multi_process_run_left(tmp_path, short_tmp_path):
    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1}).save(tmp_path / "d.json")
    tmp = short_tmp_path
    env = {**os.environ, "TMPDIR": str(tmp)}
    run = [*ADVISOR, "run", "move-micro", "--design", str(design)]
    killed = subprocess.Popen([*run, "--batches", "5000000"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env)
    me = psutil.Process(killed.pid)
    deadline = time.monotonic() + 60
    partitions: list[psutil.Process] = []
    while time.monotonic() < deadline and len(partitions) < 2:  # both partitions serve
        time.sleep(0.2)
        partitions = [c for c in me.children(recursive=True) if c.ppid() != killed.pid]
    assert len(partitions) >= 2, "the run never started its partitions"
    everyone = me.children(recursive=True)
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    _, alive = psutil.wait_procs(everyone, timeout=20)  # partitions and forkserver follow it
    assert not alive, f"left running: {[p.pid for p in alive]}"
    left = _ours(tmp)
    assert any(n.startswith("pymp-") for n in left) and any(n.startswith("eng-") for n in left), left
    foreign = tmp / "pymp-not-ours"  # multiprocessing's, of a program that is not this tool
    foreign.mkdir()
    live = tmp / "pymp-live"  # a live run's (this test process's)
    live.mkdir()
    (live / ".owner-pid").write_text(f"{os.getpid()}\n")
    again = subprocess.run([*run, "--batches", "20"], capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert _ours(tmp) == ["pymp-live", "pymp-not-ours"]


def test_a_run_directory_written_to_as_it_is_removed_keeps_its_owner_until_it_goes(monkeypatch):
    # a partition still writing its snapshot as a signalled run ended: rmtree took the owner
    # file first, the late file stayed, and the ownerless directory was never swept
    from pathlib import Path

    from costmodel.temp_dirs import OWNER_FILE, owned_temp_dir, remove_owned_dir, sweep_abandoned_dirs

    folder = owned_temp_dir("eng-")
    (folder / "p0.log").write_text("log")
    real_rmdir = Path.rmdir

    def late_writer(self):  # a file lands just before each removal of the directory itself
        (self / "snap-1-p1.pkl").write_text("late")
        return real_rmdir(self)

    monkeypatch.setattr(Path, "rmdir", late_writer)
    assert remove_owned_dir(folder, attempts=3, pause_s=0.0) is False
    assert (folder / OWNER_FILE).read_text().strip() == str(os.getpid())  # still ours: sweepable
    monkeypatch.undo()
    (folder / OWNER_FILE).write_text("999999999\n")  # its run gone: the next run's sweep takes it
    assert folder in sweep_abandoned_dirs("eng-") and not folder.exists()
    quiet = owned_temp_dir("eng-")
    (quiet / "sub").mkdir()
    (quiet / "sub" / "f").write_text("x")
    assert remove_owned_dir(quiet) and not quiet.exists()
