"""The oracle of every run: re-execute the committed transactions one at a time, in one
process, in the serialization order the history checker found, and digest the state reached.

A correct run's final state equals this serial execution's (that is what serializability
means), so `serial_digest != state_digest` is a failed run whatever the workload, shared
state included. Nothing is taken from the run but the history (which SP ran which batch and
lane, and the order): inputs are derived again - border units get the client's batch
(`input_batch(plan, b)`, seeded per batch), interior units the outputs their upstream
produced earlier in the serial order - and keys are drawn again from the generators seeded
per (SP, batch, lane). Each partition of the design keeps its own store here too, so
operations resolve exactly as in the engine, and the digest (a sum of row hashes) does not
depend on where rows live. A migration in the order lays the rows out again as the next
design places them (gathered from every store, dealt out anew: not the engine's moves), and
the steps after it run under that design.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from engine_sim.engine.inputs import input_batch
from engine_sim.engine.procedures import body_for, is_write, merge_batches, merge_items, split_items
from engine_sim.engine.txn import Batch


@dataclass
class SerialStep:
    """One committed transaction of the serial order."""

    kind: str  # stream | oltp | migration
    unit: str  # scheduling unit (SP or nested group) or OLTP procedure
    batch: int
    lane: int = 0  # a migration: the design it switches to


class SerialError(Exception):
    """The history cannot be re-executed (an input that no earlier transaction produced)."""


def steps_from(tes: list, order: list[int], plan) -> list[SerialStep]:
    """The checker's executions in its serial order, one step per transaction (a nested
    group's SPs are one transaction: the order keeps them together)."""
    steps, seen = [], set()
    for i in order:
        te = tes[i]
        key = ("g", te.group) if te.group is not None else ("t", i)
        if key in seen:
            continue
        seen.add(key)
        if te.kind == "migration":
            steps.append(SerialStep(te.kind, te.procedure, te.batch, te.era))
            continue
        unit = te.procedure if te.kind == "oltp" else plan.procs[te.procedure].unit
        steps.append(SerialStep(te.kind, unit, te.batch, te.lane))
    return steps


class SerialExecution:
    """Stores of every partition, in this process, and the outputs produced so far."""

    def __init__(self, plan, plans: list | None = None):
        from engine_sim.engine.site import build_store

        self.plans = plans or [plan]  # the design of each era (a migration switches to the next)
        self.plan = plan
        # the declared CPU work changes no state: the oracle skips it (it would only double the run)
        self.procs = {name: replace(p, work_us=0.0) for name, p in plan.procs.items()}
        self.stores = {k: build_store(plan, k) for k in range(plan.n_partitions)}
        self.outputs: dict[tuple, dict] = {}  # (unit, batch, lane) -> {to unit: [(src, dst, Batch)]}
        # an output is dropped once every lane of every unit downstream has read it, so a long
        # replay holds only the batches in flight (None: the designs disagree; keep them all)
        self.readers = _readers(self.plans)
        self.reads_left: dict[tuple, int] = {}
        self.entry = {u: tuple(mb for mb in plan.units[u].members
                               if not any(s.target == mb for s in plan.workload.streams))
                      for u in plan.borders}

    def run(self, steps: list[SerialStep]) -> "SerialExecution":
        for step in steps:
            self.execute(step)
        return self

    # -- inputs ----------------------------------------------------------------------------------
    def _items(self, step: SerialStep) -> tuple:
        """What the unit's scheduler would hand this lane's transaction."""
        plan = self.plan
        unit = plan.units[step.unit]
        if unit.border or not unit.upstream:
            batch = input_batch(plan, step.batch)
            items = tuple((None, mb, batch) for mb in self.entry.get(step.unit, ()))
        else:
            got = []
            for up in unit.upstream:
                upu = plan.units[up]
                per_lane = []
                for k in range(len(upu.lanes)):
                    produced = self.outputs.get((up, step.batch, k))
                    if produced is None:
                        raise SerialError(f"{step.unit} batch {step.batch} runs before {up} produced it")
                    per_lane.extend(produced.get(step.unit, ()))
                    self._read((up, step.batch, k))
                got.extend(merge_items(per_lane))
            items = tuple(got)
        if not unit.dp:
            return items
        return split_items(unit, plan.procs[unit.members[0]].pk_index, items)[step.lane]

    # -- one transaction ---------------------------------------------------------------------------
    def execute(self, step: SerialStep) -> None:
        if step.kind == "migration":
            self.relayout(self.plans[step.lane])
            return
        plan = self.plan
        unit = plan.units[step.unit]
        members = unit.members
        base = unit.lanes[step.lane] if unit.lanes else unit.base
        parts = set(unit.partitions_of(step.lane)) | {base}
        items = self._items(step) if step.kind == "stream" else ()
        for s in self.stores.values():
            s.begin()
        ext_unit = {(f, t): u for f, t, u in unit.outputs}
        inputs: dict[str, list] = {mb: [] for mb in members}
        for _src, dst, batch in items:
            if batch is not None and dst in inputs:
                inputs[dst].append(batch)
        outputs: dict[str, list] = {}
        for child, mb in enumerate(members):
            body = body_for(plan, self.procs[mb], child, step.batch, step.lane, merge_batches(inputs[mb]))
            produced = self._drive(body, base, parts)
            for f, t in ext_unit:
                if f == mb and t not in produced:
                    produced[t] = Batch()
            for to_sp, batch in produced.items():
                if to_sp in inputs:
                    inputs[to_sp].append(batch)
                else:
                    u = ext_unit.get((mb, to_sp))
                    if u is not None:
                        outputs.setdefault(u, []).append((mb, to_sp, batch))
        for s in self.stores.values():
            s.commit()
        if step.kind == "stream":
            key = (step.unit, step.batch, step.lane)
            readers = None if self.readers is None else self.readers.get(step.unit, 0)
            if readers is None or readers > 0:
                self.outputs[key] = outputs
                if readers is not None:
                    self.reads_left[key] = readers

    def _read(self, key: tuple) -> None:
        left = self.reads_left.get(key)
        if left is None:
            return
        if left <= 1:
            del self.reads_left[key]
            del self.outputs[key]
        else:
            self.reads_left[key] = left - 1

    def relayout(self, plan) -> None:
        """Every row where `plan` places it: gathered from every store (one copy of a
        replicated table), dealt out anew. Rows of data-parallel tables stay on their partition
        (their routing follows the input, not the design)."""
        from engine_sim.engine.site import build_store

        old = self.plan.router
        rows: dict[str, dict] = {}
        for _k, store in sorted(self.stores.items()):
            for table, data in store.tables.items():
                if not (old.replicated(table) and table in rows):
                    rows.setdefault(table, {}).update(data)
        where = plan.router
        stores = {k: build_store(plan, k) for k in range(plan.n_partitions)}
        for k, store in stores.items():
            for table in store.tables:
                if table in where.dp_tables:
                    store.tables[table] = dict(self.stores[k].tables.get(table, {}))
                else:
                    store.tables[table] = {key: v for key, v in rows.get(table, {}).items()
                                           if where.row_partition(table, key) in (k, None)}
        self.plan, self.stores = plan, stores
        self.procs = {name: replace(p, work_us=0.0) for name, p in plan.procs.items()}

    def _drive(self, body, base: int, parts: set) -> dict:
        value = None
        while True:
            try:
                request = body.send(value)
            except StopIteration as stop:
                return stop.value or {}
            single = isinstance(request, tuple)
            pairs = [request] if single else list(request)
            results = [self._apply(part, op, base, parts) for part, op in pairs]
            value = results[0] if single else results

    def _apply(self, part, op, base: int, parts: set):
        if part is not None:
            return self.stores[part].apply(op)
        if not is_write(op):
            return self.stores[base].apply(op)  # a replicated row is read from the local copy
        result = None
        for q in sorted(parts):  # and written on every copy the transaction holds
            r = self.stores[q].apply(op)
            if q == base:
                result = r
        return result

    # -- the digest --------------------------------------------------------------------------------
    def digest(self) -> str:
        per_table: dict[str, int] = {}
        router = self.plan.router
        for k, store in sorted(self.stores.items()):
            for table in store.tables:
                if router.replicated(table) and k != 0:
                    continue
                per_table[table] = (per_table.get(table, 0) + store.table_digest(table)) % (1 << 128)
        return state_digest(per_table)


def _readers(plans: list) -> dict[str, int] | None:
    """How many serial steps read each unit's output of a batch lane: one per lane of every
    unit downstream (None when the designs of a migrating run disagree on it)."""
    seen = None
    for plan in plans:
        readers = {u: 0 for u in plan.units}
        for name, unit in plan.units.items():
            for up in unit.upstream:
                readers[up] = readers.get(up, 0) + max(1, len(unit.lanes))
        if seen is not None and readers != seen:
            return None
        seen = readers
    return seen


def state_digest(per_table: dict[str, int]) -> str:
    """The run's digest of {table: sum of row hashes} (the engine's `state_digest` too)."""
    return hashlib.sha256("".join(f"{t}:{d:032x}\n" for t, d in sorted(per_table.items()))
                          .encode()).hexdigest()


def serial_digest(plan, tes: list, order: list[int], plans: list | None = None) -> str:
    """Digest of the state reached by re-executing `tes` one at a time in `order` (`plans`:
    the design of each era, when the run migrated)."""
    return SerialExecution(plan, plans).run(steps_from(tes, order, plan)).digest()
