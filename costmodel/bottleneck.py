"""What limits a design: the busiest machine, the hottest SP there, and the heaviest cut edges.

The one bottleneck record of the project (`Bottleneck`), whatever says which machine is the
busiest: the cost model (load relative to capacity, `cost_model_bottleneck`), the simulator
(`reports.bottleneck.simulated_bottleneck`) or a validation run on the engine and the simulator
(`reports.validation.measured_bottleneck`). Why one: the CLI, the notebook, the report, the
suggestions and the validation file all show the same thing, so they read the same fields.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from costmodel.model import REPLICATED, machine_loads
from costmodel.problem import CostGraph

if TYPE_CHECKING:  # plain data beside the model; only their methods are called here
    from costmodel.design import Design
    from costmodel.graph import WorkloadGraph

NEAR_PEAK = 0.95  # a machine within 5 % of the peak relative load is saturated too
SOURCES = ("cost model", "simulated", "measured")
EVIDENCE_KEYS = ("machine", "move", "distributed_txn")  # the validation file's entries, in order


@dataclass(frozen=True)
class Bottleneck:
    """What limits one design, in the graph's names.

    `source` says where the busiest machine comes from: "cost model" (load relative to
    capacity), "simulated" (the simulator's busiest machine) or "measured" (the engine's).
    `machine_load_share`: that machine's share of all SP load; `hot_procedure`: the SP with
    the most load on it; `saturated`: the hottest SP of every machine near the peak, busiest
    first; `move`: (source SP, target SP, tuples per batch) of the heaviest stream edge cut
    between partitions; `distributed_access`: (SP, state item, rows per batch) of the heaviest
    state edge cut between partitions; `resource`: the busiest resource in words and
    `utilisation` how busy it is (None for the cost model, which has no time). `evidence`: what
    a validation saw, as its file carries it (`EVIDENCE_KEYS`, each an object with a `text`
    line); empty where nothing was validated.
    """

    source: str
    machine: int
    machine_load_share: float
    hot_procedure: str | None
    saturated: tuple[str, ...] = ()
    move: tuple[str, str, float] | None = None
    distributed_access: tuple[str, str, float] | None = None
    resource: str = ""
    utilisation: float | None = None
    evidence: dict = field(default_factory=dict)
    # the cut edge above joins partitions of one machine: the cost model's terms, which count
    # machines, do not see it (a MOVE there is a local message; an access, a local 2PC)
    move_on_one_machine: bool = False
    access_on_one_machine: bool = False
    # how busy `machine` is by its source's own measure (a simulation's utilisation of its
    # partitions); None for the cost model, whose `machine_load_share` says it
    machine_busy: float | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"a bottleneck's source is one of {', '.join(SOURCES)}, got {self.source!r}")

    def describe(self) -> list[str]:
        """One line per finding: a validation's own lines where there are some, else the
        busiest resource (where timed), the busiest machine and the heaviest cut edges."""
        if self.evidence:
            return [self.evidence[k]["text"] for k in EVIDENCE_KEYS if self.evidence.get(k)]
        out = []
        if self.utilisation is not None:
            out.append(f"busiest resource: {busy_text(self.resource, self.utilisation)}")
        # (a simulated machine may be the busiest with no SP load of its own: its state's
        # remote accesses and the MOVEs it receives; its cost-model share then said 0 %)
        how = (f"its partitions {self.machine_busy:.0%} busy in the simulator" if self.machine_busy is not None
               else f"{self.machine_load_share:.0%} of all load, cost model")
        out.append(f"most loaded machine: {self.machine} ({how})"
                   + (f", hottest SP there: {self.hot_procedure}" if self.hot_procedure else ""))
        local = ", between partitions of one machine"
        if self.move:
            out.append(f"most expensive MOVE: {self.move[0]} -> {self.move[1]} ({self.move[2]:g} tuples/batch"
                       + (local if self.move_on_one_machine else "") + ")")
        if self.distributed_access:
            out.append(f"most frequent distributed access: {self.distributed_access[0]} -> "
                       f"{self.distributed_access[1]} ({self.distributed_access[2]:g} rows/batch"
                       + (local if self.access_on_one_machine else "") + ")")
        return out


def busy_text(resource: str, utilisation: float) -> str:
    """"partition 2 (99% busy)": the busiest resource as `simulate` and the report both word it."""
    return f"{resource} ({utilisation:.0%} busy)"


def hottest_procedure(graph: CostGraph, proc_part: np.ndarray, machine: int) -> int | None:
    """The SP with the most load on `machine` (None when it holds no SP)."""
    here = np.flatnonzero(np.asarray(proc_part) // graph.partitions_per_machine == machine)
    return int(here[np.argmax(graph.proc_load[here])]) if here.size else None


def find_bottleneck(graph: WorkloadGraph, proc_part, state_part, *, busy=None,
                    machine: int | None = None, near_peak: float = NEAR_PEAK,
                    source: str = "cost model", resource: str | None = None,
                    utilisation: float | None = None) -> Bottleneck:
    """The bottleneck of a design given as arrays on `graph`'s cluster.

    `busy` is how busy each machine is (default: the cost model's load relative to capacity);
    the busiest (or `machine`, where the caller knows it) is the bottleneck, and every machine
    within `near_peak` of the peak is saturated too. The cut edges are always the cost model's.
    """
    c = graph.cost
    proc = np.asarray(proc_part, dtype=np.int64)
    state = np.asarray(state_part, dtype=np.int64)
    loads = machine_loads(c, proc)
    total = loads.sum()
    busy = loads / (c.capacity / c.capacity.mean()) if busy is None else np.asarray(busy, dtype=float)
    if machine is None:
        machine = int(np.argmax(busy))
    near = [int(m) for m in sorted(np.flatnonzero(busy >= near_peak * busy.max()), key=lambda m: -busy[m])]
    hottest = [hottest_procedure(c, proc, m) for m in near]
    saturated = tuple(dict.fromkeys(graph.proc_names[p] for p in hottest if p is not None))
    hot = hottest_procedure(c, proc, machine)
    ppm = c.partitions_per_machine
    move, move_local = None, False
    if c.pp_weight.size:
        cut = proc[c.pp_src] != proc[c.pp_dst]
        if cut.any():
            e = int(np.flatnonzero(cut)[np.argmax(c.pp_weight[cut])])
            move = (graph.proc_names[c.pp_src[e]], graph.proc_names[c.pp_dst[e]], float(c.pp_weight[e]))
            move_local = bool(proc[c.pp_src[e]] // ppm == proc[c.pp_dst[e]] // ppm)
    dist, dist_local = None, False
    if c.ps_weight.size:
        where = state[c.ps_state]
        cut = (where != REPLICATED) & (proc[c.ps_proc] != where)
        if cut.any():
            e = int(np.flatnonzero(cut)[np.argmax(c.ps_weight[cut])])
            dist = (graph.proc_names[c.ps_proc[e]], graph.state_names[c.ps_state[e]], float(c.ps_weight[e]))
            dist_local = bool(proc[c.ps_proc[e]] // ppm == state[c.ps_state[e]] // ppm)
    if resource is None:
        resource = f"machine {machine} (cost model: largest load relative to capacity)"
    return Bottleneck(source, machine, float(loads[machine] / total) if total > 0 else 0.0,
                      None if hot is None else graph.proc_names[hot], saturated, move, dist,
                      resource, utilisation, move_on_one_machine=move_local, access_on_one_machine=dist_local,
                      machine_busy=float(busy[machine]) if source == "simulated" else None)


def cost_model_bottleneck(design: Design, graph: WorkloadGraph) -> Bottleneck:
    """The cost model's bottleneck of `design` on `graph` (put on the design's cluster, each
    data-parallel lane on its own machine: `Design.cost_view`)."""
    return find_bottleneck(*design.cost_view(graph))
