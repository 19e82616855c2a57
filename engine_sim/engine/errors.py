"""Errors the engine reports to users: one line, exit status 2 (bad input)."""
from advisor.errors import AdvisorError


class EngineError(AdvisorError):
    """A run that cannot start as asked: a design that does not fit, a bad option, a workload
    whose procedure code is unknown."""
