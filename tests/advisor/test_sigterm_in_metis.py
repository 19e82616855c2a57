"""A SIGTERM that arrives while METIS partitions (`advisor.sigterm`): METIS traps SIGTERM for
the length of each call and jumps out of it, so the signal was lost (the command went on and
wrote its design) or the process crashed. Here another process sends SIGTERM every
millisecond while this one partitions a graph again and again: every partition is whole and
the signals reach Python's handler. Run in a process of its own (without the fix it hangs, crashes
or METIS says "Failed during initial partitioning")."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]

STORM = r"""
import os, signal, subprocess, sys, threading, time
import numpy as np
import scipy.sparse as sp
from advisor import metis

rng = np.random.default_rng(3)
n = 4000
rows, cols = rng.integers(0, n, 40000), rng.integers(0, n, 40000)
keep = rows != cols
adj = sp.coo_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n)).tocsr()
adj = (adj + adj.T).tocsr()
adj.data = np.ones_like(adj.data)
caught = []
signal.signal(signal.SIGTERM, lambda *_: caught.append(1))
# another process sends them, as `kill` does: METIS holds the GIL, so no thread here could
storm = subprocess.Popen([sys.executable, "-c", "import os, signal, sys, time; pid = int(sys.argv[1]); "
                          "[(os.kill(pid, signal.SIGTERM), time.sleep(0.001)) for _ in iter(int, 1)]",
                          str(os.getpid())])
bad = calls = 0
started = time.monotonic()
while time.monotonic() - started < 2.0:
    parts = metis.kway(adj, None, 8, seed=calls)
    bad += int(parts.min() < 0 or parts.max() >= 8 or np.unique(parts).size < 8)
    calls += 1
storm.kill()
storm.wait()
# a thread that is not ours could take the signal (and run METIS's handler): not held then
from advisor.sigterm import held, off_this_thread
def blocked_in_held():
    with held():
        return signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
ours_too = threading.Event()
def ours():
    with off_this_thread():
        ours_too.wait()
helper = threading.Thread(target=ours); helper.start()
with_ours = blocked_in_held()
ours_too.set(); helper.join()
other = threading.Thread(target=ours_too.wait); ours_too.clear(); other.start()
with_other = blocked_in_held()
ours_too.set(); other.join()
print("done", calls, bad, len(caught), with_ours, with_other)
"""


def test_a_sigterm_during_metis_waits_for_the_call_and_reaches_python():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # as the command line keeps it (`advisor.cli`)
    done = subprocess.run([sys.executable, "-c", STORM], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)  # (without the fix, METIS hangs under the storm)
    assert done.returncode == 0, done.stderr[-500:]
    assert "Failed during" not in done.stdout + done.stderr  # METIS never caught one
    _, calls, bad, caught, with_ours, with_other = done.stdout.split()
    assert with_ours == "True" and with_other == "False"
    assert int(calls) > 5 and int(bad) == 0
    # every signal reached Python's handler (those sent during one call arrive as one)
    assert int(caught) >= int(calls) // 2
