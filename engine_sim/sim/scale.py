"""Move a design to a cluster of another size (`advisor simulate --machines N`).

`spread` keeps the design's co-location: everything that shares a partition keeps sharing
one, and the partitions in use are dealt out evenly over the new machines in their index
order (neighbouring partitions stay neighbours), so a pipeline laid out along partitions
stays a pipeline. When the new cluster has fewer partitions than the design uses, neighbours
are merged. (`reports.scaling.scale_design` can instead ask the advisor for a fresh design.)
"""
from __future__ import annotations

from dataclasses import replace

from costmodel.design import Design
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
