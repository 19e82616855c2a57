"""Baseline designs, built and scored by the same code path as the recommendation, so the
report can say what the advisor gains over what a user would do by hand.

Every baseline puts each window (state an SP owns) on its owner's partition: the system
keeps a window with its owner, so no design that separates them is a real alternative."""
from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np

from costmodel import DEFAULT_WEIGHTS, REPLICATED, Weights
from costmodel.design import Design
from advisor.exhaustive import DEFAULT_LIMIT, exhaustive_optimum
from costmodel.graph import WorkloadGraph, drop_idle_machines
from advisor.placement import pin_owned_state
from advisor.search import DesignSearch, contract_groups, place_within_machines

BASELINES = ("single-machine", "round-robin", "random", "hash-by-table", "state-only",
             "processing-only", "exhaustive-optimum")


def _stable_hash(name: str, n: int) -> int:
    return zlib.crc32(name.encode()) % n


def single_machine(graph: WorkloadGraph, weights: Weights, seed: int = 0):
    """Everything on partition 0: no distributed transactions, no MOVEs, no parallelism."""
    return np.zeros(graph.n_proc, dtype=np.int64), np.zeros(graph.n_state, dtype=np.int64)


def round_robin(graph: WorkloadGraph, weights: Weights, seed: int = 0):
    """SPs and state items (at the graph's granularity) dealt over partitions in declaration
    order: what a user dealing everything by hand gets. Not `costmodel.simple_designs.
    round_robin_design`, which deals only the SPs and puts each table with its first SP."""
    n = graph.cost.n_partitions
    proc = np.arange(graph.n_proc) % n
    return proc, pin_owned_state(graph.cost, proc, np.arange(graph.n_state) % n)


def random_placement(graph: WorkloadGraph, weights: Weights, seed: int = 0):
    """Every node on a uniformly random partition (seeded)."""
    rng = np.random.default_rng(seed)
    n = graph.cost.n_partitions
    proc = rng.integers(0, n, graph.n_proc)
    return proc, pin_owned_state(graph.cost, proc, rng.integers(0, n, graph.n_state))


def hash_by_table(graph: WorkloadGraph, weights: Weights, seed: int = 0):
    """H-Store-style default: each table hashed to a partition, each SP where its first
    table is (or hashed by name when it touches none); windows beside their owners."""
    n = graph.cost.n_partitions
    state = np.array([_stable_hash(t, n) for t in graph.state_tables], dtype=np.int64)
    proc = np.array([_stable_hash(p, n) for p in graph.proc_names], dtype=np.int64)
    c = graph.cost
    if c.ps_proc.size:
        first = np.full(graph.n_proc, -1)
        for e in range(c.ps_proc.size - 1, -1, -1):
            if c.state_owner[c.ps_state[e]] < 0:
                first[c.ps_proc[e]] = c.ps_state[e]
        has = first >= 0
        proc[has] = state[first[has]]
    return proc, pin_owned_state(c, proc, state)


def _ignoring(weights: Weights, term: str) -> Weights:
    """`weights` with `term` zeroed, for a baseline that ignores that term. Weights that price
    nothing else (`term` alone) would be all zero, which Weights refuses: the baseline then
    aims at the default ratio of the terms it keeps (it is scored with the caller's weights)."""
    kept = [t for t in ("alpha", "beta", "gamma") if t != term]
    return replace(weights if any(getattr(weights, t) > 0 for t in kept) else DEFAULT_WEIGHTS, **{term: 0.0})


def state_only(graph: WorkloadGraph, weights: Weights, seed: int = 0):
    """Schism-like: co-locate state accessed together and balance, ignoring streams."""
    search = DesignSearch(weights=_ignoring(weights, "beta"), seed=seed, local_search=False,
                          pool_size=1).fit(graph)
    return search.proc_part_, search.state_part_


def processing_only(graph: WorkloadGraph, weights: Weights, seed: int = 0):
    """Operator placement: cut streams and balance; state stays where hashing puts it."""
    search = DesignSearch(weights=_ignoring(weights, "alpha"), seed=seed, local_search=False,
                          pool_size=1).fit(graph)
    _, state = hash_by_table(graph, weights, seed)
    return search.proc_part_, pin_owned_state(graph.cost, search.proc_part_, state)


def exhaustive(graph: WorkloadGraph, weights: Weights, seed: int = 0, limit: int = DEFAULT_LIMIT):
    """The exact optimum over machines (where small enough; nested groups kept whole, as the
    search keeps them), then partitions as the search places them inside each machine."""
    c = graph.cost
    units, unit_of = contract_groups(c)
    top, kept = drop_idle_machines(units.with_cluster(c.machines, 1))
    result = exhaustive_optimum(top, weights, limit)
    if result is None:
        return None
    state = np.where(result[1] == REPLICATED, REPLICATED, kept[np.maximum(result[1], 0)])
    return place_within_machines(c, kept[result[0]][unit_of], state, weights, seed)


BASELINE_FUNCTIONS = {
    "single-machine": single_machine,
    "round-robin": round_robin,
    "random": random_placement,
    "hash-by-table": hash_by_table,
    "state-only": state_only,
    "processing-only": processing_only,
    "exhaustive-optimum": exhaustive,
}


def baseline_design(name: str, graph: WorkloadGraph, weights: Weights, seed: int = 0,
                    provenance: dict | None = None) -> Design | None:
    """Baseline `name` as a design scored on `graph` (None where it does not apply: the
    exhaustive optimum of a graph too large to enumerate)."""
    arrays = BASELINE_FUNCTIONS[name](graph, weights, seed)
    if arrays is None:
        return None
    return Design.from_arrays(graph, arrays[0], arrays[1], weights, method=name, provenance=provenance)
