"""The coordinator side of a transaction, as a generator its base partition drives.

A transaction first locks every partition it touches, one after another in ascending
partition order (its own partition in its turn), holding each to the end: a lock request
waits in the partition's queue until served, and since every transaction locks in the same
order no wait cycle (deadlock) can form. The remote work of a declared SP (its keys are
known before it runs) travels with the lock requests. Then the body runs (remote operations
as fragments to the locked partitions), and a distributed transaction commits with
two-phase commit: PREPARE (participants force their log when the transaction is logged, then
vote with their clock and accesses), the coordinator picks the commit timestamp, forces its
commit record, and sends COMMIT.

The generator yields SELF (lock my own partition) or {partition: message}, and is resumed
with None or {partition: reply} once every reply is in.
"""
from __future__ import annotations

from engine_sim.engine.crash import crash_point
from engine_sim.engine.messages import Decide, Frag, LockReq, Prepare
from engine_sim.engine.procedures import body_for, burnt_ns, is_write, merge_batches, txn_rng
from engine_sim.engine.txn import Batch

SELF = object()


class Abort(Exception):
    """The transaction aborts: its changes are undone everywhere, its scheduler restarts it."""


class Outcome:
    """What a committed run hands to the partition."""

    __slots__ = ("outputs", "commit_ts", "remote", "child_outputs", "child_work_us", "locked")

    def __init__(self):
        self.outputs: dict = {}  # to unit -> [(from SP, to SP, Batch)]
        self.commit_ts = 0
        self.remote: dict = {}  # partition -> (accesses, position)
        self.child_outputs: list = []  # per child: {to SP: Batch}
        self.child_work_us: list = []  # per child: its own work's CPU time (None: bundled code)
        self.locked: tuple = ()


def coordinate(p, txn, out: Outcome):
    """Run `txn` at partition `p` (its base); raises Abort; fills `out` on commit."""
    plan, me, store = p.plan, p.pid, p.store
    sent: list[int] = []
    holding = False
    try:
        peeked = _peek_inputs(p, txn)
        pre_ops, parts, gen = _plan(p, txn, peeked)
        shipped: dict[int, list] = {}
        for part, op in pre_ops or ():
            for q in _targets(part, op, me, parts):
                if q != me:
                    shipped.setdefault(q, []).append(op)
        shipped_results: dict[int, list] = {}
        for q in sorted(parts):
            if q == me:
                yield SELF
                holding = True
                if p.purged(txn):
                    raise Abort("purged")
                store.begin()
                inputs = _consume_inputs(p, txn, peeked)
            else:
                sent.append(q)
                reply = (yield {q: LockReq(txn.id, me, txn.log, shipped.get(q, []), txn.age)})[q]
                if not reply.ok:
                    raise Abort(f"partition {q} failed: {reply.results}")
                shipped_results[q] = reply.results
        out.locked = tuple(q for q in sorted(parts) if q != me)
        if txn.kind == "move":
            yield from _move(p, txn, parts)
        elif txn.kind == "snapshot":
            for part, op in pre_ops:
                if part == me:
                    p.exec_op(op)
        else:
            yield from _run_unit(p, txn, out, inputs, pre_ops, gen, parts, shipped_results)
            _system_effects(p, txn, out)
            if plan.abort_rate > 0 and txn.kind == "stream" and not txn.replay_of:
                rng = txn_rng(plan, -1, txn.batch, txn.lane, f"abort:{txn.unit}:{txn.restarts}")
                if rng.random() < plan.abort_rate:
                    raise Abort("injected abort")
        clock = 0
        if out.locked:
            crash_point(p, "coordinator", "before_vote", txn.kind)
            votes = yield {q: Prepare(txn.id, txn.log) for q in out.locked}
            for q, v in votes.items():
                if not v.ok:
                    raise Abort(f"partition {q} voted no")
                clock = max(clock, v.clock)
                out.remote[q] = (v.accesses, v.position)
            crash_point(p, "coordinator", "after_vote", txn.kind)
        out.commit_ts = p.site.commit_ts(clock)
    except Abort:
        _undo(p, txn, sent, holding)
        raise
    except Exception as exc:  # a bug or a bad procedure: abort cleanly, report it
        _undo(p, txn, sent, holding)
        raise Abort(f"{type(exc).__name__}: {exc}") from exc


def _undo(p, txn, sent, holding) -> None:
    for q in sent:
        p.site.send(q, Decide(txn.id, False, 0))
    if holding:
        p.store.rollback()


def _targets(part, op, me: int, parts) -> tuple:
    """Partitions an operation runs on: its row's partition; a replicated row is read locally
    and written on every partition."""
    if part is not None:
        return (part,)
    if is_write(op):
        return tuple(sorted(parts))
    return (me,)


def _plan(p, txn, peeked):
    """(operations known before running, partitions to lock, the started body or None).

    Every transaction of a lane locks the same partitions - all those holding a table its
    SPs declare (S-Store's premise: an SP always runs on the same partitions) - so a lane's
    transactions meet in the same lock queues in creation order and commit in batch order.
    A single declared SP knows every key before it runs: its remote work ships with the lock
    requests."""
    plan, me = p.plan, p.pid
    everywhere = range(plan.n_partitions)
    if txn.kind == "move":
        return None, {me, txn.move[5]}, None
    if txn.kind == "snapshot":
        return [(q, ("snapshot", txn.aux, txn.batch)) for q in everywhere], set(everywhere), None
    unit = plan.units[txn.unit]
    proc = plan.procs[unit.members[0]]
    parts = set(unit.partitions_of(txn.lane)) | {me}
    if len(unit.members) == 1 and proc.code is None:
        batch = merge_batches([b for _, _, b in peeked])
        gen = body_for(plan, proc, 0, txn.batch, txn.lane, batch)
        ops = next(gen)
        for part, op in ops:
            outside = set(_targets(part, op, me, parts)) - parts
            if outside:
                raise Abort(f"{proc.name} touches partition {min(outside)} outside its lane's partitions")
        return ops, parts, gen
    return None, parts, None


def _peek_inputs(p, txn) -> list:
    """The input batches: carried by the invocation, or (moved here by a MOVE txn) waiting in
    this partition's stream table - looked at, not taken, before the txn holds the partition."""
    out = []
    for src, dst, batch in txn.inputs:
        if batch is None and src is not None:
            batch = p.store.stream_batch((src, dst, txn.batch, 0))
        out.append((src, dst, batch))
    return out


def _consume_inputs(p, txn, peeked) -> list:
    """Holding the partition: take this txn's input batches out of the local stream table
    (the producer kept them there; a consumed batch is garbage)."""
    unit = p.plan.units.get(txn.unit)
    if unit is None or unit.dp or txn.kind != "stream":
        return peeked
    for src, dst, _batch in txn.inputs:
        if src is not None:
            p.store.apply(("spop", (src, dst, txn.batch, 0)))
    return peeked


def _resolve(p, txn, pairs, parts, shipped_results=None):
    """Execute a list of (partition, op): local ones here, remote ones as fragments (or take
    their results from the lock replies they were shipped with)."""
    me = p.pid
    results = [None] * len(pairs)
    remote: dict[int, list] = {}
    for i, (part, op) in enumerate(pairs):
        for q in _targets(part, op, me, parts):
            if q == me:
                r = p.exec_op(op)
                if results[i] is None:
                    results[i] = r
            elif q not in parts:
                raise Abort(f"operation on partition {q}, which the transaction did not lock")
            else:
                remote.setdefault(q, []).append(i)
    if remote:
        if shipped_results is not None:
            replies = shipped_results
        else:
            answers = yield {q: Frag(txn.id, [pairs[i][1] for i in idx]) for q, idx in remote.items()}
            replies = {}
            for q, r in answers.items():
                if not r.ok:
                    raise Abort(f"fragment failed on partition {q}: {r.results}")
                replies[q] = r.results
        for q, idx in remote.items():
            for i, r in zip(idx, replies[q]):
                if results[i] is None:
                    results[i] = r
    return results


def _drive(p, txn, body, value, parts, work: list | None = None):
    """Run a body generator to its end, resolving every operation it yields. With `work` (a
    declared SP's body), the CPU time of its declared work (`burn_cpu`) is added to `work[0]`
    in ns: the SP's own work, not the engine's (drawing keys, reading rows, folding what they
    read into the output)."""
    while True:
        before = burnt_ns() if work is not None else 0
        try:
            request = body.send(value)
        except StopIteration as stop:
            if work is not None:
                work[0] += burnt_ns() - before
            return stop.value or {}
        if work is not None:
            work[0] += burnt_ns() - before
        single = isinstance(request, tuple)
        pairs = [request] if single else list(request)
        results = yield from _resolve(p, txn, pairs, parts)
        value = results[0] if single else results


def _run_unit(p, txn, out: Outcome, inputs_in, pre_ops, gen, parts, shipped_results):
    plan = p.plan
    unit = plan.units[txn.unit]
    members = unit.members
    ext_unit = {(f, t): u for f, t, u in unit.outputs}
    inputs: dict[str, list] = {m: [] for m in members}
    for _src, dst, batch in inputs_in:
        if batch is not None and dst in inputs:
            inputs[dst].append(batch)
    for child, m in enumerate(members):
        work = [0] if plan.procs[m].code is None else None
        if child == 0 and gen is not None:
            results = yield from _resolve(p, txn, pre_ops, parts, shipped_results)
            produced = yield from _drive(p, txn, gen, results, parts, work)
        else:
            body = body_for(plan, plan.procs[m], child, txn.batch, txn.lane, merge_batches(inputs[m]))
            produced = yield from _drive(p, txn, body, None, parts, work)
        out.child_work_us.append(None if work is None else work[0] / 1000.0)
        for f, t in ext_unit:
            if f == m and t not in produced:
                produced[t] = Batch()  # every stream gets a batch, empty if need be
        out.child_outputs.append(produced)
        for to_sp, batch in produced.items():
            if to_sp in inputs:
                inputs[to_sp].append(batch)
            else:
                u = ext_unit.get((m, to_sp))
                if u is not None:
                    out.outputs.setdefault(u, []).append((m, to_sp, batch))


def _system_effects(p, txn, out: Outcome) -> None:
    """Keep output batches in this partition's stream table (recovery and MOVE need them),
    record the lane's progress, remember applied OLTP requests - all inside the txn."""
    store, plan = p.store, p.plan
    if txn.kind == "oltp":
        store.apply(("oltp", txn.unit, txn.batch))
        return
    if plan.recovery != "off" or plan.move == "txn":
        for items in out.outputs.values():
            for src, dst, batch in items:
                store.apply(("spush", (src, dst, txn.batch, txn.lane), batch))
    store.apply(("prog", txn.unit, txn.lane, txn.batch))


def _move(p, txn, parts):
    """MOVE as a distributed transaction: take the batch out of this partition's stream table
    and write it into the target partition's, both locked, committed with 2PC."""
    src, dst, batch_id, lane, _source, target = txn.move
    key = (src, dst, batch_id, lane)
    batch = p.store.apply(("spop", key))
    if batch is None:
        raise Abort(f"MOVE: batch {batch_id} of {src}->{dst} is not in partition {p.pid}'s stream table")
    yield from _resolve(p, txn, [(target, ("spush", key, batch))], parts)
