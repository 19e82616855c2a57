"""The advisor's own user error: an option or request its search refuses. The CLI prints it
as one line and exits with `exit_code` (see costmodel.errors.UserError, the one base)."""
from costmodel.errors import UserError


class AdvisorError(UserError):
    """A problem with what a user asked of the advisor (an option, a name, a combination)."""
