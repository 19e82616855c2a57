"""The exact optimum by enumeration, for graphs small enough (about 12 nodes, 4 machines).

Identical machines are interchangeable, so with one partition per machine only
restricted-growth assignments are enumerated (node 0 on machine 0, a new machine is opened
only after all lower ones); otherwise node 0 is pinned to partition 0.

Owned state (windows) is not enumerated: it goes where its owner goes, the only place a
feasible design can put it.
"""
from __future__ import annotations

import numpy as np

from costmodel import CostGraph, Weights, machine_memory, score_many

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
    if rgs:
        table = _restricted_growth(n_nodes, n)
    elif symmetric:
        table = _pinned_product(n_nodes, n)
    else:
        if n ** n_nodes > limit:
            return None
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


def _memory_many(graph: CostGraph, states: np.ndarray) -> np.ndarray:
    machine = states // graph.partitions_per_machine
    k = states.shape[0]
    flat = (np.arange(k)[:, None] * graph.machines + machine).ravel()
    mem = np.bincount(flat, weights=np.tile(graph.state_bytes, k), minlength=k * graph.machines)
    return mem.reshape(k, graph.machines)
