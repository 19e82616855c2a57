"""Strangers on an engine socket cost the run nothing: a connection is heard only once a hello
sealed by the run checks; until then it may send a hello's bytes, and beyond a few such
connections the oldest is closed. 1,500 connections made a partition with 1,024 descriptors
crash with a traceback (EMFILE in accept), and a stranger's near-1 GiB frame was buffered
whole before its tag was checked."""
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from costmodel.design import Design

ROOT = Path(__file__).resolve().parents[2]
FLOOD = """
import glob, resource, socket, struct, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
path = None
while path is None:
    found = glob.glob(sys.argv[1] + "/engs-*/" + sys.argv[2])
    path = found[0] if found else time.sleep(0.01)
big = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
while big.connect_ex(path) != 0:  # (bound, not yet listening: refused)
    time.sleep(0.01)
big.setblocking(False)
try:
    big.send(struct.pack("<I", (1 << 30) - 1) + b"x" * (1 << 20))
except OSError:
    pass
held = []
for _ in range(1500):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        held.append(s)
    except OSError:
        break
time.sleep(2)
print(len(held))
"""


def _partition_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


@pytest.mark.process
@pytest.mark.parametrize("socket_name", ["p0.sock", "driver.sock"])
def test_a_flood_of_strangers_costs_the_run_nothing(short_tmp_path, socket_name):
    # (on the driver's socket, 31 idle strangers ended the run: every partition's watchdog
    # connection was unheard, so the oldest of them was closed to make room)
    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1}).save(short_tmp_path / "d.json")
    env = dict(os.environ, TMPDIR=str(short_tmp_path), PYTHONPATH=str(ROOT))
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, str(short_tmp_path), socket_name],
                             stdout=subprocess.PIPE, text=True)
    run = subprocess.run([sys.executable, "-m", "advisor", "run", "-d", str(design), "--batches", "6000", "--json"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
                         preexec_fn=_partition_descriptors)
    out, _ = flood.communicate(timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert int(out) > 1024  # the flood got past the partition's descriptors (accepted, then closed)
    result = json.loads(run.stdout)
    assert result["history_check"] == "ok" and result["state_digest"] == result["serial_digest"]
    assert result["refused_frames"] >= int(out) - 64


@pytest.mark.process
def test_a_design_of_more_partitions_than_strangers_kept_runs():
    # every partition's watchdog held an unheard connection to the driver: past 32 partitions
    # the driver closed the oldest, and the run ended "while starting partitions"
    from advisor.sources import load_workload
    from engine_sim.engine import run_workload
    from engine_sim.engine.transport import MAX_UNHEARD

    n = MAX_UNHEARD + 8
    design = Design("move-micro", n, 1, {"SP1": 0, "SP2": n - 1}, {"T1": 0, "T2": n - 1})
    r = run_workload(load_workload("move-micro"), design, batches=30)
    assert r.history_check == "ok" and r.state_digest == r.serial_digest and r.committed == 60
