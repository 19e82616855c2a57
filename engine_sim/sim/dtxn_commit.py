"""A distributed transaction's body, fragment rounds and two-phase commit (`dtxn.py` takes
its locks): once every lock is held the base partition runs the body and any fragment rounds,
then sends Prepare to every other partition, takes a Vote from each, commits, sends Decide to
each and releases its own partition; a participant commits and releases on the Decide.

Every message here (Frag and FragReply, Prepare, Vote, Decide) is sent inline, as
`bind_distributed_path` describes: the statements of the sending helper and the link that
the handlers called, in the same order on the same values, then one push of the arrival (the
same events at the same times with the same sequence numbers). A node's read of a message
(its CPU) and a partition's work are inlined too, each where a comment says so.
"""
from __future__ import annotations

from heapq import heappush
from typing import Callable

from engine_sim.sim.dtxn import SP, Dtxn, DtxnObserver


def bind_two_phase_commit(model, observer: DtxnObserver | None,
                          release: Callable) -> Callable[[float, Dtxn], None]:
    """Bind the handlers from the body to the release to `model`'s state; returns `execute`,
    which runs the body once every lock is held. `release` frees a partition."""
    env = model.env
    heap = env.heap
    seq = env.seq
    P = model.P
    control_bytes, ser_byte_s = P.control_bytes, P.ser_byte_s
    msg_cpu_s, local_msg_cpu_s = P.msg_cpu_s, P.local_msg_cpu_s
    prepare_s, commit_s, ack_s = P.prepare_s, P.commit_s, P.ack_s
    lat_local, lat_net, machine_delay = model.lat_local, model.lat_net, model.machine_delay
    node_machine, nic_free, nic_busy = model.node_machine, model.nic_free, model.nic_busy
    bandwidth = P.bandwidth_Bps
    control_busy = control_bytes / bandwidth  # send's link time of a control message
    part_machine = model.part_machine
    part_free, part_busy = model.part_free, model.part_busy
    u_sched, u_ack_bytes, u_post = model.u_sched, model.u_ack_bytes, model.u_post
    u_dist_count = model.u_dist_count
    e_move_txn, e_src, e_move_time = model.e_move_txn, model.e_src, model.e_move_time
    move_left = model.move_left
    coord_free, coord_busy = model.coord_free, model.coord_busy
    cpu, send = model.cpu, model.send

    def at_part(q: int, t: float, work: float) -> float:
        """Partition q (held by its transaction) does `work` from t; returns when it is done."""
        f = part_free[q]
        fin = (f if f > t else t) + work
        part_free[q] = fin
        part_busy[q] += work
        return fin

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
        """Fragment round i: a Frag to each partition concerned (sent inline); after the
        last round, the prepare."""
        rounds = T.spec.rounds
        if i == len(rounds):
            prepare(t, T)
            return
        r = rounds[i]
        T.round = i
        T.waiting = len(r.work)
        src = T.node
        nbytes = control_bytes + r.payload_bytes
        for q in r.work:
            dst = part_machine[q]
            if observer is not None and observer.message(src, dst, nbytes, t, on_frag, T, q):
                continue
            work = local_msg_cpu_s if src == dst else msg_cpu_s
            c = coord_free[src]
            sent = (c if c > t else t) + work
            coord_free[src] = sent
            coord_busy[src] += work
            if src == dst:
                arrive = sent + lat_local
            else:  # send(src, dst, nbytes, sent), inlined
                f = nic_free[src]
                busy = nbytes / bandwidth
                done = (f if f > sent else sent) + busy
                nic_free[src] = done
                nic_busy[src] += busy
                arrive = (done + lat_net + machine_delay if machine_delay and node_machine[src] != node_machine[dst]
                          else done + lat_net)
            now = env.now
            heappush(heap, (arrive if arrive > now else now, next(seq), on_frag, T, q))

    def on_frag(t: float, T: Dtxn, q: int) -> None:
        """Partition q's node reads a Frag (its CPU) and its payload, q does its work and
        sends the FragReply (each inlined)."""
        r = T.spec.rounds[T.round]
        n = part_machine[q]
        node = T.node
        work = local_msg_cpu_s if node == n else msg_cpu_s
        c = coord_free[n]
        read = (c if c > t else t) + work
        coord_free[n] = read
        coord_busy[n] += work
        t = read + r.payload_bytes * ser_byte_s
        work = r.work[q]
        f = part_free[q]
        done = (f if f > t else t) + work
        part_free[q] = done
        part_busy[q] += work
        if observer is not None and observer.message(n, node, control_bytes, done, on_frag_reply, T, q):
            return
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
        heappush(heap, (arrive if arrive > now else now, next(seq), on_frag_reply, T, q))

    def on_frag_reply(t: float, T: Dtxn, q: int) -> None:
        node = T.node  # the coordinator's read of the reply (its CPU), inlined
        work = local_msg_cpu_s if node == part_machine[q] else msg_cpu_s
        c = coord_free[node]
        t = (c if c > t else t) + work
        coord_free[node] = t
        coord_busy[node] += work
        T.waiting -= 1
        if T.waiting == 0:
            run_round(t, T, T.round + 1)

    def prepare(t: float, T: Dtxn) -> None:
        """Prepare to every partition but the base, in lock order (sent inline); the
        count of votes to wait for is set after the sends (nothing reads it before a vote)."""
        spec = T.spec
        base = spec.base
        src = T.node
        waiting = 0
        for q in spec.parts:
            if q == base:
                continue
            waiting += 1
            dst = part_machine[q]
            if observer is not None and observer.message(src, dst, control_bytes, t, on_prepare, T, q):
                continue
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
            heappush(heap, (arrive if arrive > now else now, next(seq), on_prepare, T, q))
        T.waiting = waiting

    def on_prepare(t: float, T: Dtxn, q: int) -> None:
        """Partition q's node reads the Prepare (its CPU), q prepares and sends its Vote
        (each inlined)."""
        n = part_machine[q]
        node = T.node
        work = local_msg_cpu_s if node == n else msg_cpu_s
        c = coord_free[n]
        r = (c if c > t else t) + work
        coord_free[n] = r
        coord_busy[n] += work
        f = part_free[q]
        done = (f if f > r else r) + prepare_s
        part_free[q] = done
        part_busy[q] += prepare_s
        if observer is not None and observer.message(n, node, control_bytes, done, on_vote, T, q):
            return
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
        heappush(heap, (arrive if arrive > now else now, next(seq), on_vote, T, q))

    def on_vote(t: float, T: Dtxn, q: int) -> None:
        """The coordinator reads a Vote; after the last one it commits."""
        node = T.node  # the coordinator's read of the vote (its CPU), inlined
        work = local_msg_cpu_s if node == part_machine[q] else msg_cpu_s
        c = coord_free[node]
        t = (c if c > t else t) + work
        coord_free[node] = t
        coord_busy[node] += work
        waiting = T.waiting - 1
        T.waiting = waiting
        if waiting:
            return
        # every vote is in (the commit, inlined): Decide to each participant (sent
        # inline), commit here, release, report
        spec = T.spec
        base = spec.base
        src = node
        for q in spec.parts:
            if q == base:
                continue
            dst = part_machine[q]
            if observer is not None and observer.message(src, dst, control_bytes, t, on_decide, T, q):
                continue
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
            heappush(heap, (arrive if arrive > now else now, next(seq), on_decide, T, q))
        f = part_free[base]  # at_part(base, t, commit_s), inlined
        done = (f if f > t else t) + commit_s
        part_free[base] = done
        part_busy[base] += commit_s
        post = u_post[T.u] if T.kind == SP else None
        after = post[T.b] if post is not None else 0.0
        if after:
            at_part(base, done, after)
        now = env.now  # at(done + after, release, T, base), inlined
        rel = done + after
        heappush(heap, (rel if rel > now else now, next(seq), release, T, base))
        model.dist_txns += 1
        if T.kind == SP:
            u = T.u
            u_dist_count[u] += 1
            acked = send(node, u_sched[u], u_ack_bytes[u], done)
            now = env.now  # at(acked, model._commit, u, T.b), inlined
            heappush(heap, (acked if acked > now else now, next(seq), model._commit, u, T.b))
        else:
            model.move_txns += 1
            e = T.u
            m = u_sched[e_src[e]]
            e_move_time[e] += done - T.age[0]
            arrive = send(node, m, control_bytes, done)
            now = env.now  # at(arrive, move_done, e, T.b), inlined
            heappush(heap, (arrive if arrive > now else now, next(seq), move_done, e, T.b))

    def on_decide(t: float, T: Dtxn, q: int) -> None:
        n = part_machine[q]  # q's node reads the Decide (its CPU), inlined
        work = local_msg_cpu_s if T.node == n else msg_cpu_s
        c = coord_free[n]
        r = (c if c > t else t) + work
        coord_free[n] = r
        coord_busy[n] += work
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

    return execute
