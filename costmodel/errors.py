"""`UserError`: the base class of every error a user can cause and fix.

Each part derives its own: SpecError and DesignError here (the plain data every part reads),
AdvisorError (the search's options), TraceError, the engine's and the simulator's errors. The CLI catches `UserError` once: it prints `error: <message>` as one line
and exits with the error's `exit_code` (2: the input was wrong; a subclass may say 1: the input
was fine but the run failed). Anything else is a bug and is reported as an internal error.
"""
import errno
import math
import numbers


class UserError(ValueError):
    """A problem with what a user gave us (a file, a name, an option), said in one line.

    A ValueError, as the project's errors were before this base existed, so code that
    catches ValueError around a call keeps working."""

    exit_code = 2


class SpecError(UserError):
    """A workload spec (or statistics read as a workload) that cannot be read or does not make sense."""


class DesignError(UserError):
    """A design JSON that cannot be read or does not fit its workload."""


def finite_number(value) -> bool:
    """A number (not a bool) that is finite: an int of any size is, checked without the
    conversion to float that fails on a huge one (10**400)."""
    return not isinstance(value, bool) and (isinstance(value, numbers.Integral) or (
        isinstance(value, float) and math.isfinite(value)))


def finite_float(value) -> bool:
    """A JSON number (an int or a float, not a bool) that is finite as a float: an int past a
    float's range (10**400, which a JSON file may hold) is not. Why: `math.isfinite` raised
    OverflowError on it, an internal error where a file's number is checked."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def as_python_int(value):
    """A numpy integer (`for n in np.arange(...)`) as the Python int it is, so that checks and
    JSON see a plain int; anything else as given, for the caller's own check to judge."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, int)):
        return int(value)
    return value


def as_python_number(value):
    """A numpy scalar (`np.float32(0.5)`, a float32 column's value, `np.int64(4)`) as the Python
    number it is, so that checks see a number and JSON writes one (a float32 is no `float`: it
    was refused as "got 1000.0" of a rate in range); anything else as given."""
    if isinstance(value, numbers.Number) and not isinstance(value, (bool, int, float)) and hasattr(value, "item"):
        return value.item()
    return value


def is_a(value, cls: type) -> bool:
    """`isinstance`, also true of an object of a reloaded copy of `cls` (same module and name):
    a notebook's `%autoreload` makes a new class, and the objects made since are of that one.
    Why: a check that refused the project's own objects after a reload would be a false alarm."""
    return isinstance(value, cls) or any(c.__name__ == cls.__name__ and c.__module__ == cls.__module__
                                         for c in type(value).__mro__)


# a latency bound outside these is no bound a run can be held to: 1e308 s printed "inf ms",
# 1e-300 s "1e-297 ms"
MIN_LATENCY_BOUND_S, MAX_LATENCY_BOUND_S = 1e-6, 86_400.0


def check_latency_bound(bound, error: type[Exception] = UserError) -> None:
    """One `error` line where a mean batch latency bound (seconds) is no number, or is outside
    MIN_LATENCY_BOUND_S..MAX_LATENCY_BOUND_S (a microsecond to a day)."""
    if not (finite_number(bound) and MIN_LATENCY_BOUND_S <= bound <= MAX_LATENCY_BOUND_S):
        raise error(f"latency bound must be > 0 seconds, from {MIN_LATENCY_BOUND_S:g} to "
                    f"{MAX_LATENCY_BOUND_S:,.0f} (a day), got {bound!r}")


def check_seed(seed, error: type[UserError] = UserError) -> int:
    """A seed a user gave (the Python API's `seed=`): an integer >= 0, or one `error` line.
    Why: numpy's own refusal ('expected non-negative integer', or a TypeError from
    SeedSequence for a string) names neither the option nor the value."""
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
        raise error(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


# the errors of a disk that is full, read-only or not ours: the user's to fix, not a bug
DISK_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EIO")
                        if hasattr(errno, name))


def describe_os_error(exc: OSError) -> str:
    """One line: the file, what went wrong, and the errno's name (`ENOSPC`...)."""
    code = errno.errorcode.get(exc.errno, str(exc.errno))
    where = f"cannot write {exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc} ({code})"


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or SIGTERM, which unwinds as one) that `exc` was raised while handling, if
    any: its context or cause, at any depth. Such an error is the clean-up after the interrupt
    failing (Py4J's after a Ctrl-C in the middle of a call into the JVM raised
    `Py4JError("Gateway must be connected to send cancel cmd.")`), and the interrupt is what
    the user is told."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None
