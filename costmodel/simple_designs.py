"""Designs made without the advisor, straight from a workload: the naive single-partition
design a user starts from, and a round-robin deal that spreads work over a cluster (what the
engine's tests and benchmarks run when the design itself is not what they test).

`round_robin_design` is not the advisor's "round-robin" baseline (`advisor.baselines`): that
one works on the workload graph at its granularity and deals state items over the partitions
too, while this one puts each table with the first SP that touches it."""
from __future__ import annotations

from costmodel.design import Design
from costmodel.workload import Workload


def round_robin_design(workload: Workload, machines: int | None = None,
                       partitions_per_machine: int | None = None,
                       replicate: tuple[str, ...] = ()) -> Design:
    """SP i on partition i mod n; each table on the partition of the first SP that touches
    it (or replicated when named in `replicate`); each window with its owner. The cluster is
    the workload's unless given."""
    m = machines or workload.cluster.machines
    ppm = partitions_per_machine or workload.cluster.partitions_per_machine
    n = m * ppm
    procs = {p.name: i % n for i, p in enumerate(workload.procedures)}
    state: dict[str, int | None] = {}
    for t in workload.tables:
        first = next((p.name for p in workload.procedures for a in p.accesses if a.table == t.name), None)
        state[t.name] = None if t.name in replicate else (procs[first] if first else 0)
    for w in workload.windows:  # a window lives with its owner
        state[w.name] = procs[w.procedure]
    return Design(workload.name, m, ppm, procs, state, method="round-robin (engine tests)")


def single_partition_design(workload: Workload) -> Design:
    """Everything on one partition of one machine: no distributed transaction, no MOVE
    between partitions, no parallelism."""
    return Design(workload.name, 1, 1, {p.name: 0 for p in workload.procedures},
                  {name: 0 for name in [*workload.table_names, *workload.window_names]},
                  method="single partition")
