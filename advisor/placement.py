"""Where state goes, and the moves that keep a design within memory: plain functions over a
CostGraph and an assignment (arrays of partition indices), used by the search after METIS.

- `place_state`: with processing fixed, each state item goes where the most weight of its
  accessors is (state carries no load, so this is optimal for the co-location term).
- `repair_memory`: move the cheapest state off machines over their memory limit.
- `fit_memory`: `repair_memory`, or, where windows (which cannot leave their owner) overflow
  a machine, moving their owner with them, whichever costs least.
- `replicate_read_mostly`: copy read-mostly items to every partition where that lowers cost.

All of them work on a graph cut into machines (one partition per machine): the search places
partitions inside machines as a second stage, on each machine's subgraph. The SPs' own moves
are `advisor.processing_moves.refine_processing`.

Owned state (windows, `CostGraph.state_owner`) never moves alone: `pin_owned_state` puts it
on its owner's partition, `place_state` does so on every call, moving an SP takes its windows
along, and memory repair moves the owner rather than the window.
"""
from __future__ import annotations

import numpy as np

from costmodel import REPLICATED, CostGraph, Weights, machine_memory, score


def edges_by_key(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable order of edges grouped by key, and the start offset of every key (CSR)."""
    order = np.argsort(keys, kind="stable")
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=starts[1:])
    return order, starts


def single_accessor(graph: CostGraph) -> np.ndarray:
    """True for state items touched by exactly one SP (they can follow it anywhere)."""
    if graph.ps_proc.size == 0:
        return np.zeros(graph.n_state, dtype=bool)
    lowest = np.full(graph.n_state, np.iinfo(np.int64).max)
    highest = np.full(graph.n_state, -1)
    np.minimum.at(lowest, graph.ps_state, graph.ps_proc)
    np.maximum.at(highest, graph.ps_state, graph.ps_proc)
    return (highest >= 0) & (lowest == highest)


def pin_owned_state(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> np.ndarray:
    """The state assignment with every owned item (window) on its owner's partition."""
    owned = graph.owned_state
    if owned.size == 0:
        return state_part
    out = np.array(state_part, dtype=np.int64, copy=True)
    out[owned] = np.asarray(proc_part)[graph.state_owner[owned]]
    return out


def place_state(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> np.ndarray:
    """Each non-replicated state item moves to the machine holding most of its edge weight;
    ties keep the current one. Items with no edges stay put; owned items (windows) go to
    their owner's partition whatever their edges."""
    return pin_owned_state(graph, proc_part, _place_free_state(graph, proc_part, state_part))


def _place_free_state(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> np.ndarray:
    out = state_part.copy()
    if graph.ps_state.size == 0:
        return out
    n = graph.n_partitions
    if graph.n_state * n > 50_000_000:
        return _place_state_sparse(graph, proc_part, out)
    sums = np.bincount(graph.ps_state * n + proc_part[graph.ps_proc], weights=graph.ps_weight,
                       minlength=graph.n_state * n).reshape(graph.n_state, n)
    movable = sums.any(axis=1) & (out != REPLICATED)
    rows = np.arange(graph.n_state)
    current = np.where(out == REPLICATED, 0, out)
    sums[rows, current] += 1e-9 * (1 + sums[rows, current])  # keep the current one on ties
    out[movable] = sums.argmax(axis=1)[movable]
    return out


def _place_state_sparse(graph: CostGraph, proc_part: np.ndarray, out: np.ndarray) -> np.ndarray:
    """place_state for very many state items x partitions: sorts instead of a dense table."""
    n = graph.n_partitions
    keys = graph.ps_state * n + proc_part[graph.ps_proc]
    uniq, inv = np.unique(keys, return_inverse=True)
    sums = np.bincount(inv, weights=graph.ps_weight)
    u_state, u_part = uniq // n, uniq % n
    bonus = np.where(u_part == out[u_state], 1e-9 * (1 + sums), 0.0)
    order = np.lexsort((-(sums + bonus), u_state))
    first = np.ones(order.size, dtype=bool)
    first[1:] = u_state[order][1:] != u_state[order][:-1]
    best = order[first]
    target_state, target_part = u_state[best], u_part[best]
    movable = out[target_state] != REPLICATED
    out[target_state[movable]] = target_part[movable]
    return out


def repair_memory(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> np.ndarray:
    """Move state off machines over their memory limit, cheapest cut first, to the machine
    with room where the item has most weight. Returns the new state assignment; the result
    can still be infeasible when the state does not fit the cluster at all."""
    limit = graph.memory_limit_bytes
    if limit is None:
        return state_part
    state_part = state_part.copy()
    ppm = graph.partitions_per_machine
    # replicated items first: un-replicate when copies overflow
    mem = machine_memory(graph, state_part)
    if (mem > limit).any():
        for j in np.flatnonzero(state_part == REPLICATED)[np.argsort(-graph.state_bytes[state_part == REPLICATED], kind="stable")]:
            state_part[j] = 0
            mem = machine_memory(graph, state_part)
            if not (mem > limit).any():
                break
        state_part = place_state(graph, proc_part, state_part)
        mem = machine_memory(graph, state_part)
    if not (mem > limit).any():
        return state_part
    # weight of each state item towards each machine
    n_m = graph.machines
    affinity = np.zeros((graph.n_state, n_m))
    if graph.ps_state.size:
        np.add.at(affinity, (graph.ps_state, proc_part[graph.ps_proc] // ppm), graph.ps_weight)
    for m in np.flatnonzero(mem > limit):
        # owned items (windows) stay with their owner: `move_owners_for_memory` moves those
        on_m = np.flatnonzero((state_part != REPLICATED) & (state_part // ppm == m)
                              & (graph.state_owner < 0))
        # least affinity to its machine per byte moves first
        order = on_m[np.argsort(affinity[on_m, m] / np.maximum(graph.state_bytes[on_m], 1), kind="stable")]
        for j in order:
            if mem[m] <= limit:
                break
            room = limit - mem - graph.state_bytes[j]
            room[m] = -np.inf
            ok = np.flatnonzero(room >= 0)
            if ok.size == 0:
                continue
            target = ok[np.argmax(affinity[j, ok] + 1e-12 * room[ok])]
            # the partition of that machine where its accessors are, else the first one
            state_part[j] = target * ppm + _best_partition_in_machine(graph, proc_part, j, target)
            mem[m] -= graph.state_bytes[j]
            mem[target] += graph.state_bytes[j]
    return state_part


# owners tried per machine over its limit (the ones carrying the most window bytes)
OWNERS_TRIED = 8


def fit_memory(graph: CostGraph, weights: Weights, proc_part: np.ndarray,
               state_part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`repair_memory`, and where a machine over its limit holds windows (which cannot leave
    their owner), also each way of moving one of their owners, windows along, to a machine
    with room for them, its free state then placed and repaired again: the option with the
    lowest exact cost among those that fit (else the smallest overflow) wins, round after
    round, until every machine fits or moving an owner no longer helps. What still does not
    fit is reported infeasible, as for tables. Works on a graph cut into machines."""
    limit = graph.memory_limit_bytes
    if limit is None or not graph.has_owned_state or graph.machines < 2:
        return proc_part, repair_memory(graph, proc_part, state_part)
    owned = graph.owned_state
    ppm = graph.partitions_per_machine
    carried = np.bincount(graph.state_owner[owned], weights=graph.state_bytes[owned],
                          minlength=graph.n_proc)

    def rank(p, s):
        c = score(graph, p, s, weights)
        return (not c.feasible, c.worst_overflow_mb, c.total)

    for _ in range(graph.n_proc):
        mem = machine_memory(graph, state_part)
        repaired = repair_memory(graph, proc_part, state_part)
        best = (rank(proc_part, repaired), proc_part, repaired)
        if not best[0][0] and not (mem > limit).any():
            break
        for m in np.flatnonzero(mem > limit):
            owners = np.flatnonzero((proc_part // ppm == m) & (carried > 0))
            owners = owners[np.argsort(-carried[owners], kind="stable")][:OWNERS_TRIED]
            for v in owners:
                for t in np.flatnonzero(mem + carried[v] <= limit):
                    trial_p = proc_part.copy()
                    trial_p[v] = t * ppm
                    trial_s = repair_memory(graph, trial_p, place_state(graph, trial_p, state_part))
                    key = rank(trial_p, trial_s)
                    if key < best[0]:
                        best = (key, trial_p, trial_s)
        if best[1] is proc_part:  # no owner move beats repairing the free state alone
            return proc_part, best[2]
        proc_part, state_part = best[1], best[2]
    return proc_part, state_part


def _best_partition_in_machine(graph: CostGraph, proc_part: np.ndarray, j: int, machine: int) -> int:
    ppm = graph.partitions_per_machine
    mask = graph.ps_state == j
    parts = proc_part[graph.ps_proc[mask]]
    inside = parts // ppm == machine
    if not inside.any():
        return 0
    return int(np.bincount(parts[inside] % ppm, weights=graph.ps_weight[mask][inside], minlength=ppm).argmax())


def replicate_read_mostly(graph: CostGraph, weights: Weights, proc_part: np.ndarray,
                          state_part: np.ndarray, read_mostly: np.ndarray) -> np.ndarray:
    """Replicate each read-mostly item when that lowers the exact cost and fits memory."""
    best = state_part.copy()
    best_cost = score(graph, proc_part, best, weights)
    for j in np.flatnonzero(read_mostly & (graph.state_owner < 0)):  # a window has one copy
        trial = best.copy()
        trial[j] = REPLICATED
        cost = score(graph, proc_part, trial, weights)
        if cost.feasible and cost.total < best_cost.total - 1e-12:
            best, best_cost = trial, cost
    return best
