"""What the simulator can judge in time: a spec of the graph's SPs and state behind it, and a
graph and cluster small enough. Past these the pick is made by the busy-time estimate
(`advisor.estimate_pick`), or by cost where there is no spec.

Why a module of its own: the pick (`advisor.selection`), the migration plan, the sources (which
graph to build from statistics) and `recommend`'s notes all ask the same question, and the
limits are one decision, measured once (docs/search.md).
"""
from __future__ import annotations

from costmodel.graph import WorkloadGraph
from costmodel.workload import Workload

MAX_SIM_SIZE = 50_000  # (nodes + edges) x machines above which nothing is simulated
MAX_SIM_BATCH_WORK = 1_000  # SPs + edges above which nothing is simulated (per-batch work)
MAX_SIM_PARTITIONS = 1_024  # the simulator builds every partition of the cluster


def simulation_blocker(workload: Workload | None, graph: WorkloadGraph) -> str | None:
    """Why the simulator cannot judge these designs quickly, or None when it can."""
    return spec_blocker(workload, graph) or size_blocker(graph)


def spec_blocker(workload: Workload | None, graph: WorkloadGraph) -> str | None:
    """Why neither the simulator nor the busy-time estimate can run these designs (no spec of
    this graph's SPs and state behind them), or None."""
    if workload is None:
        return "no workload spec behind this source, so the simulator cannot run it"
    if (set(graph.proc_names) != set(workload.procedure_names)
            or set(graph.state_names) != set(workload.table_names) | set(workload.window_names)):
        return ("the graph's state items are not the spec's tables and windows, so the "
                "simulator cannot run it")
    return None


def size_blocker(graph: WorkloadGraph) -> str | None:
    """Why the simulator cannot judge designs of this graph quickly (its size), or None."""
    c = graph.cost
    edges = c.ps_weight.size + c.pp_weight.size
    per_batch = graph.n_proc + edges  # what the simulator steps through for every batch
    usable = min(c.machines, graph.n_nodes)  # no design uses more machines than nodes
    if per_batch > MAX_SIM_BATCH_WORK or (graph.n_nodes + edges) * usable > MAX_SIM_SIZE:
        return (f"the graph is too large to simulate quickly ({graph.n_nodes:,} nodes and "
                f"{edges:,} edges on {c.machines:,} machines; limits: {MAX_SIM_BATCH_WORK:,} "
                f"SPs + edges, {MAX_SIM_SIZE:,} (nodes + edges) x machines)")
    partitions = c.machines * c.partitions_per_machine
    if partitions > MAX_SIM_PARTITIONS:
        return (f"the cluster is too large to simulate quickly ({partitions:,} partitions; "
                f"limit {MAX_SIM_PARTITIONS:,})")
    return None
