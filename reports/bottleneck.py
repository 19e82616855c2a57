"""Where a design is limited, as the report and the suggestions see it: the simulator's
busiest machine and resource where there is a simulation, the cost model's otherwise, with the
cost model's heaviest MOVE and distributed access either way (`costmodel.Bottleneck`)."""
from __future__ import annotations

import numpy as np

from costmodel import Bottleneck, cost_model_bottleneck, find_bottleneck
from costmodel.design import Design

NEAR_PEAK_UTILISATION = 0.9  # a machine this close to the simulator's peak is saturated too


def simulated_bottleneck(design: Design, graph, sim=None) -> Bottleneck:
    """The simulator's bottleneck of `design` (`sim`: its simulation, a `SimResult`), or the
    cost model's where there is no simulation to go by."""
    if sim is None or not sim.machine_utilisation:
        return cost_model_bottleneck(design, graph)
    busy = np.maximum(sim.machine_utilisation, sim.coordinator_utilisation or 0.0)
    return find_bottleneck(*design.cost_view(graph), busy=busy, machine=sim.bottleneck_machine,
                           near_peak=NEAR_PEAK_UTILISATION, source="simulated",
                           resource=sim.bottleneck, utilisation=float(sim.peak_utilisation))
