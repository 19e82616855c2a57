"""The per-transaction path of the engine model, as closures over the model's state lists.

Every single-sited transaction goes through these handlers (invoke -> create on the
scheduler -> execute on the partition -> commit notification, which invokes the downstream
SPs), so they are written for speed: state lists and constants are bound as closure cells
(no `self.` attribute lookups), events are pushed straight onto the heap, and the rare
branches (out-of-order batches, a blocked scheduler, distributed transactions, remote hops)
call back into `EngineModel` methods and `dtxn.py`'s handlers. A join's count of its inputs
and a queued transaction's run (on the engine's sites, most of them) are common enough to
be here too.
"""
from __future__ import annotations

from heapq import heappush

from engine_sim.sim.dtxn import SP


def bind_network(model) -> None:
    """The model's `send` (a message's arrival time) and `cpu` (a reservation of a node's
    coordinator thread), as closures: every path calls them, several times a transaction."""
    lat_local, lat_net, machine_delay = model.lat_local, model.lat_net, model.machine_delay
    node_machine, bandwidth = model.node_machine, model.P.bandwidth_Bps
    nic_free, nic_busy = model.nic_free, model.nic_busy
    coord_free, coord_busy = model.coord_free, model.coord_busy

    def send(src: int, dst: int, nbytes: float, ready: float) -> float:
        """Arrival time of a message handed to the network at `ready`."""
        if src == dst:
            return ready + lat_local
        f = nic_free[src]
        start = f if f > ready else ready
        busy = nbytes / bandwidth
        done = start + busy
        nic_free[src] = done
        nic_busy[src] += busy
        if machine_delay and node_machine[src] != node_machine[dst]:
            return done + lat_net + machine_delay
        return done + lat_net

    def cpu(m: int, t: float, work: float) -> float:
        """Reserve `work` seconds of node m's coordinator from t; returns the finish."""
        c = coord_free[m]
        done = (c if c > t else t) + work
        coord_free[m] = done
        coord_busy[m] += work
        return done

    model.send = send
    model.cpu = cpu


def bind_hot_path(model) -> None:
    env = model.env
    heap = env.heap
    seq = env.seq
    u_inputs, u_sched, u_machine = model.u_inputs, model.u_sched, model.u_machine
    u_base, u_service, u_dist = model.u_base, model.u_service, model.u_dist
    # each unit's out edges with what `commit` reads of each, in one tuple: (edge, its streams
    # handed across partitions, its MOVE transactions, its consumer, the consumer's scheduler)
    u_out = [tuple((e, model.e_streams[e], model.e_move_txn[e], model.e_dst[e], model.u_sched[model.e_dst[e]])
                   for e in out) for out in model.u_out]
    u_post = model.u_post
    u_sched_local, u_create_cpu, u_ack_cpu = model.u_sched_local, model.u_create_cpu, model.u_ack_cpu
    u_send_bytes, u_ack_bytes = model.u_send_bytes, model.u_ack_bytes
    committed = model.committed
    e_dst, e_move_txn, e_send_cpu = model.e_dst, model.e_move_txn, model.e_send_cpu
    e_recv_cpu, e_bytes, e_move_time = model.e_recv_cpu, model.e_bytes, model.e_move_time
    e_streams, e_moves = model.e_streams, model.e_moves
    next_batch, pending = model.next_batch, model.pending
    sched_busy = model.sched_busy
    coord_free, coord_busy = model.coord_free, model.coord_busy
    part_free, part_holder, part_queue = model.part_free, model.part_holder, model.part_queue
    created, sinks_left, done_at = model.created, model.sinks_left, model.done_at
    lat_local = model.lat_local
    send, cpu_reserve = model.send, model.cpu
    client_latency = model.client_latency
    arrive_dtxn, remote_dtxn, new_dtxn = model._arrive_dtxn, model._remote_dtxn, model.new_dtxn
    kick, must_queue, part_serves = model._kick, model._must_queue, model.part_serves
    # each join's inputs counted so far, per batch (a list per unit: indexing it is cheaper than
    # the (unit, batch) dict it replaces, and a count back at 0 is the dict's absent key)
    fanin = model.fanin = [[0] * model.plan.batches if n > 1 else None for n in u_inputs]

    def invoke(t: float, u: int, b: int, cpu: float) -> None:
        """An invocation of unit u for batch b reaches u's procedure scheduler."""
        inputs = u_inputs[u]
        if inputs > 1:  # a join counts its inputs (inlined: 4 in 10 invocations of the generated dataflows)
            counts = fanin[u]
            got = counts[b] + 1
            if got < inputs:  # another input to come: this one only takes the scheduler's CPU
                counts[b] = got
                c = coord_free[u_sched[u]]
                ready = (c if c > t else t) + cpu
                coord_free[u_sched[u]] = ready
                coord_busy[u_sched[u]] += cpu
                return
            counts[b] = 0
        if b != next_batch[u]:  # batch order: hold it until the earlier batch is created
            pending[u][b] = cpu
            return
        next_batch[u] = b + 1
        # create_now(t, u, b, cpu), inlined (every transaction comes this way): the same
        # statements in the same order
        m = u_sched[u]
        cpu += u_create_cpu[u]
        c = coord_free[m]
        ready = (c if c > t else t) + cpu
        coord_free[m] = ready
        coord_busy[m] += cpu
        sched_busy[u] += cpu
        created[u][b] = ready
        dist = u_dist[u]
        spec = dist[b] if dist is not None else None
        if u_sched_local[u]:
            if spec is None:
                heappush(heap, (ready + lat_local, next(seq), exec_, u, b))
            else:
                heappush(heap, (ready + lat_local, next(seq), arrive_dtxn,
                                new_dtxn(ready, SP, u, b, spec), None))
        else:
            arrive = send(m, u_machine[u], u_send_bytes[u], ready)
            if spec is None:
                env.at(arrive, model._remote_exec, u, b)
            else:
                env.at(arrive, remote_dtxn, new_dtxn(ready, SP, u, b, spec), m)
        if pending[u]:
            model._release_pending(u, b, t)

    def create_now(t: float, u: int, b: int, cpu: float) -> None:
        """The scheduler creates the transaction and sends it to the base partition (the
        engine's TxnRequest; no reply until it commits)."""
        m = u_sched[u]
        cpu += u_create_cpu[u]
        c = coord_free[m]
        ready = (c if c > t else t) + cpu
        coord_free[m] = ready
        coord_busy[m] += cpu
        sched_busy[u] += cpu
        created[u][b] = ready
        dist = u_dist[u]
        spec = dist[b] if dist is not None else None
        if u_sched_local[u]:
            if spec is None:
                heappush(heap, (ready + lat_local, next(seq), exec_, u, b))
            else:
                heappush(heap, (ready + lat_local, next(seq), arrive_dtxn,
                                new_dtxn(ready, SP, u, b, spec), None))
        else:
            arrive = send(m, u_machine[u], u_send_bytes[u], ready)
            if spec is None:
                env.at(arrive, model._remote_exec, u, b)
            else:
                env.at(arrive, remote_dtxn, new_dtxn(ready, SP, u, b, spec), m)

    def exec_(t: float, u: int, b: int) -> None:
        """A single-sited transaction reaches its partition: run it, or queue it. A partition
        runs its transactions in the order they arrive (its timeline reserved at once), or
        queues them behind the distributed transaction that holds it; an engine site that
        distributed transactions lock serves its queue oldest first (`dtxn.py`), so a lock
        request is not kept behind younger work."""
        p = u_base[u]
        if part_holder[p] is not None or (part_serves[p] and must_queue(p, t)):
            heappush(part_queue[p], (created[u][b], next(seq), u, b))
            kick(p, t)
            return
        f = part_free[p]
        fin = (f if f > t else t) + u_service[u][b]
        post = u_post[u]
        part_free[p] = fin if post is None else fin + post[b]
        if u_sched_local[u]:
            heappush(heap, (fin + lat_local, next(seq), commit, u, b))
        else:
            env.at(send(u_machine[u], u_sched[u], u_ack_bytes[u], fin), commit, u, b)

    def commit(t: float, u: int, b: int) -> None:
        """The scheduler takes the commit notification (the engine's Audit) and invokes the
        downstream SPs: the same node's scheduler directly, another node's by an Invoke
        carrying the batch (RPC MOVE), or by MOVE transactions first."""
        m = u_sched[u]
        ack = u_ack_cpu[u]
        c = coord_free[m]
        ready = (c if c > t else t) + ack
        coord_free[m] = ready
        coord_busy[m] += ack
        sched_busy[u] += ack
        committed[u][b] = 1
        out = u_out[u]
        if not out:  # a sink: the batch is done when its last sink commits
            left = sinks_left[b] - 1
            sinks_left[b] = left
            if left == 0:  # the client hears of it after its latency
                done_at[b] = ready + client_latency
                model._batch_done(ready + client_latency, b)
            return
        for e, streams, move_txn, v, mv in out:
            if streams:  # the batch is handed to an SP on another partition
                e_moves[e] += streams
            if move_txn is not None:  # MOVE as distributed transactions
                model.begin_move_txn(ready, e, b, m)
            elif mv == m:  # forward's common case, inlined: the same node
                invoke(ready, v, b, 0.0)
            else:  # forward's other case, inlined: an invocation message to another node
                w = e_send_cpu[e]
                c = coord_free[m]  # cpu_reserve(m, ready, w), inlined
                sent = (c if c > ready else ready) + w
                coord_free[m] = sent
                coord_busy[m] += w
                arrive = send(m, mv, e_bytes[e], sent)
                e_move_time[e] += arrive - ready + e_recv_cpu[e]
                heappush(heap, (arrive, next(seq), invoke_msg, e, b))

    def forward(ready: float, e: int, b: int, m: int) -> None:
        """The scheduler on node m invokes edge e's consumer for batch b."""
        v = e_dst[e]
        mv = u_sched[v]
        if mv == m:
            invoke(ready, v, b, 0.0)
        else:
            sent = cpu_reserve(m, ready, e_send_cpu[e])
            arrive = send(m, mv, e_bytes[e], sent)
            e_move_time[e] += arrive - ready + e_recv_cpu[e]
            heappush(heap, (arrive, next(seq), invoke_msg, e, b))

    def run_single(t: float, p: int, u: int, b: int) -> None:
        """A queued single-sited transaction runs once its partition is released (from its
        queue, `dtxn.py`: on the engine's sites, the most of the transactions)."""
        f = part_free[p]
        fin = (f if f > t else t) + u_service[u][b]
        post = u_post[u]
        part_free[p] = fin if post is None else fin + post[b]
        done = fin + lat_local if u_sched_local[u] else send(u_machine[u], u_sched[u], u_ack_bytes[u], fin)
        now = env.now  # Environment.at, inlined
        heappush(heap, (done if done > now else now, next(seq), commit, u, b))

    def invoke_msg(t: float, e: int, b: int) -> None:
        """An invocation message for edge e's target arrived at its scheduler's machine."""
        invoke(t, e_dst[e], b, e_recv_cpu[e])

    model._invoke = invoke
    model._create_now = create_now
    model._exec = exec_
    model._commit = commit
    model._forward = forward
    model._invoke_msg = invoke_msg
    model._run_single = run_single
