"""The Spark session the aggregation runs in: quiet, Arrow on, any master.

`local[*]` by default; `--spark-master spark://host:port` (or yarn, k8s...) runs the very
same job on a cluster. The JVM gets a log4j2 configuration that keeps Spark's own logging
at ERROR, so the user sees our progress lines and nothing else.

The JVM is started by this process (`traces.spark_jvm`) rather than inside PySpark, so that
this process always holds it: it
leads a process group of its own (it and everything it starts stop together, and a Ctrl-C on
the terminal reaches only the command, which stops it), its output goes to a file (no Java
stack trace on the terminal when it is stopped halfway), and its temporary files live in one
owned directory (removed when the process ends; swept by the next run after a SIGKILL).
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

from costmodel.files import atomic_write_text
from traces.spark_jvm import launch_jvm, py4j_not_logged, stop_gateway
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


def log4j_config(folder: Path) -> Path:
    """A quiet log4j2 properties file in `folder` (the JVM's own temporary directory)."""
    level = os.environ.get("ADVISOR_SPARK_LOG", "off").strip().lower() or "off"
    return atomic_write_text(Path(folder) / f"log4j2-{level}.properties",
                             _LOG4J.replace("{level}", level), fsync=False)


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


def session_conf(master: str, conf: Mapping[str, str] | None = None,
                 temp_dir: Path | None = None) -> dict[str, str]:
    """The settings the job runs with; the user's --spark-conf wins over ours. `temp_dir`: the
    directory of the JVM about to start, for its quiet logging configuration and its temporary
    files (java.io.tmpdir, so Spark's local directories too); none when the JVM runs already."""
    jvm_options = "" if temp_dir is None else (
        f"-Dlog4j2.configurationFile=file:{log4j_config(temp_dir)} -Djava.io.tmpdir={temp_dir}")
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
    settings["spark.driver.extraJavaOptions"] = f"{jvm_options} {extra}".strip()
    settings.update(user)
    return settings


# A small job (a trace of up to SMALL_JOB_ROWS rows, the demo's has ~14,000) spends nearly all
# its CPU starting the JVM and compiling: Java's optimising JIT (C2) and the parallel garbage
# collector's threads then cost more than they save (bench/product_speed.py: about a third of
# the aggregation's CPU). The quick JIT alone and the serial collector compute the very same
# results; a large trace keeps Java's defaults, which win on long jobs. Whole-stage code
# generation (each query's plan compiled into Java at run time, by a compiler cold in a new JVM)
# saves per-row work a job of a few thousand rows does not have: off for a small job, the same
# results (about a fifth of the demo's Spark CPU, issue 21). Such a job also spends seconds
# verifying the bytecode of the classes it loads from Spark's jars: they come with the pyspark
# package, as trusted as the Python running them (Java never verifies its own classes either),
# so a small job skips that (the aggregation 0.83x wall on the demo's trace, the same results;
# a diagnostic option: Java 17 and 25 tried here).
SMALL_JOB_ROWS = 500_000
SMALL_JOB_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC "
                         "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")
SMALL_JOB_SQL_CONF = {"spark.sql.codegen.wholeStage": "false"}


def small_job_conf(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """`conf` with a small job's settings: its driver JVM options before the user's own (Java
    takes the last of two settings of one option, so a user's --spark-conf still wins), its SQL
    settings where the user set none."""
    out = {**SMALL_JOB_SQL_CONF, **(conf or {})}
    extra = out.get("spark.driver.extraJavaOptions", "")
    out["spark.driver.extraJavaOptions"] = f"{SMALL_JOB_JVM_OPTIONS} {extra}".strip()
    return out


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
    if not master.strip():  # `--spark-master ""` meant local[*] without a word
        raise TraceError("the Spark master is empty: give its URL (local[*], spark://host:port, yarn ...), "
                         f"or leave it out for {DEFAULT_MASTER}")
    check_master_reachable(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    py4j_not_logged()
    jvm = None
    if SparkContext._gateway is None:  # else the JVM this process already runs is reused
        jvm = launch_jvm(master, lambda temp_dir: session_conf(master, conf, temp_dir))
        settings = jvm.settings
    else:
        settings = session_conf(master, conf)
    try:
        builder = SparkSession.builder.master(master).appName(app_name)
        for key, value in settings.items():
            builder = builder.config(key, value)
        with _own_sigint_handler():
            spark = _get_or_create(builder, master, None if master.startswith("local") else SESSION_START_TIMEOUT_S)
        spark.sparkContext.setLogLevel(os.environ.get("ADVISOR_SPARK_LOG", "off").upper())
        _quiet_query_context_loggers()
        if master.startswith("spark://"):
            _wait_for_an_executor(spark, master)
    except BaseException:  # a failed or interrupted start leaves no JVM behind
        if jvm is not None:
            jvm.stop()
        raise
    return spark


EXECUTOR_WAIT_S = 30.0  # a standalone master that has given the application no executor by then


def _wait_for_an_executor(spark, master: str, timeout_s: float = EXECUTOR_WAIT_S) -> None:
    """A standalone master takes the application even with no worker (or none with the cores
    and memory it asks for), and its jobs then wait forever, silently (Spark's warning is in
    the log this tool turns off). One line instead, once `timeout_s` has passed with no
    executor registered."""
    import time

    status = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + timeout_s
    while status.getExecutorMemoryStatus().size() < 2:  # the driver counts as one
        if time.monotonic() > deadline:
            spark.stop()
            raise TraceError(f"Spark master {master!r} took the application but gave it no executor "
                             f"within {timeout_s:g} s (no worker registered, or none with the free cores "
                             f"and memory asked for: see its web UI; --spark-conf spark.executor.memory=...)")
        time.sleep(0.2)


def _quiet_query_context_loggers() -> None:
    """PySpark's Python side logs a failed query's whole Java stack trace as JSON on stderr
    (its query-context loggers), before the exception that says the same in one line: off,
    as Spark's own logging is, unless ADVISOR_SPARK_LOG asks for it. They are made as
    PySpark makes them, since PySpark calls them with its own keywords."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # a PySpark without them
        return
    level = os.environ.get("ADVISOR_SPARK_LOG", "off").strip().upper() or "OFF"
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logger = PySparkLogger.getLogger(name)
        logger.setLevel(logging.CRITICAL + 1 if level == "OFF" else getattr(logging, level, logging.WARNING))


SESSION_START_TIMEOUT_S = 20.0  # a remote master that has not taken the application by then


@contextmanager
def _own_sigint_handler() -> Iterator[None]:
    """The SIGINT handler in place before the block is the one after it. Why: a new
    SparkContext installs PySpark's own, which calls into the JVM (`cancelAllJobs`) from inside
    the signal handler, on the connection of whatever call the main thread was making (a
    Ctrl-C during one read that call's answer as its own: "'str' object has no attribute
    'cancelAllJobs'", a Py4J traceback, then "internal error: Py4JError: Gateway must be
    connected to send cancel cmd.", exit 1), and stays installed after the session is stopped
    and its JVM killed. Ctrl-C stays a KeyboardInterrupt; the aggregation cancels its own jobs
    (`cancelJobGroup`) as it unwinds, and the JVM is killed when the session stops."""
    if threading.current_thread() is not threading.main_thread():
        yield  # (PySpark installs its handler from the main thread only)
        return
    previous = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if previous is not None:  # (None: a handler not installed from Python, left alone)
            signal.signal(signal.SIGINT, previous)


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
            stop_gateway()
            raise TraceError(f"Spark master {master!r} did not take the application within "
                             f"{timeout_s:g} s (unreachable, busy, or not a Spark master)")
    if "error" in outcome:
        raise TraceError(f"Spark could not start with master {master!r}: {_cause(outcome['error'])}") from None
    return outcome["spark"]


def _cause(exc: Exception) -> str:
    """What a failed start says, in a line: the Java exception's own message where Py4J wraps
    one ("An error occurred while calling None.org.apache...JavaSparkContext." names no cause;
    the next line, `: org.apache.spark.SparkException: Could not parse Master URL: 'x'`, does)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    java = next((line[2:] for line in lines[1:] if line.startswith(": ")), None)
    if java is None:
        return lines[0]
    kind, _, message = java.partition(": ")
    return message if message and "." in kind else java


def to_pandas(df, arrow_dtypes: bool = False):
    """A Spark DataFrame as pandas through Arrow record batches (`DataFrame.toArrow`), the
    fastest way across: no per-row Python objects on the way, and with `arrow_dtypes` no
    per-value conversion at the end either (pandas columns backed by the Arrow buffers)."""
    table = df.toArrow()
    if arrow_dtypes:
        import pandas as pd

        return table.to_pandas(types_mapper=pd.ArrowDtype)
    return table.to_pandas()
