"""The pool of candidate designs the final pick weighs, and how duplicates are told apart.

Why a pool: the cost model is what METIS optimises, not the verdict, so the pick
(`advisor.selection`) simulates several good designs rather than trusting the cheapest. The
pool holds the search's good designs, the baselines (scored here by the caller), everything on
one machine spread over its partitions, and, on graphs small enough, every assignment of SPs
and state to machines. Designs that differ only by naming identical machines (or partitions
within a machine) differently are one design (`relabelled_design_key`, `distinct`), so each
is simulated once.
"""
from __future__ import annotations

import numpy as np

from costmodel import REPLICATED, Weights, score
from costmodel.graph import WorkloadGraph, subgraph
from advisor.exhaustive import count_assignments
from advisor.search import Candidate, DesignSearch

ENUMERATE_LIMIT = 64  # enumerate every machine assignment when there are at most this many


def scored_candidate(graph: WorkloadGraph, weights: Weights, label: str, source: str, proc_part,
                     state_part) -> Candidate:
    """A design of the pool (global partition arrays) with its cost on `graph` and how many
    nested groups it splits across machines (what the pick's tie-break reads)."""
    proc_part = np.asarray(proc_part, dtype=np.int64)
    state_part = np.asarray(state_part, dtype=np.int64)
    return Candidate(label, proc_part, state_part, score(graph.cost, proc_part, state_part, weights),
                     source=source, split_groups=split_nested_groups(graph, proc_part))


def split_nested_groups(graph: WorkloadGraph, proc_part: np.ndarray) -> int:
    """How many nested groups have SPs on more than one machine."""
    ppm = graph.cost.partitions_per_machine
    return sum(len({int(proc_part[graph.proc_index(p)]) // ppm for p in group}) > 1
               for group in graph.nested)


def search_candidates(search, graph: WorkloadGraph, weights: Weights) -> list[Candidate]:
    """The search's pool of good designs, sorted by cost (its best first)."""
    return [scored_candidate(graph, weights, f"search: {c.label}", "search", c.proc_part, c.state_part)
            for c in search.pool_]


def enumerated_candidates(graph: WorkloadGraph, weights: Weights, seed: int = 0,
                          limit: int = ENUMERATE_LIMIT) -> list[Candidate]:
    """Every assignment of SPs and state to machines up to relabelling (identical machines
    only), with each machine's partitions placed as the search places them; [] when there are
    more than `limit`. Windows are not enumerated: each goes with its owner."""
    c = graph.cost
    free = np.flatnonzero(c.state_owner < 0)
    owned = c.owned_state
    n_nodes = graph.n_proc + free.size
    if (c.machines < 2 or n_nodes == 0 or not np.allclose(c.capacity, c.capacity[0])
            or count_assignments(n_nodes, c.machines, True) > limit):
        return []
    out = []
    for i, row in enumerate(restricted_growth(n_nodes, c.machines)):
        machine_of_proc = row[:graph.n_proc]
        machine_of_state = np.empty(graph.n_state, dtype=np.int64)
        machine_of_state[free] = row[graph.n_proc:]
        machine_of_state[owned] = machine_of_proc[c.state_owner[owned]]
        proc, state = within_machines(c, machine_of_proc, machine_of_state, weights, seed)
        out.append(scored_candidate(graph, weights, f"enumerated #{i}", "enumeration", proc, state))
    return out


def one_machine_candidate(graph: WorkloadGraph, weights: Weights, seed: int = 0) -> Candidate | None:
    """Everything on one machine, spread over its partitions by the search: no distributed
    transaction, no MOVE between machines, and still the machine's parallelism. None when a
    machine has one partition (the single-machine baseline is that design)."""
    c = graph.cost
    if c.partitions_per_machine == 1 or c.machines < 2:
        return None
    zeros_p = np.zeros(graph.n_proc, dtype=np.int64)
    zeros_s = np.zeros(graph.n_state, dtype=np.int64)
    proc, state = within_machines(c, zeros_p, zeros_s, weights, seed)
    return scored_candidate(graph, weights, "search: one machine, its partitions", "search", proc, state)


def within_machines(c, machine_of_proc: np.ndarray, machine_of_state: np.ndarray,
                    weights: Weights, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Global partitions for a machine assignment: each machine's SPs and state spread over
    its partitions by the search (state on a machine without SPs goes to its first one)."""
    ppm = c.partitions_per_machine
    proc, state = machine_of_proc * ppm, machine_of_state * ppm
    if ppm == 1:
        return proc, state
    for m in range(c.machines):
        procs = np.flatnonzero(machine_of_proc == m)
        states = np.flatnonzero(machine_of_state == m)
        if procs.size == 0:
            continue
        local = DesignSearch(weights=weights, seed=seed).fit(subgraph(c, procs, states, ppm))
        proc[procs] += local.proc_part_
        state[states] += local.state_part_
    return proc, state


def restricted_growth(n: int, k: int) -> list[np.ndarray]:
    """Assignments of n nodes to at most k interchangeable blocks, each once: node 0 in block
    0, and a node opens block b only after blocks 0..b-1 are open."""
    rows: list[list[int]] = [[0]]
    for _ in range(1, n):
        rows = [r + [b] for r in rows for b in range(min(max(r) + 2, k))]
    return [np.array(r, dtype=np.int64) for r in rows]


def relabelled_design_key(candidate: Candidate, graph: WorkloadGraph) -> bytes:
    """Equal for designs that differ only by naming identical machines (and partitions
    within a machine) differently."""
    c = graph.cost
    ppm = c.partitions_per_machine
    parts = np.concatenate([candidate.proc_part, candidate.state_part])
    if not np.allclose(c.capacity, c.capacity[0]):
        return parts.tobytes()
    out = parts.copy()
    placed = parts != REPLICATED
    uniq, first = np.unique(parts[placed], return_index=True)  # partitions used, first seen
    machine = uniq // ppm
    m_uniq, m_first = np.unique(machine, return_index=True)
    m_first = np.minimum.reduceat(first, m_first) if m_uniq.size else m_first
    m_rank = np.empty(m_uniq.size, dtype=np.int64)
    m_rank[np.argsort(m_first, kind="stable")] = np.arange(m_uniq.size)
    new_machine = m_rank[np.searchsorted(m_uniq, machine)]
    order = np.lexsort((first, new_machine))  # by new machine, then first appearance
    starts = np.searchsorted(new_machine[order], new_machine[order], side="left")
    local = np.empty(uniq.size, dtype=np.int64)
    local[order] = np.arange(uniq.size) - starts
    out[placed] = (new_machine * ppm + local)[np.searchsorted(uniq, parts[placed])]
    return out.tobytes()


def distinct(candidates: list[Candidate], graph: WorkloadGraph) -> list[Candidate]:
    """The candidates with duplicates (up to relabelling) dropped, first occurrence kept."""
    seen: set[bytes] = set()
    out = []
    for c in candidates:
        key = relabelled_design_key(c, graph)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
