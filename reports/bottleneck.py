"""Where a design is limited: the busiest resource (simulator) or machine (cost model), the
hottest SP there, every machine near the peak, the heaviest MOVE and distributed access."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from costmodel import machine_loads
from advisor.design import Design


@dataclass
class Bottleneck:
    """Where the current design is limited, in words and in numbers."""

    machine: int
    hot_procedure: str | None
    machine_load_share: float
    resource: str  # the simulator's busiest resource, or the cost model's view
    peak_utilisation: float | None
    move: tuple[str, str, float] | None
    distributed_access: tuple[str, str, float] | None
    saturated: list[str] = field(default_factory=list)  # hottest SP of every near-peak machine

    def describe(self) -> list[str]:
        out = [f"busiest resource: {self.resource}"
               + (f" ({self.peak_utilisation:.0%} utilised)" if self.peak_utilisation is not None else "")]
        out.append(f"most loaded machine: {self.machine} ({self.machine_load_share:.0%} of all SP load)"
                   + (f", hottest SP there: {self.hot_procedure}" if self.hot_procedure else ""))
        if self.move:
            out.append(f"heaviest cut stream (MOVE): {self.move[0]} -> {self.move[1]} ({self.move[2]:g} tuples/batch)")
        if self.distributed_access:
            out.append(f"heaviest distributed access: {self.distributed_access[0]} -> "
                       f"{self.distributed_access[1]} ({self.distributed_access[2]:g} rows/batch)")
        return out


def find_bottleneck(design: Design, graph, sim=None) -> Bottleneck:
    """The cost model's bottleneck, sharpened by the simulator's busiest resource if given."""
    from advisor.api import find_bottleneck as cost_bottleneck

    base = cost_bottleneck(design, graph)
    machine = base.machine
    resource = f"machine {machine} (cost model: largest load relative to capacity)"
    peak = None
    if sim is not None and sim.machine_utilisation:
        machine = sim.bottleneck_machine
        resource, peak = sim.bottleneck, float(sim.peak_utilisation)
    proc, _ = design.arrays(graph.with_cluster(design.machines, design.partitions_per_machine))
    c = graph.with_cluster(design.machines, design.partitions_per_machine).cost
    mach = proc // design.partitions_per_machine
    here = np.flatnonzero(mach == machine)
    hot = graph.proc_names[int(here[np.argmax(c.proc_load[here])])] if here.size else None
    loads = machine_loads(c, proc)
    share = float(loads[machine] / loads.sum()) if loads.sum() > 0 else 0.0
    if sim is not None and sim.machine_utilisation:
        busy = np.maximum(sim.machine_utilisation, sim.coordinator_utilisation or 0.0)
        near = np.flatnonzero(busy >= 0.9 * busy.max())
    else:
        rel = loads / (c.capacity / c.capacity.mean())
        near = np.flatnonzero(rel >= 0.95 * rel.max())
    busy_of = busy if sim is not None and sim.machine_utilisation else rel
    saturated = []  # the hottest SP of each near-peak machine, busiest machine first
    for m in sorted(near, key=lambda m: -busy_of[m]):
        on = np.flatnonzero(mach == m)
        if on.size:
            name = graph.proc_names[int(on[np.argmax(c.proc_load[on])])]
            if name not in saturated:
                saturated.append(name)
    return Bottleneck(machine, hot, share, resource, peak, base.move, base.distributed_access, saturated)
