"""The Spark JVM this process starts and holds: its process group, its output file, its
owned temporary directory, and what Py4J would otherwise log about it.

Why a module of its own: `traces.spark_session` decides what session to start (master,
settings, timeouts); this owns the JVM process behind it, so that whatever happens to the
command (an error, a Ctrl-C, SIGTERM, a SIGKILL of an earlier run) no JVM and none of its
files outlive it.
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from costmodel.signals import deferred as _signals_deferred
from costmodel.temp_dirs import owned_temp_dir, sweep_abandoned_dirs
from traces.errors import TraceError

JVM_TEMP_PREFIX = "advisor-jvm-"  # the owned temporary directory of each JVM started here
JVM_OUTPUT = "jvm-output.log"


@dataclass
class SparkJvm:
    """A Spark JVM this process started: its process (the leader of its own process group),
    the settings it was started with, and its owned temporary directory."""
    proc: subprocess.Popen
    settings: dict[str, str]
    temp_dir: Path

    def stop(self) -> None:
        """Kill the JVM and every process it started, then remove its temporary files. SIGKILL:
        the session is stopped or abandoned, so nothing in the JVM is worth a shutdown, and its
        shutdown hooks' work (removing Spark's directories) is done here, wholly."""
        from pyspark import SparkContext

        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is gone already
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass  # SIGKILL was sent to the whole group: its files are removed below either way
        gateway = SparkContext._gateway
        if gateway is not None and getattr(gateway, "proc", None) is self.proc:
            SparkContext._gateway = SparkContext._jvm = None  # a later session starts a new JVM
            SparkContext._active_spark_context = None
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        if self in _JVMS:
            _JVMS.remove(self)

    def first_output_line(self) -> str:
        """The JVM's first line of output that is not a warning: the cause of a failed start
        (what follows it is the JVM's "could not create..." and a stack trace)."""
        try:
            lines = (self.temp_dir / JVM_OUTPUT).read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return next((line.strip() for line in lines if line.strip() and not line.startswith("WARNING")), "")


_JVMS: list[SparkJvm] = []  # the JVMs this process started and has not stopped


@atexit.register
def _stop_jvms() -> None:
    """At exit (also after Ctrl-C or SIGTERM), stop every JVM this process started: none
    outlives the command, and their temporary directories go with them."""
    for jvm in list(_JVMS):
        jvm.stop()


def launch_jvm(master: str, settings_for: Callable[[Path], dict[str, str]]) -> SparkJvm:
    """Start the driver JVM through PySpark's own launcher (`launch_gateway`), holding on to
    its process from the moment it exists: a Ctrl-C or SIGTERM while the JVM starts, or a JVM
    that cannot start, stops it and removes its files before the error goes up.
    `settings_for(temp_dir)`: the Spark settings, given the JVM's owned temporary directory."""
    from pyspark import SparkConf, SparkContext, java_gateway

    sweep_abandoned_dirs(JVM_TEMP_PREFIX)  # what runs killed with SIGKILL left
    py4j_not_logged()
    temp_dir = owned_temp_dir(JVM_TEMP_PREFIX)
    settings = settings_for(temp_dir)
    started: list[subprocess.Popen] = []

    class TrackedPopen(subprocess.Popen):
        """The launcher's Popen, recording the process before a signal can interrupt."""

        def __init__(self, *args, **kwargs) -> None:
            with _signals_deferred():
                super().__init__(*args, **kwargs)
                started.append(self)

    popen_kwargs: dict = {"start_new_session": True}
    quiet = os.environ.get("ADVISOR_SPARK_LOG", "off").strip().lower() in ("", "off")
    output = open(temp_dir / JVM_OUTPUT, "wb") if quiet else None
    if output is not None:
        popen_kwargs.update(stdout=output, stderr=output)
    saved_popen, saved_tempdir = java_gateway.Popen, tempfile.tempdir
    java_gateway.Popen = TrackedPopen
    tempfile.tempdir = str(temp_dir)  # the launcher's connection-file directory goes in there too
    try:
        gateway = java_gateway.launch_gateway(SparkConf(loadDefaults=False).setAll(settings.items()),
                                              popen_kwargs=popen_kwargs)
        jvm = SparkJvm(gateway.proc, settings, temp_dir)
        _JVMS.append(jvm)  # stopped at exit at the latest
    except BaseException as exc:
        failed = SparkJvm(started[0], settings, temp_dir) if started else None
        cause = failed.first_output_line() if failed is not None else ""
        if failed is not None:
            failed.stop()
        else:
            shutil.rmtree(temp_dir, ignore_errors=True)
        if not isinstance(exc, Exception):
            raise  # Ctrl-C, SIGTERM: the caller says so
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TraceError(f"Spark could not start with master {master!r}: {first}"
                         + (f" (the JVM said: {cause})" if cause else "")) from None
    finally:
        java_gateway.Popen, tempfile.tempdir = saved_popen, saved_tempdir
        if output is not None:
            output.close()
    SparkContext._ensure_initialized(gateway=gateway)
    return jvm


def py4j_not_logged() -> None:
    """Nothing Py4J logs reaches the terminal: what it logs on the root logger is filtered
    there, and its own loggers (`py4j.clientserver`, `py4j.java_gateway`) stop at `py4j`, which
    has a handler that drops everything. Why the second: Py4J's first root-logger call
    (`logging.exception("KeyboardInterrupt while sending command.")`, on a Ctrl-C during a call
    into the JVM) gives the root logger a stderr handler (`logging.basicConfig`), and its own
    loggers' records then reached it: "ERROR:py4j.clientserver:Exception occurred while
    shutting down connection" and a traceback above the command's `interrupted`."""
    root = logging.getLogger()
    if not any(isinstance(f, Py4jCallErrorsNotLogged) for f in root.filters):
        root.addFilter(Py4jCallErrorsNotLogged())
    logging.getLogger("py4j").propagate = False


class Py4jCallErrorsNotLogged(logging.Filter):
    """Drops what py4j logs on the root logger: every call into the JVM that fails (the JVM
    stopped, a Ctrl-C or SIGTERM in the middle of a call) is logged there, traceback and all,
    and then raised. The raised error is what the caller reports, once, in one line."""

    def __init__(self) -> None:
        super().__init__()
        import py4j

        self.py4j_dir = os.path.dirname(py4j.__file__) + os.sep

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.pathname.startswith(self.py4j_dir)


def stop_gateway() -> None:
    """Stop the JVM a session start left behind (it would otherwise outlive the error)."""
    from pyspark import SparkContext

    gateway = getattr(SparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    for jvm in list(_JVMS):
        if jvm.proc is proc:
            jvm.stop()
            return
    if proc is not None:  # a JVM this module did not start
        proc.kill()
        proc.wait(timeout=10)
