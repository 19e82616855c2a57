"""engine_sim.sim.hotpath against the code it replaced, event for event: the simulator's runs
must give the same figures to the last bit (the advisor's picks compare them), so every
handler must do the same arithmetic in the same order and push the same events. The
reference is `bind_hot_path` as it was at d553a52 (before `create_now` and `forward` were
inlined into `invoke` and `commit`, each unit's out edges were read from one tuple, and a join's
inputs were counted in a list per unit)."""
from __future__ import annotations

from heapq import heappush

import numpy as np
import pytest

import engine_sim.sim.model as model_module
from advisor.sources import load_workload
from costmodel import Weights
from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from costmodel.sim_params import SimParams
from engine_sim.sim.compiled import compile_plan
from engine_sim.sim.dtxn import SP
from engine_sim.sim.model import EngineModel
from engine_sim.sim.result import summarise
from workload_edits import scale_workload


def bind_hot_path_before(model) -> None:
    env = model.env
    heap = env.heap
    seq = env.seq
    u_inputs, u_sched, u_machine = model.u_inputs, model.u_sched, model.u_machine
    u_base, u_service, u_dist, u_out = model.u_base, model.u_service, model.u_dist, model.u_out
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
    fanin: dict = {}  # (the model kept this dict then; it keeps a list per join now)

    def invoke(t: float, u: int, b: int, cpu: float) -> None:
        """An invocation of unit u for batch b reaches u's procedure scheduler."""
        inputs = u_inputs[u]
        if inputs > 1:  # a join counts its inputs (inlined: 4 in 10 invocations of the generated dataflows)
            key = (u, b)
            got = fanin.get(key, 0) + 1
            if got < inputs:  # another input to come: this one only takes the scheduler's CPU
                fanin[key] = got
                c = coord_free[u_sched[u]]
                ready = (c if c > t else t) + cpu
                coord_free[u_sched[u]] = ready
                coord_busy[u_sched[u]] += cpu
                return
            fanin.pop(key, None)
        if b != next_batch[u]:  # batch order: hold it until the earlier batch is created
            pending[u][b] = cpu
            return
        next_batch[u] = b + 1
        create_now(t, u, b, cpu)
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
        for e in out:
            if e_streams[e]:  # the batch is handed to an SP on another partition
                e_moves[e] += e_streams[e]
            if e_move_txn[e] is not None:  # MOVE as distributed transactions
                model.begin_move_txn(ready, e, b, m)
            elif u_sched[e_dst[e]] == m:  # forward's common case, inlined: the same node
                invoke(ready, e_dst[e], b, 0.0)
            else:
                forward(ready, e, b, m)

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




def random_design(w, rng: np.random.Generator, spread: int) -> Design:
    """SPs and tables on random partitions among the first `spread` (few: many distributed
    transactions and queues; many: messages across machines); windows with their owner."""
    g = WorkloadGraph.from_workload(w)
    c = g.cost
    proc = rng.integers(0, spread, c.n_proc)
    state = rng.integers(0, spread, c.n_state)
    owned = c.state_owner >= 0
    state[owned] = proc[c.state_owner[owned]]
    return Design.from_arrays(g, proc, state, Weights(0.3, 0.1, 0.6))


def everything(model: EngineModel, result) -> str:
    """All a run leaves: its result and the model's timelines and counters."""
    fields = sorted((k, v) for k, v in vars(result).items() if k != "wall_s")
    state = (model.env.now, model.env.events, model.created, model.done_at, model.arrival,
             model.part_free, model.part_busy, model.part_held, model.coord_free, model.coord_busy,
             model.nic_free, model.nic_busy, model.sched_busy, model.e_moves, model.e_move_time,
             [bytes(c) for c in model.committed], model.u_dist_count, model.dist_txns, model.move_txns)
    return repr((fields, state))


def run(plan, rate, in_flight, bind, binder: str = "bind_hot_path", observer=None) -> str:
    """`everything` of a run whose model binds its path with `bind` in place of `binder`."""
    saved = getattr(model_module, binder)
    setattr(model_module, binder, bind)
    try:
        m = EngineModel(plan, rate, in_flight, observer)
    finally:
        setattr(model_module, binder, saved)
    m.run()
    return everything(m, summarise(m, latency_bound_s=1.0, wall_s=0.0))


CASES = [("tpcdi-trade", 2, "dls", "rpc", False), ("linear-road", 4, "dls", "txn", False),
         ("voter-leaderboard", 4, "central", "rpc", False), ("streaming-ledger", 2, "dls", "rpc", True),
         ("window-micro", 2, "dls", "txn", True), ("chain-32", 4, "central", "txn", False),
         ("gen40", None, "dls", "rpc", False), ("shared40", None, "dls", "rpc", True)]


@pytest.mark.parametrize("name, machines, scheduler, move, sites", CASES)
def test_the_hot_path_runs_what_it_ran_to_the_last_bit(name, machines, scheduler, move, sites):
    """Random designs (crowded and spread) at a light rate, an overloading one and closed
    loop, with the engine's sites or without: the same figures, timelines and counters."""
    for plan, rate, in_flight in runs_to_compare(name, machines, scheduler, move, sites, sum(map(ord, name))):
        assert run(plan, rate, in_flight, model_module.bind_hot_path) == \
            run(plan, rate, in_flight, bind_hot_path_before)


def runs_to_compare(name, machines, scheduler, move, sites, seed: int):
    """(plan, rate, in_flight) of random designs, crowded (locks queue) and spread (messages
    cross machines), each at a light rate, an overloading one and closed loop."""
    w = scale_workload(name) if machines is None else load_workload(name).with_cluster(machines)
    rng = np.random.default_rng(seed)
    params = SimParams(site_per_partition=sites)
    n_parts = w.cluster.machines * w.cluster.partitions_per_machine
    for spread in (2, n_parts):
        d = random_design(w, rng, min(spread, n_parts))
        plan = compile_plan(w, d, params=params, scheduler=scheduler, move=move, batches=40,
                            batch_size=None, seed=int(rng.integers(1000)))
        for rate, in_flight in ((5.0, None), (5000.0, None), (None, 4)):
            yield plan, rate, in_flight


def busy_before(model) -> list[float]:
    """`summarise`'s partition busy seconds as it added them at d553a52: every unit's
    single-sited work of every committed batch through one generator."""
    busy = list(model.part_busy)
    for i, u in enumerate(model.plan.units):
        work = u.service if u.post is None else [a + b for a, b in zip(u.service, u.post)]
        done_mask = model.committed[i]
        busy[u.base] += sum(s for s, ok, d in zip(work, done_mask, u.dist or [None] * len(work))
                            if ok and d is None)
    return [float(x) for x in busy]


@pytest.mark.parametrize("name, machines, move", [("linear-road", 4, "txn"), ("window-micro", 2, "rpc"),
                                                   ("gen40", None, "rpc"), ("shared40", None, "rpc")])
def test_the_summary_adds_the_single_sited_work_as_it_did(name, machines, move):
    """A unit that never runs distributed and committed every batch has its work summed as a
    whole list: the same terms in the same order as the generator did, so the same bits."""
    w = scale_workload(name) if machines is None else load_workload(name).with_cluster(machines)
    rng = np.random.default_rng(7)
    n_parts = w.cluster.machines * w.cluster.partitions_per_machine
    for spread in (2, n_parts):
        plan = compile_plan(w, random_design(w, rng, spread), params=SimParams(), scheduler="dls", move=move,
                            batches=40, batch_size=None, seed=5)
        m = EngineModel(plan, 50.0)
        m.run()
        got = summarise(m, latency_bound_s=1.0, wall_s=0.0).partition_busy_s
        assert np.array(got).tobytes() == np.array(busy_before(m)).tobytes()
