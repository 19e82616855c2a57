"""A Spark master that cannot be reached is one line, fast, with its cause; one that takes the
connection but never the application is given up within the session-start deadline."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from traces.errors import TraceError
from traces.spark_session import check_master_reachable, start_session


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_master_is_one_line_naming_it_and_the_cause():
    port = _free_port()
    started = time.perf_counter()
    with pytest.raises(TraceError) as err:
        start_session(f"spark://127.0.0.1:{port}")
    assert time.perf_counter() - started < 5
    message = str(err.value)
    assert f"spark://127.0.0.1:{port}" in message and "refused" in message.lower()
    assert "\n" not in message


def test_a_malformed_master_address_is_refused():
    with pytest.raises(TraceError, match="not host:port"):
        check_master_reachable("spark://nohostport")
    check_master_reachable("local[2]")  # not ours to check: nothing raised


@pytest.mark.parametrize("master", ["", "  "])
def test_an_empty_master_is_refused_not_taken_for_the_default(master):
    # `trace aggregate --spark-master ""` ran on local[*] without a word
    with pytest.raises(TraceError, match="the Spark master is empty"):
        start_session(master)


@pytest.mark.slow
@pytest.mark.process
def test_a_master_that_never_answers_is_given_up_within_30_s():
    """In a process of its own (a session already running here would be reused), against a
    socket that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []
    threading.Thread(target=lambda: held.extend(server.accept() for _ in range(16)), daemon=True).start()
    master = f"spark://127.0.0.1:{server.getsockname()[1]}"
    code = ("import sys\nfrom traces.errors import TraceError\nfrom traces.spark_session import start_session\n"
            f"try:\n    start_session({master!r})\nexcept TraceError as exc:\n    print(exc)\n    sys.exit(2)\n")
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    finally:
        server.close()
    assert time.perf_counter() - started < 30
    assert done.returncode == 2 and "did not take the application" in done.stdout, done.stderr[-500:]


@pytest.mark.process
def test_a_master_url_spark_cannot_parse_is_said_as_spark_says_it(tmp_path):
    """It was Py4J's wrapper, "An error occurred while calling None.org...JavaSparkContext.",
    which names no cause."""
    from pathlib import Path

    from costmodel.workload import workload_as_plain
    from traces.synth import synthesize
    from advisor.sources import load_workload

    trace = tmp_path / "trace"
    synthesize(workload_as_plain(load_workload("move-micro")), trace, batches=5, seed=1)
    proc = subprocess.run([sys.executable, "-m", "advisor", "trace", "aggregate", str(trace), "--out",
                           str(tmp_path / "out"), "-q", "--spark-master", "notaurl"],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 2
    assert proc.stderr == ("error: Spark could not start with master 'notaurl': Could not parse Master URL: "
                           "'notaurl'\n")
