"""Live migration between designs at a batch boundary (engine_sim/engine/migration.py): the
history check and the serial-replay oracle hold across the move, every batch runs exactly once,
windows move whole with their owner, the bytes moved are the moved rows' declared bytes, a
crash during the migration recovers to one of the two designs, and bad input is one line."""
from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from advisor.api import recommend
from advisor.cli import run_app
from engine_sim.engine import run_workload
from engine_sim.engine.checker import TE, Dataflow, check_history
from engine_sim.engine.migration_compare import compare_migration
from engine_sim.engine.migration_plan import row_bytes
from engine_sim.engine.run_options import MigrationOptions, RecoveryOptions
from engine_sim.engine.store import Store

BATCHES, AT = 160, 80  # past the driver's first 64 batches in flight: "before" has a span


@pytest.fixture(scope="module")
def trade(tpcdi_trade):
    """tpcdi-trade's 2-machine design and a copy moving TradeInsert with DimTrade (written:
    its rows move) and AccountLookup with DimAccount (read-only: nothing to send)."""
    a = recommend("tpcdi-trade", machines=2, objective="cost").design
    b = replace(a, procedures={**a.procedures, "TradeInsert": 1 - a.procedures["TradeInsert"],
                               "AccountLookup": 1 - a.procedures["AccountLookup"]},
                state={**a.state, "DimTrade": 1 - a.state["DimTrade"], "DimAccount": 1 - a.state["DimAccount"]})
    plain = run_workload(tpcdi_trade, a, batches=BATCHES, in_process=True)
    at_k = run_workload(tpcdi_trade, a, batches=AT, in_process=True, return_state=True)
    return tpcdi_trade, a, b, plain, at_k


@pytest.fixture(scope="module")
def window(workloads):
    w = workloads("window-micro")
    a = recommend("window-micro", machines=2, objective="cost").design
    owner = w.windows[0].procedure
    b = replace(a, procedures={owner: 1 - a.procedures[owner]},
                state={**a.state, w.windows[0].name: 1 - a.procedures[owner]})
    return w, a, b


def assert_correct(r):
    assert r.history_check == "ok", r.history_check
    assert r.serial_digest == r.state_digest


def test_live_migration_keeps_the_guarantees_and_counts_what_it_moved(trade):
    w, a, b, plain, at_k = trade
    r = run_workload(w, a, batches=BATCHES, in_process=True, migration=MigrationOptions(to=b, at_batch=AT))
    assert_correct(r)
    mg = r.migration
    assert mg.outcome == "committed" and not mg.crashed and mg.at_batch == AT
    assert mg.procedures_moved == ["AccountLookup", "TradeInsert"]
    # each batch exactly once (the checker), and as many executions as without the migration;
    # tpcdi-trade's end state is the same whatever the interleaving: the migration changed nothing
    assert r.committed == plain.committed and r.state_digest == plain.state_digest
    # every row DimTrade held when batch AT began moved, and nothing of the read-only DimAccount
    assert mg.items_moved == {"DimTrade": len(at_k.state["DimTrade"]), "DimAccount": 0}
    assert mg.rows_moved == len(at_k.state["DimTrade"]) > 0
    assert mg.bytes_moved == sum(k * row_bytes(w, item) for item, k in mg.items_moved.items()) > 0
    assert mg.wire_bytes > 0
    assert mg.held_batches > 0 and mg.pause_s >= mg.move_s > 0
    assert mg.batches_before + mg.batches_during + mg.batches_after == BATCHES
    assert min(mg.tps_before, mg.tps_during, mg.tps_after) > 0
    lines = "\n".join(r.describe())
    assert "paused at a batch boundary" in lines and "moved" in lines


def test_a_window_moves_whole_with_its_owner(window):
    w, a, b = window
    at_k = run_workload(w, a, batches=AT, in_process=True, return_state=True)
    r = run_workload(w, a, batches=BATCHES, in_process=True, migration=MigrationOptions(to=b, at_batch=AT))
    assert_correct(r)  # the window check: only consecutive executions of its owner touched it
    name, owner = w.windows[0].name, w.windows[0].procedure
    assert r.migration.window_homes == {name: b.procedures[owner]} != {name: a.procedures[owner]}
    assert r.migration.items_moved == {name: len(at_k.state[name])}
    assert r.migration.bytes_moved == len(at_k.state[name]) * w.windows[0].tuple_bytes


def test_stop_move_restart_reloads_the_whole_state(trade):
    w, a, b, plain, at_k = trade
    both = compare_migration(w, a, b, batches=BATCHES, at_batch=AT, in_process=True)
    for r in (both.live, both.restart):
        assert_correct(r)
        assert r.state_digest == plain.state_digest and r.committed == plain.committed
    live, restart = both.live.migration, both.restart.migration
    assert (live.mode, restart.mode) == ("live", "restart")
    assert restart.rows_moved == sum(map(len, at_k.state.values()))  # every row reloaded, moved or not
    assert restart.bytes_moved == sum(k * row_bytes(w, i) for i, k in restart.items_moved.items())
    assert "stop-move-restart" in both.describe()[0]
    # both say which items change place (restart's line counted the items it reloaded: 1 where
    # live said 2 for the same two designs)
    assert live.items_relocated == restart.items_relocated == moved_items_of(a, b) != []
    for m in (live, restart):
        assert dict(m.describe())["moved"].endswith(
            f"; {len(m.items_relocated)} state items and {len(m.procedures_moved)} SPs change place")
    short = compare_migration(w, a, b, batches=50, at_batch=25, in_process=True)  # 64 in flight
    rows = {line.split("  ")[0]: line.split() for line in short.describe()}
    spans = [(span, k, m) for span in ("before", "during", "after")
             for k, m in ((-2, short.live.migration), (-1, short.restart.migration))]
    assert any(getattr(m, f"batches_{span}") == 0 for span, _, m in spans)
    for span, k, m in spans:  # a span with no batch completed reads n/a, not a measured 0
        figure = rows[f"tuples/s {span}"][k]
        assert figure == ("n/a" if getattr(m, f"batches_{span}") == 0 else f"{getattr(m, f'tps_{span}'):,.0f}")


@pytest.mark.parametrize("recovery", ["weak", "strong"])
@pytest.mark.parametrize("step, outcome", [("moving", "aborted"), ("switched", "committed")])
def test_a_crash_during_the_migration_recovers_to_one_design(trade, tmp_path, step, outcome, recovery):
    """Before the commit record (a partition dies after sending its rows) the run recovers to
    the old design; after it (a partition dies on the switch), to the new one: either way the
    history holds, the state is the serial one, and every batch ran exactly once."""
    w, a, b, plain, _ = trade
    r = run_workload(w, a, batches=BATCHES, in_process=True, trace_out=tmp_path / "t",
                     recovery=RecoveryOptions(mode=recovery, crash_at=("migration", step)),
                     migration=MigrationOptions(to=b, at_batch=AT))
    assert r.crashed and r.migration.crashed and r.migration.outcome == outcome
    assert_correct(r)
    assert r.committed == plain.committed and r.state_digest == plain.state_digest
    txns = pq.read_table(tmp_path / "t" / "txns").to_pandas()
    late = txns[(txns.procedure == "TradeInsert") & (txns.batch_id >= AT) & (txns.status == "commit")]
    design = a if outcome == "aborted" else b
    assert set(late.base_partition) == {design.procedures["TradeInsert"]}


def test_the_checker_orders_a_migration_between_the_designs():
    """The executions of the old design come before the migration and those of the new one
    after it, even where no conflict on one partition says so (the moved row's accesses are
    on two partitions); an execution under the wrong design for its batch is a violation."""
    flow = Dataflow(["X"], [])
    before = TE(1, "X", 4, positions={0: (0, 1)}, accesses=[(0, "T", 7, "write")], ts=30, era=0)
    move = TE(2, "MIGRATION", 5, kind="migration", ts=20, era=1)
    after = TE(3, "X", 5, positions={1: (0, 2)}, accesses=[(1, "T", 7, "write")], ts=10, era=1)
    res = check_history([after, move, before], flow)
    assert res.ok and [[after, move, before][i] for i in res.order] == [before, move, after]
    wrong = replace(after, era=0)
    said = check_history([before, move, wrong], flow).violations[0]
    assert "ran under design 0, but its batch belongs to design 1" in said
    assert "belongs to design 0" in check_history([before, after], flow).violations[0]  # no migration recorded


def test_the_oracle_catches_a_migration_that_loses_rows(trade, monkeypatch):
    w, a, b, *_ = trade
    keep = Store.add_table
    monkeypatch.setattr(Store, "add_table", lambda self, name, virtual: dict(keep(self, name, virtual)))
    r = run_workload(w, a, batches=BATCHES, in_process=True, migration=MigrationOptions(to=b, at_batch=AT))
    assert "differs from the serial re-execution" in r.history_check


def test_bad_migrations_are_one_line_and_exit_2(trade, window, tmp_path, capsys):
    w, a, b, *_ = trade
    ww, wa, wb = window
    paths = {}
    for name, d in (("a", a), ("b", b), ("wa", wa),
                    ("misplaced", replace(wb, state={ww.windows[0].name: wa.procedures[ww.windows[0].procedure]})),
                    ("cluster", recommend("tpcdi-trade", machines=3, objective="cost").design)):
        paths[name] = str(d.save(tmp_path / f"{name}.json"))
    trace = tmp_path / "trace"
    cases = [("tpcdi-trade", "a", ["--migrate-to", paths["wa"], "--at-batch", "5"], "different workloads"),
             ("tpcdi-trade", "a", ["--migrate-to", paths["cluster"], "--at-batch", "5"], "different clusters"),
             ("window-micro", "wa", ["--migrate-to", paths["misplaced"], "--at-batch", "5"],
              "must be on the partition"),
             ("tpcdi-trade", "a", ["--migrate-to", paths["b"], "--at-batch", "20"], "1..19"),
             ("tpcdi-trade", "a", ["--at-batch", "5"], "need --migrate-to"),
             ("tpcdi-trade", "a", ["--migrate-to", paths["b"]], "needs --at-batch"),
             ("tpcdi-trade", "a", ["--migrate-to", paths["b"], "--at-batch", "5", "--migration", "slow"],
              "--migration")]
    for source, design, extra, said in cases:
        rc = run_app(["run", source, "--design", paths[design], "--batches", "20", "--in-process",
                      "--trace-out", str(trace), *extra])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and err.count("\n") == 1 and said in err, (extra, err)
        assert not trace.exists()  # nothing ran, nothing written


def test_the_cli_prints_the_migration_and_the_comparison(trade, tmp_path, capsys):
    w, a, b, *_ = trade
    pa, pb = a.save(tmp_path / "a.json"), b.save(tmp_path / "b.json")
    base = ["run", "tpcdi-trade", "--design", str(pa), "--batches", "100", "--in-process",
            "--migrate-to", str(pb), "--at-batch", "70"]
    assert run_app(base) == 0
    out = capsys.readouterr().out
    assert "migration time" in out and "history check   ok" in out
    assert run_app([*base, "--migration", "compare"]) == 0
    out = capsys.readouterr().out
    assert "stop-move-restart" in out and "tuples/s during" in out


@pytest.mark.process
def test_live_migration_and_a_crash_during_it_across_processes(trade):
    """One OS process per partition: the rows travel over the sockets; a partition process
    killed during the move (the old design) or on the switch (the new one) is recovered."""
    w, a, b, plain, _ = trade
    r = run_workload(w, a, batches=BATCHES, migration=MigrationOptions(to=b, at_batch=AT))
    assert r.mode == "multi-process"
    assert_correct(r)
    assert r.state_digest == plain.state_digest and r.migration.rows_moved > 0
    for step, outcome in (("moving", "aborted"), ("switched", "committed")):
        c = run_workload(w, a, batches=BATCHES, recovery=RecoveryOptions(crash_at=("migration", step)),
                         migration=MigrationOptions(to=b, at_batch=AT))
        assert c.crashed and c.migration.outcome == outcome
        assert_correct(c)
        assert c.state_digest == plain.state_digest and c.committed == plain.committed


@pytest.mark.process
def test_stop_move_restart_starts_new_processes(trade):
    w, a, b, plain, _ = trade
    r = run_workload(w, a, batches=BATCHES, migration=MigrationOptions(to=b, at_batch=AT, mode="restart"))
    assert_correct(r)
    assert r.state_digest == plain.state_digest
    assert len(r.pids) == 2 * a.n_partitions  # every partition stopped, a new process for each


def moved_items_of(a, b) -> list[str]:
    """The state items two designs place differently (a window is where its owner is)."""
    return sorted(n for n in a.state if a.state[n] != b.state.get(n))


def test_a_span_no_batch_completed_in_reads_n_a_not_a_measured_zero():
    # a run so short that every batch after the pause waited in it has no "after", and a
    # pause before the first window completed has no "before": 0 tuples/s would say it stalled
    from engine_sim.engine.migration import MigrationResult

    m = MigrationResult("live", 50, "committed", False, 0.06, 0.05, 0.01, 0, 0, 0,
                        batches_during=100, tps_during=6096.0)
    line = dict(m.describe())["throughput"]
    assert line == "before n/a  during 6,096  after n/a tuples/s"
    measured = replace(m, batches_before=10, tps_before=8422.0, batches_after=5, tps_after=0.4)
    assert dict(measured.describe())["throughput"] == "before 8,422  during 6,096  after 0 tuples/s"
