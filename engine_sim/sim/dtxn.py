"""Distributed transactions, run as the engine runs them (`engine/partition.py`,
`engine/twophase.py`), message for message.

A transaction that locks several partitions is coordinated by its base partition:

1. it reaches the base partition's queue (TxnRequest) and starts when the partition serves it;
2. it locks its partitions one after another in ascending partition order and holds each to
   the end: its own partition in its turn (no message), any other by a LockReq that waits in
   that partition's queue (oldest transaction first) and is answered by a LockReply once
   granted; the lock request of a declared SP carries the SP's remote work, done at the grant;
3. with every lock held, the base partition runs the body; a nested group's member (or a
   MOVE transaction's insert) with remote work sends a Frag to each partition concerned and
   waits for every FragReply (one dependent round each);
4. two-phase commit: Prepare to every other partition, a Vote back from each, then the
   coordinator commits, sends Decide to each (no reply) and releases its own partition; a
   participant commits and releases when the Decide arrives.

Every transaction takes its locks in the same order, so lock waits never form a cycle (no
deadlock, no wound-wait). A partition is held from its grant to its release, mostly waiting
on messages: that is why a distributed transaction across machines costs far more than its
work. Each message costs CPU on the sender's and the receiver's node and crosses the network.
"""
from __future__ import annotations

from heapq import heappop, heappush

from engine_sim.sim.compiled import DistSpec

SP, MOVE = 0, 1
LOCK, START = -1, -2  # partition queue entries besides single-sited transactions (unit >= 0)


class Dtxn:
    __slots__ = ("age", "kind", "u", "b", "spec", "node", "next", "grant_t", "waiting", "round",
                 "stream")

    def __init__(self, age: tuple[float, int], kind: int, u: int, b: int, spec: DistSpec,
                 node: int, stream: int = 0):
        self.age = age  # (creation time, sequence): the engine's queue order (oldest first)
        self.kind = kind  # SP or MOVE
        self.u = u  # unit (SP) or edge (MOVE)
        self.b = b
        self.spec = spec
        self.node = node  # where it is coordinated: its base partition's node
        self.next = 0  # index into spec.parts of the next lock to take
        self.grant_t: dict[int, float] = {}
        self.waiting = 0  # replies still expected in the current round
        self.round = 0
        self.stream = stream  # MOVE: which stream of the edge

    def describe(self, plan) -> str:
        what = plan.units[self.u].name if self.kind == SP else f"MOVE {plan.edges[self.u].name}"
        return f"distributed transaction of {what} for batch {self.b}"


class DistributedMixin:
    """Distributed-transaction handlers of `EngineModel` (they share its state)."""

    def _lat(self, a: int, b: int) -> float:
        if a == b:
            return self.lat_local
        if self.machine_delay and self.node_machine[a] != self.node_machine[b]:
            return self.lat_net + self.machine_delay
        return self.lat_net

    def _msg_cpu(self, a: int, b: int) -> float:
        return self.P.local_msg_cpu_s if a == b else self.P.msg_cpu_s

    def new_dtxn(self, created: float, kind: int, u: int, b: int, spec: DistSpec,
                 stream: int = 0) -> Dtxn:
        return Dtxn((created, next(self.env.seq)), kind, u, b, spec, self.part_machine[spec.base],
                    stream)

    # -- messages --------------------------------------------------------------------------------
    def _message(self, src: int, dst: int, nbytes: float, t: float, handler, T: Dtxn, q: int) -> None:
        """Send one message from node src at t: the sender's CPU, the link, the latency; the
        handler runs on arrival (and takes the receiver's CPU itself)."""
        sent = self.cpu(src, t, self._msg_cpu(src, dst))
        self.env.at(self.send(src, dst, nbytes, sent), handler, T, q)

    def _at_participant(self, t: float, T: Dtxn, q: int) -> float:
        """Partition q's node receives a message from T's coordinator: when it is read."""
        n = self.part_machine[q]
        return self.cpu(n, t, self._msg_cpu(T.node, n))

    def _at_coordinator(self, t: float, T: Dtxn, q: int) -> float:
        """T's coordinator receives partition q's reply: when it is read."""
        n = self.part_machine[q]
        return self.cpu(T.node, t, self._msg_cpu(T.node, n))

    def _at_part(self, T: Dtxn, q: int, t: float, work: float) -> float:
        """Partition q (held by T) does `work` from t; returns when it is done."""
        free = self.part_free
        fin = (free[q] if free[q] > t else t) + work
        free[q] = fin
        self.part_busy[q] += work
        return fin

    # -- arrival and locking -------------------------------------------------------------------
    def begin_dtxn(self, t: float, T: Dtxn) -> None:
        """T's TxnRequest reached its base partition: queued, or started when it is free."""
        base = T.spec.base
        if self.part_holder[base] is not None:
            heappush(self.part_queue[base], (T.age[0], T.age[1], START, T))
        else:
            free = self.part_free[base]
            self._next_lock(free if free > t else t, T)

    def _arrive_dtxn(self, t: float, T: Dtxn, _unused) -> None:
        self.begin_dtxn(t, T)

    def _remote_dtxn(self, t: float, T: Dtxn, src: int) -> None:
        """A TxnRequest from a scheduler on another node (with its input batch, for an SP
        under RPC MOVEs): received, then queued."""
        data = self.u_send_bytes[T.u] - self.P.control_bytes if T.kind == SP else 0.0
        self.begin_dtxn(self.cpu(T.node, t, self._msg_cpu(src, T.node) + data * self.P.ser_byte_s), T)

    def begin_move_txn(self, t: float, e: int, b: int, m: int) -> None:
        """The producer's scheduler (on node m) creates one MOVE transaction per stream of edge
        e and sends each to the producer's partition."""
        specs = self.e_move_txn[e]
        self.move_left[(e, b)] = len(specs)
        for k, spec in enumerate(specs):
            ready = self.cpu(m, t, self.P.sched_s)
            T = self.new_dtxn(ready, MOVE, e, b, spec, k)
            if T.node == m:
                self.env.at(ready + self.lat_local, self._arrive_dtxn, T)
            else:
                sent = self.cpu(m, ready, self.P.msg_cpu_s)
                self.env.at(self.send(m, T.node, self.P.control_bytes, sent), self._remote_dtxn, T, m)

    def _next_lock(self, t: float, T: Dtxn, _unused=None) -> None:
        parts = T.spec.parts
        if T.next == len(parts):
            self._execute(t, T)
            return
        q = parts[T.next]
        T.next += 1
        if q == T.spec.base:
            self._lock(t, T, q)  # its own partition: no message
        else:
            self._message(T.node, self.part_machine[q], self.P.control_bytes, t,
                          self._on_lock_req, T, q)

    def _on_lock_req(self, t: float, T: Dtxn, q: int) -> None:
        self._lock(self._at_participant(t, T, q), T, q)

    def _lock(self, t: float, T: Dtxn, q: int) -> None:
        if self.part_holder[q] is None:
            self._grant(t, T, q)
        else:
            heappush(self.part_queue[q], (T.age[0], T.age[1], LOCK, T))

    def _grant(self, t: float, T: Dtxn, q: int) -> None:
        free = self.part_free[q]
        gt = free if free > t else t
        self.part_holder[q] = T
        T.grant_t[q] = gt
        if q == T.spec.base:
            self.env.at(gt, self._next_lock, T)
            return
        done = self._at_part(T, q, gt, T.spec.ship.get(q, 0.0))  # the shipped work
        self._message(self.part_machine[q], T.node, self.P.control_bytes, done,
                      self._on_lock_reply, T, q)

    def _on_lock_reply(self, t: float, T: Dtxn, q: int) -> None:
        self._next_lock(self._at_coordinator(t, T, q), T)

    # -- execution and two-phase commit ----------------------------------------------------------
    def _execute(self, t: float, T: Dtxn) -> None:
        """Every lock held: the body runs on the base partition, then its fragment rounds."""
        self._round(self._at_part(T, T.spec.base, t, T.spec.exec_s), T, 0)

    def _round(self, t: float, T: Dtxn, i: int) -> None:
        rounds = T.spec.rounds
        if i == len(rounds):
            self._prepare(t, T)
            return
        r = rounds[i]
        T.round = i
        T.waiting = len(r.work)
        for q in r.work:
            self._message(T.node, self.part_machine[q], self.P.control_bytes + r.payload_bytes, t,
                          self._on_frag, T, q)

    def _on_frag(self, t: float, T: Dtxn, q: int) -> None:
        r = T.spec.rounds[T.round]
        t = self._at_participant(t, T, q) + r.payload_bytes * self.P.ser_byte_s
        done = self._at_part(T, q, t, r.work[q])
        self._message(self.part_machine[q], T.node, self.P.control_bytes, done,
                      self._on_frag_reply, T, q)

    def _on_frag_reply(self, t: float, T: Dtxn, q: int) -> None:
        t = self._at_coordinator(t, T, q)
        T.waiting -= 1
        if T.waiting == 0:
            self._round(t, T, T.round + 1)

    def _prepare(self, t: float, T: Dtxn) -> None:
        others = [q for q in T.spec.parts if q != T.spec.base]
        T.waiting = len(others)
        for q in others:
            self._message(T.node, self.part_machine[q], self.P.control_bytes, t, self._on_prepare, T, q)

    def _on_prepare(self, t: float, T: Dtxn, q: int) -> None:
        done = self._at_part(T, q, self._at_participant(t, T, q), self.P.prepare_s)
        self._message(self.part_machine[q], T.node, self.P.control_bytes, done, self._on_vote, T, q)

    def _on_vote(self, t: float, T: Dtxn, q: int) -> None:
        t = self._at_coordinator(t, T, q)
        T.waiting -= 1
        if T.waiting == 0:
            self._commit_dtxn(t, T)

    def _commit_dtxn(self, t: float, T: Dtxn) -> None:
        """Every vote is in: Decide to each participant, commit here, release, report."""
        P = self.P
        spec = T.spec
        base = spec.base
        for q in spec.parts:
            if q != base:
                self._message(T.node, self.part_machine[q], P.control_bytes, t, self._on_decide, T, q)
        done = self._at_part(T, base, t, P.commit_s)
        post = self.u_post[T.u] if T.kind == SP else None
        after = post[T.b] if post is not None else 0.0
        if after:
            self._at_part(T, base, done, after)
        self.env.at(done + after, self._release, T, base)
        self.dist_txns += 1
        if T.kind == SP:
            u = T.u
            self.u_dist_count[u] += 1
            self.env.at(self.send(T.node, self.u_sched[u], self.u_ack_bytes[u], done),
                        self._commit, u, T.b)
        else:
            self.move_txns += 1
            e = T.u
            m = self.u_sched[self.e_src[e]]
            self.e_move_time[e] += done - T.age[0]
            self.env.at(self.send(T.node, m, P.control_bytes, done), self._move_done, e, T.b)

    def _on_decide(self, t: float, T: Dtxn, q: int) -> None:
        done = self._at_part(T, q, self._at_participant(t, T, q), self.P.commit_s)
        self.env.at(done, self._release, T, q)

    def _move_done(self, t: float, e: int, b: int) -> None:
        """The producer's scheduler takes one MOVE transaction's outcome; when every stream of
        the edge is moved it invokes the consumer (the batch already lies in its partition)."""
        m = self.u_sched[self.e_src[e]]
        ready = self.cpu(m, t, self.P.ack_s + self._msg_cpu(self.part_machine[self.e_move_txn[e][0].base], m))
        key = (e, b)
        left = self.move_left[key] - 1
        if left:
            self.move_left[key] = left
            return
        del self.move_left[key]
        self._forward(ready, e, b, m)

    def _release(self, t: float, T: Dtxn, q: int) -> None:
        if self.part_holder[q] is not T:
            raise AssertionError(f"partition {q} released by a transaction that does not hold it")
        self.part_holder[q] = None
        self.part_held[q] += t - T.grant_t[q]
        if self.part_free[q] < t:
            self.part_free[q] = t
        queue = self.part_queue[q]
        while queue and self.part_holder[q] is None:
            _, _, kind, item = heappop(queue)
            if kind >= 0:
                self._run_single(t, q, kind, item)
            elif kind == LOCK:
                self._grant(t, item, q)
            else:
                free = self.part_free[q]
                self._next_lock(free if free > t else t, item)

