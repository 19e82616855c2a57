"""The engine runs every bundled workload under its recommended design and proves the
history; the options (central scheduler, MOVE as a transaction, data parallelism, injected
aborts) keep the guarantees; bad inputs are refused in one line."""
import pytest

from advisor.api import recommend
from costmodel.design import Design
from costmodel.errors import UserError
from costmodel.spec_reader import bundled_workloads
from advisor.sources import load_workload
from engine_sim.engine import EngineError, run_workload
from engine_sim.engine.run_options import (ClientOptions, CommandLogOptions, MigrationOptions, NetworkOptions,
                                           RecoveryOptions)
from costmodel.simple_designs import round_robin_design

pytestmark = pytest.mark.integration

CHAINS = ["tpcdi-trade", "boundaries-16sp", "move-micro"]


@pytest.mark.parametrize("name", sorted(bundled_workloads()))
def test_every_bundled_workload_runs_its_recommended_design_with_a_correct_history(name):
    w = load_workload(name)
    design = recommend(name, baselines=False).design
    r = run_workload(w, design, batches=40, in_process=True)
    assert r.history_check == "ok"
    executions = sum(1 for p in w.procedures if not p.oltp) * 40
    assert r.committed >= executions  # every SP committed every batch (OLTP requests on top)
    assert r.throughput_bps > 0 and r.latency_p50_ms > 0 and len(r.partition_busy_s) == design.n_partitions
    d = r.to_dict()
    for key in ("throughput_tps", "throughput_bps", "latency_p50_ms", "latency_p99_ms",
                "distributed_txns", "moves", "history_check", "state_digest"):
        assert key in d


def test_same_seed_same_run_and_another_seed_another_state():
    w = load_workload("streaming-ledger")
    d = round_robin_design(w)
    a, b = (run_workload(w, d, batches=30, in_process=True, seed=4) for _ in range(2))
    c = run_workload(w, d, batches=30, in_process=True, seed=5)
    assert a.state_digest == b.state_digest and a.committed == b.committed
    assert c.state_digest != a.state_digest


def test_the_digest_does_not_depend_on_where_rows_live(tpcdi_trade):
    w = tpcdi_trade
    spread = run_workload(w, round_robin_design(w), batches=30, in_process=True)
    one = run_workload(w, round_robin_design(w, 1, 1), batches=30, in_process=True)
    assert spread.state_digest == one.state_digest
    assert spread.moves > 0 and one.moves == 0


@pytest.mark.parametrize("options", [dict(scheduler="central"), dict(move="txn"),
                                     dict(data_parallel=True),
                                     dict(command_log=CommandLogOptions(group_commit=False))])
def test_options_keep_the_guarantees(options):
    for name in ("linear-road", "chain-32"):
        w = load_workload(name)
        d = round_robin_design(w, 2, 2)
        r = run_workload(w, d, batches=30, in_process=True, **options)
        assert r.history_check == "ok", (name, options)


def test_move_as_a_transaction_is_a_distributed_transaction_per_batch():
    w = load_workload("move-micro")
    d = round_robin_design(w)
    rpc = run_workload(w, d, batches=30, in_process=True)
    txn = run_workload(w, d, batches=30, in_process=True, move="txn")
    assert rpc.moves == txn.moves == 30
    assert rpc.distributed_txns == 0 and txn.move_txns == 30 and txn.distributed_txns == 30
    assert rpc.state_digest == txn.state_digest


def test_a_table_on_another_partition_makes_distributed_transactions():
    w = load_workload("bank-transfer")
    apart = Design(w.name, 2, 1, {"ValidateTransfer": 0, "ApplyTransfer": 0}, {"Customers": 0, "Accounts": 1})
    r = run_workload(w, apart, batches=20, in_process=True)
    assert r.history_check == "ok" and r.distributed_txns == 20


def test_a_partition_locked_for_a_remote_transaction_is_held_longer_than_it_executes():
    # partition 1 only takes part in transactions coordinated at partition 0: it is locked from
    # the grant until the COMMIT comes back, and executes only the shipped work in between
    w = load_workload("bank-transfer")
    apart = Design(w.name, 2, 1, {"ValidateTransfer": 0, "ApplyTransfer": 0}, {"Customers": 0, "Accounts": 1})
    r = run_workload(w, apart, batches=20, in_process=True)
    assert len(r.partition_held_s) == 2
    assert r.partition_held_s[1] > r.partition_busy_s[1] > 0
    assert any(line.startswith("partition held") for line in r.describe())
    alone = run_workload(w, Design(w.name, 2, 1, {"ValidateTransfer": 0, "ApplyTransfer": 0},
                                   {"Customers": 0, "Accounts": 0}), batches=20, in_process=True)
    assert alone.partition_held_s[1] == 0 and alone.partition_held_s[0] > 0


def test_replicated_tables_are_read_locally_and_written_everywhere(tpcdi_trade):
    w = tpcdi_trade
    d = round_robin_design(w, replicate=("DimDate", "DimTime", "StatusType", "TradeType", "DimAccount"))
    r = run_workload(w, d, batches=20, in_process=True)
    assert r.history_check == "ok"
    assert r.distributed_txns == 0  # read-only replicas: reads stay local
    ledger = load_workload("streaming-ledger")
    r = run_workload(ledger, round_robin_design(ledger, replicate=("Accounts",)), batches=20, in_process=True)
    assert r.history_check == "ok" and r.distributed_txns > 0  # replicated writes touch every copy


def test_fragment_designs_route_rows_by_key_hash(tpcdi_trade):
    w = tpcdi_trade
    d = round_robin_design(w)
    whole = run_workload(w, d, batches=20, in_process=True)
    del d.state["DimTrade"]
    d.state.update({f"DimTrade#{i}": i for i in range(4)})  # hash fragments on all 4 partitions
    r = run_workload(w, d, batches=20, in_process=True)
    assert r.history_check == "ok" and r.distributed_txns == 20  # TradeInsert spans fragments
    assert whole.state_digest == r.state_digest and whole.distributed_txns == 0
    d.state["DimTrade#7"] = 0
    from costmodel.errors import DesignError  # (as evaluate, simulate and export say it)

    with pytest.raises(DesignError, match="design places fragments of 'DimTrade' but not DimTrade#4"):
        run_workload(w, d, batches=5, in_process=True)


def test_injected_aborts_restart_in_batch_order_and_change_nothing(chain32):
    w = chain32
    d = round_robin_design(w, 2, 2)
    clean = run_workload(w, d, batches=30, in_process=True)
    bumpy = run_workload(w, d, batches=30, in_process=True, client=ClientOptions(abort_rate=0.2))
    assert bumpy.history_check == "ok"
    assert bumpy.aborts > 0 and bumpy.restarts > 0
    assert bumpy.state_digest == clean.state_digest  # a chain has one legal order: the same state


def test_a_batch_given_up_at_the_restart_limit_is_reported():
    w = load_workload("move-micro")
    r = run_workload(w, round_robin_design(w), batches=10, in_process=True,
                     client=ClientOptions(abort_rate=0.9, restart_limit=1))
    assert r.history_check != "ok" and "never committed" in r.history_check


def test_data_parallel_sub_batches_run_single_sited_on_their_partition():
    w = load_workload("linear-road")
    d = round_robin_design(w, 2, 2)
    r = run_workload(w, d, batches=20, in_process=True, data_parallel=True)
    assert r.history_check == "ok"
    plain = run_workload(w, d, batches=20, in_process=True)
    assert r.committed > plain.committed  # one execution per sub-batch


def test_trace_free_run_leaves_no_files(tmp_path):
    w = load_workload("move-micro")
    r = run_workload(w, round_robin_design(w), batches=5, in_process=True,
                     command_log=CommandLogOptions(dir=tmp_path / "logs", fsync=False))
    assert r.history_check == "ok" and (tmp_path / "logs" / "p0.log").exists()


@pytest.mark.parametrize("kwargs, problem", [  # built inside the test: a record checks itself
    (lambda: dict(batches=0), "--batches must be an integer >= 1"),
    (lambda: dict(batches=5, scheduler="x"), "--scheduler must be one of dls, central"),
    (lambda: dict(batches=5, move="x"), "--move must be one of rpc, txn"),
    (lambda: dict(batches=5, recovery=RecoveryOptions(mode="x")), "--recovery must be one of strong, weak, off"),
    (lambda: dict(batches=5, recovery=RecoveryOptions(crash_after=2, mode="off")), "needs recovery"),
    (lambda: dict(batches=5, client=ClientOptions(latency_bound_s=0)), "latency bound must be > 0"),
    (lambda: dict(batches=5, client=ClientOptions(in_flight=0)), "in_flight must be an integer >= 1"),
    (lambda: dict(batches=5, batch_size=0), "--batch-size must be an integer >= 1"),
    (lambda: dict(batches=5, recovery="strong"), "recovery must be a RecoveryOptions"),
    (lambda: dict(batches=5, migration=MigrationOptions(at_batch=3)), "need --migrate-to"),
    (lambda: dict(batches=5, network=NetworkOptions(machine_delay_ms=-1)), "machine delay must be >= 0"),
])
def test_bad_options_are_refused(kwargs, problem):
    w = load_workload("move-micro")
    with pytest.raises(EngineError, match=problem):
        run_workload(w, round_robin_design(w), in_process=True, **kwargs())


def test_designs_that_do_not_fit_are_refused(tpcdi_trade):
    w = load_workload("move-micro")
    other = round_robin_design(tpcdi_trade)
    with pytest.raises(UserError, match="does not place procedure 'SP1'"):
        run_workload(w, other, batches=5, in_process=True)
    d = round_robin_design(w)
    d.state = {"T1": 0}
    with pytest.raises(UserError, match="does not place table 'T2'"):
        run_workload(w, d, batches=5, in_process=True)
    d = round_robin_design(w)
    d.procedures["SP2"] = 7
    with pytest.raises(UserError, match="outside 0..1"):
        run_workload(w, d, batches=5, in_process=True)


def test_a_cross_machine_delay_slows_moves_between_machines_only():
    w = load_workload("move-micro")  # SP1 and SP2 on two machines
    d = round_robin_design(w)
    fast = run_workload(w, d, batches=20, in_process=True, client=ClientOptions(in_flight=1))
    slow = run_workload(w, d, batches=20, in_process=True, client=ClientOptions(in_flight=1),
                        network=NetworkOptions(machine_delay_ms=5))
    assert slow.history_check == "ok" and slow.state_digest == fast.state_digest
    assert slow.latency_p50_ms > fast.latency_p50_ms + 5  # at least one hop between machines
    one = round_robin_design(w, 1, 2)  # the same two partitions on one machine: no delay
    near = run_workload(w, one, batches=20, in_process=True, client=ClientOptions(in_flight=1),
                        network=NetworkOptions(machine_delay_ms=5))
    assert near.latency_p50_ms < slow.latency_p50_ms


@pytest.mark.parametrize("part", ["DimTrade@5", "DimTrade#0"])
def test_a_table_placed_whole_and_in_parts_is_refused_as_everywhere(part):
    """The engine ran such a design (row 5 routed apart, or the whole placement ignored) where
    evaluate, simulate, validate and export refuse it."""
    from advisor.api import recommend
    from costmodel.errors import DesignError
    from dataclasses import replace

    d = recommend("tpcdi-trade", machines=2, objective="cost").design
    odd = replace(d, state={**d.state, part: 1})
    with pytest.raises(DesignError, match="design places 'DimTrade' both whole and in parts"):
        run_workload(load_workload("tpcdi-trade"), odd, batches=5, in_process=True)


def test_a_batch_given_up_takes_only_itself_not_the_lane_behind_it():
    """A purge (another batch's abort clearing the lane behind it) was charged a restart, so
    at the limit the purged batches were given up too, and they purged the next: 42 of 400
    transactions committed at a 10 % abort rate and a limit of 0."""
    d = recommend("tpcdi-trade", machines=2, objective="cost").design
    r = run_workload(load_workload("tpcdi-trade"), d, batches=100, in_process=True, seed=3,
                     client=ClientOptions(abort_rate=0.1, restart_limit=0))
    assert r.committed >= 0.75 * 400  # about one in ten given up, not nine in ten
