"""How the engine starts its partitions' processes: multiprocessing's forkserver, started once a
process with the partition's modules preloaded, deaf to a Ctrl-C meant for the driver, its
socket in an owned temporary directory (swept after a SIGKILL), and this program's main module
kept from running again in every partition.

Why a module of its own: `engine_sim.engine.multiproc` runs the partitions; this is what it
takes to start a process safely from whatever program calls the engine (a CLI, a notebook, a
user's script without a main guard).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

from costmodel.temp_dirs import owned_temp_dir, sweep_abandoned_dirs

# the guard first: it makes the forkserver drop a connection that is not a request (forkserver_guard.py)
_PRELOAD = ["engine_sim.engine.forkserver_guard", "engine_sim.engine.site", "engine_sim.engine.plan",
            "engine_sim.workloads.voter", "costmodel.design", "numpy"]
MP_TEMP_PREFIX = "pymp-"  # the name multiprocessing gives its own temporary directory
MP_SOCKET_NAME = len("listener-") + 8  # the forkserver's socket in it: a prefix and 8 random characters


def forkserver_context():
    """multiprocessing's forkserver context, its server started (once a process) deaf to Ctrl-C,
    its temporary directory an owned one, its preload the partition's modules."""
    _own_mp_temp_dir()
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    _start_forkserver_deaf_to_ctrl_c()
    return ctx


def _start_forkserver_deaf_to_ctrl_c() -> None:
    """Start multiprocessing's forkserver (once a process) with SIGINT and SIGHUP blocked. It
    shares the terminal with this process, and a Ctrl-C while it imports its preload (numpy,
    a few tenths of a second) printed a traceback of its own under the command's one line. A
    blocked signal stays blocked across the fork and exec, and the forkserver ignores SIGINT
    once started; this process answers the Ctrl-C for the run (it stops the partitions).
    Blocked, not ignored here: a Ctrl-C that came while this process ignored SIGINT was lost,
    and the run went on to its end (exit 0); blocked, it waits and is delivered here as the
    block ends. The resource tracker, which the forkserver's start starts first, is started
    before the block: its start unblocks SIGINT (it keeps it from the tracker with a block of
    its own), which let the forkserver hear a Ctrl-C after all."""
    from multiprocessing import forkserver, resource_tracker

    if threading.current_thread() is not threading.main_thread():  # (signals are the main thread's)
        forkserver.ensure_running()
        return
    resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGHUP})
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def forkserver_end() -> tuple[int, str] | None:
    """(pid, how it ended) of this process's forkserver once it has ended; None while it runs
    (or where that cannot be told). It stays unreaped (WNOWAIT): multiprocessing reaps it and
    starts a new one for the next run."""
    from multiprocessing import forkserver

    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    if not pid or not hasattr(os, "waitid"):
        return None
    try:
        ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped already
        return None
    if ended is None or ended.si_pid == 0:
        return None
    if ended.si_code == os.CLD_EXITED:
        how = f"exited with status {ended.si_status}"
        if ended.si_status == 1:
            how += " (an error of its own: ADVISOR_DEBUG=1 shows its traceback)"
        return pid, how
    return pid, f"was killed by signal {ended.si_status}"


@contextmanager
def main_module_hidden() -> Iterator[None]:
    """While a partition's process starts, multiprocessing is not told of this program's main
    module, so the process does not run it again. Why: a user's script that calls
    `advisor.validate` at its top level (no `if __name__ == "__main__":`) ran again in every
    partition as it started, which then tried to start a run of its own: 147 lines of three
    tracebacks and a failed run. A partition needs nothing of the main module: its code and
    its arguments are all the engine's."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def _own_mp_temp_dir() -> None:
    """multiprocessing keeps the forkserver's socket in a `pymp-*` directory of its own making,
    removed at exit but not after a SIGKILL, and then nobody can tell whose it was. Make that
    directory here instead, as an owned one (it names this process), before multiprocessing
    makes one: its removal at exit is multiprocessing's as before, and what a killed run left
    is swept by the next (a `pymp-*` directory without an owner file is not ours, and stays).
    Where multiprocessing keeps its directory elsewhere, it makes its own, as before. The
    directory holds a socket, so under a long TMPDIR it goes to /tmp (Python 3.11's own
    choice would fail there with "AF_UNIX path too long")."""
    from multiprocessing import process, util

    sweep_abandoned_dirs(MP_TEMP_PREFIX)
    config = getattr(process.current_process(), "_config", None)
    if not isinstance(config, dict) or config.get("tempdir") is not None:
        return  # made already (by an earlier run of this process, or by multiprocessing)
    folder = owned_temp_dir(MP_TEMP_PREFIX, longest_socket_name=MP_SOCKET_NAME)
    util.Finalize(None, shutil.rmtree, args=(str(folder), True), exitpriority=-100)
    config["tempdir"] = str(folder)
