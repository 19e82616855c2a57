"""The three cost terms and the design cost, in their weighted form (section 6.3).

Every function accepts an assignment of shape (P,) or a stack of assignments (K, P), so the
same code scores one design or a million candidates of the exhaustive search.

As in the dissertation, the graph is cut into machines: an edge is cut when its two ends sit
on different machines (a distributed transaction across the network, a MOVE between nodes),
and load is balanced between machines. How a machine's share is spread over its partitions is
the search's second stage, not part of this cost. `state_part == REPLICATED` marks a state
item copied to every machine. Assignments are global partition indices either way.

Owned state (a window, `CostGraph.state_owner`) must sit on its owner's partition: its
accesses can never be distributed, so the state term leaves them out (never cut, not in the
total: `CostGraph.ps_cost_weight`), and a design that puts it elsewhere is infeasible
(`CostBreakdown.misplaced_state`), like one over memory. Its bytes count on its machine.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from costmodel.arrays import sorted_unique
from costmodel.problem import CostGraph
from costmodel.weights import DEFAULT_WEIGHTS, Weights

REPLICATED = -1
# each term of the design cost as every output names it: (label, CostBreakdown field, its weight)
COST_TERMS = (("state co-location", "state_colocation", "alpha"),
              ("processing co-location", "processing_colocation", "beta"),
              ("load balance", "load_balance", "gamma"))


def cost_terms_text(cost: "CostBreakdown | dict") -> str:
    """The three terms in one line, as every output shows them ("state co-location 0.0000,
    ..."): one wording and precision, so a notebook's figure reads as the CLI's and the report's
    (a `CostBreakdown`, or its `to_dict()` as a validation file carries it)."""
    get = cost.get if isinstance(cost, dict) else (lambda key: getattr(cost, key))
    return ", ".join(f"{label} {get(key):.4f}" for label, key, _ in COST_TERMS)


def _ratio(cut: np.ndarray, total: np.ndarray | float) -> np.ndarray:
    total = np.asarray(total, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(total > 0, cut / np.where(total > 0, total, 1.0), 0.0)
    return np.clip(out, 0.0, 1.0)


def split_procedures(graph: CostGraph, proc_part: np.ndarray) -> np.ndarray:
    """True for SPs of a nested group whose SPs sit on more than one machine, shape (..., P)."""
    proc_part = np.asarray(proc_part)
    out = np.zeros(proc_part.shape, dtype=bool)
    if not graph.has_groups:
        return out
    members = np.flatnonzero(graph.proc_group >= 0)
    members = members[np.argsort(graph.proc_group[members], kind="stable")]
    groups = graph.proc_group[members]
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    machine = proc_part[..., members] // graph.partitions_per_machine
    split = (np.minimum.reduceat(machine, starts, axis=-1)
             != np.maximum.reduceat(machine, starts, axis=-1))
    sizes = np.diff(np.r_[starts, members.size])
    out[..., members] = np.repeat(split, sizes, axis=-1)
    return out


def misplaced_owned_state(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray
                          ) -> np.ndarray:
    """Indices of owned state items (windows) not on their owner's partition (replicated
    counts as misplaced: a window has one copy, beside its owner)."""
    owned = graph.owned_state
    if owned.size == 0:
        return owned
    proc_part = np.asarray(proc_part)
    state_part = np.asarray(state_part)
    return owned[state_part[owned] != proc_part[graph.state_owner[owned]]]


def state_colocation_cost(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray):
    """Cut processing-to-state weight / total processing-to-state weight.

    A replicated item is never cut for reads; each write to it is cut to the copies on the
    other machines. Every access of an SP whose nested group is split across machines is
    cut: the group commits as one distributed transaction.
    """
    proc_part = np.asarray(proc_part)
    state_part = np.asarray(state_part)
    if graph.ps_weight.size == 0:
        return np.zeros(proc_part.shape[:-1]) if proc_part.ndim > 1 else 0.0
    ppm = graph.partitions_per_machine
    p_side = proc_part[..., graph.ps_proc] // ppm
    s_raw = state_part[..., graph.ps_state]
    replicated = s_raw == REPLICATED
    s_side = np.where(replicated, REPLICATED, s_raw // ppm)
    other_copies = max(graph.cluster_machines - 1, 0)
    w = graph.ps_cost_weight
    split = split_procedures(graph, proc_part)[..., graph.ps_proc]
    cut_plain = np.where(~replicated & ((p_side != s_side) | split), w, 0.0)
    cut_repl = np.where(replicated & graph.ps_write, w * other_copies,
                        np.where(replicated & split, w, 0.0))
    total = np.where(replicated & graph.ps_write, w * max(other_copies, 1), w)
    out = _ratio((cut_plain + cut_repl).sum(axis=-1), total.sum(axis=-1))
    return float(out) if out.ndim == 0 else out


def processing_colocation_cost(graph: CostGraph, proc_part: np.ndarray):
    """Cut processing-to-processing weight (MOVEs) / total processing-to-processing weight."""
    proc_part = np.asarray(proc_part)
    total = graph.pp_weight.sum()
    if graph.pp_weight.size == 0:
        return np.zeros(proc_part.shape[:-1]) if proc_part.ndim > 1 else 0.0
    ppm = graph.partitions_per_machine
    cut = proc_part[..., graph.pp_src] // ppm != proc_part[..., graph.pp_dst] // ppm
    out = _ratio((cut * graph.pp_weight).sum(axis=-1), total)
    return float(out) if out.ndim == 0 else out


def machine_loads(graph: CostGraph, proc_part: np.ndarray) -> np.ndarray:
    """Processing load per machine, shape (..., machines)."""
    machine = np.asarray(proc_part) // graph.partitions_per_machine
    # explicit row count: with no SPs (a machine's inner graph holding state only) -1 is ambiguous
    rows_n = int(np.prod(machine.shape[:-1])) if machine.ndim > 1 else 1
    flat = machine.reshape(rows_n, machine.shape[-1])
    rows = np.repeat(np.arange(flat.shape[0]), flat.shape[1])
    loads = np.zeros((flat.shape[0], graph.machines))
    np.add.at(loads, (rows, flat.ravel()), np.tile(graph.proc_load, flat.shape[0]))
    return loads.reshape(machine.shape[:-1] + (graph.machines,))


def load_balance_cost(graph: CostGraph, proc_part: np.ndarray):
    """(max - min machine load) / total load, load taken relative to machine capacity.

    With identical machines this is the dissertation's formula exactly; with unequal ones the
    denominator is the largest possible spread, so the term stays in [0, 1].
    """
    loads = machine_loads(graph, proc_part)
    out = load_balance_from_loads(loads, graph.capacity, float(graph.proc_load.sum()),
                                  graph.idle_capacity)
    return float(out) if np.ndim(out) == 0 else out


def load_balance_from_loads(loads: np.ndarray, capacity: np.ndarray, total: float,
                            idle_capacity: np.ndarray | None = None):
    """The load-balancing term from per-machine loads of shape (..., machines); machines of
    `idle_capacity` carry no load (so the least loaded machine has none)."""
    loads = np.asarray(loads, dtype=np.float64)
    idle = np.zeros(0) if idle_capacity is None else np.asarray(idle_capacity, dtype=np.float64)
    if loads.shape[-1] + idle.size == 1 or total <= 0:
        return np.zeros(loads.shape[:-1])
    mean = (capacity.sum() + idle.sum()) / (capacity.size + idle.size)
    relative_capacity = capacity / mean
    lowest = min(relative_capacity.min(), idle.min() / mean if idle.size else np.inf)
    rel = loads / relative_capacity
    least = rel.min(axis=-1) if not idle.size else np.minimum(rel.min(axis=-1), 0.0)
    spread = rel.max(axis=-1) - least
    return _ratio(spread, total / lowest)


def machine_memory(graph: CostGraph, state_part: np.ndarray) -> np.ndarray:
    """Bytes of state per machine; a replicated item counts on every machine."""
    state_part = np.asarray(state_part)
    placed = state_part != REPLICATED
    machine = np.where(placed, state_part, 0) // graph.partitions_per_machine
    mem = np.bincount(machine[placed], weights=graph.state_bytes[placed],
                      minlength=graph.machines).astype(np.float64)
    return mem + graph.state_bytes[~placed].sum()


@dataclass(frozen=True)
class CostBreakdown:
    """The design cost and its terms; `memory_overflow_mb[m]` > 0 makes a design infeasible,
    and so does any owned state item (window) away from its owner (`misplaced_state`)."""

    state_colocation: float
    processing_colocation: float
    load_balance: float
    total: float
    weights: Weights = DEFAULT_WEIGHTS
    memory_overflow_mb: tuple[float, ...] = field(default_factory=tuple)
    # informative, not in `total`: worst (max - min partition load) / machine load, over machines
    partition_load_balance: float = 0.0
    # machines that hold at least one SP or state item (0: not computed)
    machines_used: int = 0
    # owned state items (windows) not on their owner's partition: state indices
    misplaced_state: tuple[int, ...] = ()

    @property
    def feasible(self) -> bool:
        return not any(x > 0 for x in self.memory_overflow_mb) and not self.misplaced_state

    @property
    def worst_overflow_mb(self) -> float:
        return max(self.memory_overflow_mb, default=0.0)

    def to_dict(self) -> dict:
        out = {
            "state_colocation": round(self.state_colocation, 12),
            "processing_colocation": round(self.processing_colocation, 12),
            "load_balance": round(self.load_balance, 12),
            "total": round(self.total, 12),
            "feasible": self.feasible,
            "partition_load_balance": round(self.partition_load_balance, 12),
            "machines_used": self.machines_used,
        }
        if any(x > 0 for x in self.memory_overflow_mb):
            out["memory_overflow_mb"] = [round(x, 3) for x in self.memory_overflow_mb]
        if self.misplaced_state:
            out["misplaced_state"] = list(self.misplaced_state)
        return out

    def __repr__(self) -> str:
        """One line (the dataclass printed every machine's memory overflow: 64 floats on 64
        machines), as the notebook's: the total, its terms, the weights, feasibility."""
        w = self.weights
        fits = "" if self.feasible else (
            f"; infeasible: {self.worst_overflow_mb:.1f} MB over memory" if self.worst_overflow_mb > 0
            else f"; infeasible: {len(self.misplaced_state)} window(s) away from their SP")
        used = f"; {self.machines_used} machines used" if self.machines_used else ""
        return (f"CostBreakdown(total {self.total:.4f}: {cost_terms_text(self)}; weights alpha={w.alpha:.3g} "
                f"beta={w.beta:.3g} gamma={w.gamma:.3g}{used}{fits})")

    def _repr_html_(self) -> str:
        """One line in a notebook (and in a design's rendering): the total and its terms."""
        return (f"cost {self.total:.4f} ({cost_terms_text(self)})"
                + ("" if self.feasible else f", <b>infeasible</b>: {self.worst_overflow_mb:.1f} MB over memory"))


def score(graph: CostGraph, proc_part, state_part, weights: Weights = DEFAULT_WEIGHTS
          ) -> CostBreakdown:
    """Score one design: the weighted sum of the three terms, plus memory feasibility."""
    proc_part = np.asarray(proc_part, dtype=np.int64)
    state_part = np.asarray(state_part, dtype=np.int64)
    _check_assignment(graph, proc_part, state_part)
    s = float(state_colocation_cost(graph, proc_part, state_part))
    p = float(processing_colocation_cost(graph, proc_part))
    b = float(load_balance_cost(graph, proc_part))
    overflow: tuple[float, ...] = ()
    if graph.memory_limit_bytes is not None:
        over = (machine_memory(graph, state_part) - graph.memory_limit_bytes) / 2**20
        overflow = tuple(float(max(x, 0.0)) for x in over)
    total = weights.alpha * s + weights.beta * p + weights.gamma * b
    return CostBreakdown(s, p, b, float(total), weights, overflow,
                         partition_load_balance(graph, proc_part),
                         machines_used(graph, proc_part, state_part),
                         tuple(int(j) for j in misplaced_owned_state(graph, proc_part, state_part)))


def machines_used(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> int:
    """Machines holding at least one SP or state item (a replicated item is on all of them)."""
    state_part = np.asarray(state_part)
    if (state_part == REPLICATED).any():
        return graph.cluster_machines
    ppm = graph.partitions_per_machine
    used = np.concatenate([np.asarray(proc_part) // ppm, state_part // ppm])
    return int(sorted_unique(used).size)


def partition_load_balance(graph: CostGraph, proc_part: np.ndarray) -> float:
    """How unevenly each machine spreads its load over its own partitions (worst machine)."""
    ppm = graph.partitions_per_machine
    if ppm == 1 or graph.n_proc == 0:
        return 0.0
    loads = np.bincount(proc_part, weights=graph.proc_load, minlength=graph.n_partitions)
    loads = loads.reshape(graph.machines, ppm)
    per_machine = loads.sum(axis=1)
    spread = loads.max(axis=1) - loads.min(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(per_machine > 0, spread / np.where(per_machine > 0, per_machine, 1), 0.0)
    return float(ratio.max())


def score_many(graph: CostGraph, proc_parts, state_parts, weights: Weights = DEFAULT_WEIGHTS
               ) -> np.ndarray:
    """Total design cost of K candidates at once: arrays (K, P) and (K, S) -> (K,)."""
    proc_parts = np.atleast_2d(np.asarray(proc_parts, dtype=np.int64))
    state_parts = np.atleast_2d(np.asarray(state_parts, dtype=np.int64))
    s = np.broadcast_to(state_colocation_cost(graph, proc_parts, state_parts), proc_parts.shape[:1])
    p = np.broadcast_to(processing_colocation_cost(graph, proc_parts), proc_parts.shape[:1])
    b = np.broadcast_to(load_balance_cost(graph, proc_parts), proc_parts.shape[:1])
    return weights.alpha * s + weights.beta * p + weights.gamma * b


def _check_assignment(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> None:
    if proc_part.shape != (graph.n_proc,) or state_part.shape != (graph.n_state,):
        raise ValueError(
            f"assignment shape ({proc_part.shape}, {state_part.shape}) does not match the graph "
            f"({graph.n_proc} procedures, {graph.n_state} state items)"
        )
    n = graph.n_partitions
    if proc_part.size and (proc_part.min() < 0 or proc_part.max() >= n):
        raise ValueError(f"a procedure is placed outside partitions 0..{n - 1}")
    if state_part.size and (state_part.min() < REPLICATED or state_part.max() >= n):
        raise ValueError(f"a state item is placed outside partitions 0..{n - 1}")
