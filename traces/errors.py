"""User-facing trace errors: the CLI prints them as one line and exits with `exit_code`
(see costmodel.errors.UserError)."""
from costmodel.errors import UserError


class TraceError(UserError):
    """A trace or statistics directory that cannot be read, or a bad option for a trace job."""


class JavaError(TraceError):
    """Java is missing or too old for PySpark; raised before Spark starts."""
