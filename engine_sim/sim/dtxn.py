"""Distributed transactions: locking every participant, dependent fragment rounds and 2PC.

A distributed transaction (an SP whose state is on other partitions, or a MOVE run as a
transaction) is coordinated from its base partition's machine:

1. lock requests go to every participant; a partition grants them in timestamp order
   (the oldest transaction first) and, once granted, runs nothing else until it is released;
2. when the coordinator holds every grant, the base partition runs the control code and the
   remote fragments, one dependent round per remote step (a network round trip each);
3. two-phase commit: a prepare round trip, then the commit message releases the remote
   partitions (the base partition releases when it commits).

Every participant is held, mostly waiting for messages, from its grant to its release: that
is why a distributed transaction across machines costs far more than its work. Deadlock
cannot happen: a lock request preempts a grant held by a younger transaction that has not
started executing yet (wound-wait on the acquisition phase only).
"""
from __future__ import annotations

from heapq import heappop, heappush

from engine_sim.sim.plan import DistSpec

SP, MOVE = 0, 1


class Dtxn:
    __slots__ = ("id", "kind", "u", "b", "spec", "machine", "granted", "grant_t", "started")

    def __init__(self, id: tuple[float, int], kind: int, u: int, b: int, spec: DistSpec,
                 machine: int):
        self.id = id  # (creation time, sequence): the timestamp order of lock grants
        self.kind = kind  # SP or MOVE
        self.u = u  # unit (SP) or edge (MOVE)
        self.b = b
        self.spec = spec
        self.machine = machine  # where it is coordinated: its base partition's machine
        self.granted: set[int] = set()
        self.grant_t: dict[int, float] = {}
        self.started = False


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

    def new_dtxn(self, created: float, kind: int, u: int, b: int, spec: DistSpec) -> Dtxn:
        return Dtxn((created, next(self.env.seq)), kind, u, b, spec,
                    self.part_machine[spec.parts[0]])

    def begin_dtxn(self, t: float, T: Dtxn) -> None:
        """At the base machine: send a lock request to every participant."""
        bm = T.machine
        pm = self.part_machine
        work = 0.0
        for q in T.spec.parts:
            work += self._msg_cpu(bm, pm[q])
        t = self.cpu(bm, t, work)
        for q in T.spec.parts:
            self.env.at(t + self._lat(bm, pm[q]), self._lock, T, q)

    def begin_move_txn(self, t: float, e: int, b: int, spec: DistSpec, m: int) -> None:
        """The MOVE procedure's scheduler (on machine m) starts the MOVE transaction."""
        ready = self.cpu(m, t, self.P.sched_s)
        T = self.new_dtxn(ready, MOVE, e, b, spec)
        if T.machine == m:
            self.begin_dtxn(ready + self.lat_local, T)
        else:
            self.env.at(self.send(m, T.machine, self.P.control_bytes, ready), self._remote_dtxn, T)

    # -- locking ---------------------------------------------------------------------------------
    def _lock(self, t: float, T: Dtxn, q: int) -> None:
        h = self.part_holder[q]
        if h is None:
            self._grant_to(t, T, q)
        elif not h.started and T.id < h.id:  # an older transaction: take the grant back
            h.granted.discard(q)
            heappush(self.part_queue[q], (h.id[0], h.id[1], -1, h))
            self._grant_to(t, T, q)
        else:
            heappush(self.part_queue[q], (T.id[0], T.id[1], -1, T))

    def _grant_to(self, t: float, T: Dtxn, q: int) -> None:
        free = self.part_free[q]
        gt = free if free > t else t
        self.part_holder[q] = T
        T.grant_t[q] = gt
        self.env.at(gt + self._lat(self.part_machine[q], T.machine), self._granted, T, q)

    def _granted(self, t: float, T: Dtxn, q: int) -> None:
        if T.started or self.part_holder[q] is not T:
            return  # a stale grant: the partition was taken back in the meantime
        T.granted.add(q)
        if len(T.granted) == len(T.spec.parts):
            self._start(t, T)

    # -- execution and two-phase commit ----------------------------------------------------------
    def _start(self, t: float, T: Dtxn) -> None:
        T.started = True
        P = self.P
        spec = T.spec
        bm = T.machine
        pm = self.part_machine
        busy = self.part_busy
        base = spec.parts[0]
        cur = t + spec.exec_s
        busy[base] += spec.exec_s
        msgs = 0.0
        for r in spec.rounds:
            worst = 0.0
            remote = False
            for q in r.parts:
                mq = pm[q]
                hop = 2 * self._lat(bm, mq) + 2 * self._msg_cpu(bm, mq)
                msgs += 2 * self._msg_cpu(bm, mq)
                remote = remote or mq != bm
                if hop > worst:
                    worst = hop
                busy[q] += r.work_s
            cur += worst + r.work_s + (r.payload_bytes / P.bandwidth_Bps if remote else 0.0)
        others = spec.parts[1:]
        if others:
            worst = 0.0
            for q in others:
                hop = 2 * self._lat(bm, pm[q]) + 2 * self._msg_cpu(bm, pm[q])
                msgs += 4 * self._msg_cpu(bm, pm[q])
                busy[q] += P.prepare_s + P.commit_s
                if hop > worst:
                    worst = hop
            cur += worst + P.prepare_s
        busy[base] += P.commit_s
        decision = cur
        self.cpu(bm, t, msgs)
        env = self.env
        post = self.u_post[T.u] if T.kind == SP else None
        after = post[T.b] if post is not None else 0.0
        busy[base] += after
        for q in spec.parts:
            release = decision + P.commit_s + (after if q == base else self._lat(bm, pm[q]))
            self.part_held[q] += release - T.grant_t[q]
            env.at(release, self._release, T, q)
        self.dist_txns += 1
        done = decision + P.commit_s
        if T.kind == SP:
            u = T.u
            self.u_dist_count[u] += 1
            m = self.u_sched[u]
            env.at(self.send(bm, m, self.u_ack_bytes[u], done), self._commit, u, T.b)
        else:
            e = T.u
            self.move_txns += 1
            v = self.e_dst[e]
            mv = self.u_sched[v]
            arrive = self.send(bm, mv, P.control_bytes, done)
            self.e_move_time[e] += arrive - T.id[0]
            env.at(arrive, self._invoke_after_move, e, T.b)

    def _invoke_after_move(self, t: float, e: int, b: int) -> None:
        v = self.e_dst[e]
        src_machine = self.part_machine[self.e_move_txn[e].parts[0]]
        self._invoke(t, v, b, self._msg_cpu(src_machine, self.u_sched[v]))

    def _release(self, t: float, T: Dtxn, q: int) -> None:
        if self.part_holder[q] is T:
            self.part_holder[q] = None
        if self.part_free[q] < t:
            self.part_free[q] = t
        queue = self.part_queue[q]
        while queue and self.part_holder[q] is None:
            _, _, u, item = heappop(queue)
            if u >= 0:
                self._run_single(t, q, u, item)
            else:
                self._grant_to(t, item, q)
