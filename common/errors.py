"""`UserError`: the base class of every error a user can cause and fix.

Each package derives its own (AdvisorError and its family, TraceError, the engine's and the
simulator's errors). The CLI catches `UserError` once: it prints `error: <message>` as one line
and exits with the error's `exit_code` (2: the input was wrong; a subclass may say 1: the input
was fine but the run failed). Anything else is a bug and is reported as an internal error.
"""


class UserError(ValueError):
    """A problem with what a user gave us (a file, a name, an option), said in one line.

    A ValueError, as AdvisorError and TraceError were before this base existed, so code that
    catches ValueError around a call keeps working."""

    exit_code = 2
