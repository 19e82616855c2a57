"""engine_sim.sim.hotpath: the single-sited path keeps the engine's rules - every SP runs each
batch once, in batch order, only after all its inputs committed; a partition runs one
transaction at a time and never idles while work waits; a transaction waits for the
distributed transaction that holds its partition."""
from __future__ import annotations

import pytest

from costmodel.design import Design
from costmodel.workload import Access, InputSpec, Procedure, Stream, Table, Workload
from engine_sim.sim import SimParams
from engine_sim.sim.dtxn import DtxnObserver
from engine_sim.sim.model import EngineModel
from engine_sim.sim.compiled import compile_plan

BATCHES = 60


def workload(accesses: dict[str, list[str]], streams=()) -> Workload:
    names = sorted({t for acc in accesses.values() for t in acc})
    return Workload("hot", tuple(Table(t, 1000, 64, "k") for t in names),
                    tuple(Procedure(n, 1.0, tuple(Access(t, "read", 5) for t in acc))
                          for n, acc in accesses.items()),
                    tuple(Stream(a, b, 10, 64) for a, b in streams), input=InputSpec(batch_size=10))


def run(w, d, *, rate, params=SimParams(), scheduler="dls", batches=BATCHES) -> EngineModel:
    plan = compile_plan(w, d, params=params, scheduler=scheduler, move="rpc", batches=batches,
                        batch_size=None, seed=3)
    m = EngineModel(plan, rate)
    m.run()
    m.check_finished()
    return m


# a diamond across two machines: A feeds B and C, both feed D (fan-in)
DIAMOND = workload({"A": ["TA"], "B": ["TB"], "C": ["TC"], "D": ["TD"]},
                   [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")])
DIAMOND_DESIGN = Design("hot", 2, 2, {"A": 0, "B": 1, "C": 2, "D": 3},
                        {"TA": 0, "TB": 1, "TC": 2, "TD": 3})


@pytest.mark.parametrize("scheduler", ["dls", "central"])
def test_every_sp_runs_every_batch_once_in_order_after_all_its_inputs(scheduler):
    m = run(DIAMOND, DIAMOND_DESIGN, rate=1e6, scheduler=scheduler)  # everything offered at once
    units = {u.name: i for i, u in enumerate(m.plan.units)}
    assert m.u_commits == [BATCHES] * 4 and m.completed == BATCHES
    for u in units.values():
        created = m.created[u]
        assert min(created) >= 0 and created == sorted(created)  # batch order per SP
    svc = m.u_service
    for b in range(BATCHES):
        a, bb, c, d = (units[n] for n in "ABCD")
        # a consumer is created only once every producer ran the batch
        assert m.created[bb][b] >= m.created[a][b] + svc[a][b]
        assert m.created[c][b] >= m.created[a][b] + svc[a][b]
        assert m.created[d][b] >= max(m.created[bb][b] + svc[bb][b], m.created[c][b] + svc[c][b])
        assert m.done_at[b] >= m.created[d][b] + svc[d][b] >= m.arrival[b]


def test_a_saturated_partition_runs_back_to_back():
    w = workload({"A": ["T"]})
    d = Design("hot", 1, 1, {"A": 0}, {"T": 0})
    m = run(w, d, rate=1e7)  # every batch offered within microseconds; creation is far cheaper
    service = m.u_service[0]
    start = m.created[0][0] + m.P.local_latency_s
    assert m.part_free[0] == pytest.approx(start + sum(service), rel=1e-9)  # never idle, no overlap
    assert max(m.done_at) > m.part_free[0]  # the last batch completes after the last execution


def test_an_unloaded_partition_serves_each_batch_on_arrival():
    w = workload({"A": ["T"]})
    d = Design("hot", 1, 1, {"A": 0}, {"T": 0})
    m = run(w, d, rate=10.0)  # a batch every 100 ms, each done in well under 1 ms
    P = m.P
    create = P.sched_s + P.local_msg_cpu_s
    ack = P.ack_s + P.local_msg_cpu_s
    for b in range(BATCHES):
        expected = m.u_source_cpu[0] + create + P.local_latency_s + m.u_service[0][b] + P.local_latency_s + ack
        assert m.done_at[b] - m.arrival[b] == pytest.approx(expected, rel=1e-9)


def test_a_single_sited_transaction_waits_for_the_distributed_one_holding_its_partition():
    # D locks partitions 0 and 1 every batch; S runs single-sited on partition 1
    w = Workload("hot", (Table("T0", 1000, 64, "k"), Table("T1", 1000, 64, "k")),
                 (Procedure("D", 1.0, (Access("T0", "write", 5), Access("T1", "write", 5))),
                  Procedure("S", 1.0, (Access("T1", "read", 5),))), (), input=InputSpec(batch_size=10))
    d = Design("hot", 2, 1, {"D": 0, "S": 1}, {"T0": 0, "T1": 1})
    plan = compile_plan(w, d, params=SimParams(), scheduler="dls", move="rpc", batches=BATCHES,
                        batch_size=None, seed=3)
    released, queued = {}, []

    class Releases(DtxnObserver):
        def release(self, t, T, q):
            released[(q, T.b)] = t
            return False

    m = EngineModel(plan, 1e5, observer=Releases())
    run_single = m._run_single

    def on_run_single(t, p, u, b):
        queued.append((t, p, max(released[k] for k in released if k[0] == p)))
        return run_single(t, p, u, b)

    m._run_single = on_run_single
    m.run()
    m.check_finished()
    assert queued  # under load S met the partition held
    for t, p, last_release in queued:
        assert p == 1 and t >= last_release  # it ran once the holder let go, not before
    assert m.u_commits == [BATCHES, BATCHES]
