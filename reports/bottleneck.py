"""Where a design is limited, as the report and the suggestions see it: the cost model's
bottleneck (`advisor.api.design_bottleneck`), sharpened by the simulator's busiest resource
when there is a simulation: the busiest machine, the hottest SP there, every machine near the
peak, the heaviest MOVE and distributed access."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from costmodel import hottest_procedure, machine_loads
from advisor.api import DesignBottleneck, design_bottleneck
from costmodel.design import Design

NEAR_PEAK_UTILISATION = 0.9  # a machine this close to the simulator's peak is saturated too


@dataclass
class SimulatedBottleneck:
    """The cost model's bottleneck (`base`) and, where simulated, the simulator's view of it:
    its busiest machine and resource replace the cost model's."""

    base: DesignBottleneck
    machine: int
    hot_procedure: str | None
    machine_load_share: float
    resource: str  # the simulator's busiest resource, or the cost model's view
    peak_utilisation: float | None
    saturated: list[str] = field(default_factory=list)  # hottest SP of every near-peak machine

    @property
    def move(self) -> tuple[str, str, float] | None:
        return self.base.move

    @property
    def distributed_access(self) -> tuple[str, str, float] | None:
        return self.base.distributed_access

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


def simulated_bottleneck(design: Design, graph, sim=None) -> SimulatedBottleneck:
    """The cost model's bottleneck, sharpened by the simulator's busiest resource if given."""
    base = design_bottleneck(design, graph)
    graph = base.graph  # on the design's cluster
    c = graph.cost
    proc, _ = design.arrays(graph)
    names = graph.proc_names
    simulated = sim is not None and bool(sim.machine_utilisation)
    if not simulated:
        saturated = [names[p] for p in (hottest_procedure(c, proc, m) for m in base.cost.near_peak)
                     if p is not None]
        return SimulatedBottleneck(base, base.machine, base.hot_procedure, base.machine_load_share,
                                   f"machine {base.machine} (cost model: largest load relative to capacity)",
                                   None, list(dict.fromkeys(saturated)))
    machine = sim.bottleneck_machine
    hot = hottest_procedure(c, proc, machine)
    loads = machine_loads(c, proc)
    share = float(loads[machine] / loads.sum()) if loads.sum() > 0 else 0.0
    busy = np.maximum(sim.machine_utilisation, sim.coordinator_utilisation or 0.0)
    near = np.flatnonzero(busy >= NEAR_PEAK_UTILISATION * busy.max())
    saturated = [names[p] for p in (hottest_procedure(c, proc, m) for m in sorted(near, key=lambda m: -busy[m]))
                 if p is not None]
    return SimulatedBottleneck(base, machine, None if hot is None else names[hot], share, sim.bottleneck,
                               float(sim.peak_utilisation), list(dict.fromkeys(saturated)))
