"""A sliding window the H-Store way (dissertation 3.4.3, Figure 3.10, right-hand side): no
native windows, so the window is a regular table with an ordering column (its key, the tuple's
sequence number) and a staging flag, plus a metadata table (one row: oldest active sequence
number, first staged one, next one), maintained by a two-step stored procedure - two
transactions per input batch:

1. `insert`: read the metadata, INSERT each tuple of the batch as staged, UPDATE the metadata,
   pass the batch's last sequence number on to step 2;
2. `maintain:SIZE:SLIDE`: read the metadata; when at least SLIDE tuples up to its batch's end
   are staged, slide by
   whole slides: UPDATE the staged rows that become active (clear their flag: the flag has no
   index, so the rows are found by a scan), DELETE the expired rows (by key, the ordering
   column is the key), UPDATE the metadata; then SELECT the active rows (a scan filtering on
   the flag) and aggregate them, as the native window's owner does when it slides.

The window's size and slide are part of the code name (`code = "naive_window.maintain:100:10"`),
as they would be constants of the hand-written procedure. `bench/windows.py` runs it against
the engine's native windows.
"""
from __future__ import annotations

from costmodel.procedure_code import window_step
from engine_sim.engine.keys import mix64
from engine_sim.engine.txn import Batch
from engine_sim.engine.windows import tuple_value

WINDOW = "WindowTable"  # key: sequence number -> (tuple, staged flag)
META = "WindowMeta"  # key 0 -> (oldest active seq, first staged seq, next seq)


def initial_rows(table: str, rows: int):
    if table == META:
        return {0: (0, 0, 0)}
    if table == WINDOW:
        return {}
    return None


def insert(ctx, batch: Batch):
    lo, stage, nxt = yield ctx.get(META, 0)
    ops = []
    for t in batch.tuples:
        ops.append(ctx.put(WINDOW, nxt, (t, 1)))
        nxt += 1
    ops.append(ctx.put(META, 0, (lo, stage, nxt)))
    yield ops
    return Batch(((nxt,),), batch.carry)  # step 2 learns where this batch's tuples end


def maintain(ctx, batch: Batch, size: int, slide: int):
    """Slides for the tuples up to the end of its own batch: the engine may already have run
    the insert step of later batches (their rows are staged, so invisible here)."""
    (end,), = batch.tuples
    lo, stage, nxt = yield ctx.get(META, 0)
    if end - stage < slide:
        return Batch((), batch.carry)
    new_stage = stage + (end - stage) // slide * slide
    new_lo = max(lo, new_stage - size)
    # UPDATE WindowTable SET staged = 0 WHERE staged = 1 AND seq < new_stage
    rows = [row for part in (yield ctx.scan(WINDOW)) for row in part]
    ops = [ctx.put(WINDOW, seq, (t, 0)) for seq, (t, flag) in rows if flag == 1 and seq < new_stage]
    # DELETE FROM WindowTable WHERE seq < new_lo
    ops += [ctx.delete(WINDOW, seq) for seq in range(lo, new_lo)]
    ops.append(ctx.put(META, 0, (new_lo, new_stage, nxt)))
    yield ops
    # SELECT value FROM WindowTable WHERE staged = 0, aggregated as the native owner does
    rows = [row for part in (yield ctx.scan(WINDOW)) for row in part]
    active = [t for _seq, (t, flag) in rows if flag == 0]
    total = sum(tuple_value(t) for t in active)
    return Batch((), mix64(batch.carry ^ mix64((len(active) << 40) ^ total)))


class _Procedures(dict):
    """`insert`, and `maintain:SIZE:SLIDE` for any window."""

    def get(self, name, default=None):
        fn = super().get(name)
        if fn is not None:
            return fn
        step = window_step(name)  # the spec reader's rule (costmodel.procedure_code)
        if step is None:
            return default
        size, slide = step

        def maintain_window(ctx, batch):
            return (yield from maintain(ctx, batch, size, slide))

        return maintain_window

    def __iter__(self):
        return iter(["insert", "maintain:SIZE:SLIDE"])


PROCEDURES = _Procedures(insert=insert)
