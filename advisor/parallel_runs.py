"""The simulations of one pick, spread over forked worker processes.

Why: a pick simulates dozens of designs one after the other (the screening round, then each
step of the simulated search tries its few best moves), and the simulator is pure Python on
one core. The designs of one round do not depend on each other, so on a machine of several
cores they can run side by side. The answers do not change: each simulation is deterministic
and independent, the pick still asks for them in its own order, and a result computed ahead
is only counted when the pick asks for it (`advisor.simulation_runs.SimulationRuns.prefetch`), so
the same input gives the same design, figures and counts with any number of workers. A
migration plan's designs (`advisor.migration_pick`), simulated after the pick and all known at
once, go to the workers as one batch (`each_side_by_side`), answered in their own order.

The workers are forked, so they inherit the pick's workload, graph and simulator and nothing
is pickled but a design's arrays and the results. Forking is only done where it is safe
(`fork_is_safe`): on Linux, from a process that is not itself a worker, whose only threads
are its main one and the CLI's spinner (a Spark session's threads, a notebook kernel's: the
pick then runs serially). A report's sections run in processes of their own
(`reports.parallel`); within those, and in the report's own process, picks run serially
(`serial_picks`), so the cores are not shared twice over.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

MAX_PROCESSES = 8  # a round has at most a dozen designs; more processes would mostly wait
THREADS_FORK_SAFE = frozenset({"advisor-spinner"})  # our own threads, which never touch a lock a worker needs

_serial_depth = 0  # > 0 inside `serial_picks`
_simulate: Callable[[Any], Any] | None = None  # what a forked worker runs (inherited, never pickled)


def usable_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def fork_is_safe() -> bool:
    """Whether this process can fork workers without risking a lock another thread held: no
    Python thread runs but the main one and ours (`sys._current_frames` sees the threads
    `threading` does not list too: a test runner's, a Spark gateway's). Threads outside
    Python (a BLAS pool, an allocator's) fork safely: their libraries reset at the fork."""
    ours = {t.ident for t in threading.enumerate()
            if t is threading.main_thread() or t.name in THREADS_FORK_SAFE}
    return (sys.platform.startswith("linux") and not multiprocessing.current_process().daemon
            and threading.current_thread() is threading.main_thread()
            and set(sys._current_frames()) <= ours)


def pick_processes(jobs: int | None) -> int:
    """The processes a pick may simulate in, itself included: `jobs` (None: the usable cores),
    at most MAX_PROCESSES (`--jobs 1000` forks no more), or 1 where forking is not safe or
    inside `serial_picks`."""
    if _serial_depth or not fork_is_safe():
        return 1
    return max(1, min(usable_cores() if jobs is None else jobs, MAX_PROCESSES))


@contextmanager
def serial_picks() -> Iterator[None]:
    """Within the block, every pick runs its simulations in this process (a caller that runs
    picks side by side already, as a report does)."""
    global _serial_depth
    _serial_depth += 1
    try:
        yield
    finally:
        _serial_depth -= 1


def _start_worker() -> None:
    """A worker leaves Ctrl-C to its parent (which ends it), ends at once on SIGTERM (the
    CLI's own handler, inherited, would unwind the parent's command in it) and writes to
    fresh standard streams (the parent's may have been locked by its spinner at the fork)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.stdout = open(os.devnull, "w")
    sys.stderr = os.fdopen(os.dup(2), "w")


def _run_one(request: Any) -> tuple[bool, Any]:
    """(True, outcome) or (False, the exception), so an exception never ends the pool."""
    try:
        return True, _simulate(request)
    except Exception as exc:  # the parent decides what it means
        return False, exc


def _forked_call(fn: Callable[..., Any], args: tuple, answer) -> None:
    """A `CallAhead` child's life: the call, its answer on the pipe, nothing else."""
    _start_worker()
    try:
        reply = (True, fn(*args))
    except Exception as exc:  # handed to the parent, which raises it
        reply = (False, exc)
    answer.send(reply)
    answer.close()


class CallAhead:
    """`fn(*args)` in a forked process while this one goes on; `get()` returns its value (or
    raises its exception). Use as a context manager: leaving it ends the process if it still
    runs (an error or Ctrl-C meanwhile). Only where `pick_processes` allows more than one."""

    def __init__(self, fn: Callable[..., Any], *args: Any):
        context = multiprocessing.get_context("fork")
        self._answers, answer = context.Pipe(duplex=False)
        self._process = context.Process(target=_forked_call, args=(fn, args, answer), daemon=True)
        self._process.start()
        answer.close()

    def get(self) -> Any:
        try:
            ok, value = self._answers.recv()
        except EOFError:  # the process died without an answer (killed, say)
            raise RuntimeError("a forked search process ended without an answer") from None
        self._process.join()
        if not ok:
            raise value
        return value

    def __enter__(self) -> "CallAhead":
        return self

    def __exit__(self, *exc) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._answers.close()


class RunPool:
    """`workers` forked processes that run `simulate(request)`; close it (or use `with`)."""

    def __init__(self, simulate: Callable[[Any], Any], workers: int):
        global _simulate
        _simulate = simulate  # set before the fork, so each worker (and any replacement) has it
        try:
            self._pool = multiprocessing.get_context("fork").Pool(workers, initializer=_start_worker)
        except BaseException:
            _simulate = None
            raise

    def submit(self, requests: Sequence[Any]) -> list["Later"]:
        """Start the requests (the idle worker takes the next); one `Later` each, in order,
        each ready as soon as its own request is done (not when the last of them is)."""
        return [Later(self._pool.apply_async(_run_one, (request,))) for request in requests]

    def close(self) -> None:
        """Ends the workers at once (nothing they hold is kept) and reaps them."""
        global _simulate
        self._pool.terminate()
        self._pool.join()
        _simulate = None

    def __enter__(self) -> "RunPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def each_side_by_side(fn: Callable[[Any], Any], items: Sequence[Any], processes: int,
                      first: Sequence[int] | None = None) -> list[tuple[bool, Any]]:
    """(True, fn(item)) or (False, the exception it raised) for each of `items`, in their
    order: with `processes` > 1, from that many forked workers, each taking the next item as
    it frees up (`first`: the order they are handed out in, e.g. the longest guessed first,
    so none is left alone at the end; the answers keep the items' order), this process only
    waiting; with one process (or one item), here, one after the other. Why: a batch of
    independent deterministic simulations (a migration plan's designs) gives the same answers
    wherever each runs, so only the wall time changes. Only where `pick_processes` allows it."""
    if processes < 2 or len(items) < 2:
        return [_answered_here(fn, item) for item in items]
    order = list(range(len(items))) if first is None else list(first)
    if sorted(order) != list(range(len(items))):
        raise ValueError(f"`first` must order every one of the {len(items)} items once, got {order}")
    with RunPool(lambda k: fn(items[k]), min(processes, len(items))) as pool:
        answers = dict(zip(order, pool.submit(order)))
        return [answers[k].get() for k in range(len(items))]


def _answered_here(fn: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
    """`_run_one`'s answer, computed in this process (so both paths answer alike)."""
    try:
        return True, fn(item)
    except Exception as exc:  # the caller decides what it means, as with a worker's
        return False, exc


class Later:
    """One request's answer from a `RunPool.submit`: `get()` waits for it."""

    def __init__(self, handle: Any):
        self._handle = handle

    def get(self) -> tuple[bool, Any]:
        """(True, outcome) or (False, the exception the simulation raised)."""
        return self._handle.get()
