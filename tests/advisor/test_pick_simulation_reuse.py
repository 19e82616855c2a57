"""The pick's simulations: a design simulated the same way twice runs once and answers the same,
and a design the simulated local search only asks "does it beat this?" is not searched to the
end once it cannot. Counted in simulations and rate-search probes, never timed."""
from __future__ import annotations

import numpy as np
import pytest

from costmodel import Weights
from advisor.api import recommend
from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from advisor.selection import TIE_TOLERANCE
from advisor.simulation_runs import SimulationRuns
from advisor.sim_local_search import BATCHES, improve
from advisor.sources import load_workload
from engine_sim.sim import max_throughput
from engine_sim.sim.judge import ENGINE_SIMULATOR

pytestmark = pytest.mark.integration  # simulates whole rate searches and one recommendation


@pytest.fixture(scope="module")
def trade():
    w = load_workload("tpcdi-trade").with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    proc = np.arange(g.cost.n_proc, dtype=np.int64) % 4  # round-robin SPs, state with SP 0
    state = np.zeros(g.cost.n_state, dtype=np.int64)
    return w, g, proc, state


def test_a_design_simulated_again_the_same_way_is_answered_without_running(trade):
    w, g, proc, state = trade
    runs = SimulationRuns.of(w, g, Weights(), simulator=ENGINE_SIMULATOR)
    first = runs.max_throughput(proc, state, 60, 0.02)
    again = runs.max_throughput(proc.copy(), state.copy(), 60, 0.02)
    assert (runs.runs, runs.reused) == (1, 1)
    assert again.throughput_tps == first.throughput_tps
    fresh = max_throughput(w, Design.from_arrays(g, proc, state, Weights()), batches=60, seed=0,
                           tolerance=0.02)
    assert fresh.throughput_tps == first.throughput_tps  # what the simulator says, not a guess
    runs.max_throughput(proc, state, 61, 0.02)  # other batches: another simulation
    moved = proc.copy()
    moved[0] = 3
    runs.max_throughput(moved, state, 60, 0.02)  # another design: another simulation
    assert runs.runs == 3


def test_the_local_search_reuses_the_picks_final_round_and_ends_where_it_would_alone(trade):
    w, g, _, _ = trade
    proc = np.zeros(g.cost.n_proc, dtype=np.int64)  # a poor start: everything on partition 0
    state = np.zeros(g.cost.n_state, dtype=np.int64)
    alone = SimulationRuns.of(w, g, Weights(), simulator=ENGINE_SIMULATOR)
    a = improve(g, w, proc, state, Weights(), runs=alone)
    shared = SimulationRuns.of(w, g, Weights(), simulator=ENGINE_SIMULATOR)
    shared.pilot(proc, state, 20)  # what the pick's judge ran for the same design
    shared.max_throughput(proc, state, BATCHES, TIE_TOLERANCE / 2)
    before = shared.runs
    b = improve(g, w, proc, state, Weights(), runs=shared)
    assert shared.reused == 2 and shared.runs - before == alone.runs - 2
    assert (a.moves, a.start_tps, a.end_tps, a.simulated) == (b.moves, b.start_tps, b.end_tps, b.simulated)
    assert np.array_equal(a.proc_part, b.proc_part) and np.array_equal(a.state_part, b.state_part)


@pytest.mark.parametrize("factor", [0.5, 0.9, 0.99, 1.0, 1.01, 1.05, 1.2, 2.0])
def test_a_search_asked_only_whether_it_beats_a_figure_answers_as_the_full_search(trade, factor):
    w, g, proc, state = trade
    d = Design.from_arrays(g, proc, state, Weights())
    full = max_throughput(w, d, batches=120, seed=0, tolerance=0.01)
    figure = factor * full.throughput_tps
    asked = max_throughput(w, d, batches=120, seed=0, tolerance=0.01, stop_below_tps=figure)
    assert (asked.throughput_tps > figure) == (full.throughput_tps > figure)
    assert len(asked.search) <= len(full.search)
    assert asked.search == full.search[:len(asked.search)]  # the same probes, fewer of them
    if factor >= 1.05:  # clearly out of reach: the search stops early
        assert len(asked.search) < len(full.search)
    if factor < 1.0:  # within reach: searched to the end
        assert asked.throughput_tps == full.throughput_tps


def test_recommend_counts_its_simulations_and_reuses_where_the_search_starts_from_the_final_round():
    rec = recommend("linear-road", machines=8, baselines=False)
    sel = rec.selection
    imp = sel.improvement
    assert imp is not None and imp.simulated > 0
    assert sel.simulations_reused >= 1  # the pick, simulated again by the local search
    assert sel.simulator_probes > sel.simulator_runs > 0
    again = recommend("linear-road", machines=8, baselines=False)
    assert again.design.procedures == rec.design.procedures and again.design.state == rec.design.state
    assert (again.selection.simulator_runs, again.selection.simulator_probes) == (sel.simulator_runs,
                                                                                  sel.simulator_probes)
