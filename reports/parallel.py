"""Worker processes for a report's independent sections (sensitivity, scaling, suggestions):
with `jobs` N, N - 1 workers and the calling process share the tasks.

Why not `multiprocessing`: the demo builds its report in a process with a live Spark gateway
and its threads, so forking it is unsafe; and a spawned or forkserver worker re-runs the
caller's main script when it has no `if __name__ == "__main__"` guard (a notebook user's
script, say). Each worker here is a fresh `python -c` that imports this module and nothing of
the caller's, then answers pickled tasks (a module-level function and its arguments: plain
records) on its stdin with pickled results on a pipe of its own, so nothing a task prints can
corrupt the answer.

A worker also sends back the simulations it ran (`reports.predict.SIMULATIONS`), and the
parent keeps them, so the process's cache holds what a serial run would have left in it.
Ctrl-C or an error in the parent kills every worker before the exception goes on.
"""
from __future__ import annotations

import itertools
import json
import os
import pickle
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future
from contextlib import suppress
from typing import Any, Callable

from advisor.parallel_runs import serial_picks, usable_cores  # (re-exported: the report's default jobs)
from advisor.sigterm import off_this_thread as sigterm_off_this_thread

# what a worker imports before its first task (while the parent does its own part)
PRELOAD = ("advisor.api", "engine_sim.sim", "reports.scaling", "reports.sensitivity", "reports.suggestions")
BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
        "from reports.parallel import serve; serve(int(sys.argv[2]))")


class InlinePool:
    """`jobs=1`: every task runs here, at once, in the order given (as a report always did)."""

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> Future:
        done: Future = Future()
        done.set_result(fn(*args, **kwargs))
        return done

    def submit_first(self, fn: Callable, *args: Any, **kwargs: Any) -> Future:
        """As `submit` (here, nothing waits: it runs at once)."""
        return self.submit(fn, *args, **kwargs)

    def work_here(self) -> None:
        """Nothing is left waiting: `submit` ran it."""

    def __enter__(self) -> "InlinePool":
        return self

    def __exit__(self, *exc) -> None:
        return None


class SectionPool:
    """`jobs - 1` worker processes and this one (`work_here`) taking submitted tasks in order;
    use as a context manager (on leaving, idle workers end; on an exception, Ctrl-C included,
    they are killed and reaped)."""

    def __init__(self, jobs: int):
        # (rank, order, task): `submit_first`'s tasks before the others, each kind in order;
        # the end-of-work marks (rank 2) after every task
        self._tasks: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._workers: list[subprocess.Popen] = []
        self._threads: list[threading.Thread] = []
        self._simulated: list[tuple] = []  # each answered task's new simulations
        try:
            for _ in range(jobs - 1):
                self._workers.append(self._start_worker())
        except BaseException:  # a worker that cannot start: none of those started stays
            self.kill()
            raise
        for worker in self._workers:
            thread = threading.Thread(target=self._feed, args=(worker,), daemon=True,
                                      name="report-section-feeder")
            thread.start()
            self._threads.append(thread)

    @staticmethod
    def _start_worker() -> subprocess.Popen:
        read_end, write_end = os.pipe()
        try:
            worker = subprocess.Popen([sys.executable, "-c", BOOT, json.dumps(sys.path), str(write_end)],
                                      stdin=subprocess.PIPE, pass_fds=(write_end,))
        finally:
            os.close(write_end)
        worker.answers = os.fdopen(read_end, "rb")  # type: ignore[attr-defined]
        return worker

    def submit(self, fn: Callable, *args: Any, **kwargs: Any) -> Future:
        """Queue `fn(*args, **kwargs)` (fn: a module-level function; arguments that pickle)."""
        return self._queue(1, fn, args, kwargs)

    def submit_first(self, fn: Callable, *args: Any, **kwargs: Any) -> Future:
        """As `submit`, ahead of every `submit`ted task no one has taken yet: for a task the
        caller will soon wait for."""
        return self._queue(0, fn, args, kwargs)

    def _queue(self, rank: int, fn: Callable, args: tuple, kwargs: dict) -> Future:
        future: Future = Future()
        task = pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        self._tasks.put((rank, next(self._order), (future, task, lambda: fn(*args, **kwargs))))
        return future

    def work_here(self) -> None:
        """Run the tasks no worker has taken yet in this process (this core would otherwise
        wait); an exception, Ctrl-C included, goes on from here."""
        while True:
            try:
                _, _, item = self._tasks.get_nowait()
            except queue.Empty:
                return
            future, _, run_here = item
            if future.set_running_or_notify_cancel():
                future.set_result(run_here())

    def _feed(self, worker: subprocess.Popen) -> None:
        """One worker's loop (SIGTERM left to the main thread: `advisor.sigterm`)."""
        with sigterm_off_this_thread():
            self._feeding(worker)

    def _feeding(self, worker: subprocess.Popen) -> None:
        """Hand the worker the next task, wait for its answer, set the future; again."""
        while True:
            _, _, item = self._tasks.get()
            if item is None:
                return
            future, task, _ = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                worker.stdin.write(task)
                worker.stdin.flush()
                ok, value, simulated = pickle.load(worker.answers)
            except Exception as exc:  # noqa: BLE001 - the worker died (killed, out of memory)
                future.set_exception(RuntimeError(f"a report worker ended unexpectedly ({exc!r})"))
                return
            self._simulated.append(simulated)  # kept by `close`, in the caller's thread
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def __enter__(self) -> "SectionPool":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.close()
        else:
            self.kill()

    def close(self) -> None:
        """No more tasks: each worker ends after its last one; what they simulated is kept here
        (`reports.predict.SIMULATIONS`)."""
        for _ in self._threads:
            self._tasks.put((2, next(self._order), None))
        for thread in self._threads:
            thread.join()
        for worker in self._workers:
            worker.stdin.close()
            worker.wait()
            worker.answers.close()
        from reports.predict import SIMULATIONS

        for news in self._simulated:
            SIMULATIONS.absorb(news)

    def kill(self) -> None:
        """End every worker now (Ctrl-C, an error): none outlives the report."""
        for _ in self._threads:  # a feeder waiting for a task ends too
            self._tasks.put((2, next(self._order), None))
        for worker in self._workers:
            worker.kill()
        for worker in self._workers:
            worker.wait()
            for stream in (worker.stdin, worker.answers):
                with suppress(OSError):  # a pipe to a killed worker may fail to flush
                    stream.close()


MIN_PROCESSES = 4  # what `jobs` may always ask for, on any host


def section_pool(jobs: int) -> InlinePool | SectionPool:
    """Where a report's sections run: here (`jobs` <= 1), or here and in `jobs - 1` worker
    processes, at most as many processes as this one may use cores (or MIN_PROCESSES): more run
    nothing sooner, and each costs its start (`tune -j 1000` started a thousand), while the
    answer is the same for any number."""
    jobs = min(jobs, max(usable_cores(), MIN_PROCESSES))
    return InlinePool() if jobs <= 1 else SectionPool(jobs)


def serve(answer_fd: int) -> None:
    """A worker's life: preload, then answer tasks from stdin until it closes. Ctrl-C is the
    parent's to handle (a terminal sends it to the whole group): the parent kills workers."""
    import importlib
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.dup2(2, 1)  # what a task prints goes to stderr, never into the caller's stdout (`--json`)
    answers = os.fdopen(answer_fd, "wb")
    for name in PRELOAD:
        importlib.import_module(name)
    tasks = sys.stdin.buffer
    with serial_picks():  # the sections are what runs side by side: a pick here forks nothing
        _answer(tasks, answers)


def _answer(tasks, answers) -> None:
    """Answer pickled tasks from `tasks` on `answers` until `tasks` ends."""
    from reports.predict import SIMULATIONS

    while True:
        try:
            fn, args, kwargs = pickle.load(tasks)
        except EOFError:
            return
        known, hits, misses = SIMULATIONS.keys(), SIMULATIONS.hits, SIMULATIONS.misses
        try:
            value, ok = fn(*args, **kwargs), True
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
            value, ok = exc, False
        try:
            payload = pickle.dumps((ok, value, SIMULATIONS.news(known, hits, misses)),
                                   protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - an exception or result that does not pickle
            payload = pickle.dumps((False, RuntimeError(f"a report section's answer does not pickle: {exc}"),
                                    ([], 0, 0)))
        answers.write(payload)
        answers.flush()
