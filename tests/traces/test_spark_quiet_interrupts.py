"""A Ctrl-C in the middle of a call into Spark's JVM is the command's `interrupted`, and nothing
else reaches the terminal: not PySpark's own SIGINT handler (it called into the JVM from inside
the handler, on the connection of the call it interrupted), not what Py4J logs while it cleans
up, not PySpark's warning that the stop failed, not an error Py4J's clean-up raised instead of
the KeyboardInterrupt."""
from __future__ import annotations

import logging
import signal
import warnings
from pathlib import Path

import pytest

from traces.aggregate import _as_trace_error, _stop


def _raised_while_interrupted(error: Exception) -> Exception:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise error
    except Exception as exc:  # noqa: BLE001
        return exc


def test_an_error_of_the_clean_up_after_a_ctrl_c_is_the_ctrl_c():
    info = type("Info", (), {"path": Path("trace")})()
    raised = _raised_while_interrupted(RuntimeError("Gateway must be connected to send cancel cmd."))
    assert isinstance(_as_trace_error(raised, info), KeyboardInterrupt)
    plain = _as_trace_error(RuntimeError("Gateway must be connected to send cancel cmd."), info)
    assert "the Spark job failed" in str(plain)


def test_a_stop_that_warns_says_nothing(recwarn):
    class Session:
        def stop(self) -> None:
            warnings.warn("Unable to cleanly shutdown Spark JVM process.", RuntimeWarning)

    _stop(Session())
    assert not [w for w in recwarn if "cleanly shutdown" in str(w.message)]


@pytest.mark.spark
def test_a_started_session_keeps_the_sigint_handler_and_py4j_quiet(spark, capsys):
    handler = signal.getsignal(signal.SIGINT)
    assert getattr(handler, "__module__", "") != "pyspark.core.context", handler  # PySpark's own
    assert logging.getLogger("py4j").propagate is False
    root_handlers = list(logging.getLogger().handlers)
    try:
        logging.basicConfig()  # what Py4J's first root-logger call does
        logging.getLogger("py4j.clientserver").error("Exception occurred while shutting down connection")
    finally:
        for extra in [h for h in logging.getLogger().handlers if h not in root_handlers]:
            logging.getLogger().removeHandler(extra)
    assert "shutting down" not in capsys.readouterr().err
