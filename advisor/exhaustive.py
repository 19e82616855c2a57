"""The exact optimum by enumeration, for graphs small enough (about 12 nodes, 4 machines).

Identical machines are interchangeable, so with one partition per machine only
restricted-growth assignments are enumerated (node 0 on machine 0, a new machine is opened
only after all lower ones); otherwise node 0 is pinned to partition 0.

Owned state (windows) is not enumerated: it goes where its owner goes, the only place a
feasible design can put it.

Only the SPs are enumerated in the end. With the SPs placed, the processing and balance terms
are fixed and the state term splits into one independent choice per state item (the machine
holding most of its accessors' weight), so the best state of every SP assignment is read off
directly. That optimum is exact unless it breaks the memory limit; only then are SPs and state
enumerated together. Either way the design returned is the one the full enumeration's order
reaches first among the cheapest (ties broken the same way).
"""
from __future__ import annotations

import numpy as np

from costmodel import (
    CostGraph,
    Weights,
    load_balance_cost,
    machine_memory,
    processing_colocation_cost,
    score_many,
    split_procedures,
)

DEFAULT_LIMIT = 3_000_000


def count_assignments(n_nodes: int, n_parts: int, symmetric: bool) -> int:
    """How many assignments the enumeration would try (exact big integers: keep n small)."""
    if n_nodes == 0 or n_parts == 1:
        return 1
    if not symmetric:
        return n_parts ** (n_nodes - 1)
    # number of set partitions of n_nodes into at most n_parts blocks (Stirling numbers)
    stirling = [1] + [0] * n_parts
    for _ in range(n_nodes):
        new = [0] * (n_parts + 1)
        for k in range(1, n_parts + 1):
            new[k] = k * stirling[k] + stirling[k - 1]
        stirling = new
    return sum(stirling[1:])


def _restricted_growth(n_nodes: int, n_parts: int) -> np.ndarray:
    rows = np.zeros((1, 1), dtype=np.int8)
    top = np.zeros(1, dtype=np.int8)
    for _ in range(1, n_nodes):
        blocks, tops = [], []
        for v in range(n_parts):
            ok = top + 1 >= v  # v may open at most one new block
            if not ok.any():
                continue
            blocks.append(np.hstack([rows[ok], np.full((ok.sum(), 1), v, dtype=np.int8)]))
            tops.append(np.maximum(top[ok], v))
        rows, top = np.vstack(blocks), np.concatenate(tops).astype(np.int8)
    return rows


def _pinned_product(n_nodes: int, n_parts: int) -> np.ndarray:
    if n_nodes == 1:
        return np.zeros((1, 1), dtype=np.int8)
    grids = np.indices((n_parts,) * (n_nodes - 1)).reshape(n_nodes - 1, -1).T
    return np.hstack([np.zeros((grids.shape[0], 1), dtype=np.int8), grids.astype(np.int8)])


def exhaustive_optimum(graph: CostGraph, weights: Weights, limit: int = DEFAULT_LIMIT
                       ) -> tuple[np.ndarray, np.ndarray, float] | None:
    """(proc_part, state_part, cost) of the cheapest memory-feasible design, or None when
    there are more than `limit` assignments to try or none fits in memory. Windows follow
    their owners (only SPs and free state are enumerated)."""
    free = np.flatnonzero(graph.state_owner < 0)
    owned = graph.owned_state
    n_nodes = graph.n_proc + free.size
    n = graph.n_partitions
    symmetric = bool(np.allclose(graph.capacity, graph.capacity[0]))
    rgs = symmetric and graph.partitions_per_machine == 1
    # with 2+ parts there are at least 2**(n_nodes - 1) - 1 assignments: skip counting big graphs
    too_big = n > 1 and 2 ** min(n_nodes - 1, 64) - 1 > limit
    if n_nodes == 0 or too_big or count_assignments(n_nodes, n, rgs) > limit:
        return None
    if not (rgs or symmetric) and n ** n_nodes > limit:
        return None
    best = _optimum_by_processing(graph, weights, rgs, symmetric)
    if best is not None:
        return best
    if rgs:
        table = _restricted_growth(n_nodes, n)
    elif symmetric:
        table = _pinned_product(n_nodes, n)
    else:
        table = np.indices((n,) * n_nodes).reshape(n_nodes, -1).T.astype(np.int8)
    best = (None, None, np.inf)
    for start in range(0, table.shape[0], 200_000):
        chunk = table[start:start + 200_000].astype(np.int64)
        procs = chunk[:, :graph.n_proc]
        states = np.empty((chunk.shape[0], graph.n_state), dtype=np.int64)
        states[:, free] = chunk[:, graph.n_proc:]
        states[:, owned] = procs[:, graph.state_owner[owned]]
        cost = score_many(graph, procs, states, weights)
        if graph.memory_limit_bytes is not None:
            mem = np.stack([machine_memory(graph, s) for s in states]) if states.shape[0] < 1000 \
                else _memory_many(graph, states)
            cost = np.where((mem > graph.memory_limit_bytes).any(axis=1), np.inf, cost)
        i = int(np.argmin(cost))
        if cost[i] < best[2] - 1e-12:
            best = (procs[i].copy(), states[i].copy(), float(cost[i]))
    if best[0] is None:
        return None
    return best


def _optimum_by_processing(graph: CostGraph, weights: Weights, rgs: bool, symmetric: bool
                           ) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The cheapest design with each state item on the machine that holds most of its
    accessors' weight, over every SP assignment; None when it breaks the memory limit (or
    there are no SPs): the full enumeration then decides."""
    n, ppm = graph.n_partitions, graph.partitions_per_machine
    if graph.n_proc == 0:
        return None
    if rgs:
        procs = _restricted_growth(graph.n_proc, n)
    elif symmetric:
        procs = _pinned_product(graph.n_proc, n)
    else:
        procs = np.indices((n,) * graph.n_proc).reshape(graph.n_proc, -1).T.astype(np.int8)
    procs = procs.astype(np.int64)
    free = np.flatnonzero(graph.state_owner < 0)
    owned = graph.owned_state
    fixed = weights.beta * processing_colocation_cost(graph, procs) + weights.gamma * load_balance_cost(graph, procs)
    machine_state, state_term = _best_state(graph, procs, free)
    cost = np.atleast_1d(fixed + weights.alpha * state_term)
    cheapest = np.flatnonzero(cost <= cost.min() + 1e-12)
    states = np.empty((cheapest.size, graph.n_state), dtype=np.int64)
    states[:, free] = machine_state[cheapest] * ppm  # the machine's first partition
    states[:, owned] = procs[cheapest][:, graph.state_owner[owned]]
    rows = np.hstack([procs[cheapest], states[:, free]])
    # the full enumeration's order: restricted growth reaches rows in colexicographic order
    # (the last node decides first), the product tables in lexicographic order
    keys = rows[:, ::-1] if rgs else rows
    first = int(np.lexsort(keys.T[::-1])[0])
    proc, state = procs[cheapest[first]].copy(), states[first].copy()
    if graph.memory_limit_bytes is not None and (machine_memory(graph, state) > graph.memory_limit_bytes).any():
        return None
    return proc, state, float(cost[cheapest[first]])


def _best_state(graph: CostGraph, procs: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each SP assignment (K, P): every free state item's best machine (K, free), the
    first of the machines holding most of its accessors' weight, and the state term (K,).
    An access of an SP whose nested group is split is cut wherever the item goes."""
    k, m = procs.shape[0], graph.machines
    w = graph.ps_cost_weight  # zero for owned state: never cut, not in the total
    total = w.sum()
    out = np.zeros((k, free.size), dtype=np.int64)
    if total <= 0:
        return out, np.zeros(k)
    slot = np.full(graph.n_state, -1, dtype=np.int64)
    slot[free] = np.arange(free.size)
    on_free = slot[graph.ps_state] >= 0
    e_proc, e_slot, e_w = graph.ps_proc[on_free], slot[graph.ps_state[on_free]], w[on_free]
    cut = np.zeros(k)
    step = max(1, 4_000_000 // max(1, free.size * m))  # rows of held weight at a time
    for lo in range(0, k, step):
        part = procs[lo:lo + step]
        rows = part.shape[0]
        whole = ~split_procedures(graph, part)[:, e_proc]  # (rows, edges)
        machine = part[:, e_proc] // graph.partitions_per_machine
        flat = (np.arange(rows)[:, None] * free.size + e_slot) * m + machine
        held = np.bincount(flat.ravel(), weights=(whole * e_w).ravel(),
                           minlength=rows * free.size * m).reshape(rows, free.size, m)
        out[lo:lo + rows] = held.argmax(axis=2)
        cut[lo:lo + rows] = total - held.max(axis=2).sum(axis=1)
    return out, np.clip(cut / total, 0.0, 1.0)


def _memory_many(graph: CostGraph, states: np.ndarray) -> np.ndarray:
    machine = states // graph.partitions_per_machine
    k = states.shape[0]
    flat = (np.arange(k)[:, None] * graph.machines + machine).ravel()
    mem = np.bincount(flat, weights=np.tile(graph.state_bytes, k), minlength=k * graph.machines)
    return mem.reshape(k, graph.machines)
