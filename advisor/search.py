"""The design search (section 6.4.2): METIS k-way under the cost model, then exact refinement.

METIS sees edge weights scaled so that its edge cut is alpha * state co-location +
beta * processing co-location, and vertex weights = processing load; sweeping its balance
tolerance (ufactor) and seed trades the cut against gamma * load balancing. Every candidate is
scored exactly by costmodel, refined by single-SP moves, made to fit memory; a tabu local
search (moves, swaps, restarts; `advisor.local_search`) then starts from the best distinct
ones, and the cheapest feasible design wins.

Nested groups are placement units: each group's SPs are contracted into one node before the
search (METIS, moves, enumeration all see one node) and expanded after, so a group is never
split by the search (a split group would make every batch of it a distributed transaction;
the cost model charges a split design that way when it is scored).

Windows (state an SP owns) are pinned, not contracted: METIS sees each as a state node of
zero vertex weight joined to its owner only, and wherever it lands, `place_state` puts it on
its owner's partition before a candidate is scored (its only accessor, so the cheapest place
too); the local moves and the tabu search move an SP with its windows, and memory repair moves
an owner with its windows. Pinning keeps the graph, METIS's input and every candidate's cost
the same code path as for tables, where contracting would need the window's bytes carried by
a processing node that no memory check sees.

Machines the workload cannot use (more machines than placement units) are left out of the
search and counted as idle by the load-balancing term, so time and memory stay linear in
nodes plus machines.

Machines first, then partitions: the cost model cuts the graph into machines; then each
machine's own subgraph is searched the same way with its partitions playing the machines, so
a machine's SPs spread over its single-threaded partitions with their state beside them.
"""
from __future__ import annotations

import numbers
import time
from dataclasses import dataclass, field, fields

import numpy as np

from costmodel import DEFAULT_WEIGHTS, REPLICATED, CostBreakdown, CostGraph, Weights, score
from costmodel.arrays import sorted_unique
from advisor import metis
from advisor.errors import AdvisorError
from costmodel.errors import check_seed, finite_number, is_a
from costmodel.workload import Workload
from advisor.exhaustive import exhaustive_optimum
from costmodel.graph import WorkloadGraph, adjacency_arrays, drop_idle_machines, subgraph
from advisor.local_search import TabuSearch, fits
from advisor.placement import fit_memory, place_state, replicate_read_mostly
from advisor.processing_moves import refine_processing

# Above this many state edges the pool holds the best design only (each pool entry is
# placed inside machines and scored on the whole graph).
POOL_MAX_EDGES = 1_000_000


class BoundedMemo(dict):
    """A dict that forgets its oldest entries beyond `limit`: a memo that cannot grow without
    bound in a long session (a notebook recommending many workloads)."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def put(self, key, value) -> None:
        self[key] = value
        while len(self) > self.limit:
            del self[next(iter(self))]


# The machine-level stage's results by graph and settings (`DesignSearch._search`).
STAGE_MEMO = BoundedMemo(256)


def cost_graph_key(g: CostGraph) -> tuple:
    """The identity of a graph's content: every field, arrays by dtype, shape and bytes."""
    out = []
    for f in fields(g):
        v = getattr(g, f.name)
        out.append((v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else v)
    return tuple(out)


@dataclass
class Candidate:
    """One candidate design with its cost and provenance, as the search keeps it and the pick
    weighs it: partition arrays (global partitions; machine indices inside the machine-level
    stage), where it came from (`source`: "search", "baseline", "enumeration" or "simulated
    search") and, once the pick judged it, its throughput."""

    label: str
    proc_part: np.ndarray
    state_part: np.ndarray
    cost: CostBreakdown
    source: str = "search"
    predicted_tps: float | None = None  # tuples/s the simulator predicts
    estimated_tps: float | None = None  # tuples/s the analytical busy-time estimate allows
    batches: int = 0  # batches per simulation behind predicted_tps
    split_groups: int = 0  # nested groups whose SPs sit on more than one machine

    def __repr__(self) -> str:
        """One line (the dataclass's printed both partition arrays: a pick's candidates at 100
        SPs were 230 lines in `rec.selection`, a search's `pool_` 100); the arrays stay
        `proc_part` and `state_part`."""
        cost = f"cost {self.cost.total:.4f}" if isinstance(self.cost, CostBreakdown) else f"cost {self.cost!r:.40}"
        if isinstance(self.cost, CostBreakdown) and not self.cost.feasible:
            cost += " (infeasible: over memory)"
        figures = "".join(f", {name} {tps:,.0f} tuples/s" for name, tps in
                          (("predicted", self.predicted_tps), ("estimated", self.estimated_tps))
                          if isinstance(tps, (int, float)))
        placed = getattr(self.proc_part, "size", "?")
        return f"Candidate({self.label!r:.80} from {self.source!r:.40}: {placed} SPs placed, {cost}{figures})"

    def better_than(self, other: "Candidate | None") -> bool:
        if other is None:
            return True
        a, b = self.cost, other.cost
        if a.feasible != b.feasible:
            return a.feasible
        if not a.feasible:
            return a.worst_overflow_mb < b.worst_overflow_mb - 1e-9
        return a.total < b.total - 1e-12

    def rank(self) -> tuple:
        c = self.cost
        return (not c.feasible, c.worst_overflow_mb if not c.feasible else 0.0, c.total)


def contract_groups(cost: CostGraph) -> tuple[CostGraph, np.ndarray]:
    """The graph with each nested group as one node (loads and edges summed, edges inside a
    group kept as loops so the totals stay the same), and the unit of every SP."""
    group = cost.proc_group
    if not cost.has_groups:
        return cost, np.arange(cost.n_proc)
    key = np.where(group >= 0, group, -1 - np.arange(cost.n_proc))
    _, first, unit = np.unique(key, return_index=True, return_inverse=True)
    # number units in order of their first SP, so results read like the original order
    order = np.argsort(first, kind="stable")
    rename = np.empty_like(order)
    rename[order] = np.arange(order.size)
    unit = rename[unit]
    n_units = order.size
    units = CostGraph(
        proc_load=np.bincount(unit, weights=cost.proc_load, minlength=n_units),
        state_bytes=cost.state_bytes, ps_proc=unit[cost.ps_proc], ps_state=cost.ps_state,
        ps_weight=cost.ps_weight, ps_write=cost.ps_write, pp_src=unit[cost.pp_src],
        pp_dst=unit[cost.pp_dst], pp_weight=cost.pp_weight, machines=cost.machines,
        partitions_per_machine=cost.partitions_per_machine, capacity=cost.capacity,
        memory_limit_bytes=cost.memory_limit_bytes, idle_capacity=cost.idle_capacity,
        state_owner=np.where(cost.state_owner >= 0, unit[np.maximum(cost.state_owner, 0)], -1),
    )
    return units, unit


def machine_assignment_key(proc_part: np.ndarray, state_part: np.ndarray, relabel: bool) -> bytes:
    """Identity of a machine-level design, up to renaming machines when they are alike."""
    both = np.concatenate([proc_part, state_part]).astype(np.int64)
    if relabel:
        placed = both[both >= 0]
        _, first = np.unique(placed, return_index=True)
        names = placed[np.sort(first)]
        rename = np.full(int(both.max(initial=0)) + 1, -1)
        rename[names] = np.arange(names.size)
        both = np.where(both >= 0, rename[np.maximum(both, 0)], both)
    return both.tobytes()


@dataclass
class DesignSearch:
    """Search for the cheapest design of a graph. Parameters here (`machines`,
    `partitions_per_machine`: the cluster to search for, None: the graph's own); results as
    attributes after `fit`: `graph_` (the graph on the searched cluster), `proc_part_`,
    `state_part_` (global partitions), `cost_`, `best_label_`, `candidates_` (label, total
    cost, feasible) of the machine-level stage, `pool_` (up to `pool_size` distinct designs as
    `Candidate`s in global partitions, feasible first, cheapest first), `machines_used_`,
    `local_search_steps_`, `local_search_timed_out_` (the time budget cut the local search
    short), `elapsed_s_`, `metis_s_` (time inside METIS)."""

    weights: Weights = DEFAULT_WEIGHTS
    seed: int = 0
    machines: int | None = None
    partitions_per_machine: int | None = None
    ufactors: tuple[int, ...] = (1, 10, 30, 100, 300, 1000)
    seeds_per_ufactor: int = 2
    refine: bool = True
    replicate: bool = False
    extra_starts: bool = True  # also refine simple starts (everything together, round-robin)
    exact_limit: int = 100_000  # also enumerate every assignment when there are at most this many
    machine_sweep: bool = True  # also cut into n/2, n/4, ... 2 machines
    local_search: bool = True  # tabu search from the best distinct candidates
    local_search_starts: int = 2
    local_search_restarts: int = 8
    local_search_budget_s: float | None = None  # optional wall-clock cap (not reproducible); budgets are counted in steps
    pool_size: int = 12
    # weights inside a machine (None: `weights` with MOVEs priced as local messages)
    partition_weights: Weights | None = None
    # results out of the repr, which shows the parameters (the pool's arrays were 100 lines)
    candidates_: list[tuple[str, float, bool]] = field(default_factory=list, init=False, repr=False)
    pool_: list[Candidate] = field(default_factory=list, init=False, repr=False)
    metis_s_: float = field(default=0.0, init=False, repr=False)
    local_search_steps_: int = field(default=0, init=False, repr=False)
    local_search_timed_out_: bool = field(default=False, init=False, repr=False)

    def fit(self, graph: WorkloadGraph | CostGraph) -> "DesignSearch":
        started = time.perf_counter()
        graph = self._check(graph)
        self.metis_s_ = 0.0
        self.local_search_steps_, self.local_search_timed_out_ = 0, False
        graph = graph.with_cluster(self.machines, self.partitions_per_machine)
        self.graph_ = graph
        cost = graph.cost if isinstance(graph, WorkloadGraph) else graph
        read_mostly = (graph.state_read_mostly if isinstance(graph, WorkloadGraph)
                       else np.zeros(cost.n_state, dtype=bool))
        units, unit_of = contract_groups(cost)
        top, kept = drop_idle_machines(units.with_cluster(cost.machines, 1))
        tried = self._search(top, read_mostly, self.replicate)
        self.candidates_ = [(c.label, c.cost.total, c.cost.feasible) for c in tried]
        ranked = self._distinct(sorted(tried, key=Candidate.rank),
                                relabel=bool(np.allclose(top.capacity, top.capacity[0])))
        if cost.ps_weight.size > POOL_MAX_EDGES:
            ranked = ranked[:1]
        self.pool_ = []
        for cand in ranked[:max(self.pool_size, 1)]:
            unit_part, state_part = self._place_in_machines(units, kept, cand.proc_part,
                                                            cand.state_part)
            proc_part = unit_part[unit_of]
            self.pool_.append(Candidate(cand.label, proc_part, state_part,
                                        score(cost, proc_part, state_part, self.weights)))
        self.pool_.sort(key=Candidate.rank)
        best = self.pool_[0]
        self.proc_part_, self.state_part_, self.cost_ = best.proc_part, best.state_part, best.cost
        self.best_label_ = best.label
        self.machines_used_ = self.cost_.machines_used
        self.elapsed_s_ = time.perf_counter() - started
        return self

    def _check(self, graph) -> WorkloadGraph | CostGraph:
        """The parameters as a notebook sets them (in the constructor or as attributes since)
        and the graph `fit` was given, each wrong one one AdvisorError line before any work
        (they were numpy's, pymetis's or an AttributeError from deep in the search: `seed=-1`
        "expected non-negative integer", `ufactors=(0,)` "Caught an unknown exception!"). A
        Workload is its graph."""
        from advisor.sources import check_cluster  # (it imports this module)

        self.machines, self.partitions_per_machine = check_cluster(self.machines, self.partitions_per_machine)
        if not is_a(self.weights, Weights):
            raise AdvisorError(f"weights must be costmodel.Weights(alpha, beta, gamma), got {self.weights!r:.80}")
        if self.partition_weights is not None and not is_a(self.partition_weights, Weights):
            raise AdvisorError(f"partition_weights must be costmodel.Weights(alpha, beta, gamma) or None, "
                               f"got {self.partition_weights!r:.80}")
        self.seed = check_seed(self.seed, AdvisorError)
        ufactors = self.ufactors
        if isinstance(ufactors, (str, bytes)) or not isinstance(ufactors, (tuple, list)) or not all(
                isinstance(u, numbers.Integral) and not isinstance(u, bool) and u >= 1 for u in ufactors):
            raise AdvisorError(f"ufactors must be a tuple of integers >= 1 (METIS's balance tolerance), "
                               f"got {ufactors!r:.80}")
        for name, least in (("seeds_per_ufactor", 0), ("exact_limit", 0), ("local_search_starts", 0),
                            ("local_search_restarts", 0), ("pool_size", 1)):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < least:
                raise AdvisorError(f"{name} must be an integer >= {least}, got {value!r:.80}")
        budget = self.local_search_budget_s
        if budget is not None and not (finite_number(budget) and budget > 0):
            raise AdvisorError(f"local_search_budget_s must be None or a number of seconds > 0, got {budget!r:.80}")
        if is_a(graph, Workload):
            return WorkloadGraph.from_workload(graph)
        if not isinstance(graph, (WorkloadGraph, CostGraph)):
            raise AdvisorError(f"fit takes a WorkloadGraph, a CostGraph or a Workload, got {graph!r:.80}")
        return graph

    @staticmethod
    def _distinct(cands: list[Candidate], relabel: bool) -> list[Candidate]:
        seen: set[bytes] = set()
        out = []
        for c in cands:
            key = machine_assignment_key(c.proc_part, c.state_part, relabel)
            if key not in seen:
                seen.add(key)
                out.append(c)
        return out

    # -- stage 1: machines ----------------------------------------------------------------
    def _search(self, g: CostGraph, read_mostly: np.ndarray, replicate: bool) -> list[Candidate]:
        """Every candidate tried on a graph cut into machines (see `_search_once`), answered
        from `STAGE_MEMO` when this search already ran on the same graph with the same
        settings. Why: one recommendation searches the same small graphs many times over
        (each machine's partitions, for every pool design, baseline and enumerated
        assignment; 39 searches of 7 distinct graphs on chain-32 at 8 machines), and the
        search is deterministic. A wall-clock budget makes it not so: then it always runs."""
        if self.local_search_budget_s is not None:
            return self._search_once(g, read_mostly, replicate)
        key = (self._settings_key(), cost_graph_key(g), np.asarray(read_mostly, dtype=bool).tobytes(),
               bool(replicate))
        if key not in STAGE_MEMO:
            steps = self.local_search_steps_
            tried = self._search_once(g, read_mostly, replicate)
            STAGE_MEMO.put(key, (tried, self.local_search_steps_ - steps))
            self.local_search_steps_ = steps  # counted once, below, as for a memo hit
        tried, steps = STAGE_MEMO[key]
        self.local_search_steps_ += steps
        return [Candidate(c.label, c.proc_part.copy(), c.state_part.copy(), c.cost) for c in tried]

    def _settings_key(self) -> tuple:
        """What `_search_once` reads of this search's settings."""
        return (self.weights, self.seed, tuple(self.ufactors), self.seeds_per_ufactor, self.refine,
                self.extra_starts, self.exact_limit, self.machine_sweep, self.local_search,
                self.local_search_starts, self.local_search_restarts)

    def _search_once(self, g: CostGraph, read_mostly: np.ndarray, replicate: bool) -> list[Candidate]:
        """Every candidate tried on a graph cut into machines: starts, then local search. A
        start met again (METIS from two settings, or where a tabu run ends) is finished once:
        the same arrays give the same design (22 of 99 on linear-road at 4 machines)."""
        finished: dict[bytes, Candidate] = {}

        def finish(label: str, proc_part, state_part) -> Candidate:
            key = machine_assignment_key(proc_part, state_part, relabel=False)
            if key not in finished:
                finished[key] = self._finish(g, read_mostly, replicate, label, proc_part, state_part)
            done = finished[key]
            return Candidate(label, done.proc_part, done.state_part, done.cost)

        tried = [finish(label, proc_part, state_part) for label, proc_part, state_part in self._starts(g)]
        if self.local_search and fits(g):
            ranked = self._distinct(sorted(tried, key=Candidate.rank), relabel=False)
            tabu = TabuSearch(self.weights, seed=self.seed, max_starts=self.local_search_starts,
                              restarts=self.local_search_restarts,
                              time_budget_s=self.local_search_budget_s)
            tabu.run(g, [(c.label, c.proc_part) for c in ranked[:self.local_search_starts]])
            self.local_search_steps_ += tabu.steps_
            self.local_search_timed_out_ |= tabu.timed_out_
            zeros_s = np.zeros(g.n_state, dtype=np.int64)
            for label, part, _ in tabu.results_:
                tried.append(finish(label, part, zeros_s))
        return tried

    def best_candidate(self, g: CostGraph, read_mostly: np.ndarray | None = None,
                       replicate: bool = False) -> Candidate:
        """The cheapest candidate on a graph cut into its machines (one partition each), in
        machine indices: the machine-level stage alone, nothing placed inside machines."""
        if read_mostly is None:
            read_mostly = np.zeros(g.n_state, dtype=bool)
        return min(self._search(g, read_mostly, replicate), key=Candidate.rank)

    def _starts(self, g: CostGraph):
        n = g.machines
        zeros_p = np.zeros(g.n_proc, dtype=np.int64)
        zeros_s = np.zeros(g.n_state, dtype=np.int64)
        if n == 1:
            yield "single machine", zeros_p, zeros_s
            return
        adj = adjacency_arrays(g, *self._edge_scales(g))
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
        # fewer machines than the cluster has: cheaper cuts can beat the spread of load
        # (alike machines only; halving the count down to 2, a low and a middle tolerance)
        if self.machine_sweep and tpwgts is None:
            k = n // 2
            while k >= 2:
                for ufactor in (self.ufactors[0], 30):
                    parts = metis.kway(adj, vweights, k, ufactor=ufactor,
                                       seed=int(rng.integers(0, 2**31 - 1)))
                    key = parts.tobytes()
                    if key not in seen:
                        seen.add(key)
                        yield f"metis {k} machines ufactor={ufactor}", parts[:g.n_proc], parts[g.n_proc:]
                k //= 2
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
        # Python floats: over a total of 5e-324 tuples (a spec may declare them) a numpy scalar's
        # quotient printed RuntimeWarning lines; inf is what it was, and integer_weights keeps
        # such an edge at weight 1
        ps_total, pp_total = float(g.ps_cost_weight.sum()), float(g.pp_weight.sum())
        return (max(self.weights.alpha, tiny) / ps_total if ps_total > 0 else 0.0,
                max(self.weights.beta, tiny) / pp_total if pp_total > 0 else 0.0)

    def _finish(self, g: CostGraph, read_mostly, replicate: bool, label: str, proc_part,
                state_part) -> Candidate:
        proc_part = np.asarray(proc_part, dtype=np.int64).copy()
        state_part = place_state(g, proc_part, np.asarray(state_part, dtype=np.int64).copy())
        if self.refine:
            proc_part, state_part = refine_processing(g, self.weights, proc_part, state_part)
        proc_part, state_part = fit_memory(g, self.weights, proc_part, state_part)
        if replicate:
            state_part = replicate_read_mostly(g, self.weights, proc_part, state_part, read_mostly)
        return Candidate(label, proc_part, state_part, score(g, proc_part, state_part, self.weights))

    # -- stage 2: partitions inside each machine -------------------------------------------
    def _place_in_machines(self, cost: CostGraph, kept: np.ndarray, machine_of_proc: np.ndarray,
                           machine_of_state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Global partitions of a machine-level design: machine i of the search is machine
        kept[i] of the cluster; inside each machine used, its partitions are searched."""
        ppm = cost.partitions_per_machine
        machine_of_proc = np.asarray(machine_of_proc, dtype=np.int64)
        machine_of_state = np.asarray(machine_of_state, dtype=np.int64)
        proc_part = kept[machine_of_proc] * ppm
        replicated = machine_of_state == REPLICATED
        state_part = np.where(replicated, REPLICATED, kept[np.maximum(machine_of_state, 0)] * ppm)
        if ppm == 1:
            return proc_part, state_part
        # the cost sees machines only, so no local search inside them (it would not change it)
        inner_weights = self.partition_weights
        if inner_weights is None:
            from advisor.priced_weights import partition_weights

            inner_weights = partition_weights(self.weights)
        # (a lighter sweep too: it runs once per machine used and pool design)
        inner = DesignSearch(weights=inner_weights, seed=self.seed, ufactors=self.ufactors[::2],
                             seeds_per_ufactor=1, refine=self.refine,
                             extra_starts=self.extra_starts, exact_limit=self.exact_limit,
                             machine_sweep=False, local_search=False, pool_size=1)
        for m in sorted_unique(np.concatenate([machine_of_proc, machine_of_state[~replicated]])):
            procs = np.flatnonzero(machine_of_proc == m)
            states = np.flatnonzero(machine_of_state == m)
            local = subgraph(cost, procs, states, machines=ppm)
            best = inner.best_candidate(local)
            proc_part[procs] += best.proc_part
            state_part[states] += best.state_part
        self.metis_s_ += inner.metis_s_
        return proc_part, state_part


def place_within_machines(cost: CostGraph, machine_of_proc: np.ndarray, machine_of_state: np.ndarray,
                          weights: Weights = DEFAULT_WEIGHTS, seed: int = 0
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Global partitions of a design given by machine (no nested group split): inside each
    machine, its partitions are searched as `DesignSearch` does for its own designs."""
    units, unit_of = contract_groups(cost)
    unit_machine = np.zeros(units.n_proc, dtype=np.int64)
    unit_machine[unit_of] = machine_of_proc
    if not np.array_equal(unit_machine[unit_of], machine_of_proc):
        raise ValueError("a nested group is split across machines")
    search = DesignSearch(weights=weights, seed=seed)
    unit_part, state_part = search._place_in_machines(units, np.arange(cost.machines),
                                                      unit_machine, machine_of_state)
    return unit_part[unit_of], state_part
