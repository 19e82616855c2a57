"""The simulator is honest to the engine: it counts what its events did, refuses a run that
did not finish, and runs distributed transactions with the engine's lock order and messages.

The break tests sabotage one mechanism (a partition never released, a message lost) and
must see the run fail: they show the simulator notices, rather than reporting formulas."""
from __future__ import annotations

import dataclasses

import pytest

from costmodel.design import Design
from advisor.sources import load_workload
from costmodel.workload import Access, InputSpec, Procedure, Stream, Table, Workload
from engine_sim.sim import SimError, SimParams, run_once
from engine_sim.sim import dtxn as dtxn_module
from engine_sim.sim import hotpath as hotpath_module
from engine_sim.sim import run as run_module
from engine_sim.sim.dtxn import DtxnObserver
from engine_sim.sim.model import EngineModel

EXACT = SimParams(service_cv=0.0)


def observe(monkeypatch, observer: DtxnObserver) -> None:
    """Every run of the simulator from here on reports to `observer` (its `model`: the run's)."""
    def model(plan, rate, in_flight):
        observer.model = EngineModel(plan, rate, in_flight, observer)
        return observer.model

    monkeypatch.setattr(run_module, "EngineModel", model)


def two_sps_sharing_two_tables() -> tuple[Workload, Design]:
    """A and B both write T0 and T1, which lie on partitions 0 and 1 of two machines; A runs on
    partition 1, B on 0: every transaction locks both, from opposite ends."""
    tables = (Table("T0", 100, 32, "k"), Table("T1", 100, 32, "k"))
    both = (Access("T0", "write", 5), Access("T1", "write", 5))
    w = Workload("crossed", tables, (Procedure("A", 1.0, both), Procedure("B", 1.0, both)),
                 (Stream("A", "B", 10),), input=InputSpec(batch_size=10))
    return w, Design(w.name, 2, 1, {"A": 1, "B": 0}, {"T0": 0, "T1": 1})


def test_counts_come_from_the_run_and_match_the_engines_rules():
    # T1's access happens on half the batches, but the engine locks every partition holding a
    # table the SP declares: every batch of SP0 is a distributed transaction
    tables = (Table("T0", 100, 32, "k"), Table("T1", 100, 32, "k"))
    procs = (Procedure("SP0", 1.0, (Access("T0", "read", 5), Access("T1", "write", 5, probability=0.5))),
             Procedure("SP1", 1.0, (Access("T1", "read", 5),)))
    streams = (Stream("SP0", "SP1", 5), Stream("SP0", "SP1", 5, 32))  # two streams, one hop
    w = Workload("counted", tables, procs, streams, input=InputSpec(batch_size=10))
    d = Design(w.name, 2, 1, {"SP0": 0, "SP1": 1}, {"T0": 0, "T1": 1})
    r = run_once(w, d, input_rate=200, batches=150)
    assert r.completed_batches == r.batches == 150
    assert r.procedures["SP0"]["distributed"] == 150 and r.distributed_txns == 150
    assert r.txns == 300 and r.procedures["SP1"]["txns"] == 150
    assert r.moves == 2 * 150  # the engine counts a MOVE per stream crossing partitions
    m = run_once(w, d, input_rate=200, batches=150, move="txn")
    assert m.move_txns == 2 * 150 and m.distributed_txns == 150 + 2 * 150 and m.moves == 300


def test_a_distributed_transaction_locks_in_ascending_order_with_the_engines_messages(monkeypatch):
    w, d = two_sps_sharing_two_tables()
    locks: dict[int, list[int]] = {}
    messages: dict[str, int] = {}

    class Counted(DtxnObserver):
        def grant(self, t, T, q):
            locks.setdefault(T.age, []).append(q)

        def message(self, src, dst, nbytes, t, handler, T, q):
            messages[handler.__name__] = messages.get(handler.__name__, 0) + 1
            return False

    observe(monkeypatch, Counted())
    r = run_once(w, d, input_rate=3000, batches=100, calibration=EXACT)
    assert r.completed_batches == 100 and r.distributed_txns == 200
    assert len(locks) == 200 and all(order == [0, 1] for order in locks.values())
    # one remote partition per transaction: LockReq/LockReply, Prepare/Vote, Decide, and no
    # fragment round (a declared SP's remote writes travel with its lock request)
    assert messages == {"on_lock_req": 200, "on_lock_reply": 200, "on_prepare": 200,
                        "on_vote": 200, "on_decide": 200}


def test_a_nested_group_sends_a_fragment_round_per_member(monkeypatch):
    tables = (Table("T0", 100, 32, "k"), Table("T1", 100, 32, "k"))
    procs = (Procedure("A", 1.0, (Access("T1", "write", 3),)), Procedure("B", 1.0, (Access("T1", "read", 3),)))
    w = Workload("nested", tables, procs, (Stream("A", "B", 10),), nested=(("A", "B"),))
    d = Design(w.name, 1, 2, {"A": 0, "B": 0}, {"T0": 0, "T1": 1})
    frags = []

    class Frags(DtxnObserver):
        def message(self, src, dst, nbytes, t, handler, T, q):
            if handler.__name__ == "on_frag":
                frags.append(q)
            return False

    observe(monkeypatch, Frags())
    r = run_once(w, d, input_rate=500, batches=50)
    assert r.txns == 50 and r.distributed_txns == 50
    assert frags == [1] * 100  # A's write and B's read: two dependent rounds to partition 1


def test_a_partition_never_released_fails_the_run(monkeypatch):
    w, d = two_sps_sharing_two_tables()

    class Leaky(DtxnObserver):
        def release(self, t, T, q):
            return q == 1 and T.b == 20  # partition 1 stays locked by batch 20's transaction

    observe(monkeypatch, Leaky())
    with pytest.raises(SimError, match=r"stalled: \d+ of 60 batches never completed; the first, "
                                       r"batch \d+, .* waits for partition 1; partition 1 is held "
                                       r"by the distributed transaction of A for batch 20$"):
        run_once(w, d, input_rate=1000, batches=60)


def test_the_last_release_lost_still_fails_the_run(monkeypatch):
    """Every batch completes, but a partition is left locked: refused too."""
    w, d = two_sps_sharing_two_tables()

    class Leaky(DtxnObserver):
        def release(self, t, T, q):
            return T.b == 59 and q == 0 and self.model.plan.units[T.u].name == "B"

    observe(monkeypatch, Leaky())
    with pytest.raises(SimError, match="partition 0 still held by the distributed transaction of B for batch 59"):
        run_once(w, d, input_rate=1000, batches=60)


def test_a_lost_lock_reply_fails_the_run(monkeypatch):
    w, d = two_sps_sharing_two_tables()

    class Lossy(DtxnObserver):
        def message(self, src, dst, nbytes, t, handler, T, q):
            return handler.__name__ == "on_lock_reply" and T.b == 7  # batch 7's lock reply is lost

    observe(monkeypatch, Lossy())
    with pytest.raises(SimError, match=r"stalled: \d+ of 40 batches never completed; the first, "
                                       r"batch [67], .*held by the distributed transaction of A for batch 7"):
        run_once(w, d, input_rate=1000, batches=40)


def test_a_lost_invocation_message_fails_the_run(chain32, monkeypatch):
    """Drop one Invoke between machines on the single-sited hot path."""
    w = chain32
    from engine_sim.sim.scenario_designs import chain_design

    d = chain_design(w, 2)
    real_push = hotpath_module.heappush

    def lossy(heap, item):
        if getattr(item[2], "__name__", "") == "invoke_msg" and item[4] == 11:
            return  # batch 11's hand-off across machines is lost
        real_push(heap, item)

    monkeypatch.setattr(hotpath_module, "heappush", lossy)
    with pytest.raises(SimError, match=r"batch 11, was never started by SP 'SP\d+'"):
        run_once(w, d, input_rate=2000, batches=50)
    monkeypatch.setattr(hotpath_module, "heappush", real_push)
    r = run_once(w, d, input_rate=2000, batches=50)  # the same run, nothing lost: it finishes
    assert r.completed_batches == 50 and r.latency_p50_ms > 0


def test_throughput_is_read_off_completed_batches():
    w, d = two_sps_sharing_two_tables()
    r = run_once(w, d, in_flight=4, batches=200, calibration=EXACT)
    assert r.completed_batches == 200
    assert r.latency_p50_ms > 0 and r.latency_mean_ms > 0
    # closed loop of 4 batches: throughput x latency = batches in flight (Little's law)
    assert r.throughput_bps * r.latency_mean_ms / 1e3 == pytest.approx(4, rel=0.1)
    assert dtxn_module.LOCK != dtxn_module.START


def test_a_closed_loop_run_is_measured_as_the_engine_measures_it(chain32):
    # every batch over the time from the first injection to the last completion. One
    # partition runs each SP for every waiting batch in turn, so a run no longer than its
    # window finishes all its batches in one burst: measured from the tenth batch on, that
    # burst once read as over 100 million tuples/s
    from engine_sim.sim.scenario_designs import chain_design

    d = chain_design(chain32, 1, 1)
    short = run_once(chain32, d, in_flight=64, batches=60, calibration=EXACT)
    long = run_once(chain32, d, in_flight=64, batches=640, calibration=EXACT)
    assert short.completed_batches == 60
    assert short.throughput_bps == pytest.approx(long.throughput_bps, rel=0.1)
    # the whole run: throughput x the time of the last completion = every batch
    assert short.throughput_bps * short.latency_mean_ms / 1e3 < 60


def _with_cost_unit(w: Workload, us: float) -> Workload:
    """`w` with its spec's `[input] cost_unit_us` (where a spec declares it: the simulator read
    a `cost_unit_us` of the workload itself, which no spec sets, so it always took 100)."""
    return dataclasses.replace(w, input=dataclasses.replace(w.input, cost_unit_us=us))


def test_sp_work_is_cost_times_the_workloads_cost_unit_and_code_gets_none():
    tables = (Table("T0", 100, 32, "k"),)
    w = Workload("work", tables, (Procedure("SP0", 4.0, (Access("T0", "read", 1),)),),
                 input=InputSpec(batch_size=1))
    d = Design(w.name, 1, 1, {"SP0": 0}, {"T0": 0})
    base = run_once(w, d, input_rate=50, batches=50, calibration=EXACT).procedures["SP0"]["mean_service_ms"]
    double = run_once(_with_cost_unit(w, 200.0), d, input_rate=50, batches=50,
                      calibration=EXACT).procedures["SP0"]["mean_service_ms"]
    assert double - base == pytest.approx(4 * EXACT.cost_unit_s * 1e3, rel=1e-6)
    assert EXACT.cost_unit_s == pytest.approx(100e-6)  # a cost-1.0 SP: about 100 us, as the engine
    voter = load_workload("voter-leaderboard")
    assert all(p.code for p in voter.procedures)
    dv = Design(voter.name, 1, 1, {p: 0 for p in voter.procedure_names}, {t: 0 for t in voter.table_names})
    heavier = dataclasses.replace(voter, procedures=tuple(dataclasses.replace(p, cost=10 * p.cost)
                                                          for p in voter.procedures))
    a, b = (run_once(x, dv, input_rate=50, batches=50, calibration=EXACT).procedures
            for x in (voter, heavier))
    assert a == b  # real code does its own work: its declared cost adds no loop
