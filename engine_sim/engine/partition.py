"""A partition: one single-threaded execution site owning a disjoint slice of the state.

Its queue holds transactions it coordinates (from procedure schedulers, the driver), lock
requests of distributed transactions coordinated elsewhere, and its own coordinators' turns
to lock it, ordered by age (the id of a transaction's first attempt). It serves one at a
time and holds itself for that transaction until it commits or aborts.

A distributed transaction locks its partitions one after another in ascending partition
order and holds them to the end (two-phase locking, commit by 2PC): all transactions take
locks in the same order, so lock waits never form a cycle and no transaction is ever
refused a lock. A lane's transactions queued behind an aborted one are purged by the lane's
epoch (Algorithm 2's restart counter), checked when the transaction takes its base
partition, so no later batch of that lane commits before it.
"""
from __future__ import annotations

import heapq
import time

from engine_sim.engine.crash import crash_point
from engine_sim.engine.messages import Audit, Decide, Frag, FragReply, LockReply, LockReq, Prepare, Vote
from engine_sim.engine.twophase import SELF, Abort, Outcome, coordinate
from engine_sim.engine.txn import LogRecord, TxnRecord


class _Coord:
    __slots__ = ("txn", "gen", "out", "waiting", "started", "position")

    def __init__(self, txn, gen, out, started):
        self.txn, self.gen, self.out, self.started = txn, gen, out, started
        self.waiting = None
        self.position = None


class Partition:
    def __init__(self, site, pid: int, store):
        self.site = site
        self.plan = site.plan
        self.pid = pid
        self.store = store
        self.queue: list = []  # (age, txn id, kind, item): kind "txn" | "lock" | "self"
        self.holder: int | None = None
        self.cancelled: set[int] = set()
        self.epochs: dict[tuple[str, int], int] = {}
        self.seq = 0
        self.coords: dict[int, _Coord] = {}  # transactions this partition coordinates
        self.part_txn = None  # (txn id, coordinator, position) while a participant
        self.part_kind = ""  # "snapshot" where that transaction is a snapshot's (`_grant`)
        self.busy_s = 0.0  # executing
        self.held_s = 0.0  # locked by a transaction, executing or waiting (up to `held_since`)
        self.held_since: float | None = None
        self.commits = 0

    # -- arrivals ------------------------------------------------------------------------------
    def enqueue(self, txn) -> None:
        heapq.heappush(self.queue, (txn.age, txn.id, "txn", txn))

    def on_lock_req(self, req: LockReq) -> None:
        heapq.heappush(self.queue, (req.age or req.txn_id, req.txn_id, "lock", req))

    def take(self, txn_id: int) -> None:
        """Lock this partition for `txn_id` (it runs nothing else until `free`)."""
        self.holder = txn_id
        self.held_since = time.perf_counter()

    def free(self) -> None:
        self.holder = None
        if self.held_since is not None:
            self.held_s += time.perf_counter() - self.held_since
            self.held_since = None

    def held_now(self) -> float:
        """Time held so far, the current hold included (busy time is only the executing)."""
        ongoing = 0.0 if self.held_since is None else time.perf_counter() - self.held_since
        return self.held_s + ongoing

    def idle(self) -> bool:
        return self.holder is None and not self.queue

    # -- serving the queue -------------------------------------------------------------------
    def poll(self, budget_s: float | None = None) -> bool:
        """Serve queued work while free; True if anything happened. With a budget, return
        once that much time went on it, so the site can send what it produced meanwhile
        (a pipeline's next partition starts on a batch while this one serves the next)."""
        did = False
        stop = None if budget_s is None else time.perf_counter() + budget_s
        while self.queue and self.holder is None:
            if stop is not None and did and time.perf_counter() >= stop:
                break
            _, txn_id, kind, item = heapq.heappop(self.queue)
            did = True
            t0 = time.perf_counter()
            if kind == "lock":
                if txn_id in self.cancelled:
                    self.cancelled.discard(txn_id)
                else:
                    self._grant(item)
            elif kind == "self":
                c = self.coords.get(txn_id)
                if c is not None:
                    self._hold(c)
                    self._advance(c, None)
            else:
                self._start(item)
            self.busy_s += time.perf_counter() - t0
        return did

    def _position(self) -> tuple:
        self.seq += 1
        return (self.site.epoch, self.seq)

    # -- participant ---------------------------------------------------------------------------
    def _grant(self, req: LockReq) -> None:
        self.take(req.txn_id)
        self.store.begin()
        self.part_txn = (req.txn_id, req.coord, self._position())
        # (a snapshot's is told by its ops: where no crash point fires, `crash_point`)
        self.part_kind = "snapshot" if any(isinstance(op, tuple) and op[:1] == ("snapshot",)
                                           for op in req.ops) else ""
        try:
            results = [self.exec_op(op) for op in req.ops]
            ok = True
        except Exception as exc:  # noqa: BLE001 - reported to the coordinator, which aborts
            results, ok = [f"{type(exc).__name__}: {exc}"], False
        self.site.send(req.coord, LockReply(req.txn_id, self.pid, ok, results))

    def on_frag(self, msg: Frag, src: int) -> None:
        t0 = time.perf_counter()
        if self.holder != msg.txn_id:
            self.site.send(src, FragReply(msg.txn_id, self.pid, False, ["not locked"]))
            return
        try:
            results = [self.exec_op(op) for op in msg.ops]
            ok = True
        except Exception as exc:  # noqa: BLE001
            results, ok = [f"{type(exc).__name__}: {exc}"], False
        self.site.send(src, FragReply(msg.txn_id, self.pid, ok, results))
        self.busy_s += time.perf_counter() - t0

    def on_prepare(self, msg: Prepare, src: int) -> None:
        if self.holder != msg.txn_id or self.part_txn is None:
            self.site.send(src, Vote(msg.txn_id, self.pid, False, 0, [], ()))
            return
        crash_point(self, "participant", "before_vote", self.part_kind)
        if msg.logged:
            self.site.log.append(("prepare", msg.txn_id))
            self.site.flush()  # 2PC: a participant's log (and all before it) is durable first
        _, _, position = self.part_txn
        self.site.send(src, Vote(msg.txn_id, self.pid, True, self.site.clock,
                                 list(self.store.accesses), position))
        crash_point(self, "participant", "after_vote", self.part_kind)

    def on_decide(self, msg: Decide) -> None:
        if self.holder == msg.txn_id and self.part_txn is not None:
            if msg.commit:
                self.site.observe(msg.commit_ts)
                self.store.commit()
            else:
                self.store.rollback()
            self.free()
            self.part_txn = None
            crash_point(self, "participant", "after_decision", self.part_kind)
        elif not msg.commit:
            self.cancelled.add(msg.txn_id)  # not granted yet: drop the request when served

    def exec_op(self, op):
        if op[0] == "snapshot":
            return self.site.write_snapshot(op[1], op[2])
        return self.store.apply(op)

    # -- coordinator ---------------------------------------------------------------------------
    def purged(self, txn) -> bool:
        return txn.kind == "stream" and self.epochs.get((txn.unit, txn.lane), 0) > txn.epoch

    def _start(self, txn) -> None:
        if self.purged(txn):
            # Algorithm 2: an earlier txn of the lane aborted after this one was created
            self.site.complete(txn, Audit(txn, False, {}, purged=True, reason="purged"), [], False)
            return
        c = _Coord(txn, None, Outcome(), self.site.now_us())
        c.gen = coordinate(self, txn, c.out)
        self.coords[txn.id] = c
        self._advance(c, None)

    def _hold(self, c: _Coord) -> None:
        """The coordinator's turn to lock its own partition (we are free right now)."""
        self.take(c.txn.id)
        c.position = self._position()

    def on_reply(self, msg) -> None:
        """LockReply, FragReply or Vote for a transaction this partition coordinates."""
        c = self.coords.get(msg.txn_id)
        if c is None or c.waiting is None or msg.part not in c.waiting:
            return  # a late reply for an attempt that already aborted
        c.waiting[msg.part] = msg
        if all(v is not None for v in c.waiting.values()):
            t0 = time.perf_counter()
            self._advance(c, c.waiting)
            self.busy_s += time.perf_counter() - t0

    def _advance(self, c: _Coord, value) -> None:
        try:
            request = c.gen.send(value)
        except StopIteration:
            self._finish_commit(c)
            return
        except Abort as exc:
            self._finish_abort(c, str(exc))
            return
        if request is SELF:
            c.waiting = None
            if self.holder is None and (not self.queue or (c.txn.age, c.txn.id) < self.queue[0][:2]):
                self._hold(c)
                self._advance(c, None)
            else:
                heapq.heappush(self.queue, (c.txn.age, c.txn.id, "self", None))
            return
        c.waiting = {q: None for q in request}
        for q, msg in request.items():
            self.site.send(q, msg)

    def _release(self, c: _Coord) -> None:
        self.coords.pop(c.txn.id, None)
        if self.holder == c.txn.id:
            self.free()

    def _finish_abort(self, c: _Coord, reason: str) -> None:
        txn = c.txn
        self._release(c)
        if txn.kind == "stream" and reason != "purged":
            key = (txn.unit, txn.lane)
            self.epochs[key] = max(self.epochs.get(key, 0), txn.epoch + 1)
        records = self._records(txn, "abort", c.started, None, reason, None)
        self.site.complete(txn, Audit(txn, False, {}, purged=reason == "purged", reason=reason),
                           records, False)

    def _finish_commit(self, c: _Coord) -> None:
        txn, out = c.txn, c.out
        forced = False
        if txn.log:
            self.site.log.append(LogRecord(out.commit_ts, txn.replay_of or txn.id, txn.kind,
                                           txn.unit, txn.lane, txn.batch, txn.inputs, self.pid, txn.move))
            if out.locked or not self.site.group_commit:
                self.site.flush()  # 2PC coordinator: the commit record is durable first
                forced = True
        for q in out.locked:
            self.site.send(q, Decide(txn.id, True, out.commit_ts))
        if out.locked:
            crash_point(self, "coordinator", "after_decision", txn.kind)
        local = self.store.commit()
        self._release(c)
        self.commits += 1
        out.remote[self.pid] = (local, c.position)
        records = self._records(txn, "commit", c.started, out, "", c.position)
        self.site.complete(txn, Audit(txn, True, out.outputs, out.commit_ts), records,
                           txn.log and not forced)

    # -- history ---------------------------------------------------------------------------------
    def _records(self, txn, status: str, started: int, out: Outcome | None, reason: str,
                 position) -> list:
        plan = self.plan
        if txn.kind == "stream":
            members = plan.units[txn.unit].members
        elif txn.kind == "oltp":
            members = (txn.unit,)
        else:
            members = (txn.kind.upper(),)
        end = self.site.now_us()
        partitions = tuple(sorted({self.pid, *(out.locked if out else ())}))
        group = txn.id if len(members) > 1 else None
        records = []
        for child, m in enumerate(members):
            rec = TxnRecord(
                txn_id=txn.replay_of or txn.id, kind=txn.kind, procedure=m, unit=txn.unit,
                lane=txn.lane, batch=txn.batch, status=status, restarts=txn.restarts, base=self.pid,
                partitions=partitions, start_us=started, end_us=end, child=child, group=group,
                replay=txn.replay_of is not None, epoch=self.site.epoch, reason=reason,
                era=self.site.era)
            if out is not None:
                rec.commit_ts = out.commit_ts
                if child < len(out.child_work_us):
                    rec.work_us = out.child_work_us[child]
                counts: dict = {}
                for q, (accesses, pos) in out.remote.items():
                    rec.positions[q] = (pos[0], pos[1], child)
                    for ch, table, key, mode in accesses:
                        if ch == child:
                            k = (q, table, key, mode)
                            counts[k] = counts.get(k, 0) + 1
                rec.accesses = [(q, t, k, mo, n) for (q, t, k, mo), n in counts.items()]
                if child < len(out.child_outputs):
                    for to_sp, batch in out.child_outputs[child].items():
                        to_unit = plan.procs[to_sp].unit if to_sp in plan.procs else None
                        moved = 0 if to_unit is None or to_unit == txn.unit else \
                            plan.units[to_unit].handoffs_from(self.pid)
                        rec.outputs.append((to_sp, len(batch.tuples),
                                            len(batch.tuples) * plan.tuple_bytes.get((m, to_sp), 64), moved))
            records.append(rec)
        return records
