"""Move a design to a cluster of another size (`advisor simulate --machines N`).

`spread` keeps the design's co-location: everything that shares a partition keeps sharing
one, and the partitions in use are dealt out evenly over the new machines in their index
order (neighbouring partitions stay neighbours), so a pipeline laid out along partitions
stays a pipeline. When the new cluster has fewer partitions than the design uses, neighbours
are merged. `recommend` instead asks the advisor for a fresh design for N machines.
"""
from __future__ import annotations

from dataclasses import replace

from costmodel.design import Design
from costmodel.workload import Workload
from engine_sim.sim.errors import SimError


def spread_design(design: Design, machines: int, partitions_per_machine: int | None = None) -> Design:
    if machines < 1:
        raise SimError(f"machines must be >= 1, got {machines}")
    ppm = partitions_per_machine or design.partitions_per_machine
    used = sorted({p for p in design.procedures.values()}
                  | {p for p in design.state.values() if p is not None})
    k_total = len(used)
    by_machine: dict[int, list[int]] = {}
    for k, p in enumerate(used):
        by_machine.setdefault(k * machines // k_total, []).append(p)
    new: dict[int, int] = {}
    for m, parts in by_machine.items():
        for i, p in enumerate(parts):
            new[p] = m * ppm + i * ppm // len(parts)
    return replace(
        design, machines=machines, partitions_per_machine=ppm, cost=None,
        procedures={n: new[p] for n, p in design.procedures.items()},
        state={n: (None if p is None else new[p]) for n, p in design.state.items()},
        method=(design.method + "+" if design.method else "") + f"spread:{machines}",
    )


def scale_design(design: Design, machines: int, *, workload: Workload | None = None,
                 method: str = "spread") -> Design:
    """The design on `machines` machines (same partitions per machine)."""
    if machines == design.machines:
        return design
    if method == "spread":
        return spread_design(design, machines)
    if method == "recommend":
        if workload is None:
            raise SimError("rescaling by recommendation needs the workload")
        from advisor.api import recommend

        return recommend(workload, machines=machines,
                         partitions_per_machine=design.partitions_per_machine).design
    raise SimError(f"unknown rescale method {method!r} (choose spread or recommend)")
