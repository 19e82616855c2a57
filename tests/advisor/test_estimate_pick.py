"""advisor.estimate_pick: the pick by the busy-time estimate where the simulator cannot judge in
time, and bench/estimate_pick.py, which compares it with the cost model's cheapest design."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from advisor.busy_estimate import BusyEstimate
from advisor.candidate_pool import scored_candidate
from advisor.estimate_pick import pick_by_estimate
from costmodel import Weights
from costmodel.graph import WorkloadGraph
from costmodel.model import machine_memory
from engine_sim.sim import Calibration

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

PARAMS = Calibration.reference().params


def test_the_pick_is_the_estimates_best_of_the_pool_and_its_climbs_and_is_seeded():
    from trace_quality import generated_workload

    w = generated_workload(1017).with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    rng = np.random.default_rng(5)
    pool = [scored_candidate(g, Weights(), f"random {k}", "search", rng.integers(0, 4, g.cost.n_proc),
                             rng.integers(0, 4, g.cost.n_state)) for k in range(3)]
    pick = pick_by_estimate(g, w, pool, PARAMS, seed=0)
    estimate = BusyEstimate.of(g, w, PARAMS)
    assert pick.estimated_tps == pytest.approx(estimate.throughput_tps(pick.proc_part, pick.state_part))
    assert all(o.estimated_tps == pytest.approx(estimate.throughput_tps(o.proc_part, o.state_part)) for o in pool)
    assert pick.pool_pick is max(pool, key=lambda o: o.estimated_tps)
    assert pick.climbed and pick.estimated_tps > pick.pool_pick.estimated_tps * 1.05  # random designs climb far
    again = pick_by_estimate(g, w, pool, PARAMS, seed=0)
    assert again.proc_part.tolist() == pick.proc_part.tolist() and again.moves == pick.moves


def test_the_pick_stays_within_the_machines_memory(monkeypatch):
    import advisor.estimate_pick as estimate_pick
    from workload_edits import memory_bound_case

    w, g, limit, start = memory_bound_case()
    assert machine_memory(g.cost, start[1]).max() <= limit
    pool = [scored_candidate(g, Weights(0.3, 0.1, 0.6), "start", "search", *start)]
    kept = pick_by_estimate(g, w, pool, PARAMS)
    assert machine_memory(g.cost, kept.state_part).max() <= limit
    monkeypatch.setattr(estimate_pick, "memory_check", lambda graph, state: (lambda s: True))
    free = pick_by_estimate(g, w, pool, PARAMS)
    assert machine_memory(g.cost, free.state_part).max() > limit


def test_the_bench_names_its_cases_and_runs_one(capsys, monkeypatch):
    import estimate_pick as bench

    w, machines, ppm = bench.workload_of("gen300")
    assert (len(w.procedures), machines, ppm) == (300, 64, 1)
    w, machines, ppm = bench.workload_of("shared300#7")
    assert (len(w.procedures), machines, ppm) == (300, 64, 2)
    monkeypatch.setattr(sys, "argv", ["estimate_pick.py", "--cases", "linear-road@4"])
    assert bench.main() == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[0] == "linear-road@4" and float(row[3]) > 1.3  # the estimate's pick, x the cheapest's


def test_the_cheapest_design_is_kept_where_the_estimate_does_not_put_its_best_well_above_it(monkeypatch):
    import advisor.estimate_pick as estimate_pick
    from advisor import sim_limits
    from advisor.api import recommend

    monkeypatch.setattr(sim_limits, "MAX_SIM_SIZE", 0)
    cheapest = recommend("linear-road", machines=4, baselines=False, objective="cost")
    taken = recommend("linear-road", machines=4, baselines=False)
    estimate = BusyEstimate.of(taken.graph, taken.workload, PARAMS)
    assert taken.selection.chosen.estimated_tps > 1.5 * estimate.throughput_tps(*cheapest.design.arrays(taken.graph))
    assert taken.design.procedures != cheapest.design.procedures
    # the estimate's best 1.85x the cheapest's estimate: kept only under a margin beyond that
    monkeypatch.setattr(estimate_pick, "ESTIMATE_MARGIN", 1.0)
    kept = recommend("linear-road", machines=4, baselines=False)
    sel = kept.selection
    assert sel.objective == "estimate" and sel.improvement.kept_cheapest
    assert kept.design.procedures == cheapest.design.procedures and kept.design.state == cheapest.design.state
    assert "the cheapest design kept" in sel.note
    assert kept.design.provenance["estimate"]["kept_cheapest"] is True
    assert f"estimated {sel.chosen.estimated_tps:,.0f} tuples/s" in kept.pick_lines()[0]
