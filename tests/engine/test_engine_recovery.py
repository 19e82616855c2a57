"""Crash and recovery in-process: a partition's memory is lost after K commits; strong
recovery (every commit logged, replayed in log order, triggers off) ends in the very state
of a run without the crash, weak recovery (border transactions logged, the rest re-triggered)
in a legal one; the history check passes either way."""
import pytest

from advisor.sources import load_workload
from engine_sim.engine import run_workload
from engine_sim.engine.run_options import ClientOptions, CommandLogOptions, RecoveryOptions
from costmodel.simple_designs import round_robin_design

pytestmark = pytest.mark.integration

WORKLOADS = ["tpcdi-trade", "chain-32", "linear-road", "streaming-ledger", "voter-leaderboard"]


def runs(name, mode: str):
    w = load_workload(name)
    d = round_robin_design(w, 2, 2) if name == "chain-32" else round_robin_design(w)
    clean = run_workload(w, d, batches=60, in_process=True, recovery=RecoveryOptions(mode=mode))
    crashed = run_workload(w, d, batches=60, in_process=True, recovery=RecoveryOptions(mode=mode, crash_after=30))
    return clean, crashed


@pytest.mark.parametrize("name", WORKLOADS)
def test_strong_recovery_restores_the_crash_free_state(name):
    clean, crashed = runs(name, "strong")
    assert crashed.crashed and crashed.replayed > 0 and crashed.recovery_s > 0
    assert crashed.history_check == "ok"
    assert crashed.state_digest == clean.state_digest
    assert crashed.committed == clean.committed  # exactly once: nothing lost, nothing twice


@pytest.mark.parametrize("name", WORKLOADS)
def test_weak_recovery_reaches_a_legal_state(name):
    clean, crashed = runs(name, "weak")
    assert crashed.crashed and crashed.history_check == "ok"
    assert crashed.committed == clean.committed
    if name in ("tpcdi-trade", "chain-32", "voter-leaderboard"):  # one legal order: one state
        assert crashed.state_digest == clean.state_digest


def test_weak_recovery_logs_only_border_transactions(chain32):
    w = chain32
    d = round_robin_design(w, 2, 2)
    strong = run_workload(w, d, batches=20, in_process=True, recovery=RecoveryOptions(mode="strong"))
    weak = run_workload(w, d, batches=20, in_process=True, recovery=RecoveryOptions(mode="weak"))
    off = run_workload(w, d, batches=20, in_process=True, recovery=RecoveryOptions(mode="off"))
    assert strong.log_records == 32 * 20 and weak.log_records == 20 and off.log_records == 0
    assert weak.log_flushes < strong.log_flushes


def test_recovery_without_a_snapshot_replays_from_the_start(tpcdi_trade):
    w = tpcdi_trade
    d = round_robin_design(w)
    clean = run_workload(w, d, batches=40, in_process=True, recovery=RecoveryOptions(mode="strong"))
    r = run_workload(w, d, batches=40, in_process=True, client=ClientOptions(in_flight=4),
                     recovery=RecoveryOptions(mode="strong", crash_after=20, snapshot_every=0))
    with_snaps = run_workload(w, d, batches=40, in_process=True, client=ClientOptions(in_flight=4),
                              recovery=RecoveryOptions(mode="strong", crash_after=20, snapshot_every=5))
    assert r.history_check == with_snaps.history_check == "ok"
    assert r.state_digest == with_snaps.state_digest == clean.state_digest
    assert r.replayed > with_snaps.replayed  # a snapshot shortens the replay


@pytest.mark.parametrize("options", [dict(scheduler="central"), dict(move="txn"),
                                     dict(data_parallel=True),
                                     dict(command_log=CommandLogOptions(group_commit=False)),
                                     dict(client=ClientOptions(abort_rate=0.1))])
@pytest.mark.parametrize("recovery", ["strong", "weak"])
def test_recovery_with_every_option(options, recovery):
    w = load_workload("linear-road")
    d = round_robin_design(w)
    r = run_workload(w, d, batches=40, in_process=True, **options,
                     recovery=RecoveryOptions(mode=recovery, crash_after=20))
    assert r.crashed and r.history_check == "ok", r.history_check


def test_crashing_another_partition_recovers_too(tpcdi_trade):
    w = tpcdi_trade
    d = round_robin_design(w)
    clean = run_workload(w, d, batches=40, in_process=True, recovery=RecoveryOptions(mode="strong"))
    r = run_workload(w, d, batches=40, in_process=True,
                     recovery=RecoveryOptions(mode="strong", crash_after=10, crash_partition=3))
    assert r.crashed and r.history_check == "ok" and r.state_digest == clean.state_digest
