"""The simulated search's budget (`advisor.search_budget.BudgetedJudge`): what it charges and
counts, asked of the real simulator. Counted in simulations and events, never timed."""
from __future__ import annotations

import numpy as np
import pytest

from advisor.search_budget import BudgetedJudge
from advisor.simulation_runs import SimulationRuns
from advisor.sources import load_workload
from costmodel import Weights
from costmodel.graph import WorkloadGraph
from engine_sim.sim.judge import ENGINE_SIMULATOR


@pytest.fixture(scope="module")
def trade():
    w = load_workload("tpcdi-trade").with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    proc = np.arange(g.cost.n_proc, dtype=np.int64) % 4
    state = np.zeros(g.cost.n_state, dtype=np.int64)
    return w, g, proc, state


def judge_of(trade, fits=lambda state: True, budget=10_000.0):
    w, g, _, _ = trade
    return BudgetedJudge(SimulationRuns.of(w, g, Weights(), simulator=ENGINE_SIMULATOR), fits, 1_000.0, budget)


def test_a_question_is_charged_once_and_answered_alike(trade):
    _, _, proc, state = trade
    judge = judge_of(trade)
    first = judge.simulate(proc, state)
    assert first > 0 and (judge.simulated, judge.spent, judge.runs.runs) == (1, 1_000.0, 1)
    assert judge.simulate(proc.copy(), state.copy()) == first  # the same question: no charge
    assert (judge.simulated, judge.spent) == (1, 1_000.0)
    # another question of the same design (whether it beats a figure) is charged; the runs
    # answer it apart, as its rate search may stop early
    below = judge.simulate(proc, state, to_beat=2 * first)
    assert below <= 2 * first and (judge.simulated, judge.spent) == (2, 2_000.0)


def test_what_the_budget_affords(trade):
    judge = judge_of(trade, budget=3_500.0)
    assert judge.affordable() == 3 and judge.affords(3_500.0) and not judge.affords(3_501.0)
    _, _, proc, state = trade
    judge.simulate(proc, state)
    assert judge.affordable() == 2 and not judge.affords(3 * judge.per_run)


def test_a_design_over_memory_is_never_simulated_nor_charged(trade):
    _, _, proc, state = trade
    judge = judge_of(trade, fits=lambda s: False)
    assert judge.simulate(proc, state) == 0.0
    assert (judge.simulated, judge.spent, judge.runs.runs) == (0, 0.0, 0)


def test_longer_runs_charge_their_cost_and_count_each_design(trade):
    _, _, proc, state = trade
    judge = judge_of(trade)
    moved = proc.copy()
    moved[0] = (moved[0] + 1) % 4
    figures = judge.longer_runs([(proc, state), (moved, state)], 120, 0.01, 2_500.0)
    assert len(figures) == 2 and all(f > 0 for f in figures)
    assert (judge.simulated, judge.spent, judge.runs.runs) == (2, 2_500.0, 2)
