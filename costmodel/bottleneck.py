"""Where a design hurts most by the cost model: the busiest machine and the heaviest cut edges.

The one bottleneck analysis of the project. It speaks in node and edge indices of the graph;
the advisor adds names, the simulator's and the engine's views add what they measured.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodel.model import REPLICATED, machine_loads
from costmodel.problem import CostGraph

NEAR_PEAK = 0.95  # a machine within 5 % of the peak relative load is saturated too


@dataclass(frozen=True)
class Bottleneck:
    """The cost model's bottleneck of one design.

    `machine`: the most loaded machine relative to its capacity; `machine_load_share`: its
    share of all load; `hot_proc`: the heaviest SP on it; `near_peak`: every machine within
    `NEAR_PEAK` of its relative load, busiest first; `move`: (source SP, target SP, tuples per
    batch) of the heaviest stream edge cut between partitions; `distributed_access`: (SP,
    state item, rows per batch) of the heaviest state edge cut between partitions.
    """

    machine: int
    machine_load_share: float
    hot_proc: int | None
    near_peak: tuple[int, ...]
    move: tuple[int, int, float] | None
    distributed_access: tuple[int, int, float] | None


def hottest_procedure(graph: CostGraph, proc_part: np.ndarray, machine: int) -> int | None:
    """The SP with the most load on `machine` (None when it holds no SP)."""
    here = np.flatnonzero(np.asarray(proc_part) // graph.partitions_per_machine == machine)
    return int(here[np.argmax(graph.proc_load[here])]) if here.size else None


def find_bottleneck(graph: CostGraph, proc_part, state_part) -> Bottleneck:
    """The busiest machine (load relative to capacity) and the heaviest cut edges of a design."""
    proc = np.asarray(proc_part, dtype=np.int64)
    state = np.asarray(state_part, dtype=np.int64)
    loads = machine_loads(graph, proc)
    total = loads.sum()
    relative = loads / (graph.capacity / graph.capacity.mean())
    machine = int(np.argmax(relative))
    near = np.flatnonzero(relative >= NEAR_PEAK * relative.max())
    near = tuple(int(m) for m in sorted(near, key=lambda m: -relative[m]))
    move = None
    if graph.pp_weight.size:
        cut = proc[graph.pp_src] != proc[graph.pp_dst]
        if cut.any():
            e = int(np.flatnonzero(cut)[np.argmax(graph.pp_weight[cut])])
            move = (int(graph.pp_src[e]), int(graph.pp_dst[e]), float(graph.pp_weight[e]))
    dist = None
    if graph.ps_weight.size:
        where = state[graph.ps_state]
        cut = (where != REPLICATED) & (proc[graph.ps_proc] != where)
        if cut.any():
            e = int(np.flatnonzero(cut)[np.argmax(graph.ps_weight[cut])])
            dist = (int(graph.ps_proc[e]), int(graph.ps_state[e]), float(graph.ps_weight[e]))
    return Bottleneck(machine, float(loads[machine] / total) if total > 0 else 0.0,
                      hottest_procedure(graph, proc, machine), near, move, dist)
