"""The aggregation's progress lines come from several threads (its jobs run side by side, a
watcher reports Spark's stages): each must reach stderr as one whole line. `print` wrote a
line's text and its end in two writes, and two lines ran into one (747 of 16,000 lines here
through a pipe, before)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEAKERS = """
import threading
from traces.progress import stderr_line

def speak(i):
    for j in range(2000):
        stderr_line(f"thread {i} line {j}")

threads = [threading.Thread(target=speak, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


@pytest.mark.process
def test_lines_from_many_threads_stay_whole_through_a_pipe():
    proc = subprocess.run([sys.executable, "-c", SPEAKERS], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert sorted(lines) == sorted(f"thread {i} line {j}" for i in range(8) for j in range(2000))
