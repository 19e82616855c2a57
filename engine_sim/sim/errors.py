"""The simulator's user-facing error: one line, exit code 2 (see costmodel.errors)."""
from costmodel.errors import UserError


class SimError(UserError):
    """A simulation that cannot run as asked (bad option, design that does not fit)."""
