"""Progress lines for the aggregation: one per step of the job, one per finished Spark stage.

PySpark has no SparkListener API, so a daemon thread polls the status tracker and prints a
line when a stage it saw running is no longer active.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator


_STDERR = threading.Lock()


def stderr_line(text: str) -> None:
    """One whole line on stderr: the steps run in threads, and `print` writes a line's text
    and its end separately, so two of them interleaved into one line."""
    with _STDERR:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


class Progress:
    """`with progress.step("per-procedure statistics"): ...` prints start and end lines."""

    def __init__(self, total_steps: int, emit: Callable[[str], None] | None = stderr_line,
                 prefix: str = "aggregate"):
        self.total = total_steps
        self.done = 0
        self.emit = emit
        self.prefix = prefix
        self.started = time.perf_counter()
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        if self.emit is not None:
            self.emit(f"{self.prefix}: {text}")

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        """Numbered start and end lines; steps may run in parallel threads."""
        with self._lock:
            self.done += 1
            number = self.done
        t0 = time.perf_counter()
        self.line(f"[{number}/{self.total}] {label} ...")
        yield
        self.line(f"[{number}/{self.total}] {label}: done in {time.perf_counter() - t0:.1f} s")

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


class StageWatcher:
    """Polls `sparkContext.statusTracker()`; prints one line per completed stage."""

    def __init__(self, spark, progress: Progress, interval: float = 0.5):
        self.tracker = spark.sparkContext.statusTracker()
        self.progress = progress
        self.interval = interval
        self._running: dict[int, tuple[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stage-watcher", daemon=True)

    def __enter__(self) -> "StageWatcher":
        if self.progress.emit is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._poll()
            except Exception:  # noqa: BLE001 - progress is best effort, never fails the job
                return

    def _poll(self) -> None:
        active = set(self.tracker.getActiveStageIds())
        for stage_id in active - set(self._running):
            info = self.tracker.getStageInfo(stage_id)
            if info is not None:
                self._running[stage_id] = (info.name, info.numTasks)
        for stage_id in set(self._running) - active:
            name, tasks = self._running.pop(stage_id)
            call = name.split(" at ")[0]
            shown = "" if "$" in call else f": {call}"  # a Scala closure's name means nothing to a user
            self.progress.line(f"    spark stage {stage_id} finished ({tasks} tasks){shown}")
