"""SIGTERM while METIS runs.

METIS (inside pymetis) installs a SIGTERM handler of its own for the length of each call and,
when it fires, jumps out of the partitioning: the call says "Failed during initial
partitioning" and returns what it had, so the command went on and wrote its design (exit 0),
or crashed. A SIGTERM meant for the command (which unwinds it, exit 143: `advisor.cli.app`)
was lost whenever it arrived during a METIS call (3 times in 12 here, in
`test_sigterm_to_the_cli_ends_its_workers_and_writes_nothing`).

`held()` blocks SIGTERM in the main thread around such a call: one that arrives meanwhile
waits, and reaches Python's own handler (METIS puts it back) as the call returns. The kernel
hands a process's signal to any thread that does not block it, and METIS's handler would then
run in that thread (a hang, here), so `held()` blocks only where no other thread could take
it: every other thread of the process (`/proc/self/task`) is one of ours that leaves SIGTERM to
the main thread (`off_this_thread`: the CLI's spinner, a report's feeders). The command line
keeps numpy's BLAS to one thread (`advisor.cli`) for that. Elsewhere (a notebook's kernel
threads, a Spark gateway's, not Linux) the call runs as it did.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_CAN_BLOCK = hasattr(signal, "pthread_sigmask")
_OURS: set[int] = set()  # native ids of our threads that block SIGTERM


@contextmanager
def off_this_thread() -> Iterator[None]:
    """For a helper thread's whole run: SIGTERM blocked here, so the main thread takes it."""
    if not _CAN_BLOCK:
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    me = threading.get_native_id()
    _OURS.add(me)
    try:
        yield
    finally:
        _OURS.discard(me)


def _only_the_main_thread_takes_it() -> bool:
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        tasks = {int(task) for task in os.listdir("/proc/self/task")}
    except (OSError, ValueError):
        return False
    return tasks - _OURS == {threading.get_native_id()}


@contextmanager
def held() -> Iterator[None]:
    """SIGTERM held back for the block where that is safe (see the module), then delivered."""
    if not _CAN_BLOCK or not _only_the_main_thread_takes_it():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
