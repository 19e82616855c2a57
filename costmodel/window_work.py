"""Window maintenance at the owner (dissertation 3.3.5), batch by batch: what it costs.

Every execution of the owner stages its input tuples; once `slide` tuples are staged the
window slides (a whole number of slides at once): the staged tuples become active, the oldest
expire so that at most `size` stay active, and the owner reads the active window's aggregate
once (the EE trigger fires on the insert that made it slide). As in the engine, the window's
statistics live in its metadata row and are updated as tuples activate and expire, so that
read is one row, not a scan of the active tuples. A window lives on its owner's partition, so
all of this is local work of the owner's transaction: it never locks or visits another
partition.

A time window is priced as a tuple window of its expected tuples: `Workload.window_tuples`
when full, and a slide of `slide / size` of that (tuples arrive at the batch rate).

Why here, with the plain data: the simulator charges this work to the owner's partition and
the advisor's busy-time estimate prices SPs the same way, so both read this one formula. It
takes its per-tuple prices from anything with `window_costs()` (the simulator's SimParams).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from costmodel.workload import Window, Workload


class WindowPrices(Protocol):
    """Seconds per tuple of window maintenance (engine_sim's SimParams is one)."""

    def window_costs(self) -> tuple[float, float, float, float]:
        """(insert, slide, expire, read) seconds per tuple."""
        ...


@dataclass
class WindowWork:
    """One window's maintenance over a run: per-batch CPU seconds and the tuple counts."""

    name: str
    owner: str
    seconds: np.ndarray  # per batch, before the service-time jitter
    rows: np.ndarray  # per batch: tuples inserted plus tuples read (the accesses a trace records)
    inserted: float
    slides: int  # slides (a batch may slide several times at once)
    sliding_batches: int  # batches that made the window slide (and read it)
    expired: float
    read: float
    active: float  # at the end of the run
    staged: float  # at the end of the run

    def to_dict(self) -> dict:
        return {"owner": self.owner, "inserted": self.inserted, "slides": self.slides,
                "sliding_batches": self.sliding_batches, "expired": self.expired,
                "read": self.read, "active": self.active, "staged": self.staged,
                "cpu_s": float(self.seconds.sum())}


def window_shape(workload: Workload, window: Window, scale: float) -> tuple[float, float]:
    """(size, slide) in tuples, at a batch size `scale` times the spec's."""
    if window.kind == "tuple":
        return float(window.size), float(window.slide)
    full = workload.window_tuples(window)
    if window.max_tuples is None:  # derived from the input rate: grows with the batches
        full *= scale
    return full, full * window.slide / window.size


def window_work(workload: Workload, window: Window, batches: int, scale: float,
                params: WindowPrices) -> WindowWork:
    """Replay the owner's window over `batches` batches; deterministic (no sampling)."""
    insert_s, slide_s, expire_s, read_s = params.window_costs()
    size, slide = window_shape(workload, window, scale)
    per_batch = workload.input_tuples(window.procedure) * scale
    seconds = np.zeros(batches)
    rows = np.full(batches, per_batch)
    staged = active = 0.0
    inserted = expired = read = 0.0
    slides = sliding = 0
    for b in range(batches):
        staged += per_batch
        inserted += per_batch
        work = per_batch * insert_s
        k = math.floor(staged / slide + 1e-9) if slide > 0 else 0
        if k:
            moved = k * slide
            staged -= moved
            active += moved
            gone = max(0.0, active - size)
            active -= gone
            slides += k
            sliding += 1
            expired += gone
            read += 1  # the aggregate, from the window's metadata row
            work += moved * slide_s + gone * expire_s + read_s
            rows[b] += 1
        seconds[b] = work
    return WindowWork(window.name, window.procedure, seconds, rows, inserted, slides, sliding,
                      expired, read, active, staged)
