"""A real standalone Spark cluster: a master and one worker on 127.0.0.1, started with the
launcher inside the pyspark package; the aggregation runs against spark://127.0.0.1:PORT (in
a subprocess running the CLI) and must equal the local-mode result. Both processes are
stopped whatever happens."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from traces import load_statistics
from traces.aggregate import aggregate
from traces.synth import synthesize
from test_traces_synth import MIXED

pytestmark = [pytest.mark.cluster, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_env() -> dict:
    import pyspark

    home = Path(pyspark.__file__).parent
    return dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
                PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))


def master_state(webui: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=5) as r:
        return json.loads(r.read())


def stop(proc: subprocess.Popen) -> None:
    """Stop a process group we started (spark-class execs java in it; the worker's
    executors inherit the group)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    env = cluster_env()
    spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
    logs = tmp_path_factory.mktemp("spark-cluster")
    port, webui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = []
    try:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(webui)],
            stdout=open(logs / "master.log", "w"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True))
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
             "--webui-port", str(free_port()), "-c", "1", "-m", "1g",
             "--work-dir", str(logs / "work"), url],
            stdout=open(logs / "worker.log", "w"), stderr=subprocess.STDOUT, env=env,
            start_new_session=True))
        deadline = time.monotonic() + 120
        while True:
            for p, name in zip(procs, ("master", "worker")):
                if p.poll() is not None:
                    pytest.fail(f"Spark {name} exited: {(logs / f'{name}.log').read_text()[-2000:]}")
            try:
                if master_state(webui).get("aliveworkers", 0) >= 1:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("the Spark worker did not register with the master within 120 s")
            time.sleep(0.5)
        yield url, webui
    finally:
        for p in reversed(procs):
            stop(p)


def test_cluster_aggregation_equals_local_mode(standalone_cluster, spark, tmp_path):
    url, webui = standalone_cluster
    trace = tmp_path / "trace"
    synthesize(MIXED, trace, batches=100, seed=21, abort_rate=0.05)  # equality needs no volume
    out = tmp_path / "cluster-stats"
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "trace", "aggregate", str(trace), "--out", str(out),
         "--granularity", "tuple:2", "--hot-tuples", "4", "--spark-master", url,
         "--spark-conf", "spark.executor.memory=512m",
         "--spark-conf", "spark.driver.host=127.0.0.1",
         "--spark-conf", "spark.driver.bindAddress=127.0.0.1"],
        capture_output=True, text=True, env=cluster_env(), cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"on {url}" in proc.stderr
    state = master_state(webui)
    apps = [a["name"] for a in state.get("completedapps", []) + state.get("activeapps", [])]
    assert "advisor-trace-aggregate" in apps  # the job really ran on the cluster

    cluster = load_statistics(out)
    local = aggregate(trace, None, "tuple:2", 4, spark=spark, progress=None)
    assert cluster["state"].attrs["manifest"]["spark_master"] == url
    for name, frame in local.frames().items():
        pd.testing.assert_frame_equal(cluster[name], frame, check_dtype=False, obj=name)


@pytest.mark.slow
def test_a_master_with_no_worker_is_one_line_not_a_hang(tmp_path):
    """A standalone master takes the application with no worker registered, and the jobs then
    waited forever, silently. Now: one line after the executor wait, exit 2, no JVM left."""
    env = cluster_env()
    port, webui = free_port(), free_port()
    master = subprocess.Popen(
        [str(Path(env["SPARK_HOME"]) / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
         "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui)],
        stdout=open(tmp_path / "master.log", "w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                master_state(webui)
                break
            except OSError:
                if time.monotonic() > deadline or master.poll() is not None:
                    pytest.fail("the Spark master did not start")
                time.sleep(0.5)
        trace = tmp_path / "trace"
        synthesize(MIXED, trace, batches=20, seed=1)
        proc = subprocess.Popen(
            [sys.executable, "-m", "advisor", "trace", "aggregate", str(trace), "--out", str(tmp_path / "out"),
             "--spark-master", f"spark://127.0.0.1:{port}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=180)
        finally:
            stop(proc)
        assert proc.returncode == 2
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"error: Spark master 'spark://127.0.0.1:{port}' took the application but "
                               "gave it no executor within 30 s"), err[-2000:]
        assert "Traceback" not in err and not (tmp_path / "out").exists()
    finally:
        stop(master)
