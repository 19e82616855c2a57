"""The design search (section 6.4.2): METIS k-way under the cost model, then exact refinement.

METIS sees edge weights scaled so that its edge cut is alpha * state co-location +
beta * processing co-location, and vertex weights = processing load; sweeping its balance
tolerance (ufactor) and seed trades the cut against gamma * load balancing. Every candidate is
scored exactly by costmodel, refined by single-SP moves, made to fit memory, and the cheapest
feasible one wins.

Machines first, then partitions: the cost model cuts the graph into machines; then each
machine's own subgraph is searched the same way with its partitions playing the machines, so
a machine's SPs spread over its single-threaded partitions with their state beside them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from costmodel import DEFAULT_WEIGHTS, REPLICATED, CostBreakdown, CostGraph, Weights, score
from advisor import metis
from advisor.exhaustive import exhaustive_optimum
from advisor.graph import WorkloadGraph, adjacency, subgraph
from advisor.placement import place_state, refine_processing, repair_memory, replicate_read_mostly


@dataclass
class Candidate:
    label: str
    proc_part: np.ndarray
    state_part: np.ndarray
    cost: CostBreakdown

    def better_than(self, other: "Candidate | None") -> bool:
        if other is None:
            return True
        a, b = self.cost, other.cost
        if a.feasible != b.feasible:
            return a.feasible
        if not a.feasible:
            return a.worst_overflow_mb < b.worst_overflow_mb - 1e-9
        return a.total < b.total - 1e-12


@dataclass
class DesignSearch:
    """Search for the cheapest design of a graph. Parameters here; results as attributes
    after `fit`: `proc_part_`, `state_part_` (global partitions), `cost_`, `best_label_`,
    `candidates_` (label, total cost, feasible) of the machine-level stage, `elapsed_s_`,
    `metis_s_` (time inside METIS)."""

    weights: Weights = DEFAULT_WEIGHTS
    seed: int = 0
    ufactors: tuple[int, ...] = (1, 10, 30, 100, 300, 1000)
    seeds_per_ufactor: int = 2
    refine: bool = True
    replicate: bool = False
    extra_starts: bool = True  # also refine simple starts (everything together, round-robin)
    exact_limit: int = 100_000  # also enumerate every assignment when there are at most this many
    candidates_: list[tuple[str, float, bool]] = field(default_factory=list, init=False)
    metis_s_: float = field(default=0.0, init=False)

    def fit(self, graph: WorkloadGraph | CostGraph) -> "DesignSearch":
        started = time.perf_counter()
        self.metis_s_ = 0.0
        cost = graph.cost if isinstance(graph, WorkloadGraph) else graph
        read_mostly = (graph.state_read_mostly if isinstance(graph, WorkloadGraph)
                       else np.zeros(cost.n_state, dtype=bool))
        top = cost.with_cluster(cost.machines, 1, cost.capacity, cost.memory_limit_bytes)
        best, self.candidates_ = self._best_of(top, read_mostly, self.replicate)
        proc_part, state_part = self._place_in_machines(cost, best.proc_part, best.state_part)
        self.proc_part_, self.state_part_ = proc_part, state_part
        self.cost_ = score(cost, proc_part, state_part, self.weights)
        self.best_label_ = best.label
        self.elapsed_s_ = time.perf_counter() - started
        return self

    # -- stage 1: machines ----------------------------------------------------------------
    def _best_of(self, g: CostGraph, read_mostly: np.ndarray, replicate: bool):
        best: Candidate | None = None
        tried = []
        for label, proc_part, state_part in self._starts(g):
            cand = self._finish(g, read_mostly, replicate, label, proc_part, state_part)
            tried.append((cand.label, cand.cost.total, cand.cost.feasible))
            if cand.better_than(best):
                best = cand
        return best, tried

    def _starts(self, g: CostGraph):
        n = g.machines
        zeros_p = np.zeros(g.n_proc, dtype=np.int64)
        zeros_s = np.zeros(g.n_state, dtype=np.int64)
        if n == 1:
            yield "single machine", zeros_p, zeros_s
            return
        adj = adjacency(g, *self._edge_scales(g))
        adj.data = metis.integer_weights(adj.data)
        vweights = metis.vertex_weights(np.concatenate([g.proc_load, np.zeros(g.n_state)]))
        tpwgts = g.capacity / g.capacity.sum() if not np.allclose(g.capacity, g.capacity[0]) else None
        seen: set[bytes] = set()
        rng = np.random.default_rng(self.seed)
        for ufactor in self.ufactors:
            for k in range(self.seeds_per_ufactor):
                metis_seed = int(rng.integers(0, 2**31 - 1))
                t0 = time.perf_counter()
                parts = metis.kway(adj, vweights, n, ufactor=ufactor, seed=metis_seed, tpwgts=tpwgts)
                self.metis_s_ += time.perf_counter() - t0
                key = parts.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                yield f"metis ufactor={ufactor} seed#{k}", parts[:g.n_proc], parts[g.n_proc:]
        if self.extra_starts and g.n_proc <= 2000:
            yield "start: all together", zeros_p, zeros_s
            yield "start: round-robin", np.arange(g.n_proc) % n, zeros_s
        if self.exact_limit and g.memory_limit_bytes is None:
            exact = exhaustive_optimum(g, self.weights, limit=self.exact_limit)
            if exact is not None:
                yield "exhaustive", exact[0], exact[1]

    def _edge_scales(self, g: CostGraph) -> tuple[float, float]:
        """Per-unit edge weights so that a METIS cut = alpha * state + beta * processing term.

        A zero weight would hide a real edge from METIS, so a zero alpha or beta becomes a
        tiny positive one (integer_weights then keeps such edges at weight 1)."""
        tiny = 1e-6 * max(self.weights.alpha, self.weights.beta, 1e-9)
        ps_total, pp_total = g.ps_weight.sum(), g.pp_weight.sum()
        return (max(self.weights.alpha, tiny) / ps_total if ps_total > 0 else 0.0,
                max(self.weights.beta, tiny) / pp_total if pp_total > 0 else 0.0)

    def _finish(self, g: CostGraph, read_mostly, replicate: bool, label: str, proc_part,
                state_part) -> Candidate:
        proc_part = np.asarray(proc_part, dtype=np.int64).copy()
        state_part = place_state(g, proc_part, np.asarray(state_part, dtype=np.int64).copy())
        if self.refine:
            proc_part, state_part = refine_processing(g, self.weights, proc_part, state_part)
        state_part = repair_memory(g, proc_part, state_part)
        if replicate:
            state_part = replicate_read_mostly(g, self.weights, proc_part, state_part, read_mostly)
        return Candidate(label, proc_part, state_part, score(g, proc_part, state_part, self.weights))

    # -- stage 2: partitions inside each machine -------------------------------------------
    def _place_in_machines(self, cost: CostGraph, machine_of_proc: np.ndarray,
                           machine_of_state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ppm = cost.partitions_per_machine
        proc_part = machine_of_proc * ppm
        state_part = np.where(machine_of_state == REPLICATED, REPLICATED, machine_of_state * ppm)
        if ppm == 1:
            return proc_part, state_part
        inner = DesignSearch(weights=self.weights, seed=self.seed, ufactors=self.ufactors,
                             seeds_per_ufactor=self.seeds_per_ufactor, refine=self.refine,
                             extra_starts=self.extra_starts, exact_limit=self.exact_limit)
        for m in range(cost.machines):
            procs = np.flatnonzero(machine_of_proc == m)
            states = np.flatnonzero(machine_of_state == m)
            if procs.size + states.size == 0:
                continue
            local = subgraph(cost, procs, states, machines=ppm)
            best, _ = inner._best_of(local, np.zeros(states.size, dtype=bool), replicate=False)
            proc_part[procs] = m * ppm + best.proc_part
            state_part[states] = m * ppm + best.state_part
        self.metis_s_ += inner.metis_s_
        return proc_part, state_part
