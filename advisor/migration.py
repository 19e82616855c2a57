"""What moving a deployment from one design to another takes: the SPs and state items that move,
the bytes, and an estimate of the time the copy needs.

Why relabel first: a design's machine and partition numbers are names, not places. A new
recommendation that is the deployed design with machines 0 and 1 swapped moves nothing once
its machines are renamed, so `align` renames the new design's machines, then each machine's
partitions, to keep as many bytes where they are as possible (an assignment problem, solved
exactly), before anything is counted.

The copy time is priced from the simulator's parameters (the reference cluster or a
calibration): every byte is serialised by the sender, crosses the network once when it leaves
its machine (each machine sends at its bandwidth, all machines at once) and is deserialised
by the receiver, and every row is written again. Machines copy in parallel, so the busiest
machine sets the time. It is an estimate of a bulk copy, not a measurement.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field, replace

import numpy as np

from costmodel.design import Design, check_comparable
from costmodel.granularity import base_table
from costmodel.graph import WorkloadGraph
from costmodel.workload import cluster_text

DEFAULT_ROW_BYTES = 100  # per row, where the workload does not say (statistics without tables)


def place_label(partition: int | None, machine: int | None) -> str:
    """`p3 (m1)`, or `replicated`."""
    return "replicated" if partition is None else f"p{partition} (m{machine})"


@dataclass(frozen=True)
class Move:
    """One SP or state item that changes place. A partition of None is `replicated`."""

    kind: str  # "procedure", "table", "fragment", "tuple" or "window"
    name: str
    from_partition: int | None
    to_partition: int | None
    from_machine: int | None
    to_machine: int | None
    bytes: float = 0.0  # what crosses from one place to another (a new replica: every copy)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "from_partition": self.from_partition,
                "to_partition": self.to_partition, "from_machine": self.from_machine,
                "to_machine": self.to_machine, "bytes": self.bytes}


@dataclass
class DesignDiff:
    """Everything that moves from `current` to `new` (`new` as aligned to `current`)."""

    current: Design
    new: Design
    moves: list[Move]
    copy_seconds: float
    relabelled: bool = False  # whether `new`'s machines or partitions were renamed
    predicted_tps: dict[str, float | None] = field(default_factory=dict)  # "current", "new"
    judged_by: str = ""  # what `predicted_tps` comes from: "simulator", "estimate" or "" (nothing)
    gone: list[str] = field(default_factory=list)  # what `current` placed that the workload dropped

    @property
    def bytes_moved(self) -> float:
        return float(sum(m.bytes for m in self.moves))

    @property
    def megabytes_moved(self) -> float:
        return self.bytes_moved / 1e6

    @property
    def state_moves(self) -> list[Move]:
        return [m for m in self.moves if m.kind != "procedure"]

    @property
    def procedure_moves(self) -> list[Move]:
        return [m for m in self.moves if m.kind == "procedure"]

    def summary(self) -> list[str]:
        """What moves, in two lines, and both designs' speed where they were judged."""
        c = self.current
        lines = [f"{c.workload}: {cluster_text(c.machines, c.partitions_per_machine)}"
                 + ("; the new design's machines and partitions renamed to move least (and predicted "
                    "as renamed: the partitions' order is the locks' order; `advisor diff --out FILE` "
                    "writes it so, as to deploy it)" if self.relabelled else ""),
                 f"moves: {len(self.procedure_moves)} SPs, {len(self.state_moves)} state items, "
                 f"{self.megabytes_moved:,.3f} MB; estimated copy {self.copy_seconds:.3f} s"]
        if self.gone:
            lines.insert(1, gone_line(self.gone))
        now, new = self.predicted_tps.get("current"), self.predicted_tps.get("new")
        if now is not None and new is not None:
            ratio = f" ({new / now:.2f}x)" if now else ""
            lines.append(f"{self.judged_by}: current {now:,.0f} tuples/s, new {new:,.0f} tuples/s{ratio}")
        return lines

    def __repr__(self) -> str:
        """One line (the dataclass's held both designs whole, with their provenance: 10 KB)."""
        figures = "".join(f", {k} {v:,.0f} tuples/s" for k, v in self.predicted_tps.items() if v is not None)
        return (f"DesignDiff({self.current.workload!r}: {len(self.moves)} moves, {self.megabytes_moved:,.3f} MB, "
                f"copy {self.copy_seconds:.3f} s{figures})")

    def to_frame(self):
        """One row per move: kind, name, from and to (partition, machine), bytes."""
        import pandas as pd

        cols = ["kind", "name", "from_partition", "from_machine", "to_partition", "to_machine", "bytes"]
        frame = pd.DataFrame([{c: m.to_dict().get(c) for c in cols} for m in self.moves], columns=cols)
        frame["bytes"] = frame["bytes"].astype(float)
        return frame

    def _repr_html_(self) -> str:
        """The summary and the moves (the first 50), every name escaped."""
        e = html.escape
        rows = "".join(f"<tr><td>{e(m.kind)}</td><td>{e(m.name)}</td><td>{e(place_label(m.from_partition, m.from_machine))}"
                       f"</td><td>{e(place_label(m.to_partition, m.to_machine))}</td>"
                       f"<td>{'-' if m.kind == 'procedure' else f'{m.bytes / 1e6:,.3f}'}</td></tr>"
                       for m in self.moves[:50])
        more = f"<p>... and {len(self.moves) - 50} more moves</p>" if len(self.moves) > 50 else ""
        return ("<br>".join(e(line) for line in self.summary())
                + (f"<table><tr><th>kind</th><th>name</th><th>from</th><th>to</th><th>MB</th></tr>{rows}</table>"
                   if self.moves else "") + more)

    def to_dict(self) -> dict:
        return {"workload": self.current.workload, "machines": self.current.machines,
                "partitions_per_machine": self.current.partitions_per_machine,
                "relabelled": self.relabelled, "bytes_moved": self.bytes_moved,
                "copy_seconds": self.copy_seconds, "predicted_tuples_per_s": dict(self.predicted_tps),
                "judged_by": self.judged_by, "gone": list(self.gone),
                "moves": [m.to_dict() for m in self.moves]}


def gone_line(gone: list[str]) -> str:
    """What a deployed design places that the workload no longer has, said where a comparison
    judges the design without it (`recommend --current`, `diff`)."""
    return (f"the workload no longer has {len(gone)} of what the deployed design places "
            f"({', '.join(gone[:5])}{' ...' if len(gone) > 5 else ''}): judged without them")


DENSE_PLACES = 2_048  # machines (or partitions of one) up to which a renaming is solved on every pair


def align(current: Design, new: Design, graph: WorkloadGraph) -> Design:
    """`new` with its machines, then each machine's partitions, renamed to keep the most bytes
    of state (then the most SPs) where `current` has them. The same design comes back when no
    renaming helps.

    Only the machines either design places something on are renamed within: on the others
    nothing stays or moves. Why: a loop over every machine, each renaming every partition,
    and a machines x machines matrix took 90 s and 7 GB for `diff` of a design on 30,000
    machines, and 100,000 were a MemoryError (an internal error)."""
    check_comparable(current, new)
    ppm = current.partitions_per_machine
    machine_keep = _kept(current, new, graph, lambda p: p // ppm, current.machines)
    machine_of = _assignment(machine_keep)  # new machine -> current machine
    moved = _renamed(new, {p: machine_of[p // ppm] * ppm + p % ppm for p in _used(new)})
    for m in sorted({p // ppm for p in _used(moved) | _used(current)}):  # within each machine, its partitions
        keep = _kept(current, moved, graph, lambda p, m=m: p % ppm if p // ppm == m else -1, ppm)
        local_of = _assignment(keep)
        moved = _renamed(moved, {p: m * ppm + local_of[p % ppm] for p in _used(moved) if p // ppm == m})
    return moved


def _used(design: Design) -> set[int]:
    """The partitions `design` places an SP or state on."""
    return {p for p in (*design.procedures.values(), *design.state.values()) if p is not None}


class _Kept(dict):
    """keep[(c, a)] of `_kept`, the pairs that keep anything, on `n` places a side."""

    def __init__(self, n: int):
        super().__init__()
        self.n = n


def _kept(current: Design, new: Design, graph: WorkloadGraph, where, n: int) -> np.ndarray | _Kept:
    """keep[c, a]: what stays put when place c of `new` becomes place a of `current`
    (bytes of state, plus a fraction of a byte per SP to break ties): a matrix up to
    DENSE_PLACES places, else only the pairs that keep anything (`_Kept`)."""
    keep = np.zeros((n, n)) if n <= DENSE_PLACES else _Kept(n)
    sizes = _state_bytes(graph)
    for name, p in new.state.items():
        q = current.state.get(name)
        if p is None or q is None:
            continue
        c, a = where(p), where(q)
        if c >= 0 and a >= 0:
            _add(keep, c, a, sizes.get(name, 0.0))
    for name, p in new.procedures.items():
        c, a = where(p), where(current.procedures[name])
        if c >= 0 and a >= 0:
            _add(keep, c, a, 1e-3)
    return keep


def _add(keep: np.ndarray | _Kept, c: int, a: int, value: float) -> None:
    if isinstance(keep, _Kept):
        keep[(c, a)] = keep.get((c, a), 0.0) + value
    else:
        keep[c, a] += value


def _assignment(keep: np.ndarray | _Kept) -> list[int] | dict[int, int]:
    """New place -> current place: the renaming that keeps the most, or none (every place its
    own) where none keeps more. Past DENSE_PLACES, the renaming of the places that keep
    anything, solved on those alone, as a dict (a place not in it keeps its name)."""
    from scipy.optimize import linear_sum_assignment

    if isinstance(keep, _Kept):
        return _sparse_assignment(keep)
    rows, cols = linear_sum_assignment(keep, maximize=True)
    out = list(range(keep.shape[0]))
    for r, c in zip(rows, cols):
        out[int(r)] = int(c)
    if sum(keep[r, out[r]] for r in range(len(out))) <= sum(keep[r, r] for r in range(len(out))) + 1e-12:
        return list(range(keep.shape[0]))  # renaming gains nothing: keep the names it has
    return out


class _Renaming(dict):
    """A renaming of some places; any other keeps its name."""

    def __missing__(self, place: int) -> int:
        return place


def _sparse_assignment(keep: _Kept) -> _Renaming:
    """`_assignment` solved on the places that keep anything: those renamed as the matrix of
    them says, and the places they free taken by the places renamed onto them, so the renaming
    stays one to one."""
    from scipy.optimize import linear_sum_assignment

    rows = sorted({c for c, _ in keep})
    cols = sorted({a for _, a in keep})
    row_of, col_of = {c: k for k, c in enumerate(rows)}, {a: k for k, a in enumerate(cols)}
    matrix = np.zeros((len(rows), len(cols)))
    for (c, a), value in keep.items():
        matrix[row_of[c], col_of[a]] = value
    chosen = {rows[r]: cols[a] for r, a in zip(*linear_sum_assignment(matrix, maximize=True))}
    if sum(keep.get((c, a), 0.0) for c, a in chosen.items()) <= sum(keep.get((c, c), 0.0) for c in rows) + 1e-12:
        return _Renaming()  # renaming gains nothing: keep the names it has
    out = _Renaming(chosen)
    taken = set(chosen.values())
    freed = sorted(set(chosen) - taken)  # places renamed away whose name no one took
    for place in sorted(taken - set(chosen)):  # a place whose name was taken: it takes a freed one
        out[place] = freed.pop(0)
    return out


def _renamed(design: Design, partition_of: dict[int, int]) -> Design:
    """`design` with each partition p renamed partition_of[p] (one not in it keeps its name)."""
    if all(k == v for k, v in partition_of.items()):
        return design
    return replace(design,
                   procedures={n: partition_of.get(p, p) for n, p in design.procedures.items()},
                   state={n: (None if p is None else partition_of.get(p, p)) for n, p in design.state.items()},
                   provenance={**design.provenance, "relabelled_to_match": True})


def _state_bytes(graph: WorkloadGraph) -> dict[str, float]:
    return dict(zip(graph.state_names, map(float, graph.cost.state_bytes)))


def moves_between(current: Design, new: Design, graph: WorkloadGraph) -> list[Move]:
    """The SPs and state items whose place differs (no renaming: see `align`), SPs first,
    each list in name order. A state item that becomes replicated copies its bytes to every
    other machine; one that stops being replicated keeps the copy already there."""
    check_comparable(current, new)
    sizes = graph.cost.state_bytes
    machine = current.machine_of_partition
    moves = [Move("procedure", n, p, new.procedures[n], machine(p), machine(new.procedures[n]))
             for n, p in sorted(current.procedures.items()) if new.procedures[n] != p]
    for name in sorted(current.state):
        p, q = current.state[name], new.state[name]
        if p == q:
            continue
        j = graph.state_index(name)
        size = float(sizes[j])
        copied = 0.0 if q is None and p is None else size * (current.machines - 1) if q is None else (
            0.0 if p is None else size)
        moves.append(Move(graph.state_kind(j), name, p, q, None if p is None else machine(p),
                          None if q is None else machine(q), copied))
    return moves


def copy_seconds(moves: list[Move], design: Design, params, row_bytes: dict[str, float] | None = None) -> float:
    """Estimated seconds to copy the moved state (module docstring): the busiest machine's
    serialising, sending and writing, plus one network latency."""
    state = [m for m in moves if m.kind != "procedure" and m.bytes > 0]
    if not state:
        return 0.0
    cpu = np.zeros(design.machines)
    wire = np.zeros(design.machines)
    for m in state:
        rows = m.bytes / (row_bytes or {}).get(m.name, DEFAULT_ROW_BYTES)
        targets = ([m.to_machine] if m.to_machine is not None
                   else [k for k in range(design.machines) if k != m.from_machine])
        share = m.bytes / len(targets)
        for t in targets:
            cpu[m.from_machine] += share * params.ser_byte_s + rows / len(targets) * params.row_read_s
            cpu[t] += share * params.ser_byte_s + rows / len(targets) * params.row_write_s
            if t != m.from_machine:
                wire[m.from_machine] += share / params.bandwidth_Bps
    crossed = any(m.to_machine != m.from_machine for m in state)
    return float(max(cpu.max(), wire.max()) + (params.net_latency_s if crossed else params.local_latency_s))


def row_bytes_of(workload) -> dict[str, float]:
    """Bytes per row of each table and per tuple of each window a workload names."""
    if workload is None:
        return {}
    return {**{t.name: float(t.row_bytes) for t in workload.tables},
            **{w.name: float(w.tuple_bytes) for w in workload.windows}}


def diff(current: Design, new: Design, graph: WorkloadGraph, params, workload=None,
         relabel: bool = True) -> DesignDiff:
    """What moving from `current` to `new` takes (`new` renamed first unless `relabel` is False)."""
    aligned = align(current, new, graph) if relabel else new
    moves = moves_between(current, aligned, graph)
    rows = row_bytes_of(workload)
    # an item's table read against the workload's names (a spec's `Trade@Type@7` is not `Trade`'s)
    per_item = {m.name: rows.get(m.name, rows.get(base_table(m.name, rows), DEFAULT_ROW_BYTES)) for m in moves}
    return DesignDiff(current, aligned, moves, copy_seconds(moves, current, params, per_item),
                      relabelled=aligned is not new)

