"""A tiny discrete-event core in the spirit of SimPy: a clock, a heap of timed callbacks and
generator processes that yield delays.

Kept deliberately small and fast: an event is a plain tuple `(time, seq, fn, a, b)` in a
heapq (no per-event objects), `seq` breaks ties first-scheduled-first, and a callback is
called as `fn(time, a, b)` so handlers never look the clock up. The engine model
(`engine_sim.sim.model`) schedules its own callbacks; processes are for the few places
where a loop reads better than a chain of callbacks (the input generator).
"""
from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable, Generator

Handler = Callable[[float, Any, Any], None]


class Environment:
    """The clock and the event heap."""

    __slots__ = ("now", "heap", "seq", "events")

    def __init__(self) -> None:
        self.now = 0.0
        self.heap: list[tuple] = []
        self.seq = count()
        self.events = 0  # events processed so far

    def at(self, time: float, fn: Handler, a: Any = None, b: Any = None) -> None:
        """Call `fn(time, a, b)` at absolute `time` (never before now)."""
        heappush(self.heap, (time if time > self.now else self.now, next(self.seq), fn, a, b))

    def after(self, delay: float, fn: Handler, a: Any = None, b: Any = None) -> None:
        self.at(self.now + delay, fn, a, b)

    def process(self, gen: Generator[float, None, None], start: float | None = None) -> None:
        """Run a generator process: each value it yields is a delay before it resumes."""
        self.at(self.now if start is None else start, self._resume, gen)

    def _resume(self, time: float, gen: Generator[float, None, None], _unused: Any) -> None:
        try:
            delay = next(gen)
        except StopIteration:
            return
        self.at(time + delay, self._resume, gen)

    def run(self, until: float = float("inf")) -> float:
        """Process events in time order until none are left or the clock would pass `until`."""
        heap = self.heap
        pop = heappop
        n = len(heap)  # events counted as pushed minus left over: no counter in the loop
        seq_before = next(self.seq)
        try:
            if until == float("inf"):
                while heap:
                    t, _, fn, a, b = pop(heap)
                    self.now = t
                    fn(t, a, b)
            else:
                while heap and heap[0][0] <= until:
                    t, _, fn, a, b = pop(heap)
                    self.now = t
                    fn(t, a, b)
        finally:
            self.events += n + (next(self.seq) - seq_before - 1) - len(heap)
        return self.now
