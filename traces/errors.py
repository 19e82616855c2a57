"""User-facing trace errors: the CLI prints them as one line and exits with `exit_code`."""


class TraceError(ValueError):
    """A trace or statistics directory that cannot be read, or a bad option for a trace job."""

    exit_code = 2


class JavaError(TraceError):
    """Java is missing or too old for PySpark; raised before Spark starts."""
