"""Window tables (dissertation 3.3.5): S-Store's third kind of state, private to its owner SP.

A window is a table on its owner's partition. Each row is one tuple, keyed by its sequence
number in the window (0, 1, 2, ... in arrival order) and holding `(timestamp_us, tuple)`; one
metadata row (key -1) holds `(active_lo, stage_lo, next_seq, end_us)`: rows in
[active_lo, stage_lo) are ACTIVE (visible), rows in [stage_lo, next_seq) are STAGED
(maintained, invisible). Every execution of the owner (one per batch, in batch order) runs
`step` first:

- tuple window: each tuple of its input batch is staged; whenever `slide` tuples are staged
  the window slides: those become active and the oldest active tuples expire so that at most
  `size` stay active;
- time window: windows end at multiples of `slide` seconds (`end_us` is the end of the next
  one). A batch whose timestamp (`batch_timestamp_us`) reaches `end_us` completes it: the
  window slides to the newest complete end E (the largest multiple of slide <= the batch's
  timestamp): staged tuples older than E become active, active tuples older than E - size
  expire; then the batch's own tuples are staged (they belong to a later window).

When the window slid, the owner reads the whole active window (an aggregate of its tuples,
folded into what it passes downstream). The owner's declared `accesses` of its window (mode
read) read the newest `rows` active tuples. All of it is ordinary undo-logged row work of the
store, so aborts, snapshots, digests, recovery and the history cover windows like tables.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine_sim.engine.keys import MASK, mix64, stable_seed

META = -1  # key of a window's metadata row
DEFAULT_RATE = 1.0  # batches per second when the spec's [input] declares no rate
_US = 1_000_000


@dataclass(frozen=True)
class WindowSpec:
    """A window as the store maintains it: sizes in tuples, or in microseconds for time."""

    name: str
    owner: str
    partition: int
    kind: str  # tuple | time
    size: int  # tuples, or microseconds
    slide: int  # tuples, or microseconds
    rate: float  # input batches per second: batch b has timestamp b / rate

    @classmethod
    def from_window(cls, window, partition: int, rate: float | None) -> "WindowSpec":
        unit = 1 if window.kind == "tuple" else _US
        return cls(window.name, window.procedure, partition, window.kind,
                   int(round(window.size * unit)), int(round(window.slide * unit)),
                   float(rate or DEFAULT_RATE))

    def initial_meta(self) -> tuple:
        return (0, 0, 0, self.slide if self.kind == "time" else 0)


def batch_timestamp_us(batch_id: int, rate: float) -> int:
    """Batch b's timestamp, in microseconds: b / rate seconds (the client submits batches at
    the spec's [input] rate, DEFAULT_RATE when it declares none). Deterministic, so the serial
    oracle and recovery see the same times as the run."""
    return int(round(batch_id * _US / rate))


def tuple_value(t) -> int:
    """The number a window aggregates for one tuple: the sum of its fields (text fields by a
    stable hash)."""
    if not isinstance(t, tuple):
        t = (t,)
    total = 0
    for x in t:
        total += x if isinstance(x, int) else stable_seed(x)
    return total & MASK


def aggregate(rows: dict, lo: int, hi: int) -> int:
    """The owner's read of window rows [lo, hi): count and sum folded into one value."""
    total = 0
    for seq in range(lo, hi):
        total += tuple_value(rows[seq][1])
    return mix64(((hi - lo) << 40) ^ (total & MASK))


def step(store, child: int, spec: WindowSpec, batch_id: int, tuples: tuple):
    """One owner execution's maintenance of its window: stage, slide, expire, and read the
    active window when it slid. Returns the read's aggregate, or None when it did not slide."""
    rows = store.tables[spec.name]
    acc = store.accesses
    name = spec.name
    lo, stage, nxt, end = rows.get(META, spec.initial_meta())
    slid = False
    if spec.kind == "time":
        ts = batch_timestamp_us(batch_id, spec.rate)
        if ts >= end:  # the window ending at `end` is complete (and maybe later ones)
            last = end + (ts - end) // spec.slide * spec.slide  # the newest complete window's end
            while stage < nxt and rows[stage][0] < last:
                stage += 1
            while lo < stage and rows[lo][0] < last - spec.size:
                acc.append((child, name, lo, "write"))
                store._delete(rows, lo)
                lo += 1
            end = last + spec.slide
            slid = True
        for t in tuples:
            acc.append((child, name, nxt, "write"))
            store._set(rows, nxt, (ts, t))
            nxt += 1
    else:
        ts = batch_timestamp_us(batch_id, spec.rate)
        for t in tuples:
            acc.append((child, name, nxt, "write"))
            store._set(rows, nxt, (ts, t))
            nxt += 1
            if nxt - stage >= spec.slide:
                stage += spec.slide
                slid = True
                while stage - lo > spec.size:
                    acc.append((child, name, lo, "write"))
                    store._delete(rows, lo)
                    lo += 1
    acc.append((child, name, META, "write"))
    store._set(rows, META, (lo, stage, nxt, end))
    if not slid:
        return None
    acc.extend((child, name, seq, "read") for seq in range(lo, stage))
    return aggregate(rows, lo, stage)


def read_newest(store, child: int, name: str, n: int) -> int:
    """A declared read of the owner's window: its newest `n` active tuples."""
    rows = store.tables[name]
    lo, stage, _nxt, _end = rows.get(META, (0, 0, 0, 0))
    first = max(lo, stage - max(int(n), 0))
    store.accesses.append((child, name, META, "read"))
    store.accesses.extend((child, name, seq, "read") for seq in range(first, stage))
    return aggregate(rows, first, stage)


def active(rows: dict) -> list:
    """The active tuples of a window's rows, oldest first (tests, reports)."""
    lo, stage, _nxt, _end = rows.get(META, (0, 0, 0, 0))
    return [rows[s][1] for s in range(lo, stage)]


def staged(rows: dict) -> list:
    lo, stage, nxt, _end = rows.get(META, (0, 0, 0, 0))
    return [rows[s][1] for s in range(stage, nxt)]
