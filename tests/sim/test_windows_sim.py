"""Windows in the simulator: the owner's partition pays for staging, sliding, expiry and the
read of the active window; a window never makes a transaction distributed."""
from __future__ import annotations

from dataclasses import replace

import pytest

from costmodel.errors import DesignError

from costmodel.design import Design
from costmodel.spec_reader import parse_workload
from engine_sim.sim import SimParams, run_once
from costmodel.window_work import window_work
from window_specs import recent_bids_spec

EXACT = SimParams(service_cv=0.0)



def spec(tuples, size, slide) -> str:
    return recent_bids_spec(tuples, size, slide)


def workload(tuples=4, size=100, slide=10):
    return parse_workload(spec(tuples, size, slide), "w.toml")


def run(w, state=None, **kw):
    d = Design(w.name, 2, 1, {"Ingest": 0, "Trend": 1}, state or {"Bids": 0})
    return run_once(w, d, input_rate=100, batches=400, calibration=kw.pop("params", EXACT), **kw)


def test_a_window_runs_on_its_owners_partition_and_is_never_remote():
    w = workload()
    # a design that puts the window away from its owner is refused, naming both
    with pytest.raises(DesignError, match="window 'RecentBids' must be on the partition of its owner 'Trend'"):
        run(w, {"Bids": 0, "RecentBids": 0})
    r = run(w, {"Bids": 0, "RecentBids": 1})
    win = r.windows["RecentBids"]
    assert win["owner"] == "Trend" and win["partition"] == r.procedures["Trend"]["partition"] == 1
    assert r.distributed_txns == 0 and r.procedures["Trend"]["distributed"] == 0
    assert r.completed_batches == 400
    assert win["inserted"] == pytest.approx(400 * 4)
    assert win["busy_s"] > 0 and r.procedures["Trend"]["window_busy_s"] == pytest.approx(win["busy_s"])
    # a design that leaves the window out runs the same
    assert run(w).windows["RecentBids"]["busy_s"] == pytest.approx(win["busy_s"])


def test_the_maintenance_is_priced_on_the_owners_partition():
    w = workload()
    without = replace(w, windows=(), procedures=tuple(
        replace(p, accesses=()) if p.name == "Trend" else p for p in w.procedures))
    with_window, plain = run(w), run(without)
    extra = with_window.partition_busy_s[1] - plain.partition_busy_s[1]
    # the owner's partition does the window's work plus the declared read of 5 window rows
    declared = 400 * 5 * EXACT.row_read_s
    assert extra == pytest.approx(with_window.windows["RecentBids"]["busy_s"] + declared, rel=1e-6)
    assert with_window.partition_busy_s[0] == pytest.approx(plain.partition_busy_s[0])


def test_more_tuples_or_more_frequent_slides_cost_the_owner_more():
    base = run(workload(tuples=4, slide=10))
    more_tuples = run(workload(tuples=16, slide=10))
    more_slides = run(workload(tuples=4, slide=2))
    busy = lambda r: r.windows["RecentBids"]["busy_s"]  # noqa: E731
    assert busy(more_tuples) > busy(base)
    assert busy(more_slides) > busy(base)
    assert more_slides.windows["RecentBids"]["slides"] > base.windows["RecentBids"]["slides"]
    assert more_tuples.partition_busy_s[1] > base.partition_busy_s[1]
    assert more_slides.partition_busy_s[1] > base.partition_busy_s[1]


def test_the_window_never_holds_more_than_its_size_and_no_tuple_is_lost():
    for size, slide in [(100, 10), (100, 100), (30, 7), (5, 5)]:
        w = workload(tuples=4, size=size, slide=slide)
        work = window_work(w, w.window("RecentBids"), 300, 1.0, EXACT)
        assert work.active <= size and work.staged < slide
        assert work.inserted == pytest.approx(work.active + work.staged + work.expired)
        assert work.read == work.sliding_batches  # one aggregate read (metadata row) per slide


def test_tumbling_reads_whole_windows_sliding_reads_overlapping_ones():
    w_tumble = workload(tuples=4, size=20, slide=20)
    w_slide = workload(tuples=4, size=20, slide=4)
    tumble = window_work(w_tumble, w_tumble.window("RecentBids"), 200, 1.0, EXACT)
    slide = window_work(w_slide, w_slide.window("RecentBids"), 200, 1.0, EXACT)
    # a tumbling window slides every size/tuples batches, each time replacing all of it
    assert tumble.sliding_batches == 200 * 4 // 20
    assert tumble.read == tumble.sliding_batches  # the aggregate, from the metadata row
    assert tumble.expired == pytest.approx((tumble.sliding_batches - 1) * 20)
    # a sliding window slides every batch here: five times the reads, each tuple expires once
    assert slide.sliding_batches == slide.read == 200 == 5 * tumble.read
    assert slide.expired == pytest.approx(200 * 4 - 20)
    assert slide.active == tumble.active == 20


def test_time_windows_are_priced_by_their_expected_tuples():
    text = spec(4, 10, 5) + "kind = \"time\"\nmax_tuples = 40\n"
    w = parse_workload(text, "w.toml")
    work = window_work(w, w.window("RecentBids"), 100, 1.0, EXACT)
    assert work.active <= 40 and work.slides == 400 // 20
    r = run(w)
    assert r.windows["RecentBids"]["busy_s"] > 0


def test_window_costs_follow_the_row_costs_unless_set():
    p = SimParams(row_read_s=2e-6, row_write_s=3e-6)
    assert p.window_costs() == (3e-6, 3e-6, 3e-6, 2e-6)
    q = p.with_(window_insert_s=1e-5)
    assert q.window_costs()[0] == 1e-5
    assert SimParams.from_dict(q.to_dict()) == q
    assert q.cpu_scaled(2.0).window_costs() == (2e-5, 6e-6, 6e-6, 4e-6)
    w = workload()
    cheap = run(w, params=EXACT.with_(window_read_s=0.0))
    assert cheap.windows["RecentBids"]["busy_s"] < run(w).windows["RecentBids"]["busy_s"]
    with pytest.raises(ValueError, match="window_slide_s"):
        SimParams(window_slide_s=-1.0)


def test_simulate_prints_a_line_per_window(tmp_path, capsys):
    from advisor.cli import run_app

    spec = tmp_path / "w.toml"
    spec.write_text(recent_bids_spec())
    w = workload()
    design = tmp_path / "d.json"
    Design(w.name, 2, 1, {"Ingest": 0, "Trend": 1}, {"Bids": 0, "RecentBids": 1}).save(design)
    assert run_app(["simulate", str(spec), "--design", str(design), "--rate", "100",
                    "--batches", "100"]) == 0
    out = capsys.readouterr().out
    assert "window RecentBids" in out and "on partition 1 with Trend: 40 slides" in out
