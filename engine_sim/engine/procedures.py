"""Procedure bodies. A body is a generator: it yields operations, as `(partition, op)` pairs or
lists of them, gets their results back, and returns its output batches ({to SP: Batch}).
The partition running the transaction resolves each operation locally or by a message to the
partition holding the row (locked for this transaction), so the same body runs single-sited
or distributed, in-process or across processes.

Declared procedures (no code) run their spec accesses for real: keys from the declared
distribution, rows read and written - and their declared `cost` as CPU work, `cost x
cost_unit_us` microseconds of this thread's CPU time per batch (`burn_cpu`); bundled
benchmarks bring their own code (engine_sim.workloads) written against `Ctx`, whose real
work is the truth and gets no added loop.
"""
from __future__ import annotations

import threading
import time

from engine_sim.engine.keys import MASK, Rng, mix64, stable_seed
from engine_sim.engine.txn import Batch

READ_KINDS = frozenset(("r", "get", "scan", "wread"))


class Ctx:
    """What procedure code sees: table operations routed by the design's row router."""

    def __init__(self, plan, child: int, batch_id: int, lane: int, base: int):
        self.plan = plan
        self.router = plan.router
        self.child = child
        self.batch_id = batch_id
        self.lane = lane
        self.base = base
        self.window_reads: dict = {}  # window -> the aggregate its step read (None: no slide)

    def _part(self, table: str, key):
        return self.router.row_partition(table, key)

    def get(self, table: str, key):
        return (self._part(table, key), ("get", self.child, table, key))

    def put(self, table: str, key, value):
        return (self._part(table, key), ("put", self.child, table, key, value))

    def incr(self, table: str, key, delta: int = 1, limit: int | None = None):
        """UPDATE table SET value = value + delta WHERE value + delta <= limit (one write):
        the new value, or None when the limit refused it."""
        return (self._part(table, key), ("incr", self.child, table, key, delta, limit))

    def delete(self, table: str, key):
        return (self._part(table, key), ("del", self.child, table, key))

    def scan(self, table: str) -> list:
        """One op per partition holding the table (just the local copy when replicated)."""
        if self.router.replicated(table):
            return [(None, ("scan", self.child, table))]
        return [(p, ("scan", self.child, table)) for p in self.router.table_partitions(table)]

    def delete_where(self, table: str, index: int, value) -> list:
        """DELETE FROM table WHERE value[index] = value, on every partition holding it."""
        parts = (None,) if self.router.replicated(table) else self.router.table_partitions(table)
        return [(p, ("delwhere", self.child, table, index, value)) for p in parts]


_THREAD_CLOCK = getattr(time, "thread_time_ns", None)
_BURNT = threading.local()  # per thread: ns `burn_cpu` has run so far (an SP's declared work)
_CHUNK = 8  # arithmetic steps between clock reads (a few microseconds)


def burn_cpu(us: float) -> int:
    """Spend `us` microseconds of this thread's CPU time in an arithmetic loop: real work that
    takes a core (it is not a sleep), and as much CPU whatever else the host runs (the clock
    is the thread's CPU time, so a preempted loop does not end early). Returns the loop's value
    so that nothing can optimise it away."""
    if us <= 0:
        return 0
    clock = _THREAD_CLOCK or time.perf_counter_ns  # no thread clock: wall time
    start = clock()
    end = start + int(us * 1000)
    x = 1
    now = start
    while now < end:
        for _ in range(_CHUNK):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        now = clock()
    _BURNT.ns = burnt_ns() + (now - start)
    return x


def burnt_ns() -> int:
    """The CPU time `burn_cpu` has spent in this thread so far (ns): the difference across a
    step of a body is the declared work it did (what a trace's `work_us` records)."""
    return getattr(_BURNT, "ns", 0)


def lane_share(plan, proc, tuples: int) -> float:
    """The part of its SP's batch a data-parallel lane runs: its sub-batch's tuples over the
    tuples the whole SP gets a batch (1 for an SP that is not split). A lane reads, writes,
    works and emits that share of what the SP declares per batch."""
    if proc.pk_index is None:
        return 1.0
    return tuples / (proc.input_tuples * plan.scale) if proc.input_tuples > 0 else 1.0


def work_us(plan, proc, tuples: int) -> float:
    """A declared SP's CPU work for one batch: `cost x cost_unit_us` per declared batch,
    scaled with the batch size like its rows (a data-parallel sub-batch does its share)."""
    return proc.work_us * plan.scale * lane_share(plan, proc, tuples)


def is_write(op: tuple) -> bool:
    return op[0] not in READ_KINDS


def txn_rng(plan, proc_index: int, batch_id: int, lane: int, salt: str = "") -> Rng:
    return Rng(stable_seed(plan.seed, proc_index, batch_id, lane, salt))


def declared_body(plan, proc, child: int, batch_id: int, lane: int, batch: Batch):
    """Run the spec's accesses: yields all operations at once (their keys do not depend on what
    is read), then returns the output batches, whose carry folds the values read."""
    rng = txn_rng(plan, proc.index, batch_id, lane)
    tuples = batch.tuples
    router = plan.router
    dp_pk = plan.dp_pk
    ops = []
    tag_base = mix64(batch.carry ^ (proc.index << 48) ^ batch_id)
    # a data-parallel sub-batch does its share of the batch's rows
    scale = plan.scale * lane_share(plan, proc, len(tuples))
    ops.extend(window_steps(plan, proc, child, batch_id, tuples))
    for ai, a in enumerate(proc.accesses):
        if a.probability < 1.0 and rng.random() >= a.probability:
            continue
        n = rng.round(a.rows * scale)
        if n <= 0:
            continue
        if a.window:  # the owner reads its newest n active window tuples
            ops.append((router.row_partition(a.table, 0), ("wread", child, a.table, n)))
            continue
        keys = a.keys.draw(rng, n, tuples, batch_id, lane)
        pk = dp_pk.get(a.table)
        m = len(tuples)
        for i, key in enumerate(keys):
            pk_value = tuples[i % m][pk] if (pk is not None and m and a.keys.kind == "input") else None
            part = router.row_partition(a.table, key, pk_value)
            if a.mode == "read":
                ops.append((part, ("r", child, a.table, key)))
            else:
                ops.append((part, ("w", child, a.table, key, (tag_base + ai * 131 + i) & MASK)))
    results = yield ops
    burn_cpu(work_us(plan, proc, len(tuples)))  # the SP's declared work, holding its partitions
    carry = batch.carry
    for v in results:
        if v is not None:
            carry = mix64(carry ^ v)
    return declared_outputs(plan, proc, rng, batch, carry, scale)


def declared_outputs(plan, proc, rng: Rng, batch: Batch, carry: int, scale: float) -> dict:
    """The declared streams' batches: `tuples x scale` each (a lane emits its share)."""
    out = {}
    tuples = batch.tuples
    for s in proc.outputs:
        n = rng.round(s.tuples * scale)
        if tuples:
            out_tuples = tuple(tuples[i % len(tuples)] for i in range(n))
        else:
            out_tuples = tuple(tuple(rng.below(d) for d in plan.field_domains) for _ in range(n))
        out[s.target] = Batch(out_tuples, carry)
    return out


def window_steps(plan, proc, child: int, batch_id: int, tuples: tuple) -> list:
    """The owner's window maintenance, first thing in each of its executions: stage the input
    batch's tuples, slide and expire, read the active window when it slid (windows.py)."""
    return [(plan.router.row_partition(name, 0), ("win", child, name, batch_id, tuples))
            for name in proc.windows]


def code_body(plan, proc, child: int, batch_id: int, lane: int, batch: Batch):
    """Bundled procedure code; a Batch result goes to every output stream. An owner of windows
    steps them first; the code finds the reads' aggregates in `ctx.window_reads`."""
    ctx = Ctx(plan, child, batch_id, lane, plan.procs[proc.name].base)
    steps = window_steps(plan, proc, child, batch_id, batch.tuples)
    if steps:
        ctx.window_reads = dict(zip(proc.windows, (yield steps)))
    result = yield from proc.code(ctx, batch)
    if isinstance(result, Batch):
        return {s.target: result for s in proc.outputs}
    return dict(result or {})


def body_for(plan, proc, child: int, batch_id: int, lane: int, batch: Batch):
    if proc.code is not None:
        return code_body(plan, proc, child, batch_id, lane, batch)
    return declared_body(plan, proc, child, batch_id, lane, batch)


def merge_batches(batches) -> Batch:
    """Several input batches for one SP (several upstream streams, or sub-batches) as one."""
    batches = [b for b in batches if b is not None]
    if not batches:
        return Batch()
    if len(batches) == 1:
        return batches[0]
    tuples = tuple(t for b in batches for t in b.tuples)
    carry = 0
    for b in batches:
        carry = mix64(carry ^ b.carry)
    return Batch(tuples, carry)


def split_items(unit, pk: int, items) -> list[tuple]:
    """A data-parallel unit's invocation as one sub-batch per lane: each input stream's
    batches merged once, then every tuple dealt to the lane of its key."""
    merged: dict = {}
    for _src, dst, b in items:
        merged.setdefault(dst, []).append(b)
    per_lane: list[list] = [[] for _ in unit.lanes]
    for dst, batches in merged.items():
        whole = merge_batches(batches)
        for k, part in enumerate(unit.split(whole.tuples, pk)):
            per_lane[k].append((None, dst, Batch(tuple(part), whole.carry)))
    return [tuple(subs) for subs in per_lane]


def merge_items(items: list) -> list:
    """Outputs of several lanes for the same stream become one batch per (from SP, to SP)."""
    by_edge: dict[tuple, list] = {}
    for src, dst, batch in items:
        by_edge.setdefault((src, dst), []).append(batch)
    return [(src, dst, merge_batches(bs)) for (src, dst), bs in by_edge.items()]
