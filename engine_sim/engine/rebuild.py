"""After a crash: what every procedure scheduler must do again, read from the recovered state.

The recovered partitions say, per lane, the last batch committed (progress) and which output
batches their stream tables still hold. A unit has a pending invocation for batch b when
every upstream unit's output for b is there and the unit has not committed b; border units
get their input again from the client, OLTP requests not applied are sent again.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine_sim.engine.messages import Invoke, Retrigger
from engine_sim.engine.procedures import merge_batches


@dataclass(slots=True)
class LaneDone:
    """After a crash: lane `lane` of a data-parallel unit committed `batch` before it (its
    outputs are in its stream table) while other lanes did not; the scheduler counts it as
    finished, else the batch would wait forever for a lane that will not run it again."""

    unit: str
    batch: int
    lane: int
    outputs: dict  # to unit -> [(from SP, to SP, Batch)]


def rebuild(plan, reports: list) -> tuple[dict, dict, set]:
    """(committed: unit -> {lane: batch}, pending: scheduler unit -> [Invoke | Retrigger],
    applied OLTP requests). With MOVEs as transactions, a batch still in its producer's
    stream table is moved again by its producer (Retrigger); one already moved is invoked."""
    progress: dict = {}
    streams: dict = {}
    where: dict = {}
    oltp_done: set = set()
    for r in reports:
        for key, b in r.progress.items():
            progress[key] = max(progress.get(key, -1), b)
        streams.update(r.streams)
        for key in r.streams:
            where[key] = r.node
        oltp_done |= r.oltp_done
    committed = {u: {k: progress.get((u, k), -1) for k in range(len(unit.lanes))}
                 for u, unit in plan.units.items()}
    by_target: dict[str, set] = {}
    for (src, dst, b, _lane) in streams:
        if dst in plan.procs:
            by_target.setdefault(plan.procs[dst].unit, set()).add(b)
    pending: dict[str, list] = {}
    for name, unit in plan.units.items():
        if unit.dp:
            pending[name] = _lanes_done(name, unit, committed[name], streams)
        if unit.border or unit.oltp or not unit.upstream:
            continue
        low = min(committed[name].values())
        for b in sorted(x for x in by_target.get(name, ()) if x > low):
            for up in unit.upstream:
                upu = plan.units[up]
                items = []
                for src, dst, to_unit in upu.outputs:
                    if to_unit != name:
                        continue
                    parts = [streams.get((src, dst, b, k)) for k in range(len(upu.lanes))]
                    if any(x is None for x in parts):
                        items = None
                        break
                    items.append((src, dst, merge_batches(parts)))
                if not items:
                    continue
                keys = [(src, dst, b, 0) for src, dst, _ in items]
                if plan.move == "txn" and not upu.dp and not unit.dp and upu.base != unit.base:
                    if all(where.get(k) == upu.base for k in keys):
                        pending.setdefault(up, []).append(Retrigger(up, name, b, tuple(items)))
                        continue
                    if all(where.get(k) == unit.base for k in keys):
                        refs = tuple((src, dst, None) for src, dst, _ in items)
                        pending.setdefault(name, []).append(Invoke(name, b, up, refs))
                        continue
                pending.setdefault(name, []).append(Invoke(name, b, up, tuple(items)))
    return committed, pending, oltp_done


def _lanes_done(name: str, unit, committed: dict, streams: dict) -> list:
    """LaneDone for every lane ahead of the unit's slowest lane, batch by batch."""
    out = []
    low, high = min(committed.values()), max(committed.values())
    for b in range(low + 1, high + 1):
        for k, last in sorted(committed.items()):
            if last < b:
                continue
            outputs: dict = {}
            for src, dst, to_unit in unit.outputs:
                batch = streams.get((src, dst, b, k))
                if batch is not None:
                    outputs.setdefault(to_unit, []).append((src, dst, batch))
            out.append(LaneDone(name, b, k, outputs))
    return out


def batch_finished(plan, committed: dict, batch: int) -> bool:
    """Has every sink unit committed (every lane of) this batch?"""
    return all(min(committed[u].values()) >= batch for u in plan.sinks)
