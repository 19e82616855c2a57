"""The maximum-throughput rate search: aimed at the edge an overloaded probe shows, it closes
the same bracket as bisection, in fewer probes where the guess is right, and still closes it
where a design delivers less overloaded than it sustains."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from engine_sim.sim import Calibration, max_throughput
from engine_sim.sim.rate_search import probe_near_edge, search_rate
from engine_sim.sim.result import KEPT_UP
from advisor.sources import load_workload
from costmodel.graph import WorkloadGraph
from costmodel.design import Design
from costmodel import Weights


def design_with_capacity(capacity: float, overloaded_share: float = 1.0, busiest_at_capacity: float = 1.0):
    """A stand-in for one design's simulation: it delivers what it is offered up to
    `capacity` batches/s; offered more, it delivers `overloaded_share` of the capacity (below
    1: it collapses past saturation, as lock holds stretching each other do). Its busiest
    resource is `busiest_at_capacity` busy at capacity (below 1: what limits it is not a
    resource's time, and the utilisation law overshoots, as on boundaries-32sp)."""
    def run(rate: float):
        delivered = rate if rate <= capacity else capacity * overloaded_share
        kept_up = delivered >= KEPT_UP * rate
        return SimpleNamespace(throughput_bps=delivered, latency_mean_ms=1.0, kept_up=kept_up,
                               within_bound=kept_up,
                               peak_utilisation=busiest_at_capacity * min(rate / capacity, 1.0))
    return run


def sustained_bracket(result, tolerance: float) -> tuple[float, float]:
    ok = [p["input_rate"] for p in result.search if p["within_bound"]]
    failed = [p["input_rate"] for p in result.search if not p["within_bound"]]
    lo, hi = max(ok), min(f for f in failed if f > max(ok))
    assert hi - lo <= tolerance * hi  # the search ended with its bracket closed
    return lo, hi


@pytest.mark.parametrize("capacity, tolerance, busiest", [(1000.0, 0.01, 1.0), (1000.0, 0.08, 0.68),
                                                         (37.5, 0.02, 0.9), (2500.0, 0.01, 0.68)])
def test_aiming_closes_the_same_bracket_in_fewer_probes(capacity, tolerance, busiest):
    run = design_with_capacity(capacity, busiest_at_capacity=busiest)
    aimed = search_rate(run, capacity / 20, tolerance=tolerance)
    bisected = search_rate(run, capacity / 20, tolerance=tolerance, aim_at_edge=False)
    edge = capacity / KEPT_UP  # the highest rate it keeps up with by the 98 % rule
    for result in (aimed, bisected):
        lo, hi = sustained_bracket(result, tolerance)
        assert lo <= edge < hi
        assert result.throughput_bps >= (1 - tolerance) * capacity
    assert len(aimed.search) < len(bisected.search)


@pytest.mark.parametrize("share", [0.9, 0.7])
def test_a_design_that_collapses_past_saturation_is_still_bracketed(share):
    # overloaded, it delivers less than it sustains: the edge guess is low, and a probe above
    # it keeps up; the search bisects from there and still closes on the true edge
    capacity, tolerance = 500.0, 0.01
    result = search_rate(design_with_capacity(capacity, share), 40.0, tolerance=tolerance)
    lo, hi = sustained_bracket(result, tolerance)
    assert lo <= capacity < hi  # offered more, it falls below 98 % at once
    assert result.throughput_bps >= (1 - tolerance) * capacity


def test_the_aimed_probe_stays_inside_the_bracket_or_bisects():
    assert probe_near_edge(None, 100.0, 200.0, 0.01) is None  # no overloaded probe yet
    assert probe_near_edge(150.0, 100.0, 101.5, 0.01) is None  # the midpoint closes it either way
    above = probe_near_edge(150.0, 100.0, 200.0, 0.01)
    assert above == pytest.approx(150.0 * 1.005)  # bring the top down to the edge
    below = probe_near_edge(150.0, 100.0, 150.6, 0.01)
    assert below == pytest.approx(150.0 * 0.995)  # keeping up there closes the bracket
    assert probe_near_edge(300.0, 100.0, 200.0, 0.01) is None  # a guess outside: bisect


def test_on_the_simulator_both_searches_agree_within_their_tolerance(monkeypatch):
    import numpy as np

    import engine_sim.sim.run as sim_run

    w = load_workload("linear-road").with_cluster(4, 2)
    g = WorkloadGraph.from_workload(w)
    proc = np.arange(g.cost.n_proc) % 8
    state = np.arange(g.cost.n_state) % 8
    owned = g.cost.state_owner >= 0  # a window lives with its owner
    state[owned] = proc[g.cost.state_owner[owned]]
    design = Design.from_arrays(g, proc, state, Weights())
    params = Calibration.reference().params
    aimed = max_throughput(w, design, batches=150, tolerance=0.01, calibration=params)
    monkeypatch.setattr(sim_run, "search_rate", lambda *a, **k: search_rate(*a, aim_at_edge=False, **k))
    bisected = max_throughput(w, design, batches=150, tolerance=0.01, calibration=params)
    assert aimed.throughput_tps == pytest.approx(bisected.throughput_tps, rel=0.02)
    assert len(aimed.search) <= len(bisected.search)


def test_the_bench_times_both_searches_and_leaves_the_simulator_as_it_was():
    import sys
    from pathlib import Path

    import engine_sim.sim.run as sim_run

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import rate_search_speed as bench

    w = load_workload("tpcdi-trade").with_cluster(2, 1)
    g = WorkloadGraph.from_workload(w)
    _proc, _state, design = next(bench.random_designs(g, 1, seed=4))
    params = Calibration.reference().params
    bisected = bench.searched(w, design, 100, 0.08, params, aim=False)
    aimed = bench.searched(w, design, 100, 0.08, params, aim=True)
    assert sim_run.search_rate is search_rate  # put back after each
    assert aimed[0] == pytest.approx(bisected[0], rel=0.08)  # within the search's tolerance
    assert aimed[1] >= 2 and bisected[1] >= 2  # probes counted
