"""Shared fixtures and the test tiers.

`spark`: ONE local Spark session for the whole test run (local[2], 4 shuffle partitions, quiet
logs, UI off, bound to 127.0.0.1), started only when a test asks for it.

Small workloads (`tpcdi_trade`, `chain32`, ...) are loaded once per run: workloads are frozen
records, so sharing them is safe. Designs are mutable, so their fixtures build a fresh one for
every test (cheap).

Tiers: markers alone say them, so that a module's tier is read where the module is. A module
whose tests start something (`spark`, `cluster`, `browser`, `process`), take long (`slow`) or
run whole pipelines in this process (`integration`: throughput-picked recommendations, tuning
studies, every bundled workload through the engine, simulator sweeps; seconds to minutes each)
says so once at its top, `pytestmark = pytest.mark.integration` (a list for several); a single
test says so with its decorator. A test asking for the `spark` fixture is marked `spark` here.

`unit` is derived, never written: it is given here to every test that carries none of
NOT_UNIT_MARKERS, and a test marked `unit` by hand is refused. It is kept true: a unit test that
starts a subprocess, a multiprocessing process or a Spark session fails, so a module that starts
one must be marked. `python -m pytest -m unit` is the inner loop (about a minute on 2 cores).
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

# The advisor prices its default weights with the user's calibration when there is one
# (~/.config/sstore-advisor/calibration.json): tests see the shipped one only, wherever they run.
os.environ.pop("ADVISOR_CALIBRATION", None)
os.environ.pop("COLUMNS", None)  # human output is wrapped only where a test asks for a width
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="advisor-test-config-")
atexit.register(shutil.rmtree, os.environ["XDG_CONFIG_HOME"], True)  # a test run leaves no directory
# picks kept on disk (`reports.pick_cache`) would let one test answer another's question: off,
# but where a test turns it on in a directory of its own
os.environ["ADVISOR_CACHE_DIR"] = "off"
# Ctrl-C reaches the commands the tests start: a test run started in the background of a
# non-interactive shell (`.ci/run &`, nohup) inherits SIGINT ignored, every process it starts
# would too, and the commands rightly leave an ignored SIGINT ignored, so the tests that send
# one (`interrupted`, 130) failed there and only there
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# markers of tests that start a JVM, a process, a browser or a notebook kernel, or take long
NOT_UNIT_MARKERS = ("spark", "cluster", "browser", "process", "slow", "integration")


def pytest_collection_modifyitems(config, items):
    """Mark the tests that use the `spark` fixture `spark`, then give `unit` to the tests
    without a marker of NOT_UNIT_MARKERS."""
    hand_marked = [item.nodeid for item in items if item.get_closest_marker("unit")]
    if hand_marked:
        raise pytest.UsageError(f"{hand_marked[0]}: `unit` is given by tests/conftest.py, not by "
                                f"hand (remove the mark; mark a test that starts something or "
                                f"takes long with its tier)")
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
        if not any(item.get_closest_marker(m) for m in NOT_UNIT_MARKERS):
            item.add_marker(pytest.mark.unit)


class StartedSomething(AssertionError):
    """A test marked `unit` started a process or a Spark session."""


def _refuse(what: str):
    def refuse(*_args, **_kwargs):
        raise StartedSomething(f"a unit test started {what}: mark it `process` or `spark` "
                               f"(or use no process)")
    return refuse


@pytest.fixture(autouse=True)
def _unit_starts_nothing(request, monkeypatch):
    """Under the `unit` marker, starting a subprocess, a multiprocessing process, a fork or a
    Spark session raises (a subprocess covers a JVM, chromedriver and a notebook kernel), and a
    pick simulates in the test's process (`advisor.parallel_runs.serial_picks`: its answer is
    the same with workers, which tests of other tiers use)."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    from advisor.parallel_runs import serial_picks
    import multiprocessing.process
    import subprocess

    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("a subprocess"))
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start",
                        _refuse("a multiprocessing process"))
    for name in ("fork", "forkpty", "system", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"os.{name}"))
    if "pyspark.sql" in sys.modules:  # an earlier test's session would be handed back silently
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        monkeypatch.setattr(SparkSession.Builder, "getOrCreate", _refuse("a Spark session"))
        monkeypatch.setattr(SparkContext, "getOrCreate", _refuse("a Spark context"))
        monkeypatch.setattr(SparkContext, "_ensure_initialized", _refuse("a Spark context"))
    with serial_picks():
        yield


@pytest.fixture(scope="session")
def spark():
    from traces.errors import JavaError
    from traces.java import check_java
    from traces.spark_session import start_session

    try:
        check_java()
    except JavaError as exc:
        pytest.skip(str(exc))
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = start_session("local[2]", {
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }, app_name="advisor-tests")
    yield session
    session.stop()


# -- small workloads (frozen: shared by the whole run) and designs (fresh per test) ---------------

@pytest.fixture(scope="session")
def tpcdi_trade():
    """The TPC-DI trade dataflow (7 SPs), the project's main example."""
    from advisor.sources import load_workload

    return load_workload("tpcdi-trade")


@pytest.fixture(scope="session")
def chain32():
    """A chain of 32 SPs, each with its own table: the scaling workload."""
    from advisor.sources import load_workload

    return load_workload("chain-32")


@pytest.fixture(scope="session")
def workloads():
    """Any bundled workload by name, each loaded once: `workloads("linear-road")`."""
    from advisor.sources import load_workload

    loaded = {}

    def get(name: str):
        if name not in loaded:
            loaded[name] = load_workload(name)
        return loaded[name]
    return get


@pytest.fixture
def tpcdi_round_robin(tpcdi_trade):
    """TPC-DI trade on the default cluster, SPs and tables dealt round robin."""
    from costmodel.simple_designs import round_robin_design

    return round_robin_design(tpcdi_trade)


@pytest.fixture
def chain32_round_robin(chain32):
    """chain-32 on 2 machines x 2 partitions, dealt round robin."""
    from costmodel.simple_designs import round_robin_design

    return round_robin_design(chain32, 2, 2)


@pytest.fixture
def short_tmp_path():
    """An empty directory under /tmp, for a command's TMPDIR where a test looks for the
    engine's socket directories: pytest's tmp_path (pytest-of-USER/pytest-N/popen-gwK/NAME)
    can be too long a path for a Unix socket, and the engine then makes them in /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="t-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def running(pids) -> list[int]:
    """Those of `pids` still running (zombies have exited): what a run left behind."""
    import psutil

    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass  # gone: not running
    return out


@pytest.fixture(scope="session")
def tpcdi_report(tpcdi_trade):
    """(recommendation, report HTML with a simulator validation) of tpcdi-trade: built once
    for the report tests and the browser test (a full report takes tens of seconds)."""
    from advisor.api import recommend
    from reports.validation import validate_design
    from reports.report import build_report

    rec = recommend("tpcdi-trade")
    validation = validate_design(tpcdi_trade, rec.design, engine=False, sim=True, batches=200)
    return rec, build_report(rec, validation=validation.to_document())
