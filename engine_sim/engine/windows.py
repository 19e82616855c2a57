"""Window tables (dissertation 3.3.5): S-Store's third kind of state, private to its owner SP.

A window is a table on its owner's partition. Each row is one tuple, keyed by its sequence
number in the window (0, 1, 2, ... in arrival order) and holding `(timestamp_us, tuple)`; one
metadata row (key -1) holds the window's statistics,
`(active_lo, stage_lo, next_seq, end_us, active_sum, staged_sum)`: rows in
[active_lo, stage_lo) are ACTIVE (visible), rows in [stage_lo, next_seq) are STAGED
(maintained, invisible), so the active and staged counts are differences of these bounds;
`active_sum` and `staged_sum` are the sums of their tuples' values (`tuple_value`, mod 2^64),
kept up to date as tuples are staged, become active and expire. Every execution of the owner
(one per batch, in batch order) runs `step` first:

- tuple window: each tuple of its input batch is staged; whenever `slide` tuples are staged
  the window slides: those become active (their sum moves from staged to active in the
  metadata) and the oldest active tuples expire (deleted, their values subtracted) so that at
  most `size` stay active;
- time window: windows end at multiples of `slide` seconds (`end_us` is the end of the next
  one). A batch whose timestamp (`batch_timestamp_us`) reaches `end_us` completes it: the
  window slides to the newest complete end E (the largest multiple of slide <= the batch's
  timestamp): staged tuples older than E become active (read, their values moved from the
  staged sum to the active one), active tuples older than E - size expire; then the batch's
  own tuples are staged (they belong to a later window).

When the window slid, the owner reads the active window's aggregate (count and sum folded
into one value, passed downstream) from the metadata row: a slide costs O(tuples that move),
the read O(1), whatever the window's size - the native window's edge over an H-Store table
window, which scans its rows (dissertation 3.4.3; engine_sim/workloads/naive_window.py). The
owner's declared `accesses` of its window (mode read) read the newest `rows` active tuples,
row by row. All of it is ordinary undo-logged row work of the store, recorded as accesses
(the metadata row is read and written by every step), so aborts, snapshots, digests,
recovery, the history and the trace cover windows like tables.
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
        return (0, 0, 0, self.slide if self.kind == "time" else 0, 0, 0)


@dataclass(frozen=True)
class WindowStats:
    """A window's metadata row, by name: what the owner's read of the window costs nothing."""

    active_lo: int
    stage_lo: int
    next_seq: int
    end_us: int
    active_sum: int
    staged_sum: int

    @property
    def active(self) -> int:
        return self.stage_lo - self.active_lo

    @property
    def staged(self) -> int:
        return self.next_seq - self.stage_lo

    @property
    def aggregate(self) -> int:
        return fold(self.active, self.active_sum)


def stats(rows: dict) -> WindowStats:
    return WindowStats(*rows.get(META, (0, 0, 0, 0, 0, 0)))


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


def fold(count: int, total: int) -> int:
    """A window read's result: its count and sum folded into one value."""
    return mix64((count << 40) ^ (total & MASK))


def aggregate(rows: dict, lo: int, hi: int) -> int:
    """The aggregate of window rows [lo, hi), recomputed from the rows."""
    total = 0
    for seq in range(lo, hi):
        total += tuple_value(rows[seq][1])
    return fold(hi - lo, total)


def step(store, child: int, spec: WindowSpec, batch_id: int, tuples: tuple):
    """One owner execution's maintenance of its window: stage, slide, expire, and read the
    active window's aggregate (from the metadata) when it slid. Returns that aggregate, or
    None when it did not slide."""
    rows = store.tables[spec.name]
    acc = store.accesses
    name = spec.name
    acc.append((child, name, META, "read"))
    lo, stage, nxt, end, active_sum, staged_sum = rows.get(META, spec.initial_meta())
    slid = False
    ts = batch_timestamp_us(batch_id, spec.rate)
    if spec.kind == "time":
        if ts >= end:  # the window ending at `end` is complete (and maybe later ones)
            last = end + (ts - end) // spec.slide * spec.slide  # the newest complete window's end
            while stage < nxt:  # staged tuples older than `last` become active
                acc.append((child, name, stage, "read"))
                stamp, t = rows[stage]
                if stamp >= last:
                    break
                v = tuple_value(t)
                active_sum = (active_sum + v) & MASK
                staged_sum = (staged_sum - v) & MASK
                stage += 1
            while lo < stage:  # active tuples older than `last - size` expire
                stamp, t = rows[lo]
                if stamp >= last - spec.size:
                    acc.append((child, name, lo, "read"))
                    break
                acc.append((child, name, lo, "write"))
                store._delete(rows, lo)
                active_sum = (active_sum - tuple_value(t)) & MASK
                lo += 1
            end = last + spec.slide
            slid = True
        for t in tuples:
            acc.append((child, name, nxt, "write"))
            store._set(rows, nxt, (ts, t))
            staged_sum = (staged_sum + tuple_value(t)) & MASK
            nxt += 1
    else:
        for t in tuples:
            acc.append((child, name, nxt, "write"))
            store._set(rows, nxt, (ts, t))
            staged_sum = (staged_sum + tuple_value(t)) & MASK
            nxt += 1
            if nxt - stage >= spec.slide:  # every staged tuple becomes active
                stage = nxt
                active_sum = (active_sum + staged_sum) & MASK
                staged_sum = 0
                slid = True
                while stage - lo > spec.size:
                    acc.append((child, name, lo, "write"))
                    active_sum = (active_sum - tuple_value(rows[lo][1])) & MASK
                    store._delete(rows, lo)
                    lo += 1
    acc.append((child, name, META, "write"))
    store._set(rows, META, (lo, stage, nxt, end, active_sum, staged_sum))
    if not slid:
        return None
    acc.append((child, name, META, "read"))  # the owner reads the window's aggregate
    return fold(stage - lo, active_sum)


def read_newest(store, child: int, name: str, n: int) -> int:
    """A declared read of the owner's window: its newest `n` active tuples, row by row."""
    rows = store.tables[name]
    w = stats(rows)
    first = max(w.active_lo, w.stage_lo - max(int(n), 0))
    store.accesses.append((child, name, META, "read"))
    store.accesses.extend((child, name, seq, "read") for seq in range(first, w.stage_lo))
    return aggregate(rows, first, w.stage_lo)


def active(rows: dict) -> list:
    """The active tuples of a window's rows, oldest first (tests, reports)."""
    w = stats(rows)
    return [rows[s][1] for s in range(w.active_lo, w.stage_lo)]


def staged(rows: dict) -> list:
    w = stats(rows)
    return [rows[s][1] for s in range(w.stage_lo, w.next_seq)]


def stats_errors(rows: dict) -> list[str]:
    """Where the metadata's statistics disagree with the window's rows (empty: they agree).
    The sums are kept incrementally; this recomputes them from the tuples."""
    w = stats(rows)
    out = []
    tuples = sorted(k for k in rows if k != META)
    if tuples != list(range(w.active_lo, w.next_seq)):
        out.append(f"rows {tuples[:1]}..{tuples[-1:]} are not [{w.active_lo}, {w.next_seq})")
        return out
    for what, lo, hi, kept in (("active", w.active_lo, w.stage_lo, w.active_sum),
                               ("staged", w.stage_lo, w.next_seq, w.staged_sum)):
        total = sum(tuple_value(rows[s][1]) for s in range(lo, hi)) & MASK
        if total != kept:
            out.append(f"{what} sum {kept} != {total} recomputed from its {hi - lo} tuples")
    return out
