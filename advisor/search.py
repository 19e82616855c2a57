"""The design search (section 6.4.2): METIS k-way under the cost model, then exact refinement.

METIS sees edge weights scaled so that its edge cut is alpha * state co-location +
beta * processing co-location, and vertex weights = processing load; sweeping its balance
tolerance (ufactor) and seed trades the cut against gamma * load balancing. Every candidate is
scored exactly by costmodel, refined by single-SP moves, made to fit memory, and the cheapest
feasible one wins. Machines are split first, then partitions inside each machine.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from costmodel import DEFAULT_WEIGHTS, CostBreakdown, CostGraph, Weights, score
from advisor import metis
from advisor.graph import WorkloadGraph
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
    after `fit`: `proc_part_`, `state_part_`, `cost_`, `best_label_`, `candidates_`."""

    weights: Weights = DEFAULT_WEIGHTS
    seed: int = 0
    ufactors: tuple[int, ...] = (1, 10, 30, 100, 300, 1000)
    seeds_per_ufactor: int = 2
    refine: bool = True
    replicate: bool = False
    extra_starts: bool = True  # also refine simple starts (everything together, round-robin)
    candidates_: list[tuple[str, float, bool]] = field(default_factory=list, init=False)

    def fit(self, graph: WorkloadGraph) -> "DesignSearch":
        started = time.perf_counter()
        g = graph.cost
        self.candidates_ = []
        best: Candidate | None = None
        for label, proc_part, state_part in self._starts(graph):
            cand = self._finish(graph, label, proc_part, state_part)
            self.candidates_.append((cand.label, cand.cost.total, cand.cost.feasible))
            if cand.better_than(best):
                best = cand
        assert best is not None
        self.proc_part_, self.state_part_, self.cost_ = best.proc_part, best.state_part, best.cost
        self.best_label_ = best.label
        self.elapsed_s_ = time.perf_counter() - started
        return self

    # -- candidates -----------------------------------------------------------------------
    def _starts(self, graph: WorkloadGraph):
        g = graph.cost
        n = g.n_partitions
        zeros_p = np.zeros(g.n_proc, dtype=np.int64)
        zeros_s = np.zeros(g.n_state, dtype=np.int64)
        if n == 1:
            yield "single partition", zeros_p, zeros_s
            return
        adjacency = graph.adjacency(*self._edge_scales(g))
        adjacency.data = metis.integer_weights(adjacency.data)
        vweights = metis.vertex_weights(np.concatenate([g.proc_load, np.zeros(g.n_state)]))
        tpwgts = g.capacity / g.capacity.sum() if not np.allclose(g.capacity, g.capacity[0]) else None
        seen: set[bytes] = set()
        rng = np.random.default_rng(self.seed)
        for ufactor in self.ufactors:
            for k in range(self.seeds_per_ufactor):
                metis_seed = int(rng.integers(0, 2**31 - 1))
                machine = metis.kway(adjacency, vweights, g.machines, ufactor=ufactor,
                                     seed=metis_seed, tpwgts=tpwgts)
                parts = self._split_machines(adjacency, vweights, machine, g, ufactor, metis_seed)
                key = parts.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                yield f"metis ufactor={ufactor} seed#{k}", parts[:g.n_proc], parts[g.n_proc:]
        if self.extra_starts and g.n_proc <= 2000:
            yield "start: all together", zeros_p, zeros_s
            yield "start: round-robin", np.arange(g.n_proc) % n, place_state(
                g, np.arange(g.n_proc) % n, zeros_s)

    def _edge_scales(self, g: CostGraph) -> tuple[float, float]:
        """Per-unit edge weights so that a METIS cut = alpha * state + beta * processing term.

        A zero weight would hide a real edge from METIS, so a zero alpha or beta becomes a
        tiny positive one (integer_weights then keeps such edges at weight 1)."""
        tiny = 1e-6 * max(self.weights.alpha, self.weights.beta, 1e-9)
        return (max(self.weights.alpha, tiny) * self._scale(g.ps_weight.sum()),
                max(self.weights.beta, tiny) * self._scale(g.pp_weight.sum()))

    @staticmethod
    def _scale(total: float) -> float:
        return 1.0 / total if total > 0 else 0.0

    def _split_machines(self, adjacency, vweights, machine: np.ndarray, g: CostGraph,
                        ufactor: int, seed: int) -> np.ndarray:
        """Partitions inside each machine: METIS again on each machine's subgraph."""
        ppm = g.partitions_per_machine
        parts = machine * ppm
        if ppm == 1:
            return parts
        for m in range(g.machines):
            idx = np.flatnonzero(machine == m)
            if idx.size == 0:
                continue
            sub = adjacency[idx][:, idx].tocsr()
            sub_vw = None if vweights is None else vweights[idx]
            if sub_vw is not None and sub_vw.sum() == 0:
                sub_vw = None
            parts[idx] = m * ppm + metis.kway(sub, sub_vw, ppm, ufactor=ufactor, seed=seed)
        return parts

    def _finish(self, graph: WorkloadGraph, label: str, proc_part, state_part) -> Candidate:
        g = graph.cost
        proc_part = np.asarray(proc_part, dtype=np.int64).copy()
        state_part = place_state(g, proc_part, np.asarray(state_part, dtype=np.int64).copy())
        if self.refine:
            proc_part, state_part = refine_processing(g, self.weights, proc_part, state_part)
        state_part = repair_memory(g, proc_part, state_part)
        if self.replicate:
            state_part = replicate_read_mostly(g, self.weights, proc_part, state_part,
                                               graph.state_read_mostly)
        return Candidate(label, proc_part, state_part, score(g, proc_part, state_part, self.weights))
