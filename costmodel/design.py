"""A design: where every procedure and every state item lives. Read back by every command.

JSON format `advisor.design/1`: `partition` is the global partition index and
`machine = partition // partitions_per_machine`; a replicated state item is
`{"replicated": true}`. An optional `data_parallel` object names the SPs that run one lane
per partition holding a fragment of a table (SP -> table, see `advisor.data_parallel`); the
SP's own `partition` is then where its scheduler lives. A window is placed like a table, and must be on its owner's
partition: `arrays` (so evaluate, the engine and the simulator, which read a design through
it) refuses a design that puts it elsewhere.
"""
from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from costmodel import REPLICATED, CostBreakdown, Weights, misplaced_owned_state, score
from costmodel.files import atomic_write_text, read_user_json
from costmodel.errors import DesignError
from costmodel.graph import WorkloadGraph
from costmodel.workload import MAX_MACHINES, MAX_PARTITIONS, MAX_PARTITIONS_PER_MACHINE

FORMAT = "advisor.design/1"


_COST_NUMBERS = ("state_colocation", "processing_colocation", "load_balance", "total",
                 "partition_load_balance", "machines_used")


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

    # -- placement helpers ----------------------------------------------------------------
    @property
    def n_partitions(self) -> int:
        return self.machines * self.partitions_per_machine

    def machine_of_partition(self, partition: int) -> int:
        return partition // self.partitions_per_machine

    def procedure_machine(self, name: str) -> int:
        return self.machine_of_partition(self.procedures[name])

    def is_replicated(self, state: str) -> bool:
        return self.state.get(state, 0) is None

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
        that every window sits on its owner's partition."""
        missing = [n for n in graph.proc_names if n not in self.procedures]
        missing += [n for n in graph.state_names if n not in self.state]
        if missing:
            raise DesignError(f"design does not place {missing[0]!r} of workload {graph.name!r}"
                              + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        extra = [n for n in self.procedures if n not in graph._proc_index]
        extra += [n for n in self.state if n not in graph._state_index]
        if extra:
            raise DesignError(f"design places {extra[0]!r}, which workload {graph.name!r} does not have")
        proc = np.array([self.procedures[n] for n in graph.proc_names], dtype=np.int64)
        state = np.array([REPLICATED if self.state[n] is None else self.state[n]
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

    def score(self, graph: WorkloadGraph, weights: Weights | None = None) -> CostBreakdown:
        """The cost of this design on `graph`, put on the design's cluster."""
        graph = graph.with_cluster(self.machines, self.partitions_per_machine)
        proc, state = self.arrays(graph)
        return score(graph.cost, proc, state, weights or self.weights)

    # -- JSON -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        ppm = self.partitions_per_machine

        def place(p):
            return {"replicated": True} if p is None else {"machine": p // ppm, "partition": p}

        return {
            "format": FORMAT,
            "workload": self.workload,
            "cluster": {"machines": self.machines, "partitions_per_machine": ppm},
            "weights": self.weights.to_dict(),
            "method": self.method,
            "procedures": {n: place(p) for n, p in self.procedures.items()},
            "state": {n: place(p) for n, p in self.state.items()},
            "cost": self.cost.to_dict() if self.cost is not None else None,
            "provenance": self.provenance,
        } | ({"data_parallel": dict(self.data_parallel)} if self.data_parallel else {})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def save(self, path: str | Path) -> Path:
        return atomic_write_text(path, self.to_json())

    @classmethod
    def from_dict(cls, data: dict, source: str = "<design>") -> "Design":
        def fail(problem: str) -> DesignError:
            return DesignError(f"{source}: {problem}")

        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise fail(f"not a design file (expected \"format\": \"{FORMAT}\")")
        try:
            cluster = data["cluster"]
            machines = cluster["machines"]
            ppm = cluster["partitions_per_machine"]
        except (KeyError, TypeError):
            raise fail("missing cluster.machines or cluster.partitions_per_machine") from None
        for label, v in (("cluster.machines", machines), ("cluster.partitions_per_machine", ppm)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise fail(f"{label} must be an integer >= 1, got {v!r}")
        n = machines * ppm
        if machines > MAX_MACHINES or ppm > MAX_PARTITIONS_PER_MACHINE or n > MAX_PARTITIONS:
            raise fail(f"cluster: at most {MAX_MACHINES:,} machines, {MAX_PARTITIONS_PER_MACHINE:,} partitions "
                       f"per machine and {MAX_PARTITIONS:,} partitions in all, got {machines} x {ppm}")

        def placement(kind: str, name: str, entry) -> int | None:
            where = f"{kind}.{name}"
            if not isinstance(entry, dict):
                raise fail(f"{where}: must be an object with \"partition\" or \"replicated\"")
            if entry.get("replicated") is True:
                if kind == "procedures":
                    raise fail(f"{where}: a procedure cannot be replicated")
                return None
            p = entry.get("partition")
            if p is None and "machine" in entry and ppm == 1:
                p = entry["machine"]
            if not isinstance(p, int) or isinstance(p, bool) or not 0 <= p < n:
                raise fail(f"{where}: partition must be an integer in 0..{n - 1}, got {p!r}")
            m = entry.get("machine")
            if m is not None and (isinstance(m, bool) or not isinstance(m, int)):
                raise fail(f"{where}: machine must be an integer, got {m!r}")
            if m is not None and m != p // ppm:
                raise fail(f"{where}: machine {m!r} does not hold partition {p} "
                           f"({ppm} partitions per machine)")
            return p

        procs, state = data.get("procedures"), data.get("state")
        if not isinstance(procs, dict) or not isinstance(state, dict):
            raise fail("\"procedures\" and \"state\" must be objects")
        try:
            weights = Weights.from_dict(data.get("weights") or {})
        except (TypeError, ValueError) as exc:
            raise fail(f"weights: {exc}") from None
        dp = data.get("data_parallel") or {}
        if not isinstance(dp, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in dp.items()):
            raise fail("data_parallel must be an object of procedure -> table names")
        for proc in dp:
            if proc not in procs:
                raise fail(f"data_parallel.{proc}: not a procedure of the design")
        for key in ("workload", "method"):
            if not isinstance(data.get(key, ""), str):
                raise fail(f"{key} must be a name, got {data[key]!r}")
        cost = data.get("cost")
        if cost is not None and not isinstance(cost, dict):
            raise fail(f"cost must be an object, got {cost!r}")
        for key, v in (cost or {}).items():
            if key in _COST_NUMBERS and (isinstance(v, bool) or not isinstance(v, (int, float))
                                         or not math.isfinite(v)):
                raise fail(f"cost.{key} must be a finite number, got {v!r}")
        breakdown = None
        if isinstance(cost, dict) and all(k in cost for k in ("state_colocation", "processing_colocation", "load_balance", "total")):
            breakdown = CostBreakdown(float(cost["state_colocation"]), float(cost["processing_colocation"]),
                                      float(cost["load_balance"]), float(cost["total"]), weights,
                                      tuple(cost.get("memory_overflow_mb", ())),
                                      float(cost.get("partition_load_balance", 0.0)),
                                      int(cost.get("machines_used", 0)))
        return cls(
            workload=str(data.get("workload", "")), machines=machines, partitions_per_machine=ppm,
            procedures={k: placement("procedures", k, v) for k, v in procs.items()},
            state={k: placement("state", k, v) for k, v in state.items()},
            weights=weights, cost=breakdown, method=str(data.get("method", "")),
            provenance=data.get("provenance") or {}, data_parallel=dict(dp),
            weights_stated=bool(data.get("weights")),
        )

    @classmethod
    def load(cls, path: str | Path) -> "Design":
        return cls.from_dict(read_user_json(path, DesignError), str(path))

    # -- notebook display -----------------------------------------------------------------
    def assignment_rows(self, graph: WorkloadGraph | None = None) -> list[dict]:
        """One dict per SP, state item and window: kind, name, machine, partition, replicated,
        owner (the SP a window belongs to, else None). A window is listed on its owner's
        partition, where it lives; without the graph windows cannot be told from tables and
        are listed as the design has them."""
        ppm = self.partitions_per_machine
        owners = graph.window_owners() if graph is not None else {}
        rows = [{"kind": "procedure", "name": n, "machine": p // ppm, "partition": p,
                 "replicated": False, "owner": None} for n, p in self.procedures.items()]
        for n, p in self.state.items():
            if n in owners:
                continue
            rows.append({"kind": "state", "name": n, "machine": None if p is None else p // ppm,
                         "partition": p, "replicated": p is None, "owner": None})
        for n, owner in owners.items():
            p = self.procedures[owner]
            rows.append({"kind": "window", "name": n, "machine": p // ppm, "partition": p,
                         "replicated": False, "owner": owner})
        return rows

    def to_frame(self, graph: WorkloadGraph | None = None):
        """`assignment_rows` as a pandas DataFrame (without the graph: no "owner" column)."""
        import pandas as pd

        cols = ["name", "kind", "partition", "machine", "replicated"] + (["owner"] if graph is not None else [])
        return pd.DataFrame([{c: r[c] for c in cols} for r in self.assignment_rows(graph)], columns=cols)

    def _repr_html_(self) -> str:
        e = html.escape
        cost = "" if self.cost is None else self.cost._repr_html_()
        by_machine: dict[int, list[str]] = {}
        for n, p in self.procedures.items():
            by_machine.setdefault(p // self.partitions_per_machine, []).append(f"<b>{e(n)}</b>@p{p}")
        for n, p in self.state.items():
            if p is not None:
                by_machine.setdefault(p // self.partitions_per_machine, []).append(f"{e(n)}@p{p}")
        repl = [e(n) for n, p in self.state.items() if p is None]
        rows = "".join(f"<tr><td>machine {m}</td><td>{', '.join(v)}</td></tr>"
                       for m, v in sorted(by_machine.items()))
        return (f"<b>Design for {e(self.workload)}</b> ({self.machines} machines x "
                f"{self.partitions_per_machine} partitions, {e(self.method)}): {cost}"
                f"<table>{rows}</table>" + (f"replicated: {', '.join(repl)}" if repl else ""))


def check_comparable(current: Design, new: Design) -> None:
    """Two designs of one workload on one cluster, placing the same SPs and state items."""
    if current.workload != new.workload:
        raise DesignError(f"the designs are of different workloads: {current.workload!r} and {new.workload!r}")
    if (current.machines, current.partitions_per_machine) != (new.machines, new.partitions_per_machine):
        raise DesignError(f"the designs are for different clusters: {current.machines} x "
                          f"{current.partitions_per_machine} and {new.machines} x "
                          f"{new.partitions_per_machine} partitions")
    for what, a, b in (("procedure", current.procedures, new.procedures), ("state item", current.state, new.state)):
        only = sorted(set(a) ^ set(b))
        if only:
            which = "the first" if only[0] in a else "the second"
            raise DesignError(f"only {which} design places {what} {only[0]!r} (both must place "
                              f"the same {what}s, at the same granularity)")


def _misplaced_window(window: str, owner: str, owner_part: int, part: int | None) -> DesignError:
    where = "replicates it" if part is None else f"puts it on partition {part}"
    return DesignError(f"window {window!r} must be on the partition of its owner {owner!r} "
                       f"({owner_part}), but the design {where}")
