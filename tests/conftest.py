"""Shared fixtures and the fast tier.

`spark`: ONE local Spark session for the whole test run (local[2], 4 shuffle partitions, quiet
logs, UI off, bound to 127.0.0.1), started only when a test asks for it.

Small workloads (`tpcdi_trade`, `chain32`, ...) are loaded once per run: workloads are frozen
records, so sharing them is safe. Designs are mutable, so their fixtures build a fresh one for
every test (cheap).

The `unit` marker is given here, to every test that carries none of the markers of tests
that start something (`spark`, `cluster`, `browser`, `process`) or take long (`slow`,
`integration`) and asks for no `spark` fixture. It is kept true: a unit test that starts a
subprocess, a multiprocessing process or a Spark session fails. `python -m pytest -m unit` is
the inner loop (under a minute).

`integration` is given here to the modules of INTEGRATION_MODULES: they start nothing either,
but run whole pipelines (throughput-picked recommendations, tuning studies, every bundled
workload through the engine, simulator sweeps), seconds to minutes each. A new test module is
a unit module until it is listed there.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile

import pytest

# The advisor prices its default weights with the user's calibration when there is one
# (~/.config/sstore-advisor/calibration.json): tests see the shipped one only, wherever they run.
os.environ.pop("ADVISOR_CALIBRATION", None)
os.environ.pop("COLUMNS", None)  # human output is wrapped only where a test asks for a width
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="advisor-test-config-")
atexit.register(shutil.rmtree, os.environ["XDG_CONFIG_HOME"], True)  # a test run leaves no directory

# markers of tests that start a JVM, a process, a browser or a notebook kernel, or take long
NOT_UNIT_MARKERS = ("spark", "cluster", "browser", "process", "slow", "integration")
NOT_UNIT_FIXTURES = ("spark",)
# modules of whole-pipeline tests (see the docstring): by file name, wherever the file lives
INTEGRATION_MODULES = frozenset({
    "test_demo.py", "test_design_cli.py", "test_engine_cli.py", "test_engine_crash.py",
    "test_engine_multiprocess.py", "test_engine_recovery.py", "test_engine_run.py",
    "test_engine_data_parallel.py", "test_busy_time.py",
    "test_engine_trace.py", "test_engine_work.py", "test_notebook.py", "test_recommend_pick.py",
    "test_report.py", "test_report_browser.py", "test_report_figures.py",
    "test_report_suggestions.py", "test_search.py", "test_search_local.py", "test_search_model.py",
    "test_sim_calibration.py", "test_sim_cli.py", "test_sim_fidelity_summary.py",
    "test_sim_shapes.py", "test_sim_validate.py", "test_traces_aggregate.py",
    "test_traces_cluster.py", "test_traces_graph.py", "test_traces_in_place.py", "test_cli_terminal.py", "test_tune.py",
    "test_build_report.py", "test_windows_advisor.py", "test_migration_pick.py", "test_drift.py",
    "test_long_run_history.py",
    "test_migration_bench.py",
    "test_docs_blocks.py",
})


_MODULE_NOT_UNIT = re.compile(r"^pytestmark\s*=\s*pytest\.mark\.(%s)\b" % "|".join(NOT_UNIT_MARKERS),
                              re.M)


def pytest_ignore_collect(collection_path, config):
    """Under `-m unit`, an integration module, or one marked whole as Spark, cluster, browser,
    process or slow, holds no unit test: it is not even imported."""
    if config.getoption("markexpr", "") != "unit" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    if collection_path.name in INTEGRATION_MODULES:
        return True
    try:
        text = collection_path.read_text()
    except OSError:
        return None
    return True if _MODULE_NOT_UNIT.search(text) else None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in INTEGRATION_MODULES:
            item.add_marker(pytest.mark.integration)
        if any(item.get_closest_marker(m) for m in NOT_UNIT_MARKERS):
            continue
        if any(f in getattr(item, "fixturenames", ()) for f in NOT_UNIT_FIXTURES):
            continue
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
    Spark session raises (a subprocess covers a JVM, chromedriver and a notebook kernel)."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return
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
    from advisor.spec import load_workload

    return load_workload("tpcdi-trade")


@pytest.fixture(scope="session")
def chain32():
    """A chain of 32 SPs, each with its own table: the scaling workload."""
    from advisor.spec import load_workload

    return load_workload("chain-32")


@pytest.fixture(scope="session")
def workloads():
    """Any bundled workload by name, each loaded once: `workloads("linear-road")`."""
    from advisor.spec import load_workload

    loaded = {}

    def get(name: str):
        if name not in loaded:
            loaded[name] = load_workload(name)
        return loaded[name]
    return get


@pytest.fixture
def tpcdi_round_robin(tpcdi_trade):
    """TPC-DI trade on the default cluster, SPs and tables dealt round robin."""
    from engine_sim.engine.designs import round_robin_design

    return round_robin_design(tpcdi_trade)


@pytest.fixture
def chain32_round_robin(chain32):
    """chain-32 on 2 machines x 2 partitions, dealt round robin."""
    from engine_sim.engine.designs import round_robin_design

    return round_robin_design(chain32, 2, 2)


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
    from engine_sim.validation import validate_design
    from reports.report import build_report

    rec = recommend("tpcdi-trade")
    validation = validate_design(tpcdi_trade, rec.design, engine=False, sim=True, batches=200)
    return rec, build_report(rec, validation=validation.to_document())
