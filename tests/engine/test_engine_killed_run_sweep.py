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
