"""The oracle: every run re-executes its committed transactions one at a time, in the checker's
serial order, and its final state must be that serial state (`serial_digest`). It holds on
every bundled workload, after strong recovery across processes on shared state too, and a run
that loses a committed write fails it even though its history looks fine."""
import pytest

from costmodel.design import Design
from advisor.sources import load_workload
from engine_sim.engine import run_workload
from engine_sim.engine.run_options import ClientOptions, RecoveryOptions
from costmodel.simple_designs import round_robin_design
from engine_sim.engine.history import check_records, executions
from engine_sim.engine.partition import Partition
from engine_sim.engine.plan import build_plan
from engine_sim.engine.serial import serial_digest


@pytest.mark.parametrize("name", ["tpcdi-trade", "chain-32", "voter-leaderboard", "online-bidding",
                                  "streaming-ledger", "linear-road"])
def test_a_crash_free_run_reaches_the_serial_state(name):
    w = load_workload(name)
    d = round_robin_design(w, 2, 2) if name == "chain-32" else round_robin_design(w)
    r = run_workload(w, d, batches=40, in_process=True)
    assert r.history_check == "ok", r.history_check
    assert len(r.serial_digest) == 64 and r.serial_digest == r.state_digest


@pytest.mark.parametrize("options", [dict(data_parallel=True), dict(move="txn"), dict(scheduler="central"),
                                     dict(client=ClientOptions(abort_rate=0.1))])
def test_the_serial_state_holds_with_every_option(options):
    w = load_workload("linear-road")
    r = run_workload(w, round_robin_design(w), batches=40, in_process=True, **options,
                     recovery=RecoveryOptions(mode="weak", crash_after=20))
    assert r.crashed and r.history_check == "ok", r.history_check
    assert r.serial_digest == r.state_digest


@pytest.mark.process  # partition processes
def test_strong_recovery_across_processes_reaches_the_serial_state_on_shared_state():
    """Streaming-ledger's Transfer and Deposit both write Accounts: runs legally end in
    different states, so only the serial re-execution of each run's own history can judge it."""
    w = load_workload("streaming-ledger")
    d = Design(w.name, 2, 2, {"Parse": 2, "Transfer": 1, "Deposit": 3}, {"Accounts": 1, "AssetBook": 1})
    r = run_workload(w, d, batches=300, recovery=RecoveryOptions(mode="strong", crash_after=150))
    assert r.crashed and r.replayed > 0 and r.history_check == "ok", r.history_check
    assert r.serial_digest == r.state_digest


def test_the_serial_order_matters():
    """Re-executing the same history in another order that ignores its conflicts (commit order
    reversed) reaches another state: the digest sees ordering, not just the set of txns."""
    w = load_workload("streaming-ledger")
    d = round_robin_design(w)
    r = run_workload(w, d, batches=30, in_process=True)
    plan = build_plan(w, d)
    records = _records_of(w, d, 30)
    tes = executions(records)
    check = check_records(records, plan, 30, tes)
    assert serial_digest(plan, tes, check.order) == r.state_digest
    # every Parse first (dataflow order kept), then the writers of Accounts newest batch first
    rev = sorted(range(len(tes)), key=lambda i: (-tes[i].batch if tes[i].procedure != "Parse" else -10**9,
                                                  tes[i].procedure))
    assert serial_digest(plan, tes, rev) != r.state_digest


def test_a_lost_committed_write_fails_the_run(monkeypatch):
    """A participant that rolls back instead of committing (a broken 2PC) leaves a history the
    checker cannot fault; the serial re-execution does."""
    original = Partition.on_decide

    def lossy(self, msg):
        if msg.commit and self.holder == msg.txn_id and self.part_txn is not None:
            self.store.rollback()
            self.holder = None
            self.part_txn = None
            return
        original(self, msg)

    monkeypatch.setattr(Partition, "on_decide", lossy)
    w = load_workload("bank-transfer")
    d = Design(w.name, 2, 1, {"ValidateTransfer": 0, "ApplyTransfer": 1}, {"Customers": 1, "Accounts": 0})
    r = run_workload(w, d, batches=20, in_process=True)
    assert r.serial_digest and r.serial_digest != r.state_digest
    assert r.history_check != "ok" and "serial" in r.history_check


def _records_of(w, d, batches):
    """The surviving history of an in-process run (what the runner checks)."""
    from engine_sim.engine import runner

    captured = {}
    original = runner._result

    def capture(plan, driver, *args, **kwargs):
        captured["records"] = list(driver.records)
        return original(plan, driver, *args, **kwargs)

    runner._result = capture
    try:
        run_workload(w, d, batches=batches, in_process=True)
    finally:
        runner._result = original
    return captured["records"]
