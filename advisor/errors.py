"""User-facing errors: the CLI prints them as one line and exits with `exit_code`."""


class AdvisorError(ValueError):
    """Any problem with what a user gave us (a file, a name, an option)."""

    exit_code = 2


class SpecError(AdvisorError):
    """A workload spec that cannot be read or does not make sense."""


class DesignError(AdvisorError):
    """A design JSON that cannot be read or does not fit its workload."""
