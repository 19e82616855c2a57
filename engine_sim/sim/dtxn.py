"""Distributed transactions, run as the engine runs them (`engine/partition.py`,
`engine/twophase.py`), message for message.

A transaction that locks several partitions is coordinated by its base partition:

1. it reaches the base partition's queue (TxnRequest) and starts when the partition serves it;
2. it locks its partitions one after another in ascending partition order and holds each to
   the end: its own partition in its turn (no message), any other by a LockReq that waits in
   that partition's queue (oldest transaction first) and is answered by a LockReply once
   granted; the lock request of a declared SP carries the SP's remote work, done at the grant.
   With the engine's sites (`site_per_partition`), a partition that such transactions lock
   serves its queue a slice at a time (`SimParams.serve_slice_s`) and reads its messages
   between slices, as the engine's site does: a lock request waits for the slice under way
   and the older work, never for the younger work queued behind it. On a cluster a request
   reaching a partition no transaction holds waits for the work reserved there before it;
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
from typing import Callable

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


class DtxnObserver:
    """Sees every message, grant and release of a run as it happens (a test's window on the
    protocol, and its way to lose one: a true return from `message` or `release` drops it)."""

    def message(self, src: int, dst: int, nbytes: float, t: float, handler: Callable, T: Dtxn,
                q: int) -> bool:
        return False

    def grant(self, t: float, T: Dtxn, q: int) -> None:
        """T got partition q's lock at t (or later: when q is free)."""

    def release(self, t: float, T: Dtxn, q: int) -> bool:
        return False


def bind_distributed_path(model, observer: DtxnObserver | None = None) -> None:
    """Bind the distributed-transaction handlers to `model` as closures over its state (as
    `hotpath.py` does for the single-sited path: no `self.` lookups, events pushed straight
    onto the heap): the queues, arrival and locking here, the body and the two-phase commit
    from `dtxn_commit.py`. `observer`, if given, sees each message, grant and release as it
    happens (and may drop a message or a release).

    Every message is sent inline, where it is sent (the hot handlers' most frequent calls
    were the sending helper's and the link's): the sender's CPU from t (`model.cpu`'s
    statements; the local cost within a node), then to another node the link (`model.send`'s
    statements, a control message's link time worked out once), the latency, and the
    arrival pushed with its handler; the observer sees it first."""
    env = model.env
    heap = env.heap
    seq = env.seq
    P = model.P
    control_bytes, ser_byte_s = P.control_bytes, P.ser_byte_s
    msg_cpu_s, local_msg_cpu_s = P.msg_cpu_s, P.local_msg_cpu_s
    sched_s = P.sched_s
    lat_local, lat_net, machine_delay = model.lat_local, model.lat_net, model.machine_delay
    node_machine, nic_free, nic_busy = model.node_machine, model.nic_free, model.nic_busy
    control_busy = control_bytes / P.bandwidth_Bps  # send's link time of a control message
    part_machine = model.part_machine
    part_free, part_busy, part_held = model.part_free, model.part_busy, model.part_held
    part_holder, part_queue = model.part_holder, model.part_queue
    u_send_bytes = model.u_send_bytes
    e_move_txn = model.e_move_txn
    move_left = model.move_left
    coord_free, coord_busy = model.coord_free, model.coord_busy
    cpu, send = model.cpu, model.send

    def at(time: float, fn, a, b) -> None:  # Environment.at, inlined
        now = env.now
        heappush(heap, (time if time > now else now, next(seq), fn, a, b))

    # -- serving a partition's queue (the engine's sites) --------------------------------------
    part_serves = model.part_serves
    serving = [False] * len(part_queue)  # a serve event of the partition is pending
    slice_s = P.serve_slice_s

    def kick(q: int, t: float) -> None:
        """Partition q serves its queue once free (unless it is held or a serve is pending)."""
        if not serving[q] and part_queue[q] and part_holder[q] is None:
            serving[q] = True
            f = part_free[q]
            at(f if f > t else t, serve, q, None)

    def serve(t: float, q: int, _unused) -> None:
        """One slice of partition q's queue, oldest first: transactions back to back until the
        slice is spent, a lock taken or the queue empty (at least one item); then q reads its
        messages (what they cost lands on its timeline first) and serves again."""
        serving[q] = False
        queue = part_queue[q]
        if part_holder[q] is not None or not queue:
            return
        f = part_free[q]
        if f > t:  # messages read meanwhile: serve after them
            serving[q] = True
            at(f, serve, q, None)
            return
        stop = t + slice_s
        first = True
        while queue and part_holder[q] is None:
            f = part_free[q]
            if not first and f >= stop:
                break
            first = False
            _, _, kind, item = heappop(queue)
            run_queued(f if f > t else t, q, kind, item)
        kick(q, t)

    def run_queued(t: float, q: int, kind: int, item) -> None:
        """A queue entry of partition q served at t: a single-sited transaction (kind: its
        unit), a lock request, or its coordinator's start."""
        if kind >= 0:
            model._run_single(t, q, kind, item)
        elif kind == LOCK:
            grant(t, item, q)
        else:
            f = part_free[q]
            next_lock(f if f > t else t, item)

    def enqueue(q: int, t: float, age: tuple[float, int], kind: int, item) -> None:
        queue = part_queue[q]
        heappush(queue, (age[0], age[1], kind, item))
        if not serving[q] and part_holder[q] is None:  # kick(q, t) and its at(...), inlined
            serving[q] = True
            f = part_free[q]
            f = f if f > t else t
            now = env.now
            heappush(heap, (f if f > now else now, next(seq), serve, q, None))

    def must_queue(q: int, t: float) -> bool:
        """Work reaching partition q at t waits in its queue: q is held, or it is a site that
        serves a queue and is busy or has older work."""
        return part_holder[q] is not None or (part_serves[q] and (part_free[q] > t or bool(part_queue[q])))

    model._kick = kick
    model._must_queue = must_queue

    # -- arrival and locking -------------------------------------------------------------------
    def new_dtxn(created: float, kind: int, u: int, b: int, spec: DistSpec, stream: int = 0) -> Dtxn:
        return Dtxn((created, next(seq)), kind, u, b, spec, part_machine[spec.base], stream)

    def arrive_dtxn(t: float, T: Dtxn, _unused) -> None:
        """T's TxnRequest reached its base partition: queued (`must_queue`, inlined), or started
        when it is free."""
        base = T.spec.base
        if part_holder[base] is not None or (part_serves[base] and (part_free[base] > t or bool(part_queue[base]))):
            enqueue(base, t, T.age, START, T)
        else:
            f = part_free[base]
            next_lock(f if f > t else t, T)

    def remote_dtxn(t: float, T: Dtxn, src: int) -> None:
        """A TxnRequest from a scheduler on another node (with its input batch, for an SP
        under RPC MOVEs): received, then queued."""
        data = u_send_bytes[T.u] - control_bytes if T.kind == SP else 0.0
        node = T.node
        work = (local_msg_cpu_s if src == node else msg_cpu_s) + data * ser_byte_s
        c = coord_free[node]  # cpu(node, t, work), inlined
        t = (c if c > t else t) + work
        coord_free[node] = t
        coord_busy[node] += work
        base = T.spec.base  # then as arrive_dtxn(t, T, None), inlined
        if part_holder[base] is not None or (part_serves[base] and (part_free[base] > t or bool(part_queue[base]))):
            enqueue(base, t, T.age, START, T)
        else:
            f = part_free[base]
            next_lock(f if f > t else t, T)

    def begin_move_txn(t: float, e: int, b: int, m: int) -> None:
        """The producer's scheduler (on node m) creates one MOVE transaction per stream of edge
        e and sends each to the producer's partition."""
        specs = e_move_txn[e]
        move_left[(e, b)] = len(specs)
        for k, spec in enumerate(specs):
            ready = cpu(m, t, sched_s)
            T = new_dtxn(ready, MOVE, e, b, spec, k)
            if T.node == m:
                at(ready + lat_local, arrive_dtxn, T, None)
            else:
                sent = cpu(m, ready, msg_cpu_s)
                at(send(m, T.node, control_bytes, sent), remote_dtxn, T, m)

    def next_lock(t: float, T: Dtxn, _unused=None) -> None:
        """T takes its next lock from t (or runs its body once it holds them all)."""
        spec = T.spec
        parts = spec.parts
        i = T.next
        if i == len(parts):
            execute(t, T)
            return
        q = parts[i]
        T.next = i + 1
        if q == spec.base:  # its own partition, no message: lock(t, T, q), inlined
            queue = part_queue[q]
            if part_holder[q] is None and (not part_serves[q]
                                           or (part_free[q] <= t and (not queue or T.age < queue[0][:2]))):
                if observer is not None:  # grant(t, T, q) of its own partition, inlined
                    observer.grant(t, T, q)
                f = part_free[q]
                gt = f if f > t else t
                part_holder[q] = T
                T.grant_t[q] = gt
                now = env.now  # at(gt, next_lock, T, None), inlined
                heappush(heap, (gt if gt > now else now, next(seq), next_lock, T, None))
            else:
                enqueue(q, t, T.age, LOCK, T)
            return
        src, dst = T.node, part_machine[q]  # the LockReq, sent inline
        if observer is not None and observer.message(src, dst, control_bytes, t, on_lock_req, T, q):
            return
        work = local_msg_cpu_s if src == dst else msg_cpu_s
        c = coord_free[src]
        sent = (c if c > t else t) + work
        coord_free[src] = sent
        coord_busy[src] += work
        if src == dst:
            arrive = sent + lat_local
        else:  # send(src, dst, control_bytes, sent), inlined
            f = nic_free[src]
            done = (f if f > sent else sent) + control_busy
            nic_free[src] = done
            nic_busy[src] += control_busy
            arrive = (done + lat_net + machine_delay if machine_delay and node_machine[src] != node_machine[dst]
                      else done + lat_net)
        now = env.now
        heappush(heap, (arrive if arrive > now else now, next(seq), on_lock_req, T, q))

    def on_lock_req(t: float, T: Dtxn, q: int) -> None:
        """Partition q's node reads T's LockReq (its CPU, inlined) and locks q for T (`lock`,
        inlined): granted now, or queued."""
        n = part_machine[q]
        work = local_msg_cpu_s if T.node == n else msg_cpu_s
        c = coord_free[n]
        t = (c if c > t else t) + work
        coord_free[n] = t
        coord_busy[n] += work
        queue = part_queue[q]
        if part_holder[q] is None and (not part_serves[q]
                                       or (part_free[q] <= t and (not queue or T.age < queue[0][:2]))):
            grant(t, T, q)
        else:
            enqueue(q, t, T.age, LOCK, T)

    def grant(t: float, T: Dtxn, q: int) -> None:
        """T gets partition q's lock at t, or when q is free; on a partition not T's own it does
        the work the request shipped and sends the LockReply (inline)."""
        if observer is not None:
            observer.grant(t, T, q)
        f = part_free[q]
        gt = f if f > t else t
        part_holder[q] = T
        T.grant_t[q] = gt
        if q == T.spec.base:
            now = env.now  # at(gt, next_lock, T, None), inlined
            heappush(heap, (gt if gt > now else now, next(seq), next_lock, T, None))
            return
        work = T.spec.ship.get(q, 0.0)  # the shipped work, from gt (q is free by then)
        done = gt + work
        part_free[q] = done
        part_busy[q] += work
        n, node = part_machine[q], T.node
        if observer is not None and observer.message(n, node, control_bytes, done, on_lock_reply, T, q):
            return  # the LockReply, sent inline
        work = local_msg_cpu_s if n == node else msg_cpu_s
        c = coord_free[n]
        sent = (c if c > done else done) + work
        coord_free[n] = sent
        coord_busy[n] += work
        if n == node:
            arrive = sent + lat_local
        else:  # send(n, node, control_bytes, sent), inlined
            f = nic_free[n]
            done = (f if f > sent else sent) + control_busy
            nic_free[n] = done
            nic_busy[n] += control_busy
            arrive = (done + lat_net + machine_delay if machine_delay and node_machine[n] != node_machine[node]
                      else done + lat_net)
        now = env.now
        heappush(heap, (arrive if arrive > now else now, next(seq), on_lock_reply, T, q))

    def on_lock_reply(t: float, T: Dtxn, q: int) -> None:
        node = T.node  # the coordinator's read of the reply (its CPU), inlined
        work = local_msg_cpu_s if node == part_machine[q] else msg_cpu_s
        c = coord_free[node]
        read = (c if c > t else t) + work
        coord_free[node] = read
        coord_busy[node] += work
        next_lock(read, T)

    def release(t: float, T: Dtxn, q: int) -> None:
        if observer is not None and observer.release(t, T, q):
            return
        if part_holder[q] is not T:
            raise AssertionError(f"partition {q} released by a transaction that does not hold it")
        part_holder[q] = None
        part_held[q] += t - T.grant_t[q]
        if part_free[q] < t:
            part_free[q] = t
        if part_serves[q]:
            if not serving[q] and part_queue[q]:  # kick(q, t) and its at(...), inlined (q is free now)
                serving[q] = True
                f = part_free[q]
                f = f if f > t else t
                now = env.now
                heappush(heap, (f if f > now else now, next(seq), serve, q, None))
            return
        queue = part_queue[q]  # the queued work reserves the partition, oldest first
        while queue and part_holder[q] is None:
            _, _, kind, item = heappop(queue)
            run_queued(t, q, kind, item)

    # the body and two-phase commit; `next_lock` calls `execute` once every lock is held
    # (imported here: `dtxn_commit.py` reads this module's Dtxn and kinds)
    from engine_sim.sim.dtxn_commit import bind_two_phase_commit
    execute = bind_two_phase_commit(model, observer, release)

    model.new_dtxn = new_dtxn
    model.begin_move_txn = begin_move_txn
    model._arrive_dtxn = arrive_dtxn
    model._remote_dtxn = remote_dtxn
