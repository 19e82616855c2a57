"""Procedure schedulers (Algorithm 1 of the dissertation), one per scheduling unit.

Dataflow order is kept pessimistically: a unit's transaction for batch b is created only once
every upstream unit has committed b (the invocation carries the committed output batch).
Batch order is kept optimistically: a lane creates transactions for consecutive batches
without waiting for commits; its base partition serves them in creation (id) order, and when
one aborts, the partition purges the lane's later transactions (epoch), and the lane restarts
them one by one in batch order, up to a restart limit after which the batch is given up and
downstream units skip it. With DLS each scheduler lives beside its unit's base partition;
with the central scheduler all of them live in the driver.
"""
from __future__ import annotations

import heapq

from engine_sim.engine.inputs import input_batch
from engine_sim.engine.messages import BatchDone, Invoke, Skip, TxnRequest
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.procedures import merge_items, split_items
from engine_sim.engine.txn import Txn

_SKIP = "skip"


def entry_members(plan, unit: str) -> tuple:
    """The members of a border unit that take the client's input (no stream feeds them)."""
    return tuple(mb for mb in plan.units[unit].members
                 if not any(s.target == mb for s in plan.workload.streams))


def injected(plan, units, batches) -> list:
    """The invocations an Inject stands for, in batch order: each input batch built here."""
    out = []
    for b in batches:
        batch = input_batch(plan, b)
        for u in units:
            out.append(Invoke(u, b, None, tuple((None, mb, batch) for mb in entry_members(plan, u))))
    return out


class Lane:
    """Algorithm 1 for one lane (one base partition) of a unit."""

    def __init__(self, owner: "UnitScheduler", index: int, partition: int, committed: int = -1):
        self.owner = owner
        self.index = index
        self.partition = partition
        self.invoc: list = []  # (batch, n, inputs | _SKIP, recovering)
        self.restart: list = []  # (batch, restarts, n, inputs, recovering, age): in batch order
        self.live: dict[int, int] = {}  # batch -> epoch of its transaction in flight
        self.last_started = committed
        self.last_restart = committed
        self.last_committed = committed
        self.epoch = 0
        self._n = 0

    def add(self, batch: int, inputs, recovering: bool = False) -> None:
        if batch <= self.last_committed:
            return  # already applied (a recovery resubmission)
        self._n += 1
        heapq.heappush(self.invoc, (batch, self._n, inputs, recovering))

    def pump(self) -> None:
        o = self.owner
        while True:
            if self.restart:
                batch, restarts, _, inputs, recovering, age = self.restart[0]
                if batch != self.last_restart + 1:
                    return
                heapq.heappop(self.restart)
                self.live[batch] = self.epoch
                o.create(self, batch, inputs, restarts, recovering, age)
                self.last_restart = batch
            elif self.invoc and self.invoc[0][0] <= self.last_started + 1:
                if self.epoch and any(e < self.epoch for e in self.live.values()):
                    return  # transactions created before an abort are still being purged
                if self.invoc[0][2] is _SKIP and self.live:
                    return  # skip a given-up batch only once every earlier one committed
                batch, _, inputs, recovering = heapq.heappop(self.invoc)
                if batch <= self.last_started:
                    continue  # a duplicate invocation
                self.last_started = batch
                if inputs is _SKIP:
                    self.last_restart = max(self.last_restart, batch)
                    self.last_committed = max(self.last_committed, batch)
                    o.lane_finished(self, batch, None, skipped=True)
                else:
                    self.live[batch] = self.epoch
                    o.create(self, batch, inputs, 0, recovering)
            else:
                return

    def on_commit(self, txn) -> None:
        self.live.pop(txn.batch, None)
        self.last_committed = max(self.last_committed, txn.batch)
        self.last_restart = max(self.last_restart, txn.batch)

    def on_abort(self, txn, purged: bool = False) -> bool:
        """Queue the restart; False when the batch hit the restart limit (given up). A purge
        (another batch's abort cleared the lane behind it) is not this batch's failure and
        costs it no restart: charged one, a batch given up at the limit purged the lane behind
        it, which was given up in turn, and so on (42 of 400 transactions committed at a 10 %
        injected abort rate and a limit of 0)."""
        self.live.pop(txn.batch, None)
        self.epoch = max(self.epoch, txn.epoch + 1)
        restarts = txn.restarts + (0 if purged else 1)
        if restarts > self.owner.plan.restart_limit:
            self.last_committed = max(self.last_committed, txn.batch)
            self.last_restart = max(self.last_restart, txn.batch)
            return False
        self._n += 1
        heapq.heappush(self.restart, (txn.batch, restarts, self._n, txn.inputs, txn.recovering,
                                      txn.age))
        if self.last_committed < txn.batch:
            self.last_restart = min(self.last_restart, txn.batch - 1)
        return True


class UnitScheduler:
    def __init__(self, host, unit: str, committed: dict | None = None):
        self.host = host
        self.plan = host.plan
        self.unit = self.plan.units[unit]
        committed = committed or {}
        self.lanes = [Lane(self, k, part, committed.get(k, -1)) for k, part in enumerate(self.unit.lanes)]
        self.collect: dict[int, dict] = {}  # batch -> upstream unit -> items | _SKIP
        self.finished: dict[int, dict] = {}  # batch -> lane -> outputs | None (skipped/failed)
        self.moves: dict[tuple, list] = {}  # (to unit, batch) -> [items, outstanding moves]
        self.recovering: set[int] = set()

    # -- invocations ---------------------------------------------------------------------------
    def on_invoke(self, msg: Invoke) -> None:
        if self.unit.border or not self.unit.upstream:
            self.dispatch(msg.batch, msg.items, msg.recovering)
            return
        got = self.collect.setdefault(msg.batch, {})
        got[msg.source] = msg.items
        self._maybe_dispatch(msg.batch)

    def restore(self, pending: list) -> None:
        """After a crash: queue the recovered invocations, resend recovered outputs."""
        for msg in pending:
            if isinstance(msg, Invoke):
                self.on_invoke(msg)
            elif hasattr(msg, "lane"):  # rebuild.LaneDone: a lane committed it before the crash
                self.lane_finished(self.lanes[msg.lane], msg.batch, msg.outputs)
            else:  # Retrigger
                self._send_downstream(msg.to_unit, msg.batch, list(msg.items))

    def on_skip(self, msg: Skip) -> None:
        self.collect.setdefault(msg.batch, {})[msg.source] = _SKIP
        self._maybe_dispatch(msg.batch)

    def _maybe_dispatch(self, batch: int) -> None:
        got = self.collect[batch]
        if len(got) < len(self.unit.upstream):
            return
        del self.collect[batch]
        if any(v is _SKIP for v in got.values()):
            for lane in self.lanes:
                lane.add(batch, _SKIP)
                lane.pump()
            return
        items = tuple(i for up in self.unit.upstream for i in got[up])
        self.dispatch(batch, items, False)

    def dispatch(self, batch: int, items: tuple, recovering: bool) -> None:
        if recovering:
            self.recovering.add(batch)
        if not self.unit.dp:
            self.lanes[0].add(batch, items, recovering)
            self.lanes[0].pump()
            return
        # data-parallel: one sub-batch per lane, by the partition key of each tuple
        subs = split_items(self.unit, self.plan.procs[self.unit.members[0]].pk_index, items)
        for lane in self.lanes:
            lane.add(batch, subs[lane.index], recovering)
            lane.pump()

    # -- transactions ----------------------------------------------------------------------------
    def create(self, lane: Lane, batch: int, inputs, restarts: int, recovering: bool,
               age: int = 0) -> None:
        plan, host = self.plan, self.host
        txn = Txn(id=host.new_txn_id(), kind="stream", unit=self.unit.name, lane=lane.index,
                  batch=batch, inputs=inputs, epoch=lane.epoch, restarts=restarts,
                  reply_to=host.node, base=lane.partition,
                  log=plan.logged(self.unit.name) and not recovering,  # replayed: already logged
                  recovering=recovering, prio=age)
        host.send(lane.partition, TxnRequest(txn))

    def on_audit(self, audit) -> None:
        txn = audit.txn
        if txn.kind == "move":
            self._move_done(audit)
            return
        lane = self.lanes[txn.lane]
        if audit.committed:
            lane.on_commit(txn)
            self.lane_finished(lane, txn.batch, audit.outputs if txn.trigger else {})
        elif not lane.on_abort(txn, purged=audit.purged):
            self.host.report_failure(txn, audit.reason)
            self.lane_finished(lane, txn.batch, None, skipped=True)
        lane.pump()

    def lane_finished(self, lane: Lane, batch: int, outputs, skipped: bool = False) -> None:
        done = self.finished.setdefault(batch, {})
        done[lane.index] = None if skipped else outputs
        if len(done) < len(self.lanes):
            return
        del self.finished[batch]
        recovering = batch in self.recovering
        self.recovering.discard(batch)
        failed = any(v is None for v in done.values())
        if failed:
            for to_unit in dict.fromkeys(u for _, _, u in self.unit.outputs):
                self.host.send(self.plan.scheduler_node(to_unit), Skip(to_unit, batch, self.unit.name))
        else:
            per_unit: dict[str, list] = {}
            for k in sorted(done):
                for to_unit, items in done[k].items():
                    per_unit.setdefault(to_unit, []).extend(items)
            for to_unit, items in per_unit.items():
                self._send_downstream(to_unit, batch, merge_items(items))
        if self.unit.sink:
            self.host.batch_done(self.unit.name, batch, failed)
        if recovering:
            self.host.send(DRIVER, BatchDone(batch, self.unit.name, failed, recovering=True))

    # -- MOVE ----------------------------------------------------------------------------------
    def _send_downstream(self, to_unit: str, batch: int, items: list) -> None:
        plan = self.plan
        target = plan.units[to_unit]
        if plan.move == "txn" and not self.unit.dp and not target.dp and target.base != self.unit.base:
            key = (to_unit, batch)
            self.moves[key] = [items, len(items)]
            for src, dst, b in items:
                self._create_move(src, dst, batch, target.base, 0, 0)
            return
        self.host.send(plan.scheduler_node(to_unit), Invoke(to_unit, batch, self.unit.name, tuple(items)))

    def _create_move(self, src: str, dst: str, batch: int, target: int, restarts: int,
                     age: int) -> None:
        plan, host = self.plan, self.host
        txn = Txn(id=host.new_txn_id(), kind="move", unit=self.unit.name, lane=0, batch=batch,
                  restarts=restarts, reply_to=host.node, base=self.unit.base,
                  log=plan.logged(self.unit.name, "move"),
                  move=(src, dst, batch, 0, self.unit.base, target), prio=age)
        host.send(self.unit.base, TxnRequest(txn))

    def _move_done(self, audit) -> None:
        txn = audit.txn
        src, dst, batch, _, _, target = txn.move
        to_unit = self.plan.procs[dst].unit
        if not audit.committed:
            self._create_move(src, dst, batch, target, txn.restarts + 1, txn.age)
            return
        entry = self.moves.get((to_unit, batch))
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del self.moves[(to_unit, batch)]
            refs = tuple((s, d, None) for s, d, _ in entry[0])
            self.host.send(self.plan.scheduler_node(to_unit), Invoke(to_unit, batch, self.unit.name, refs))
