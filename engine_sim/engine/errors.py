"""Errors the engine reports to users: one line, never a traceback."""
from costmodel.errors import UserError


class EngineError(UserError):
    """A run that cannot start as asked: a design that does not fit, a bad option, a workload
    whose procedure code is unknown (exit status 2)."""


class EngineFailure(EngineError):
    """A run that started and could not finish as asked: a deadline passed, a partition process
    died unexpectedly, a requested crash never happened (exit status 1: the run failed, the
    input was fine)."""

    exit_code = 1
