"""User-facing errors of the advisor: the CLI prints them as one line and exits with
`exit_code` (see common.errors.UserError)."""
from common.errors import UserError


class AdvisorError(UserError):
    """Any problem with what a user gave the advisor (a file, a name, an option)."""


class SpecError(AdvisorError):
    """A workload spec that cannot be read or does not make sense."""


class DesignError(AdvisorError):
    """A design JSON that cannot be read or does not fit its workload."""
