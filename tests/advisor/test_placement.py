"""advisor.placement: each local move is checked against the cost model it serves (brute force
over every alternative on small random graphs), not against figures from a run."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from advisor.placement import _place_state_sparse, place_state, repair_memory, replicate_read_mostly, single_accessor
from advisor.processing_moves import BalanceForTargets, refine_processing
from costmodel import REPLICATED, CostGraph, Weights, machine_memory, score
from costmodel.model import load_balance_from_loads


@st.composite
def graphs(draw, max_machines=4, groups=False):
    """A random graph cut into machines (one partition per machine), with an assignment."""
    n_proc = draw(st.integers(1, 7))
    n_state = draw(st.integers(1, 7))
    machines = draw(st.integers(1, max_machines))
    n_ps = draw(st.integers(0, 14))
    ps_proc = draw(st.lists(st.integers(0, n_proc - 1), min_size=n_ps, max_size=n_ps))
    ps_state = draw(st.lists(st.integers(0, n_state - 1), min_size=n_ps, max_size=n_ps))
    ps_weight = draw(st.lists(st.integers(1, 9), min_size=n_ps, max_size=n_ps))
    ps_write = draw(st.lists(st.booleans(), min_size=n_ps, max_size=n_ps))
    n_pp = draw(st.integers(0, 8))
    pp_src = draw(st.lists(st.integers(0, n_proc - 1), min_size=n_pp, max_size=n_pp))
    pp_dst = draw(st.lists(st.integers(0, n_proc - 1), min_size=n_pp, max_size=n_pp))
    pp_weight = draw(st.lists(st.integers(1, 9), min_size=n_pp, max_size=n_pp))
    loops = [i for i in range(n_pp) if pp_src[i] == pp_dst[i]]  # a spec has no SP streaming to itself
    pp_src, pp_dst, pp_weight = ([x for i, x in enumerate(a) if i not in loops]
                                 for a in (pp_src, pp_dst, pp_weight))
    load = draw(st.lists(st.integers(0, 5), min_size=n_proc, max_size=n_proc))
    capacity = draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=machines, max_size=machines))
    g = CostGraph(np.array(load, float), np.full(n_state, 10.0), ps_proc, ps_state,
                  np.array(ps_weight, float), ps_write, pp_src, pp_dst, np.array(pp_weight, float),
                  machines=machines, capacity=capacity)
    proc = np.array(draw(st.lists(st.integers(0, machines - 1), min_size=n_proc, max_size=n_proc)))
    state = np.array(draw(st.lists(st.integers(0, machines - 1), min_size=n_state, max_size=n_state)))
    return g, proc, state


def edge_weight_by_partition(g: CostGraph, proc: np.ndarray) -> np.ndarray:
    """(state, partition) -> edge weight of the state item's accessors there, by brute force."""
    out = np.zeros((g.n_state, g.n_partitions))
    for p, s, w in zip(g.ps_proc, g.ps_state, g.ps_weight):
        out[s, proc[p]] += w
    return out


@given(graphs())
@settings(max_examples=50, deadline=None)
def test_single_accessor_is_exactly_the_items_one_sp_touches(case):
    g, _, _ = case
    for s in range(g.n_state):
        accessors = {int(p) for p, x in zip(g.ps_proc, g.ps_state) if x == s}
        assert single_accessor(g)[s] == (len(accessors) == 1)


@given(graphs())
@settings(max_examples=50, deadline=None)
def test_place_state_puts_each_item_where_most_of_its_weight_is(case):
    g, proc, state = case
    state[0] = REPLICATED  # a replicated item is never moved
    out = place_state(g, proc, state)
    weight = edge_weight_by_partition(g, proc)
    assert out[0] == REPLICATED
    for s in range(1, g.n_state):
        if not weight[s].any():
            assert out[s] == state[s]  # no accessor: stays put
            continue
        assert weight[s, out[s]] == weight[s].max()
        if weight[s, state[s]] == weight[s].max():
            assert out[s] == state[s]  # a tie keeps the current partition
    # so, with processing fixed, the state term can only fall
    assert score(g, proc, out).state_colocation <= score(g, proc, state).state_colocation + 1e-12
    assert (state[1:] == case[2][1:]).all()  # the input is not changed


@given(graphs())
@settings(max_examples=50, deadline=None)
def test_the_sparse_placement_for_huge_graphs_agrees_with_the_dense_one(case):
    g, proc, state = case
    assert np.array_equal(_place_state_sparse(g, proc, state.copy()), place_state(g, proc, state))


@given(st.lists(st.integers(0, 9), min_size=1, max_size=9), st.integers(0, 8), st.integers(0, 4),
       st.lists(st.sampled_from([1.0, 3.0]), min_size=9, max_size=9), st.integers(0, 2))
@settings(max_examples=50, deadline=None)
def test_balance_for_every_target_is_the_cost_models_term_after_the_move(loads, current, amount,
                                                                         caps, idle):
    m = len(loads)
    current %= m
    loads = np.array(loads, float)
    amount = min(float(amount), loads[current])
    g = CostGraph(loads, [], [], [], [], [], [], [], [], machines=m, capacity=caps[:m],
                  idle_capacity=[1.0] * idle)
    total = float(loads.sum())
    # the dense table, and the O(machines) path the search takes past 64 machines
    for dense_up_to in ((64, 0) if m >= 2 else (64,)):
        balance = BalanceForTargets(g, total)
        balance.DENSE_UP_TO = dense_up_to
        got = balance(loads.copy(), amount, current)
        for target in range(m):
            after = loads.copy()
            after[current] -= amount
            after[target] += amount
            want = load_balance_from_loads(after, g.capacity, total, g.idle_capacity)
            assert got[target] == pytest.approx(float(want), abs=1e-12)


def moves_of(g: CostGraph, proc: np.ndarray, state: np.ndarray):
    """Every move refine_processing weighs: one SP to another partition, with the (not
    replicated) state items only it touches."""
    private = single_accessor(g)
    for v in range(g.n_proc):
        own = [s for s in range(g.n_state) if private[s] and state[s] != REPLICATED
               and v in set(g.ps_proc[g.ps_state == s].tolist())]
        for q in range(g.n_partitions):
            if q != proc[v]:
                p2, s2 = proc.copy(), state.copy()
                p2[v] = q
                s2[own] = q
                yield p2, s2


@given(graphs(), st.sampled_from([Weights(0.3, 0.1, 0.6), Weights(1, 1, 1), Weights(0.5, 0.4, 0.1)]))
@settings(max_examples=30, deadline=None)
def test_refine_processing_ends_lower_and_in_a_local_optimum_of_the_exact_cost(case, weights):
    g, proc, state = case
    start = place_state(g, proc, state)
    before = score(g, proc, start, weights).total
    p, s = refine_processing(g, weights, proc, state)
    after = score(g, p, s, weights).total
    assert after <= before + 1e-9
    assert np.array_equal(place_state(g, p, s), s)  # the state is where its weight is
    for p2, s2 in moves_of(g, p, s):  # and no single move it weighs lowers the exact cost
        assert score(g, p2, s2, weights).total >= after - 1e-9
    assert np.array_equal(proc, case[1]) and np.array_equal(state, case[2])  # inputs untouched


@given(st.integers(2, 4), st.lists(st.integers(1, 25), min_size=1, max_size=12), st.data())
@settings(max_examples=50, deadline=None)
def test_repair_memory_fits_state_that_fits_easily_and_never_overfills_a_machine(machines, sizes, data):
    # every item at most a quarter of the limit and all of them at most half the cluster:
    # a machine over its limit always has somewhere to send an item, so repair must succeed
    limit = float(max(4 * max(sizes), -(-2 * sum(sizes) // machines)))
    n = len(sizes)
    ps_proc = list(range(n))
    g = CostGraph(np.ones(n), np.array(sizes, float), ps_proc, list(range(n)), np.ones(n),
                  [True] * n, [], [], [], machines=machines, memory_limit_bytes=limit)
    proc = np.array(data.draw(st.lists(st.integers(0, machines - 1), min_size=n, max_size=n)))
    state = np.zeros(n, dtype=np.int64)  # everything on machine 0 to start with
    before = machine_memory(g, state)
    out = repair_memory(g, proc, state)
    mem = machine_memory(g, out)
    assert (mem <= limit).all()
    assert ((mem <= np.maximum(before, limit))).all()
    assert mem.sum() == pytest.approx(before.sum())  # items move, none is lost or copied
    assert ((0 <= out) & (out < g.n_partitions)).all()
    assert (state == 0).all()  # the input is not changed


def test_repair_memory_without_a_limit_changes_nothing():
    g = CostGraph([1.0], [1e12], [0], [0], [1.0], [True], [], [], [], machines=2)
    state = np.array([1])
    assert repair_memory(g, np.array([0]), state) is state


def test_repair_memory_drops_a_copy_that_does_not_fit_everywhere():
    # table 0 (big) replicated overflows every machine; table 1 is small
    g = CostGraph([1.0, 1.0], [80.0, 10.0], [0, 1, 1], [0, 1, 0], [1.0, 1.0, 3.0],
                  [False, True, False], [], [], [], machines=2, memory_limit_bytes=85.0)
    out = repair_memory(g, np.array([0, 1]), np.array([REPLICATED, 1]))
    assert out[0] != REPLICATED
    assert (machine_memory(g, out) <= 85.0).all()
    # SP 1 reads it most, but beside table 1 it would not fit machine 1 (90 > 85 bytes): the
    # item with the least weight per byte there (table 0: 3/80 < 1/10) goes to machine 0
    assert out.tolist() == [0, 1]


def test_replicating_a_read_only_table_read_across_machines_removes_its_cut():
    # two SPs on two machines read table 0 (read only); SP 0 writes table 1
    g = CostGraph([1.0, 1.0], [10.0, 10.0], [0, 1, 0], [0, 0, 1], [2.0, 2.0, 1.0],
                  [False, False, True], [], [], [], machines=2)
    proc, state = np.array([0, 1]), np.array([0, 0])
    w = Weights(1.0, 0.0, 0.0)
    out = replicate_read_mostly(g, w, proc, state, np.array([True, True]))
    assert out[0] == REPLICATED  # its read from machine 1 was cut; copies cut no read
    assert out[1] == 0  # copying a written table costs its writes to the other copy
    assert score(g, proc, out, w).total < score(g, proc, state, w).total


@given(graphs(), st.data())
@settings(max_examples=40, deadline=None)
def test_replicate_read_mostly_only_copies_read_mostly_items_and_never_raises_the_cost(case, data):
    g, proc, state = case
    read_mostly = np.array(data.draw(st.lists(st.booleans(), min_size=g.n_state, max_size=g.n_state)))
    w = Weights(0.3, 0.1, 0.6)
    out = replicate_read_mostly(g, w, proc, state, read_mostly)
    changed = out != state
    assert (out[changed] == REPLICATED).all() and read_mostly[changed].all()
    assert score(g, proc, out, w).total <= score(g, proc, state, w).total + 1e-12
