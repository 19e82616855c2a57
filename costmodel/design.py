"""A design: where every procedure and every state item lives. Read back by every command.

Saved as `advisor.design/1` (design_file.py reads and writes it; design_view.py shows it):
`partition` is the global partition index and `machine = partition // partitions_per_machine`;
a replicated state item is `{"replicated": true}`. An optional `data_parallel` object names the SPs that run one lane
per partition holding a fragment of a table (SP -> table, see `advisor.data_parallel`); the
SP's own `partition` is then where its scheduler lives. A window is placed like a table, and must be on its owner's
partition: `arrays` (so evaluate, the engine and the simulator, which read a design through
it) refuses a design that puts it elsewhere.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from costmodel import REPLICATED, CostBreakdown, Weights, misplaced_owned_state, score
from costmodel.design_file import FORMAT, design_fields, design_to_dict, is_count, is_partition
from costmodel.design_view import assignment_frame, assignment_rows, design_html
from costmodel.errors import DesignError, is_a
from costmodel.files import atomic_write_text
from costmodel.user_files import read_user_json
from costmodel.graph import WorkloadGraph
from costmodel.weights import check_weights
from costmodel.workload import Workload, cluster_text
from costmodel.lane_graph import expand_lanes

__all__ = ["FORMAT", "Design", "check_comparable"]


@dataclass
class Design:
    workload: str
    machines: int
    partitions_per_machine: int
    procedures: dict[str, int]  # procedure -> global partition
    state: dict[str, int | None]  # state item -> global partition, None when replicated
    weights: Weights = field(default_factory=Weights)
    cost: CostBreakdown | None = None
    method: str = ""
    provenance: dict = field(default_factory=dict)
    data_parallel: dict[str, str] = field(default_factory=dict)  # SP -> table whose fragments are its lanes
    weights_stated: bool = True  # False: its file gave no weights (`weights` are then the fixed
    # defaults, and `advisor.api.evaluate` prices it with the weights `recommend` would use)

    def check_fields(self) -> None:
        """A design built in Python is held to what a design file may say (`design_fields`):
        a mistyped field is one DesignError line, the same in every verb (a partition 1.5 was
        truncated by evaluate, a TypeError in simulate, an IndexError in diff)."""
        for label, v in (("machines", self.machines), ("partitions_per_machine", self.partitions_per_machine)):
            if not is_count(v):
                raise DesignError(f"design: {label} must be an integer >= 1, got {v!r}")
        if not isinstance(self.procedures, dict) or not isinstance(self.state, dict):
            raise DesignError("design: procedures and state must be dicts of name -> partition")
        n = self.n_partitions
        for kind, placed in (("procedures", self.procedures), ("state", self.state)):
            for name, p in placed.items():
                if p is None and kind == "state":
                    continue  # replicated
                if not is_partition(p, n):
                    what = " (or None: replicated)" if kind == "state" else ""
                    raise DesignError(f"design: {kind}[{name!r}]: partition must be an integer in "
                                      f"0..{n - 1}{what}, got {p!r}")
        if not isinstance(self.weights, Weights):
            raise DesignError(f"design: weights must be a Weights, got {self.weights!r}")
        if self.cost is not None and not is_a(self.cost, CostBreakdown):  # (save and the notebook's table read it)
            raise DesignError(f"design: cost must be a CostBreakdown or None, got {self.cost!r:.80}")
        dp = self.data_parallel
        if not isinstance(dp, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in dp.items()):
            raise DesignError(f"design: data_parallel must be a dict of procedure -> table names, got {dp!r}")
        for label, value, kind in (("workload", self.workload, str), ("method", self.method, str),
                                   ("provenance", self.provenance, dict)):
            if not isinstance(value, kind):
                raise DesignError(f"design: {label} must be a {'name' if kind is str else 'dict'}, got {value!r}")

    # -- where things live -----------------------------------------------------------------
    @property
    def n_partitions(self) -> int:
        return self.machines * self.partitions_per_machine

    def machine_of_partition(self, partition: int) -> int:
        return partition // self.partitions_per_machine

    def procedure_machine(self, name: str) -> int:
        """The machine of SP `name`; one DesignError line for an SP the design does not place
        (a bare KeyError named neither the design nor its workload; no caller catches one)."""
        if not isinstance(name, str) or name not in self.procedures:
            raise DesignError(f"design of workload {self.workload!r} places no procedure {name!r}")
        return self.machine_of_partition(self.procedures[name])

    def is_replicated(self, state: str) -> bool:
        """Whether state item `state` is replicated; as `procedure_machine`, an item the design
        does not place is one DesignError line (it was False, as for any placed item)."""
        if not isinstance(state, str) or state not in self.state:
            raise DesignError(f"design of workload {self.workload!r} places no state item {state!r}")
        return self.state[state] is None

    @classmethod
    def from_arrays(cls, graph: WorkloadGraph, proc_part, state_part, weights: Weights,
                    method: str = "", provenance: dict | None = None) -> "Design":
        proc_part = np.asarray(proc_part, dtype=np.int64)
        state_part = np.asarray(state_part, dtype=np.int64)
        c = graph.cost
        return cls(
            workload=graph.name, machines=c.machines, partitions_per_machine=c.partitions_per_machine,
            procedures={n: int(p) for n, p in zip(graph.proc_names, proc_part)},
            state={n: (None if s == REPLICATED else int(s)) for n, s in zip(graph.state_names, state_part)},
            weights=weights, cost=score(c, proc_part, state_part, weights), method=method,
            provenance=dict(provenance or {}),
        )

    def arrays(self, graph: WorkloadGraph) -> tuple[np.ndarray, np.ndarray]:
        """The assignment as arrays in the graph's node order; checks the names match and
        that every window sits on its owner's partition. A window the design does not name
        sits there anyway (as `check_windows` and the simulator and engine take it)."""
        graph = _as_graph(graph)
        owner_of = graph.window_owners()
        missing = [n for n in graph.proc_names if n not in self.procedures]
        missing += [n for n in graph.state_names if n not in self.state and n not in owner_of]
        if missing:
            raise DesignError(unplaced_message(self, missing, graph.name))
        extra = [n for n in self.procedures if not graph.has_procedure(n)]
        extra += [n for n in self.state if not graph.has_state(n)]
        if extra:
            raise DesignError(f"design places {extra[0]!r}, which workload {graph.name!r} does not have")
        proc = np.array([self.procedures[n] for n in graph.proc_names], dtype=np.int64)
        placed = {**{w: self.procedures[o] for w, o in owner_of.items()}, **self.state}
        state = np.array([REPLICATED if placed[n] is None else placed[n]
                          for n in graph.state_names], dtype=np.int64)
        misplaced = misplaced_owned_state(graph.cost, proc, state)
        if misplaced.size:
            j = int(misplaced[0])
            owner = int(graph.cost.state_owner[j])
            raise _misplaced_window(graph.state_names[j], graph.proc_names[owner],
                                    int(proc[owner]), None if state[j] == REPLICATED else int(state[j]))
        return proc, state

    def check_windows(self, workload) -> None:
        """Refuse (DesignError, one line) a design that puts a window of `workload` anywhere
        but on its owner's partition; a window the design does not name sits there anyway.
        For readers that do not go through `arrays` (the simulator)."""
        for w in workload.windows:
            if w.name in self.state and w.procedure in self.procedures:
                part, owner_part = self.state[w.name], self.procedures[w.procedure]
                if part != owner_part:
                    raise _misplaced_window(w.name, w.procedure, owner_part, part)

    def without_gone(self, graph: WorkloadGraph) -> tuple["Design", list[str]]:
        """This design without the SPs and state items `graph` no longer has, and their names:
        a deployed design of a workload that dropped some still runs the rest, so a drift check
        and a migration judge it without them."""
        gone = ([n for n in self.procedures if not graph.has_procedure(n)]
                + [n for n in self.state if not graph.has_state(n)])
        if not gone:
            return self, []
        return replace(self, procedures={n: p for n, p in self.procedures.items() if graph.has_procedure(n)},
                       state={n: p for n, p in self.state.items() if graph.has_state(n)}), gone

    def with_windows(self, graph: WorkloadGraph) -> "Design":
        """This design naming every window of `graph` it leaves out, on its owner's partition
        (where it lives anyway: `arrays`), so two designs of one workload compare item by item."""
        unplaced = {w: self.procedures[o] for w, o in graph.window_owners().items()
                    if w not in self.state and o in self.procedures}
        return replace(self, state={**self.state, **unplaced}) if unplaced else self

    @property
    def recorded_seed(self) -> int:
        """The seed the advisor recommended this design with (`provenance["seed"]`), else 0:
        what predicting it again uses unless told otherwise, so `simulate`, `validate`,
        `diff`, `check` and `report` repeat `recommend`'s figure for it."""
        seed = self.provenance.get("seed")
        return seed if type(seed) is int and seed >= 0 else 0

    def seed_or_recorded(self, seed: int | None) -> int:
        """`seed` where one is given, else `recorded_seed`."""
        return self.recorded_seed if seed is None else seed

    @property
    def recorded_calibration(self) -> str | None:
        """What `recommend` predicted this design's figures for (the `Calibration.label` in
        `provenance["simulator"]`), None where nothing says."""
        simulator = self.provenance.get("simulator")
        label = simulator.get("calibration") if isinstance(simulator, dict) else None
        return label if isinstance(label, str) and label else None

    def calibration_note(self, label: str) -> str:
        """A line where predictions for `label` are not what the design's recorded figures were
        predicted for ("" where they are, or nothing was recorded): a design recommended with
        `--calibration` read 18,149 tuples/s there and 37,715 in `simulate` without it, unsaid."""
        recorded = self.recorded_calibration
        if recorded is None or recorded == label:
            return ""
        return (f"recommend's figures for this design are for '{recorded}', these for '{label}' "
                f"(give that calibration with --calibration to repeat them)")

    def cost_view(self, graph: WorkloadGraph) -> tuple[WorkloadGraph, np.ndarray, np.ndarray]:
        """(graph, SP partitions, state partitions) as the cost model scores this design: on
        its cluster, each data-parallel SP one node per lane (`costmodel.lane_graph`)."""
        graph = _as_graph(graph).with_cluster(self.machines, self.partitions_per_machine)
        return expand_lanes(self, graph, *self.arrays(graph))

    def score(self, graph: WorkloadGraph, weights: Weights | None = None) -> CostBreakdown:
        """The cost of this design on `graph`, put on the design's cluster."""
        check_weights(weights, DesignError)
        graph, proc, state = self.cost_view(graph)
        return score(graph.cost, proc, state, weights or self.weights)

    # -- the file (design_file.py) and the display (design_view.py) -----------------------
    def to_dict(self) -> dict:
        return design_to_dict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def save(self, path: str | Path) -> Path:
        self.check_fields()  # one changed in Python is written only as a file could hold it
        return atomic_write_text(path, self.to_json())

    @classmethod
    def from_dict(cls, data: dict, source: str = "<design>") -> "Design":
        return cls(**design_fields(data, source))

    @classmethod
    def load(cls, path: str | Path) -> "Design":
        return cls.from_dict(read_user_json(path, DesignError), str(path))

    def assignment_rows(self, graph: WorkloadGraph | None = None) -> list[dict]:
        return assignment_rows(self, self._placing(graph))

    def to_frame(self, graph: WorkloadGraph | None = None):
        self.check_fields()
        return assignment_frame(self, self._placing(graph))

    def _placing(self, graph) -> WorkloadGraph | None:
        """`graph` (or a Workload's) checked to be one this design places, as `arrays` checks
        it: the rows' windows are read from it (a Workload's text, or another workload's graph,
        failed there as an AttributeError or a KeyError)."""
        if graph is None:
            return None
        graph = _as_graph(graph)
        self.arrays(graph)
        return graph

    def __repr__(self) -> str:
        """One line, never raising (the dataclass's listed every SP and state item: 19 KB at
        100 SPs, in a print, a list or a traceback); `to_frame()` and the notebook's table show
        every place."""
        cluster = (cluster_text(self.machines, self.partitions_per_machine)
                   if is_count(self.machines) and is_count(self.partitions_per_machine)
                   else f"machines={self.machines!r:.40}, partitions_per_machine={self.partitions_per_machine!r:.40}")
        placed = (f", {len(self.procedures):,} SPs and {len(self.state):,} state items placed"
                  if isinstance(self.procedures, dict) and isinstance(self.state, dict) else "")
        method = f", method {self.method!r:.60}" if self.method else ""
        cost = f", cost {self.cost.total:.4f}" if isinstance(self.cost, CostBreakdown) else ""
        return f"Design({self.workload!r:.80} on {cluster}{placed}{method}{cost})"

    def _repr_html_(self) -> str:
        """Never raises (a notebook shows it): a design changed into one no file could hold
        renders as the one line that says why."""
        try:
            self.check_fields()
        except DesignError as exc:
            return f"<p><b>Not a valid design:</b> {html.escape(str(exc))}</p>"
        return design_html(self)


def _as_graph(graph) -> WorkloadGraph:
    """What a design is placed on, given from Python: a WorkloadGraph, or a Workload (its
    graph); anything else one DesignError line, not an AttributeError from inside."""
    if is_a(graph, WorkloadGraph):
        return graph
    if is_a(graph, Workload):
        return WorkloadGraph.from_workload(graph)
    raise DesignError(f"graph must be a WorkloadGraph or a Workload, got {graph!r:.80}")


def unplaced_message(design: Design, missing: list[str], workload: str, kind: str = "") -> str:
    """One line on a design that leaves nodes of a workload unplaced; where the design names
    another workload, that is said first (it is the likely mistake: the wrong file, or the
    wrong workload given beside it)."""
    other = f"this is a design of workload {design.workload!r}: " if design.workload != workload else ""
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return f"{other}design does not place {kind}{missing[0]!r} of workload {workload!r}{more}"


def check_same_deployment(current: Design, new: Design) -> None:
    """Two designs of one workload on one cluster, each named (which file is the other
    workload's is the likely mistake)."""
    if current.workload != new.workload:
        raise DesignError(f"the designs are of different workloads: the current one of {current.workload!r}, "
                          f"the new one of {new.workload!r}")
    if (current.machines, current.partitions_per_machine) != (new.machines, new.partitions_per_machine):
        raise DesignError(f"the designs are for different clusters: the current one for "
                          f"{cluster_text(current.machines, current.partitions_per_machine)}, the new one for "
                          f"{cluster_text(new.machines, new.partitions_per_machine)}")


def check_comparable(current: Design, new: Design) -> None:
    """Two designs of one workload on one cluster, placing the same SPs and state items."""
    check_same_deployment(current, new)
    for what, a, b in (("procedure", current.procedures, new.procedures), ("state item", current.state, new.state)):
        only = sorted(set(a) ^ set(b))
        if only:
            # (in the user's terms: diff's --current and --design; "the first" named neither)
            which = "the current design (--current)" if only[0] in a else "the new design (--design)"
            raise DesignError(f"only {which} places {what} {only[0]!r} (both must place "
                              f"the same {what}s, at the same granularity)")


def _misplaced_window(window: str, owner: str, owner_part: int, part: int | None) -> DesignError:
    where = "replicates it" if part is None else f"puts it on partition {part}"
    return DesignError(f"window {window!r} must be on the partition of its owner {owner!r} "
                       f"({owner_part}), but the design {where}")
