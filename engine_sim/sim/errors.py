"""The simulator's user-facing error: one line, exit code 2 (see advisor.errors)."""
from advisor.errors import AdvisorError


class SimError(AdvisorError):
    """A simulation that cannot run as asked (bad option, design that does not fit)."""
