"""advisor.processing_moves: the screen of SP moves (`_ProcessingMoves._may_move`): every SP's moves
priced at once, so that only the SPs that may move are evaluated one by one. It must change
no answer: the refinement with the screen is compared with the one evaluating every SP, bit
for bit, on random graphs (windows, replicated state, idle machines, many machines, awkward
weights), and the screen's figures with the exact ones within the bound it relies on."""
from __future__ import annotations

from functools import partialmethod

import numpy as np
import pytest

import advisor.processing_moves as processing_moves
from advisor.placement import place_state
from advisor.processing_moves import (BalanceForTargets, _ProcessingMoves, _RunningCost, _state_cut, _state_total,
                                      refine_processing)
from costmodel import REPLICATED, CostGraph, Weights


def random_case(seed: int) -> tuple[CostGraph, np.ndarray, np.ndarray, Weights]:
    """A random graph with an assignment: repeated edges, windows, replicated items, idle
    machines, capacities of 1 and 2, up to 70 machines (the balance's sparse path), weights
    either small integers (exact ties) or awkward fractions."""
    rng = np.random.default_rng(seed)
    n_proc, n_state = int(rng.integers(2, 150 if seed % 4 == 0 else 60)), int(rng.integers(1, 40))
    machines, ppm = int(rng.choice([2, 3, 5, 8, 70])), int(rng.choice([1, 1, 2]))
    n_ps = int(rng.integers(0, 4 * n_proc))
    pool = rng.integers(0, [n_proc, n_state], size=(max(n_ps // 2, 1), 2))
    pairs = pool[rng.integers(0, len(pool), n_ps)]
    streams = rng.integers(0, n_proc, size=(int(rng.integers(0, 3 * n_proc)), 2))
    owner = np.full(n_state, -1)
    if rng.random() < 0.5:
        owned = rng.random(n_state) < 0.3
        owner[owned] = rng.integers(0, n_proc, int(owned.sum()))
    whole = rng.random() < 0.5

    def weights(k: int) -> np.ndarray:
        return np.round(rng.random(k) * 9) + 1 if whole else rng.random(k) * 1e3 / 7

    g = CostGraph(proc_load=np.round(rng.random(n_proc) * 5) if whole else rng.random(n_proc) * 3,
                  state_bytes=np.ones(n_state), ps_proc=pairs[:, 0], ps_state=pairs[:, 1],
                  ps_weight=weights(n_ps), ps_write=rng.random(n_ps) < 0.5, pp_src=streams[:, 0],
                  pp_dst=streams[:, 1], pp_weight=weights(len(streams)), machines=machines,
                  partitions_per_machine=ppm, capacity=rng.choice([1.0, 2.0], machines),
                  idle_capacity=rng.random(int(rng.integers(0, 3))) + 0.5, state_owner=owner)
    proc = rng.integers(0, g.n_partitions, n_proc)
    state = place_state(g, proc, rng.integers(0, g.n_partitions, n_state))
    if rng.random() < 0.3:
        state[rng.random(n_state) < 0.2] = REPLICATED
        state[owner >= 0] = proc[owner[owner >= 0]]
    w = (Weights(*(rng.random(3))) if rng.random() < 0.6 else
         Weights(*(int(x) for x in rng.integers(0, 3, 3) + [1, 0, 0])) if rng.random() < 0.5 else Weights())
    return g, proc, state, w


def running_cost(g: CostGraph, proc: np.ndarray, state: np.ndarray) -> _RunningCost:
    return _RunningCost(np.bincount(proc // g.partitions_per_machine, weights=g.proc_load, minlength=g.machines),
                        _state_cut(g, proc, state),
                        float((g.pp_weight * (proc[g.pp_src] != proc[g.pp_dst])).sum()), _state_total(g, state))


@pytest.mark.parametrize("seed", range(120))
@pytest.mark.parametrize("rows", [3, processing_moves.SCREEN_ROWS])
def test_the_screened_refinement_makes_the_same_moves_as_evaluating_every_sp(seed, rows, monkeypatch):
    monkeypatch.setattr(processing_moves, "SCREEN_ROWS", rows)  # blocks of SPs screened at once
    g, proc, state, weights = random_case(seed)
    moves = _ProcessingMoves(g, weights)
    p1, s1, p2, s2 = proc.copy(), state.copy(), proc.copy(), state.copy()
    assert moves.improve(p1, s1, screen=True) == moves.improve(p2, s2, screen=False)
    assert np.array_equal(p1, p2) and np.array_equal(s1, s2)


@pytest.mark.parametrize("seed", range(40))
def test_refine_processing_is_that_of_evaluating_every_sp(seed, monkeypatch):
    g, proc, state, weights = random_case(1000 + seed)
    screened = refine_processing(g, weights, proc, state)
    monkeypatch.setattr(_ProcessingMoves, "improve", partialmethod(_ProcessingMoves.improve, screen=False))
    every = refine_processing(g, weights, proc, state)
    assert all(np.array_equal(a, b) for a, b in zip(screened, every))


@pytest.mark.parametrize("seed", range(60))
def test_the_screens_figures_are_the_exact_ones_within_its_bound(seed):
    g, proc, state, weights = random_case(2000 + seed)
    moves = _ProcessingMoves(g, weights)
    run = running_cost(g, proc, state)
    for first, last in ((0, g.n_proc), (g.n_proc // 2, g.n_proc), (1, max(1, g.n_proc - 1))):
        screened = moves._totals_from(first, last, proc, state, run)
        bound = moves.rounding.bound_from(first, last, run)
        for row, v in enumerate(range(first, last)):
            exact = moves._exact_costs(v, proc, state, run).total
            assert np.abs(exact - screened[row]).max() <= bound[row] / 8  # 8x to spare


@pytest.mark.parametrize("seed", range(60))
def test_every_sp_the_screen_leaves_out_stays_where_it_is(seed):
    g, proc, state, weights = random_case(3000 + seed)
    moves = _ProcessingMoves(g, weights)
    run = running_cost(g, proc, state)
    kept = set(moves._may_move(0, g.n_proc, proc, state, run).tolist())
    for v in set(range(g.n_proc)) - kept:
        p, s = proc.copy(), state.copy()
        assert not moves._move_if_better(v, p, s, running_cost(g, proc, state))


@pytest.mark.parametrize("machines", [2, 3, 7, 64, 65, 90])
@pytest.mark.parametrize("idle", [False, True])
def test_the_balance_for_many_sps_at_once_is_each_ones_bit_for_bit(machines, idle):
    rng = np.random.default_rng(machines + 100 * idle)
    n = 50
    g = CostGraph(proc_load=rng.random(n) * 7 / 3, state_bytes=np.ones(1), ps_proc=[], ps_state=[],
                  ps_weight=np.zeros(0), ps_write=[], pp_src=[], pp_dst=[], pp_weight=np.zeros(0),
                  machines=machines, capacity=rng.choice([1.0, 2.0, 3.0], machines),
                  idle_capacity=np.array([0.7]) if idle else None)
    balance = BalanceForTargets(g, float(g.proc_load.sum()))
    loads = rng.random(machines) * 10
    loads[rng.integers(0, machines, 3)] = loads.max()  # ties at the top
    current = rng.integers(0, machines, n)
    together = balance.for_each(loads, g.proc_load, current)
    for i in range(n):
        alone = balance(loads.copy(), g.proc_load[i], int(current[i]))
        assert together[i].tobytes() == alone.tobytes()
