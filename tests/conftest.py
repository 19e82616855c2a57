"""Shared fixtures. `spark`: ONE local Spark session for the whole test run (local[2], 4 shuffle
partitions, quiet logs, UI off, bound to 127.0.0.1), started only when a test asks for it."""
from __future__ import annotations

import os
import tempfile

import pytest

# The advisor prices its default weights with the user's calibration when there is one
# (~/.config/sstore-advisor/calibration.json): tests see the shipped one only, wherever they run.
os.environ.pop("ADVISOR_CALIBRATION", None)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="advisor-test-config-")


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
