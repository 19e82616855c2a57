"""engine_sim.sim.dtxn against the code it replaced, message for message: a run's figures,
timelines and counters must be the same to the last bit. The reference is
`bind_distributed_path` as it was at 489f25b (before every message was sent inline where it
is sent, `model.send`'s statements included, the lock's branch was inlined into the lock
request's handler and `next_lock`, the commit into the last vote's handler, the arrivals'
queue checks into theirs, and the body and two-phase commit moved to `dtxn_commit.py`);
489f25b ran what d553a52 ran, which this test compared it to before."""
from __future__ import annotations

from heapq import heappop, heappush

import pytest

import engine_sim.sim.model as model_module
from engine_sim.sim.dtxn import LOCK, MOVE, SP, START, Dtxn, DtxnObserver
from test_sim_hotpath_reference import run as run_with, runs_to_compare


def bind_distributed_path_before(model, observer: DtxnObserver | None = None) -> None:
    """Bind the distributed-transaction handlers to `model` as closures over its state (as
    `hotpath.py` does for the single-sited path: no `self.` lookups, events pushed straight
    onto the heap). `observer`, if given, sees each message, grant and release as it happens."""
    env = model.env
    heap = env.heap
    seq = env.seq
    P = model.P
    control_bytes, ser_byte_s = P.control_bytes, P.ser_byte_s
    msg_cpu_s, local_msg_cpu_s = P.msg_cpu_s, P.local_msg_cpu_s
    prepare_s, commit_s, sched_s, ack_s = P.prepare_s, P.commit_s, P.sched_s, P.ack_s
    lat_local = model.lat_local
    part_machine = model.part_machine
    part_free, part_busy, part_held = model.part_free, model.part_busy, model.part_held
    part_holder, part_queue = model.part_holder, model.part_queue
    u_send_bytes, u_sched, u_ack_bytes, u_post = model.u_send_bytes, model.u_sched, model.u_ack_bytes, model.u_post
    u_dist_count = model.u_dist_count
    e_move_txn, e_src, e_move_time = model.e_move_txn, model.e_src, model.e_move_time
    move_left = model.move_left
    coord_free, coord_busy = model.coord_free, model.coord_busy
    cpu, send = model.cpu, model.send

    def at(time: float, fn, a, b) -> None:  # Environment.at, inlined
        now = env.now
        heappush(heap, (time if time > now else now, next(seq), fn, a, b))

    # -- messages --------------------------------------------------------------------------------
    def message(src: int, dst: int, nbytes: float, t: float, handler, T: Dtxn, q: int) -> None:
        """Send one message from node src at t: the sender's CPU, the link, the latency; the
        handler runs on arrival (and takes the receiver's CPU itself)."""
        if observer.message(src, dst, nbytes, t, handler, T, q):
            return
        send_message(src, dst, nbytes, t, handler, T, q)

    def send_message(src: int, dst: int, nbytes: float, t: float, handler, T: Dtxn, q: int) -> None:
        """`message` past the observer (the only one where there is none: a run's most
        frequent call, one check fewer)."""
        work = local_msg_cpu_s if src == dst else msg_cpu_s
        c = coord_free[src]  # cpu(src, t, work) and at(...), inlined: the path's hottest call
        sent = (c if c > t else t) + work
        coord_free[src] = sent
        coord_busy[src] += work
        arrive = sent + lat_local if src == dst else send(src, dst, nbytes, sent)
        now = env.now
        heappush(heap, (arrive if arrive > now else now, next(seq), handler, T, q))

    if observer is None:
        message = send_message  # noqa: F811 (the same sends, without asking an observer)

    def at_participant(t: float, T: Dtxn, q: int) -> float:
        """Partition q's node receives a message from T's coordinator: when it is read
        (`cpu(n, t, work)`, inlined: every message is read)."""
        n = part_machine[q]
        work = local_msg_cpu_s if T.node == n else msg_cpu_s
        c = coord_free[n]
        done = (c if c > t else t) + work
        coord_free[n] = done
        coord_busy[n] += work
        return done

    def at_coordinator(t: float, T: Dtxn, q: int) -> float:
        """T's coordinator receives partition q's reply: when it is read (`cpu`, inlined)."""
        node = T.node
        work = local_msg_cpu_s if node == part_machine[q] else msg_cpu_s
        c = coord_free[node]
        done = (c if c > t else t) + work
        coord_free[node] = done
        coord_busy[node] += work
        return done

    def at_part(q: int, t: float, work: float) -> float:
        """Partition q (held by its transaction) does `work` from t; returns when it is done."""
        f = part_free[q]
        fin = (f if f > t else t) + work
        part_free[q] = fin
        part_busy[q] += work
        return fin

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
        heappush(part_queue[q], (age[0], age[1], kind, item))
        kick(q, t)

    def must_queue(q: int, t: float) -> bool:
        """Work reaching partition q at t waits in its queue: q is held, or it is a site that
        serves a queue and is busy or has older work."""
        return part_holder[q] is not None or (part_serves[q] and (part_free[q] > t or bool(part_queue[q])))

    model._kick = kick
    model._must_queue = must_queue

    # -- arrival and locking -------------------------------------------------------------------
    def new_dtxn(created: float, kind: int, u: int, b: int, spec: DistSpec, stream: int = 0) -> Dtxn:
        return Dtxn((created, next(seq)), kind, u, b, spec, part_machine[spec.base], stream)

    def begin_dtxn(t: float, T: Dtxn) -> None:
        """T's TxnRequest reached its base partition: queued, or started when it is free."""
        base = T.spec.base
        if must_queue(base, t):
            enqueue(base, t, T.age, START, T)
        else:
            f = part_free[base]
            next_lock(f if f > t else t, T)

    def arrive_dtxn(t: float, T: Dtxn, _unused) -> None:
        begin_dtxn(t, T)

    def remote_dtxn(t: float, T: Dtxn, src: int) -> None:
        """A TxnRequest from a scheduler on another node (with its input batch, for an SP
        under RPC MOVEs): received, then queued."""
        data = u_send_bytes[T.u] - control_bytes if T.kind == SP else 0.0
        node = T.node
        begin_dtxn(cpu(node, t, (local_msg_cpu_s if src == node else msg_cpu_s) + data * ser_byte_s), T)

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
        parts = T.spec.parts
        if T.next == len(parts):
            execute(t, T)
            return
        q = parts[T.next]
        T.next += 1
        if q == T.spec.base:
            lock(t, T, q)  # its own partition: no message
        else:
            message(T.node, part_machine[q], control_bytes, t, on_lock_req, T, q)

    def on_lock_req(t: float, T: Dtxn, q: int) -> None:
        lock(at_participant(t, T, q), T, q)

    def lock(t: float, T: Dtxn, q: int) -> None:
        queue = part_queue[q]
        if part_holder[q] is None and (not part_serves[q]
                                       or (part_free[q] <= t and (not queue or T.age < queue[0][:2]))):
            grant(t, T, q)
        else:
            enqueue(q, t, T.age, LOCK, T)

    def grant(t: float, T: Dtxn, q: int) -> None:
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
        work = T.spec.ship.get(q, 0.0)  # the shipped work: at_part(q, gt, work), inlined
        f = part_free[q]
        done = (f if f > gt else gt) + work
        part_free[q] = done
        part_busy[q] += work
        message(part_machine[q], T.node, control_bytes, done, on_lock_reply, T, q)

    def on_lock_reply(t: float, T: Dtxn, q: int) -> None:
        node = T.node  # at_coordinator(t, T, q), inlined (every lock on another partition)
        work = local_msg_cpu_s if node == part_machine[q] else msg_cpu_s
        c = coord_free[node]
        read = (c if c > t else t) + work
        coord_free[node] = read
        coord_busy[node] += work
        next_lock(read, T)

    # -- execution and two-phase commit ----------------------------------------------------------
    def execute(t: float, T: Dtxn) -> None:
        """Every lock held: the body runs on the base partition, then its fragment rounds
        (`run_round(at_part(base, t, exec_s), T, 0)`, inlined: a transaction without rounds,
        most, goes to its prepare straight away, as `run_round` would send it)."""
        spec = T.spec
        base, work = spec.base, spec.exec_s
        f = part_free[base]
        done = (f if f > t else t) + work
        part_free[base] = done
        part_busy[base] += work
        if spec.rounds:
            run_round(done, T, 0)
        else:
            prepare(done, T)

    def run_round(t: float, T: Dtxn, i: int) -> None:
        rounds = T.spec.rounds
        if i == len(rounds):
            prepare(t, T)
            return
        r = rounds[i]
        T.round = i
        T.waiting = len(r.work)
        for q in r.work:
            message(T.node, part_machine[q], control_bytes + r.payload_bytes, t, on_frag, T, q)

    def on_frag(t: float, T: Dtxn, q: int) -> None:
        r = T.spec.rounds[T.round]
        t = at_participant(t, T, q) + r.payload_bytes * ser_byte_s
        done = at_part(q, t, r.work[q])
        message(part_machine[q], T.node, control_bytes, done, on_frag_reply, T, q)

    def on_frag_reply(t: float, T: Dtxn, q: int) -> None:
        t = at_coordinator(t, T, q)
        T.waiting -= 1
        if T.waiting == 0:
            run_round(t, T, T.round + 1)

    def prepare(t: float, T: Dtxn) -> None:
        base = T.spec.base
        others = [q for q in T.spec.parts if q != base]
        T.waiting = len(others)
        for q in others:
            message(T.node, part_machine[q], control_bytes, t, on_prepare, T, q)

    def on_prepare(t: float, T: Dtxn, q: int) -> None:
        r = at_participant(t, T, q)
        f = part_free[q]  # at_part(q, r, prepare_s), inlined (one call a participant)
        done = (f if f > r else r) + prepare_s
        part_free[q] = done
        part_busy[q] += prepare_s
        message(part_machine[q], T.node, control_bytes, done, on_vote, T, q)

    def on_vote(t: float, T: Dtxn, q: int) -> None:
        node = T.node  # t = at_coordinator(t, T, q), inlined (every participant votes)
        work = local_msg_cpu_s if node == part_machine[q] else msg_cpu_s
        c = coord_free[node]
        t = (c if c > t else t) + work
        coord_free[node] = t
        coord_busy[node] += work
        T.waiting -= 1
        if T.waiting == 0:
            commit_dtxn(t, T)

    def commit_dtxn(t: float, T: Dtxn) -> None:
        """Every vote is in: Decide to each participant, commit here, release, report."""
        spec = T.spec
        base = spec.base
        for q in spec.parts:
            if q != base:
                message(T.node, part_machine[q], control_bytes, t, on_decide, T, q)
        f = part_free[base]  # at_part(base, t, commit_s), inlined
        done = (f if f > t else t) + commit_s
        part_free[base] = done
        part_busy[base] += commit_s
        post = u_post[T.u] if T.kind == SP else None
        after = post[T.b] if post is not None else 0.0
        if after:
            at_part(base, done, after)
        at(done + after, release, T, base)
        model.dist_txns += 1
        if T.kind == SP:
            u = T.u
            u_dist_count[u] += 1
            acked = send(T.node, u_sched[u], u_ack_bytes[u], done)
            now = env.now  # at(acked, model._commit, u, T.b), inlined
            heappush(heap, (acked if acked > now else now, next(seq), model._commit, u, T.b))
        else:
            model.move_txns += 1
            e = T.u
            m = u_sched[e_src[e]]
            e_move_time[e] += done - T.age[0]
            at(send(T.node, m, control_bytes, done), move_done, e, T.b)

    def on_decide(t: float, T: Dtxn, q: int) -> None:
        r = at_participant(t, T, q)
        f = part_free[q]  # at_part(q, r, commit_s) and at(done, release, T, q), inlined
        done = (f if f > r else r) + commit_s
        part_free[q] = done
        part_busy[q] += commit_s
        now = env.now
        heappush(heap, (done if done > now else now, next(seq), release, T, q))

    def move_done(t: float, e: int, b: int) -> None:
        """The producer's scheduler takes one MOVE transaction's outcome; when every stream of
        the edge is moved it invokes the consumer (the batch already lies in its partition)."""
        m = u_sched[e_src[e]]
        src = part_machine[e_move_txn[e][0].base]
        ready = cpu(m, t, ack_s + (local_msg_cpu_s if src == m else msg_cpu_s))
        key = (e, b)
        left = move_left[key] - 1
        if left:
            move_left[key] = left
            return
        del move_left[key]
        model._forward(ready, e, b, m)

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
            kick(q, t)
            return
        queue = part_queue[q]  # the queued work reserves the partition, oldest first
        while queue and part_holder[q] is None:
            _, _, kind, item = heappop(queue)
            run_queued(t, q, kind, item)

    model.new_dtxn = new_dtxn
    model.begin_move_txn = begin_move_txn
    model._arrive_dtxn = arrive_dtxn
    model._remote_dtxn = remote_dtxn


class Counting(DtxnObserver):
    """An observer that drops nothing and counts what it sees (so a run with one goes through
    the observer's side of `message`)."""

    def __init__(self):
        self.seen = 0

    def message(self, *args) -> bool:
        self.seen += 1
        return False


def run(plan, rate, in_flight, bind, observer=None) -> str:
    return run_with(plan, rate, in_flight, bind, "bind_distributed_path", observer)


CASES = [("linear-road", 4, "dls", "txn", False), ("linear-road", 2, "central", "rpc", True),
         ("voter-leaderboard", 4, "dls", "rpc", True), ("streaming-ledger", 2, "dls", "txn", False),
         ("tpcdi-trade", 4, "dls", "rpc", True), ("shared40", None, "dls", "rpc", False),
         ("shared40", None, "dls", "txn", True)]


@pytest.mark.parametrize("name, machines, scheduler, move, sites", CASES)
def test_the_distributed_path_runs_what_it_ran_to_the_last_bit(name, machines, scheduler, move, sites):
    """Random designs (crowded: locks queue; spread: messages cross machines) at a light rate,
    an overloading one and closed loop, with the engine's sites or without, with an observer
    or without: the same figures, timelines and counters."""
    for plan, rate, in_flight in runs_to_compare(name, machines, scheduler, move, sites,
                                                 sum(map(ord, name)) + len(move)):
        want = run(plan, rate, in_flight, bind_distributed_path_before)
        assert run(plan, rate, in_flight, model_module.bind_distributed_path) == want
        seen = Counting()
        assert run(plan, rate, in_flight, model_module.bind_distributed_path, seen) == want
        assert seen.seen > 0
