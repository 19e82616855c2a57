"""Windows in the engine (dissertation 3.3.5): staging, sliding and expiry as an independent
computation in this file says; private to the owner (the checker); in the digest, the serial
oracle, recovery and the trace."""
import json

import pyarrow.parquet as pq
import pytest

from costmodel.errors import DesignError

from advisor.cli import run_app
from costmodel.design import Design
from costmodel.spec_reader import parse_workload
from advisor.sources import load_workload
from engine_sim.engine import run_workload
from engine_sim.engine.run_options import RecoveryOptions
from engine_sim.engine import windows as win
from engine_sim.engine.checker import TE, Dataflow, check_history
from costmodel.simple_designs import round_robin_design, single_partition_design
from engine_sim.engine.errors import EngineError
from engine_sim.engine.inputs import input_batch
from engine_sim.engine.keys import MASK
from engine_sim.engine.plan import build_plan
from engine_sim.engine.serial import SerialExecution, SerialStep
from engine_sim.engine.site import build_store
from window_specs import (heavy_upstream_spec, nested, procedure, reads, spec_text, stream,
                          table, window, writes)


def border_spec_text(size, slide, *more: str, kind="tuple", rate=None, oltp=False) -> str:
    """One SP, Owner, writes T by the input's key and owns the window W; `more` sections are
    appended."""
    return spec_text("wb", table("T", rows=50, row_bytes=8),
                     procedure("Owner", 0.0, writes("T", 1, keys="input:k"), oltp=oltp),
                     window("W", "Owner", size=size, slide=slide, kind=kind), *more,
                     batch_size=2, fields=("k", "v"), rate=rate)


def chain_spec(size=10, partition_key=None, *more: str) -> str:
    """Ingest writes A and feeds Trend, which reads its window Recent (`size` tuples sliding
    by 4), writes B and feeds Report (reads B, writes C). `partition_key` makes Ingest and Trend
    data-parallel; `more` sections are appended. A cost unit of 1 ns: no SP work to speak of
    (a spec's unit is > 0)."""
    return spec_text("wc", table("A", rows=100, row_bytes=8), table("B", rows=100, row_bytes=8),
                     procedure("Ingest", 1.0, writes("A", 2, keys="input:k"),
                               partition_key=partition_key),
                     procedure("Trend", 0.5, reads("Recent", 3), writes("B", 1),
                               partition_key=partition_key),
                     table("C", rows=100, row_bytes=8),
                     procedure("Report", 0.5, reads("B", 2), writes("C", 1)),
                     stream("Ingest", "Trend", 3), stream("Trend", "Report", 1),
                     window("Recent", "Trend", size=size, slide=4), *more,
                     batch_size=4, fields=("k",), cost_unit_us=0.001)


CHAIN = chain_spec()


def border_spec(size, slide, kind="tuple", rate=None):
    return parse_workload(border_spec_text(size, slide, kind=kind, rate=rate), "wb.toml")


def expected_tuple_window(tuples: list, size: int, slide: int) -> tuple[list, list]:
    """(active, staged) after `tuples` arrived, tuple by tuple, in closed form."""
    slid = len(tuples) // slide * slide  # tuples made active by the slides so far
    return tuples[max(0, slid - size):slid], tuples[slid:]


def expected_time_window(stamped: list, now: float, size: float, slide: float) -> tuple[list, list]:
    """(active, staged) of (timestamp, tuple) pairs at time `now`: the newest complete window
    ends at the largest multiple of slide <= now (none before the first slide)."""
    if now < slide:
        return [], [t for _, t in stamped]
    end = (now // slide) * slide
    return [t for ts, t in stamped if end - size <= ts < end], [t for ts, t in stamped if ts >= end]


def final_window(w, design, batches, **kw):
    r = run_workload(w, design, batches=batches, in_process=True, return_state=True, **kw)
    assert r.history_check == "ok", r.violations
    assert r.state_digest == r.serial_digest
    rows = r.state["W"]
    active, staged = win.active(rows), win.staged(rows)
    assert_stats_match(rows, active, staged)
    return active, staged, r


def total(tuples) -> int:
    return sum(win.tuple_value(t) for t in tuples) & MASK


def assert_stats_match(rows, active, staged):
    """The metadata's statistics (kept incrementally) equal a recomputation from the tuples."""
    w = win.stats(rows)
    assert (w.active, w.staged) == (len(active), len(staged))
    assert (w.active_sum, w.staged_sum) == (total(active), total(staged))
    assert w.aggregate == win.aggregate(rows, w.active_lo, w.stage_lo)
    assert win.stats_errors(rows) == []


@pytest.mark.parametrize("size,slide", [(7, 3), (4, 4), (5, 1)])
def test_tuple_window_after_every_batch_equals_an_independent_computation(size, slide):
    w = border_spec(size, slide)
    design = single_partition_design(w)
    plan = build_plan(w, design)
    arrived: list = []
    slides = 0
    for b in range(1, 11):
        arrived.extend(input_batch(plan, b - 1).tuples)
        active, staged, _ = final_window(w, design, b, recovery=RecoveryOptions(mode="off"))
        assert (active, staged) == expected_tuple_window(arrived, size, slide)
        assert len(active) <= size and len(staged) < slide
        slides = len(arrived) // slide
    assert slides >= 3  # the runs crossed several slides (and expiries when size < 20)


@pytest.mark.parametrize("rate,size,slide", [(4, 1.0, 0.5), (1, 2.0, 0.5), (2, 1.5, 1.5)])
def test_time_window_after_every_batch_equals_an_independent_computation(rate, size, slide):
    w = border_spec(size, slide, kind="time", rate=rate)
    design = single_partition_design(w)
    plan = build_plan(w, design)
    stamped: list = []
    for b in range(1, 11):
        stamped.extend(((b - 1) / rate, t) for t in input_batch(plan, b - 1).tuples)
        active, staged, _ = final_window(w, design, b, recovery=RecoveryOptions(mode="off"))
        assert (active, staged) == expected_time_window(stamped, (b - 1) / rate, size, slide)
    assert active  # the window slid and holds tuples


def test_batch_timestamps_default_to_one_batch_per_second():
    assert win.batch_timestamp_us(7, win.DEFAULT_RATE) == 7_000_000
    assert win.batch_timestamp_us(3, 4.0) == 750_000


def test_interior_owner_keeps_its_window_on_its_partition_and_reads_it():
    w = parse_workload(CHAIN, "wc.toml")
    design = round_robin_design(w, machines=1, partitions_per_machine=3)
    plan = build_plan(w, design)
    home = design.procedures["Trend"]
    assert plan.router.row_partition("Recent", 0) == home
    assert [k for k in range(3) if "Recent" in build_store(plan, k).tables] == [home]
    r = run_workload(w, design, batches=40, in_process=True, return_state=True)
    assert r.history_check == "ok" and r.state_digest == r.serial_digest
    # the window holds what Trend received, in batch order: 3 tuples per batch
    w_ = win.stats(r.state["Recent"])
    assert w_.next_seq == 40 * 3 and w_.stage_lo == w_.next_seq // 4 * 4 and w_.active == 10
    assert win.stats_errors(r.state["Recent"]) == []


def test_window_reads_change_what_the_owner_passes_downstream():
    """The owner's reads are real: a different window size changes the aggregate it folds
    into its output, hence what Report (downstream) writes into table C."""
    w = parse_workload(CHAIN, "wc.toml")
    other = parse_workload(chain_spec(size=12), "wc.toml")
    design = single_partition_design(w)
    a = run_workload(w, design, batches=20, in_process=True, return_state=True)
    b = run_workload(other, design, batches=20, in_process=True, return_state=True)
    assert a.state["B"] == b.state["B"] and a.state["C"] != b.state["C"]
    assert a.state_digest != b.state_digest


def test_serial_oracle_recomputes_the_windows():
    w = parse_workload(CHAIN, "wc.toml")
    design = round_robin_design(w, machines=1, partitions_per_machine=2)
    r = run_workload(w, design, batches=30, in_process=True, return_state=True)
    assert r.history_check == "ok" and r.serial_digest == r.state_digest
    plan = build_plan(w, design)
    # the oracle re-executes the batches one at a time in batch order, on fresh stores
    steps = [SerialStep("stream", u, b) for b in range(30) for u in plan.unit_order]
    serial = SerialExecution(plan).run(steps)
    home = design.procedures["Trend"]
    assert serial.stores[home].tables["Recent"] == r.state["Recent"]
    assert serial.digest() == r.state_digest


def test_the_digest_covers_windows():
    w = border_spec(7, 3)
    other = border_spec(8, 3)  # same tables and inputs: only the window differs
    design = single_partition_design(w)
    a = run_workload(w, design, batches=12, in_process=True, return_state=True)
    b = run_workload(other, design, batches=12, in_process=True, return_state=True)
    assert a.state["T"] == b.state["T"] and a.state["W"] != b.state["W"]
    assert a.state_digest != b.state_digest


@pytest.mark.parametrize("recovery", ["strong", "weak"])
def test_recovery_restores_windows(recovery):
    w = parse_workload(CHAIN, "wc.toml")
    design = round_robin_design(w, machines=1, partitions_per_machine=2)
    clean = run_workload(w, design, batches=60, in_process=True, return_state=True,
                         recovery=RecoveryOptions(mode=recovery))
    home = design.procedures["Trend"]
    crashed = run_workload(w, design, batches=60, in_process=True, return_state=True,
                           recovery=RecoveryOptions(mode=recovery, crash_after=45, crash_partition=home))
    assert crashed.crashed and crashed.history_check == "ok", crashed.violations
    assert crashed.state_digest == crashed.serial_digest
    assert crashed.state["Recent"] == clean.state["Recent"]
    assert crashed.state_digest == clean.state_digest


@pytest.mark.parametrize("recovery", ["strong", "weak"])
def test_recovered_window_equals_the_independent_computation(recovery):
    w = border_spec(7, 3)
    design = single_partition_design(w)
    plan = build_plan(w, design)
    active, staged, r = final_window(w, design, 40, recovery=RecoveryOptions(mode=recovery, crash_after=23))
    assert r.crashed
    arrived = [t for b in range(40) for t in input_batch(plan, b).tuples]
    assert (active, staged) == expected_tuple_window(arrived, 7, 3)


def test_trace_records_window_accesses_under_the_windows_name(tmp_path):
    w = border_spec(4, 2)
    design = single_partition_design(w)
    out = tmp_path / "trace"
    run_workload(w, design, batches=6, in_process=True, trace_out=out)
    manifest = json.loads((out / "_trace.json").read_text())
    assert manifest["windows"] == {"W": {"procedure": "Owner", "size": 4, "slide": 2, "kind": "tuple",
                                         "tuple_bytes": 32, "tuples": 4.0}}
    acc = pq.read_table(out / "accesses").to_pylist()
    txns = {t["txn_id"]: t for t in pq.read_table(out / "txns").to_pylist()}
    wacc = [a for a in acc if a["table"] == "W"]
    assert {txns[a["txn_id"]]["procedure"] for a in wacc} == {"Owner"}
    writes = {(txns[a["txn_id"]]["batch_id"], a["key"]) for a in wacc if a["mode"] == "write"}
    reads = {(txns[a["txn_id"]]["batch_id"], a["key"]) for a in wacc if a["mode"] == "read"}
    meta = str(win.META)
    # batch b inserts tuples 2b and 2b+1 (2 per batch) and slides (slide 2): tuples 2b-4 and
    # 2b-3 expire (deleted: writes); it reads and writes the metadata row, where the active
    # window's count and sum are kept (its read of the window: no tuple rows are read)
    for b in range(6):
        expired = {str(s) for s in range(2 * b - 4, 2 * b - 2) if s >= 0}
        assert {k for bb, k in writes if bb == b} == {str(2 * b), str(2 * b + 1), meta} | expired
        assert {k for bb, k in reads if bb == b} == {meta}


def test_design_that_moves_a_window_away_from_its_owner_is_refused(tmp_path, capsys):
    w = parse_workload(CHAIN, "wc.toml")
    design = round_robin_design(w, machines=1, partitions_per_machine=3)
    home = design.procedures["Trend"]
    bad = Design(design.workload, 1, 3, dict(design.procedures), {**design.state, "Recent": (home + 1) % 3})
    with pytest.raises(DesignError, match="window 'Recent' must be on the partition of its owner 'Trend'"):
        run_workload(w, bad, batches=5, in_process=True)
    spec = tmp_path / "wc.toml"
    spec.write_text(CHAIN)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad.to_dict()))
    code = run_app(["run", str(spec), "--design", str(path), "--batches", "5", "--in-process"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Recent" in err and "Trend" in err
    assert "Traceback" not in err
    # a design that does not name the window places it with its owner
    state = {k: v for k, v in design.state.items() if k != "Recent"}
    ok = run_workload(w, Design(design.workload, 1, 3, dict(design.procedures), state),
                      batches=5, in_process=True)
    assert ok.history_check == "ok"


def test_window_micro_runs_clean():
    w = load_workload("window-micro")
    assert w.description.startswith("Window micro-benchmark")
    r = run_workload(w, single_partition_design(w), batches=30, in_process=True, return_state=True)
    assert r.history_check == "ok" and r.state_digest == r.serial_digest
    active = win.active(r.state["Window"])
    assert len(active) == 100  # 300 tuples in: the window is full


# -- the checker: planted violations -------------------------------------------------------------

FLOW = Dataflow(["Owner", "Other"], [("Owner", "Other")], windows={"W": "Owner"})


def owner_te(i, batch, pos, extra=()):
    return TE(id=i, procedure="Owner", batch=batch, positions={0: (0, pos, 0)},
              accesses=[(0, "W", win.META, "write"), *extra])


def other_te(i, batch, pos, accesses):
    return TE(id=i, procedure="Other", batch=batch, positions={0: (0, pos, 0)}, accesses=accesses)


def test_checker_accepts_the_owners_consecutive_batches():
    tes = [owner_te(0, 0, 0), other_te(1, 0, 1, []), owner_te(2, 1, 2), other_te(3, 1, 3, [])]
    assert check_history(tes, FLOW, range(2)).ok


@pytest.mark.parametrize("mode", ["read", "write"])
def test_checker_catches_another_sp_touching_a_window(mode):
    tes = [owner_te(0, 0, 0), other_te(1, 0, 1, [(0, "W", 0, mode)])]
    res = check_history(tes, FLOW, range(1))
    assert not res.ok
    assert f"window 'W' is private to Owner: Other@0 {'wrote' if mode == 'write' else 'read'} it" \
        in res.violations


def test_checker_catches_the_owner_out_of_batch_order():
    # batch 1 reached the window before batch 0 on its partition (no conflict edge is given,
    # so only the window rule sees it)
    tes = [TE(id=0, procedure="Owner", batch=1, positions={0: (0, 0, 0)}, accesses=[(0, "W", 5, "write")]),
           TE(id=1, procedure="Owner", batch=0, positions={0: (0, 1, 0)}, accesses=[(0, "W", 4, "write")])]
    res = check_history(tes, Dataflow(["Owner"], [], windows={"W": "Owner"}))
    assert any("window 'W'" in v and "out of batch order" in v and "Owner@0 after Owner@1" in v
               for v in res.violations)


def test_checker_catches_a_gap_in_the_owners_batches():
    tes = [owner_te(0, 0, 0), owner_te(1, 1, 1), owner_te(2, 3, 2)]
    res = check_history(tes, Dataflow(["Owner"], [], windows={"W": "Owner"}))
    assert not res.ok and "window 'W'" in res.violations[0] and "batch 2 missing" in res.violations[0]


def real_history(monkeypatch, w, design, batches):
    """The surviving history of an in-process run, as the runner checks it."""
    from engine_sim.engine import runner
    from engine_sim.engine.history import executions

    captured = {}
    original = runner._result

    def capture(plan, driver, *args, **kwargs):
        captured["records"] = list(driver.records)
        return original(plan, driver, *args, **kwargs)

    monkeypatch.setattr(runner, "_result", capture)
    assert run_workload(w, design, batches=batches, in_process=True).history_check == "ok"
    return executions(captured["records"])


def test_checker_catches_violations_planted_in_a_real_history(monkeypatch):
    w = parse_workload(CHAIN, "wc.toml")
    flow = Dataflow.from_workload(w)
    tes = real_history(monkeypatch, w, round_robin_design(w, 1, 3), 8)
    assert check_history(tes, flow, range(8)).ok
    trend = sorted((te for te in tes if te.procedure == "Trend"), key=lambda te: te.batch)
    assert all(any(t == "Recent" for _p, t, _k, _m in te.accesses) for te in trend)
    # another SP reads the window
    report = next(te for te in tes if te.procedure == "Report")
    part = trend[0].accesses[0][0]
    report.accesses.append((part, "Recent", win.META, "read"))
    report.positions.setdefault(part, (0, 10**6, 0))
    res = check_history(tes, flow, range(8))
    assert not res.ok and any("private to Trend" in v and "Report@" in v for v in res.violations)
    report.accesses.pop()
    # the owner's batches 3 and 4 reach the window in the wrong order
    a, b = trend[3], trend[4]
    a.positions, b.positions = b.positions, a.positions
    res = check_history(tes, flow, range(8))
    assert not res.ok and any("window 'Recent'" in v and "out of batch order" in v for v in res.violations)


def test_oltp_owner_is_refused():
    spec = border_spec_text(4, 2, procedure("S", 1.0), oltp=True)
    w = parse_workload(spec, "w.toml")
    with pytest.raises(EngineError, match="OLTP"):
        build_plan(w, single_partition_design(w))


@pytest.mark.slow
def test_windows_across_processes_with_a_crash():
    w = parse_workload(CHAIN, "wc.toml")
    design = round_robin_design(w, machines=1, partitions_per_machine=2)
    clean = run_workload(w, design, batches=80, in_process=True, return_state=True,
                         recovery=RecoveryOptions(mode="weak"))
    r = run_workload(w, design, batches=80, return_state=True,
                     recovery=RecoveryOptions(mode="weak", crash_after=50,
                                              crash_partition=design.procedures["Trend"]))
    assert r.crashed and r.history_check == "ok" and r.state_digest == r.serial_digest
    assert r.state["Recent"] == clean.state["Recent"]


@pytest.mark.parametrize("size,slide", [(7, 3), (20, 20)])
def test_the_benchs_naive_window_holds_what_the_native_one_does(size, slide):
    """bench/windows.py compares like with like: the H-Store-style table window (two
    transactions per batch) ends with the native window's active tuples."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("bench_windows", Path(__file__).parents[2] / "bench" / "windows.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for batches in (3, 17):
        nat, nai = bench.native(size, slide), bench.naive(size, slide)
        a = run_workload(nat, bench.one_partition(nat), batches=batches, in_process=True, return_state=True)
        b = run_workload(nai, bench.one_partition(nai), batches=batches, in_process=True, return_state=True)
        assert a.history_check == b.history_check == "ok" and b.state_digest == b.serial_digest
        lo, stage, _nxt = b.state["WindowMeta"][0]
        table = b.state["WindowTable"]
        assert [table[s][0] for s in range(lo, stage)] == win.active(a.state["W"])
        assert all(table[s][1] == (0 if s < stage else 1) for s in table)  # staged flags


def test_data_parallel_mode_keeps_a_window_owner_in_one_lane():
    w = parse_workload(chain_spec(partition_key="k"), "wc.toml")
    design = round_robin_design(w, machines=1, partitions_per_machine=2)
    plan = build_plan(w, design, data_parallel=True)
    assert plan.units["Ingest"].dp and not plan.units["Trend"].dp
    r = run_workload(w, design, batches=20, in_process=True, data_parallel=True)
    assert r.history_check == "ok" and r.state_digest == r.serial_digest


def test_window_owner_inside_a_nested_group():
    w = parse_workload(chain_spec(10, None, nested("Trend", "Report")), "wc.toml")
    assert w.nested == (("Trend", "Report"),)
    design = round_robin_design(w, machines=1, partitions_per_machine=3)
    for recovery, crash in (("weak", None), ("strong", 30)):
        r = run_workload(w, design, batches=40, in_process=True, return_state=True,
                         recovery=RecoveryOptions(mode=recovery, crash_after=crash,
                                                  crash_partition=design.procedures["Trend"]))
        assert r.history_check == "ok" and r.state_digest == r.serial_digest
        w_ = win.stats(r.state["Recent"])
        assert w_.next_seq == 40 * 3 and w_.active == 10
        assert win.stats_errors(r.state["Recent"]) == []


# -- the window's statistics: kept in its metadata, equal to a recomputation after every step ----

def stepping_store(window, rate=None):
    """A store holding one window, stepped directly (one transaction per owner execution)."""
    from costmodel.workload import Window
    from engine_sim.engine.store import Store
    spec = win.WindowSpec.from_window(Window("W", "Owner", *window), 0, rate)
    return Store({}, frozenset(), {"W": spec})


def step_once(store, batch_id, tuples):
    store.begin()
    result = store.apply(("win", 0, "W", batch_id, tuples))
    return result, store.commit()


def batch_tuples(b, n):
    return tuple((b * 1000 + i, (b * 7919 + i * 104729) % 65536) for i in range(n))


@pytest.mark.parametrize("size,slide,batch", [(7, 3, 2), (10, 3, 7), (5, 5, 5), (4, 1, 3), (100, 10, 10)])
def test_tuple_window_statistics_equal_a_recomputation_after_every_step(size, slide, batch):
    store = stepping_store((size, slide))
    arrived: list = []
    reads = 0
    for b in range(60):
        before = len(arrived) // slide
        arrived.extend(batch_tuples(b, batch))
        result, _ = step_once(store, b, batch_tuples(b, batch))
        active, staged = expected_tuple_window(arrived, size, slide)
        rows = store.tables["W"]
        assert (win.active(rows), win.staged(rows)) == (active, staged)
        assert_stats_match(rows, active, staged)
        if len(arrived) // slide > before:  # it slid: the owner read the active window
            assert result == win.fold(len(active), total(active)) == win.aggregate(rows, *win_bounds(rows))
            reads += 1
        else:
            assert result is None
    assert reads >= 10


@pytest.mark.parametrize("rate,size,slide", [(4, 1.0, 0.5), (1, 2.0, 0.5), (2, 1.5, 1.5), (3, 2.0, 1.0)])
def test_time_window_statistics_equal_a_recomputation_after_every_step(rate, size, slide):
    store = stepping_store((size, slide, "time"), rate)
    stamped: list = []
    reads = 0
    for b in range(40):
        now = b / rate
        result, _ = step_once(store, b, batch_tuples(b, 3))
        stamped.extend((now, t) for t in batch_tuples(b, 3))
        active, staged = expected_time_window(stamped, now, size, slide)
        rows = store.tables["W"]
        assert (win.active(rows), win.staged(rows)) == (active, staged)
        assert_stats_match(rows, active, staged)
        prev = (b - 1) / rate if b else 0.0
        if b and int(now // slide) > int(prev // slide):
            assert result == win.fold(len(active), total(active))
            reads += 1
        else:
            assert result is None
    assert reads >= 5


def win_bounds(rows):
    w = win.stats(rows)
    return w.active_lo, w.stage_lo


def test_an_aborted_step_leaves_the_statistics_as_they_were():
    store = stepping_store((7, 3))
    for b in range(5):
        step_once(store, b, batch_tuples(b, 2))
    before = dict(store.tables["W"])
    store.begin()
    store.apply(("win", 0, "W", 5, batch_tuples(5, 2)))
    store.rollback()
    assert store.tables["W"] == before and win.stats_errors(store.tables["W"]) == []


def test_the_owners_read_of_the_window_costs_the_same_whatever_its_size():
    """The native window reads its aggregate from the metadata row: a sliding step touches the
    tuples it inserts and expires and the metadata, never the active window's other tuples."""
    touched = {}
    for size in (10, 1000):
        store = stepping_store((size, 10))
        for b in range(size // 10 + 3):  # fill the window, then slide with expiries
            result, acc = step_once(store, b, batch_tuples(b, 10))
        assert result is not None and win.stats(store.tables["W"]).active == size
        touched[size] = sorted((key, mode) for _c, _t, key, mode in acc)
        assert [k for k, mode in touched[size] if mode == "read"] == [win.META, win.META]
    assert len(touched[10]) == len(touched[1000]) == 10 + 10 + 3
    # a declared read of n tuples (`rows = n` on its own window) reads n tuple rows
    store.begin()
    store.apply(("wread", 0, "W", 25))
    reads = store.commit()
    assert len(reads) == 26 and sum(1 for *_x, key, _m in reads if key != win.META) == 25


def test_stats_errors_catches_a_wrong_sum_in_the_metadata():
    """Planted: a metadata row whose running sums are off (as a wrong incremental update
    would leave it) is reported, and so is a hole in the rows."""
    store = stepping_store((7, 3))
    for b in range(6):
        step_once(store, b, batch_tuples(b, 2))
    rows = store.tables["W"]
    assert win.stats_errors(rows) == []
    meta = rows[win.META]
    rows[win.META] = meta[:4] + ((meta[4] + 1) & MASK, meta[5])
    assert any(e.startswith("active sum") for e in win.stats_errors(rows))
    rows[win.META] = meta[:5] + (meta[5] ^ 1,)
    assert any(e.startswith("staged sum") for e in win.stats_errors(rows))
    rows[win.META] = meta
    del rows[meta[0] + 1]
    assert win.stats_errors(rows)


# -- the advisor's design for a window owned by a cheap SP downstream of heavy ones ---------------

HEAVY_UPSTREAM = heavy_upstream_spec(size=100, fields=("k", "v"), cost_unit_us=20)


@pytest.mark.parametrize("recovery,crash", [("weak", None), ("strong", 25)])
def test_the_advisors_design_for_a_cheap_window_owner_runs_clean_on_the_engine(recovery, crash):
    """Issue 12's check: the recommended design puts the window on its owner's partition, and
    the engine runs that design (window included, as the advisor placed it) with a clean
    history and the serial oracle's state."""
    from advisor.api import recommend
    w = parse_workload(HEAVY_UPSTREAM, "window-owner.toml")
    design = recommend(w, objective="cost", seed=1, baselines=False).design
    home = design.procedures["Trend"]
    assert design.state["RecentBids"] == home
    r = run_workload(w, design, batches=50, in_process=True, return_state=True,
                     recovery=RecoveryOptions(mode=recovery, crash_after=crash, crash_partition=home))
    assert r.history_check == "ok", r.violations
    assert r.state_digest == r.serial_digest
    assert bool(r.crashed) == (crash is not None)
    rows = r.state["RecentBids"]
    assert win.stats(rows).active == 100 and win.stats(rows).next_seq == 50 * 4
    assert win.stats_errors(rows) == []
