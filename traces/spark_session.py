"""The Spark session the aggregation runs in: quiet, Arrow on, any master.

`local[*]` by default; `--spark-master spark://host:port` (or yarn, k8s...) runs the very
same job on a cluster. The JVM gets a log4j2 configuration that keeps Spark's own logging
at ERROR, so the user sees our progress lines and nothing else.
"""
from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import Mapping

from common.files import atomic_write_text, private_dir
from traces.errors import TraceError

DEFAULT_MASTER = "local[*]"
LOCAL_DRIVER_MEMORY = "2g"

# Spark's own log lines are off: every failure reaches the user as one line through the
# Python exception (see traces.aggregate); ADVISOR_SPARK_LOG=warn (or info...) brings them back.
_LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# the loggers Spark compares with the root level before printing "Setting default log level"
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = {level}
logger.submit.name = org.apache.spark.deploy.SparkSubmit
logger.submit.level = {level}
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
"""


def log4j_config() -> Path:
    """A quiet log4j2 properties file (written once per user, reused)."""
    folder = private_dir(Path(tempfile.gettempdir()) / f"advisor-spark-{os.getuid()}")
    level = os.environ.get("ADVISOR_SPARK_LOG", "off").strip().lower() or "off"
    text = _LOG4J.replace("{level}", level)
    path = folder / f"log4j2-{level}.properties"
    if not path.is_file() or path.read_text() != text:
        atomic_write_text(path, text, fsync=False)
    return path


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    """['k=v', ...] from repeated --spark-conf options."""
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise TraceError(f"--spark-conf expects key=value, got {pair!r}")
        conf[key.strip()] = value.strip()
    return conf


def active_session():
    """The SparkSession already running in this process, if any."""
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def session_conf(master: str, conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings the job runs with; the user's --spark-conf wins over ours."""
    quiet = f"-Dlog4j2.configurationFile=file:{log4j_config()}"
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.pyspark.fallback.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "200000",
        "spark.sql.session.timeZone": "UTC",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }
    if master.startswith("local"):
        # local mode: the driver JVM is the executor too; 1g (Spark's default) makes the
        # per-(transaction, item) aggregation of a fine granularity spill
        settings["spark.sql.shuffle.partitions"] = str(max(4, 2 * (os.cpu_count() or 1)))
        settings["spark.driver.memory"] = LOCAL_DRIVER_MEMORY
    user = dict(conf or {})
    extra = user.pop("spark.driver.extraJavaOptions", "")
    settings["spark.driver.extraJavaOptions"] = f"{quiet} {extra}".strip()
    settings.update(user)
    return settings


MASTER_CONNECT_TIMEOUT_S = 10.0


def check_master_reachable(master: str, timeout_s: float = MASTER_CONNECT_TIMEOUT_S) -> None:
    """A standalone master (`spark://host:port[,host:port...]`) that takes no TCP connection is
    one line within `timeout_s` per address, instead of Spark's own minute of retries with no
    cause. Other masters (local, yarn, k8s...) are Spark's to check."""
    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.strip().rpartition(":")
        if not host or not port.isdigit():
            raise TraceError(f"Spark master {master!r}: {address!r} is not host:port")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return
        except OSError as exc:
            reasons.append(f"{address}: {exc.strerror or type(exc).__name__}"
                           if not isinstance(exc, socket.timeout) else f"{address}: no answer in {timeout_s:g} s")
    raise TraceError(f"Spark master {master!r} is unreachable ({'; '.join(reasons)})")


def start_session(master: str = DEFAULT_MASTER, conf: Mapping[str, str] | None = None,
                  app_name: str = "advisor-trace-aggregate"):
    """A new SparkSession (call `traces.java.check_java()` first for a clear Java error)."""
    check_master_reachable(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in session_conf(master, conf).items():
        builder = builder.config(key, value)
    spark = _get_or_create(builder, master, None if master.startswith("local") else SESSION_START_TIMEOUT_S)
    spark.sparkContext.setLogLevel(os.environ.get("ADVISOR_SPARK_LOG", "off").upper())
    return spark


SESSION_START_TIMEOUT_S = 20.0  # a remote master that has not taken the application by then


def _get_or_create(builder, master: str, timeout_s: float | None):
    """`builder.getOrCreate()`, one line on failure; with `timeout_s`, a master that has not
    taken the application by then (Spark itself retries for more than a minute, and then names
    no cause) is given up: the JVM is stopped and the error says so."""
    outcome: dict = {}

    def start() -> None:
        try:
            outcome["spark"] = builder.getOrCreate()
        except Exception as exc:  # noqa: BLE001 - a JVM that cannot start is a user-facing problem
            outcome["error"] = exc

    if timeout_s is None:
        start()
    else:
        thread = threading.Thread(target=start, name="spark-session-start", daemon=True)
        thread.start()
        thread.join(timeout_s)
        if thread.is_alive():
            _stop_gateway()
            raise TraceError(f"Spark master {master!r} did not take the application within "
                             f"{timeout_s:g} s (unreachable, busy, or not a Spark master)")
    if "error" in outcome:
        exc = outcome["error"]
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TraceError(f"Spark could not start with master {master!r}: {first}") from None
    return outcome["spark"]


def _stop_gateway() -> None:
    """Stop the JVM a session start left behind (it would otherwise outlive the error)."""
    from pyspark import SparkContext

    gateway = getattr(SparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.kill()
        proc.wait(timeout=10)


def to_pandas(df, arrow_dtypes: bool = False):
    """A Spark DataFrame as pandas through Arrow record batches (`DataFrame.toArrow`), the
    fastest way across: no per-row Python objects on the way, and with `arrow_dtypes` no
    per-value conversion at the end either (pandas columns backed by the Arrow buffers)."""
    table = df.toArrow()
    if arrow_dtypes:
        import pandas as pd

        return table.to_pandas(types_mapper=pd.ArrowDtype)
    return table.to_pandas()
