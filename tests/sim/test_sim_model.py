"""The engine model against what queueing arithmetic says it must do, and its invariants."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costmodel.design import Design
from advisor.sources import load_workload
from costmodel.workload import Access, InputSpec, Procedure, Stream, Table, Workload
from engine_sim.sim import SimError, SimParams, max_throughput, run_once
from engine_sim.sim.scale import spread_design
from reports.scaling import scale_design

EXACT = SimParams(service_cv=0.0)  # deterministic service times: arithmetic applies exactly


def chain(n: int, accesses=None, batch_size: int = 10) -> Workload:
    """n SPs in series; SP i reads 10 rows of T i unless `accesses[i]` says otherwise."""
    names = {f"T{i}" for i in range(n)} | {a.table for acc in (accesses or []) for a in acc}
    tables = tuple(Table(t, 1000, 64, "k") for t in sorted(names))
    procs = tuple(Procedure(f"SP{i}", 1.0, accesses[i] if accesses else
                            (Access(f"T{i}", "read", 10),)) for i in range(n))
    streams = tuple(Stream(f"SP{i}", f"SP{i + 1}", batch_size, 64) for i in range(n - 1))
    return Workload("test-chain", tables, procs, streams, input=InputSpec(batch_size=batch_size))


def placed(w: Workload, machines: int, ppm: int, procs: dict, state: dict) -> Design:
    return Design(w.name, machines, ppm, procs, state)


def single_site_service(P: SimParams, rows: float, tuples_in: float, tuples_out: float) -> float:
    return P.single_site_txn_s(1.0, rows_read=rows, tuples_in=tuples_in, tuples_out=tuples_out) \
        + P.local_msg_cpu_s


def test_one_partition_saturates_at_the_inverse_of_its_service_time():
    w = chain(1)
    d = placed(w, 1, 1, {"SP0": 0}, {"T0": 0})
    capacity = 1.0 / single_site_service(EXACT, 10, 10, 0)
    r = max_throughput(w, d, calibration=EXACT, batches=400)
    assert 0.93 * capacity <= r.throughput_bps <= 1.001 * capacity
    assert r.within_bound and r.distributed_txns == 0 and r.moves == 0
    assert r.throughput_tps == pytest.approx(10 * r.throughput_bps)


def test_utilisation_law_and_unloaded_latency_of_a_two_machine_chain():
    w = chain(4)
    d = placed(w, 2, 1, {"SP0": 0, "SP1": 0, "SP2": 1, "SP3": 1}, {f"T{i}": i // 2 for i in range(4)})
    P = EXACT
    rate = 500.0
    r = run_once(w, d, input_rate=rate, calibration=P, batches=400)
    first = single_site_service(P, 10, 10, 10)  # SP0: writes its output to the stream table
    last = single_site_service(P, 10, 10, 0)  # SP3: a sink
    assert r.partition_utilisation[0] == pytest.approx(rate * 2 * first, rel=0.03)
    assert r.partition_utilisation[1] == pytest.approx(rate * (first + last), rel=0.03)
    # nothing queues at 500 batches/s: latency is the sum of the steps
    create = P.sched_s + P.local_msg_cpu_s
    ack = P.ack_s + P.local_msg_cpu_s
    per_sp = create + 2 * P.local_latency_s + ack  # scheduler -> partition -> scheduler
    nbytes = P.control_bytes + 10 * 64
    hop = 2 * (P.msg_cpu_s + 640 * P.ser_byte_s) + nbytes / P.bandwidth_Bps + P.net_latency_s
    source = P.msg_cpu_s + 10 * 16 * P.ser_byte_s
    expected = source + 4 * per_sp + 3 * first + last + hop
    assert r.latency_p50_ms / 1e3 == pytest.approx(expected, rel=0.05)
    assert r.moves == 400 * 1 and r.distributed_txns == 0


def test_same_seed_same_result_and_the_seed_matters(chain32):
    w = chain32
    from engine_sim.sim.scenario_designs import chain_design

    d = chain_design(w, 2)
    a = run_once(w, d, input_rate=2000, batches=300, seed=1).to_dict()
    b = run_once(w, d, input_rate=2000, batches=300, seed=1).to_dict()
    c = run_once(w, d, input_rate=2000, batches=300, seed=2).to_dict()
    for x in (a, b, c):
        x.pop("wall_s")
    assert a == b
    assert a["latency_p99_ms"] != c["latency_p99_ms"]


def test_a_distributed_transaction_holds_both_partitions_for_the_whole_protocol():
    two = (Access("T0", "read", 10), Access("T1", "write", 10))
    w = chain(1, accesses=[two])
    local = placed(w, 1, 2, {"SP0": 0}, {"T0": 0, "T1": 1})
    remote = placed(w, 2, 1, {"SP0": 0}, {"T0": 0, "T1": 1})
    single = placed(w, 1, 1, {"SP0": 0}, {"T0": 0, "T1": 0})
    res = {name: max_throughput(w, d, calibration=EXACT, batches=300)
           for name, d in (("local", local), ("remote", remote), ("single", single))}
    assert res["remote"].distributed_txns == 300 and res["single"].distributed_txns == 0
    P = EXACT
    exec_s = single_site_service(P, 10, 10, 0)
    hold = P.two_pc_hold_s(exec_s, remote_rounds=0, participants=2, same_machine=False,
                           fragment_rows=10 * P.row_write_s / P.row_read_s)
    # the base partition is held from its lock to its commit (the lock request to partition 1
    # carries the write, then the body, prepare and vote, commit): capacity is about 1 / hold
    assert 0.85 / hold <= res["remote"].throughput_bps <= 1.05 / hold
    assert res["single"].throughput_bps > res["local"].throughput_bps > 2 * res["remote"].throughput_bps
    # both partitions are held about equally long, though the remote one works far less
    u = res["remote"].partition_utilisation
    assert u[1] > 0.7 * u[0]
    assert res["remote"].partition_busy_s[1] < 0.5 * res["remote"].partition_busy_s[0]


def test_replicated_state_reads_locally_and_writes_everywhere():
    reads = chain(1, accesses=[(Access("T0", "read", 10),)])
    writes = chain(1, accesses=[(Access("T0", "write", 10),)])
    for w, distributed in ((reads, 0), (writes, 200)):
        d = placed(w, 2, 2, {"SP0": 1}, {"T0": None})
        r = run_once(w, d, input_rate=100, batches=200)
        assert r.distributed_txns == distributed
        if distributed:  # every copy is written: all four partitions take part
            assert all(u > 0 for u in r.partition_utilisation)


def test_fan_in_waits_for_every_input_and_nested_transactions_run_as_one():
    tables = tuple(Table(f"T{i}", 100, 32, "k") for i in range(4))
    procs = tuple(Procedure(n, 1.0, (Access(f"T{i}", "read", 5),)) for i, n in enumerate("ABCD"))
    streams = (Stream("A", "B", 5), Stream("A", "C", 5), Stream("B", "D", 5), Stream("C", "D", 5))
    w = Workload("diamond", tables, procs, streams)
    d = placed(w, 2, 2, dict(A=0, B=1, C=2, D=3), {f"T{i}": i for i in range(4)})
    r = run_once(w, d, input_rate=300, batches=200)
    assert r.txns == 4 * 200 and r.moves == 4 * 200
    assert r.procedures["D"]["txns"] == 200
    # D waits for the slower branch: at least A, one branch and D back to back
    assert r.latency_p50_ms > 3 * r.procedures["A"]["mean_service_ms"]
    voter = load_workload("voter-leaderboard")
    d = placed(voter, 1, 1, {p: 0 for p in voter.procedure_names}, {t: 0 for t in voter.table_names})
    r = run_once(voter, d, input_rate=100, batches=100)
    assert r.txns == 100 and len(r.procedures) == 1  # three SPs, one transaction per batch


def test_larger_batches_amortise_the_transaction_overhead():
    w = load_workload("move-micro")
    from engine_sim.sim.scenario_designs import move_design

    d = move_design(w)
    small, big = (max_throughput(w, d, batch_size=bs, batches=300) for bs in (10, 100))
    assert big.throughput_tps > 2 * small.throughput_tps
    assert big.throughput_bps < small.throughput_bps
    assert big.procedures["SP1"]["mean_service_ms"] > small.procedures["SP1"]["mean_service_ms"]


def test_central_scheduler_on_the_only_machine_is_dls_and_off_it_costs_hops(tpcdi_trade):
    w = tpcdi_trade
    from engine_sim.sim.scenario_designs import tpcdi_design

    d = tpcdi_design(w, 1)
    on_machine = SimParams(central_machine=0)
    a = run_once(w, d, input_rate=3000, batches=300, scheduler="dls", calibration=on_machine).to_dict()
    b = run_once(w, d, input_rate=3000, batches=300, scheduler="central", calibration=on_machine).to_dict()
    for x in (a, b):
        x.pop("wall_s"), x.pop("scheduler")
    assert a == b
    # by default the central scheduler has a node of its own: 4 SPs, 4 network round trips more
    c = run_once(w, d, input_rate=3000, batches=300, scheduler="central")
    extra = c.latency_p50_ms - a["latency_p50_ms"]
    assert extra > 4 * 2 * SimParams().net_latency_s * 1e3
    assert c.bottleneck and len(c.coordinator_utilisation) == 2


def test_move_as_a_transaction_is_counted_as_one():
    w = load_workload("move-micro")
    from engine_sim.sim.scenario_designs import move_design

    r = run_once(w, move_design(w), input_rate=100, batches=100, move="txn")
    assert r.moves == 100 and r.move_txns == 100 and r.distributed_txns == 100


@pytest.mark.parametrize("kw, problem", [
    (dict(scheduler="fifo"), "unknown scheduler"),
    (dict(move="copy"), "unknown MOVE"),
    (dict(batches=3), "at least 10"),
    (dict(input_rate=-1.0), r"input rate must be from 1e-06 to 1e\+09 batches per second, got -1.0"),
    # an int too large for a float: math.isfinite raised OverflowError (an internal error)
    (dict(input_rate=10**400), r"input rate must be from 1e-06 to 1e\+09 batches per second, got 1000"),
    (dict(batch_size=0), "batch size"),
])
def test_bad_options_are_one_line_errors(kw, problem):
    w = chain(2)
    d = placed(w, 1, 1, {"SP0": 0, "SP1": 0}, {"T0": 0, "T1": 0})
    args = dict(input_rate=100.0, batches=50) | kw
    with pytest.raises(SimError, match=problem):
        run_once(w, d, **args)


def test_a_design_of_another_workload_is_refused():
    w = chain(2)
    with pytest.raises(SimError, match="does not place 'SP1'"):
        run_once(w, placed(w, 1, 1, {"SP0": 0}, {"T0": 0, "T1": 0}), input_rate=10)
    with pytest.raises(SimError, match=r"partition must be an integer in 0..0, got 3"):
        run_once(w, placed(w, 1, 1, {"SP0": 0, "SP1": 3}, {"T0": 0, "T1": 0}), input_rate=10)


def test_spread_keeps_co_location_and_fills_the_new_machines(chain32):
    w = chain32
    from engine_sim.sim.scenario_designs import chain_design

    d = chain_design(w, 1)  # 4 partitions, 8 SPs (and their tables) on each
    big = spread_design(d, 8)
    assert big.machines == 8 and big.partitions_per_machine == 4
    for name, p in d.procedures.items():  # whatever shared a partition still does
        for other, q in d.procedures.items():
            if p == q:
                assert big.procedures[name] == big.procedures[other]
    machines_used = {p // 4 for p in big.procedures.values()}
    assert machines_used == {0, 2, 4, 6}  # 4 partitions dealt over 8 machines
    small = spread_design(chain_design(w, 8), 2)  # 32 partitions merged into 8, neighbours together
    assert small.procedures["SP1"] == small.procedures["SP2"] == small.procedures["SP4"]
    assert len(set(small.procedures.values())) == 8
    assert scale_design(d, 1) is d


def test_recommend_rescaling_asks_the_advisor_for_the_new_cluster(tpcdi_trade):
    w = tpcdi_trade
    from engine_sim.sim.scenario_designs import tpcdi_design

    d = scale_design(tpcdi_design(w, 4), 2, workload=w, method="recommend")
    assert d.machines == 2 and set(d.procedures) == set(w.procedure_names)
    with pytest.raises(SimError, match="unknown rescale"):
        scale_design(tpcdi_design(w, 4), 2, method="magic")


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_designs_never_deadlock_and_never_overbook_a_partition(data):
    n_sp = data.draw(st.integers(1, 4), label="sps")
    n_t = data.draw(st.integers(1, 4), label="tables")
    accesses = []
    for _ in range(n_sp):
        k = data.draw(st.integers(1, 3))
        accesses.append(tuple(
            Access(f"T{data.draw(st.integers(0, n_t - 1))}", data.draw(st.sampled_from(["read", "write"])),
                   data.draw(st.sampled_from([1, 10])), probability=data.draw(st.sampled_from([1.0, 0.5])))
            for _ in range(k)))
    tables = tuple(Table(f"T{i}", 100, 32, "k") for i in range(n_t))
    procs = tuple(Procedure(f"SP{i}", 1.0, accesses[i]) for i in range(n_sp))
    streams = tuple(Stream(f"SP{i}", f"SP{i + 1}", 10) for i in range(n_sp - 1))
    w = Workload("random", tables, procs, streams)
    n = 4
    d = Design(w.name, 2, 2, {p.name: data.draw(st.integers(0, n - 1)) for p in procs},
               {t.name: data.draw(st.sampled_from([None, 0, 1, 2, 3])) for t in tables})
    r = run_once(w, d, input_rate=data.draw(st.sampled_from([200.0, 5000.0])), batches=60,
                 scheduler=data.draw(st.sampled_from(["dls", "central"])),
                 move=data.draw(st.sampled_from(["rpc", "txn"])), seed=data.draw(st.integers(0, 3)))
    assert r.txns == 60 * n_sp
    assert all(0.0 <= u <= 1.0 + 1e-9 for u in r.partition_utilisation)
    assert r.latency_p50_ms > 0 and r.sim_time_s > 0
