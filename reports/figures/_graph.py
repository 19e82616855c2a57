"""The state/processing graph of a design: nodes coloured by machine, cut edges marked.

Small graphs are drawn node by node in one column per machine (a last column for replicated
state), so a cut edge is any edge crossing columns. A window is a diamond in its owner's
column, right under it (it lives on its owner's partition: its edges are never cut). Past `max_nodes` the drawing would be
unreadable, so it shows one node per machine and the cut weight between machines instead.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from costmodel.errors import UserError, finite_number, is_a
from costmodel.workload import Workload
from reports.figures._common import (REPLICATED_COLOUR, WINDOW_MARKER, graph_for, label,
                                     machine_colours, new_axes, wrong_kind)


@dataclass
class _Node:
    name: str
    kind: str  # processing | state | window | machine
    machine: int | None  # None: replicated
    x: float
    y: float
    size: float


@dataclass
class _Edge:
    a: int
    b: int
    kind: str  # processing-processing | processing-state
    cut: bool
    weight: float


@dataclass
class _GraphInfo:
    nodes: list[_Node] = field(default_factory=list)
    edges: list[_Edge] = field(default_factory=list)
    machines: int = 1
    aggregated: bool = False
    columns_height: int = 1
    column_order: list[int] = field(default_factory=list)
    column_titles: bool = True


def _graph_info(design, graph, max_nodes: int) -> _GraphInfo:
    graph = graph_for(design, graph)
    # 40.0 draws as 40; an int is whole as it is (float() of 10**400 raised OverflowError)
    if not (finite_number(max_nodes) and max_nodes >= 1
            and (isinstance(max_nodes, numbers.Integral) or float(max_nodes).is_integer())):
        raise UserError(f"max_nodes must be an integer >= 1, got {max_nodes!r}")  # (a TypeError below)
    max_nodes = int(max_nodes)
    plain = graph.n_proc
    # each data-parallel lane a node on its machine, reaching its own fragments (`Design.cost_view`)
    graph, proc, state = design.cost_view(graph)
    c = graph.cost
    ppm = design.partitions_per_machine
    info = _GraphInfo(machines=design.machines)
    if graph.n_nodes > max_nodes:
        return _aggregated_info(info, graph, proc // ppm, state, ppm)
    owned = c.state_owner
    columns: dict[int | None, list[tuple[int, str]]] = {}  # (SP node or state index, kind)
    for i in range(graph.n_proc):
        columns.setdefault(int(proc[i] // ppm), []).append((i, "processing"))
        for j in np.flatnonzero(owned == i):  # its windows right under it
            columns[int(proc[i] // ppm)].append((int(j), "window"))
    for j in range(graph.n_state):
        if owned[j] < 0:
            m = None if state[j] < 0 else int(state[j] // ppm)
            columns.setdefault(m, []).append((j, "state"))
    index: dict[tuple[str, int], int] = {}
    load = c.proc_load / c.proc_load.max() if c.proc_load.size and c.proc_load.max() > 0 else None
    # columns in dataflow order (by each machine's earliest SP) so a pipeline reads left to right
    first = {m: min((k for k, kind in items if kind == "processing"), default=10**9)
             for m, items in columns.items() if m is not None}
    order = sorted(first, key=lambda m: (first[m], m))
    info.column_order = order
    for m in order + ([None] if None in columns else []):
        x = len(order) if m is None else order.index(m)
        for row, (k, kind) in enumerate(columns[m]):
            size = 1.0
            if kind == "processing" and load is not None:
                size = 0.6 + 0.8 * load[k]
            name = graph.proc_names[k] + (" (lane)" if k >= plain else "") if kind == "processing" else graph.state_names[k]
            index[("processing" if kind == "processing" else "state", k)] = len(info.nodes)
            info.nodes.append(_Node(name, kind, m, float(x), -float(row), size))
    info.columns_height = max(len(v) for v in columns.values())
    pmach = proc // ppm
    for p, s, w in zip(c.ps_proc, c.ps_state, c.ps_weight):
        sm = None if state[s] < 0 else state[s] // ppm
        info.edges.append(_Edge(index[("processing", int(p))], index[("state", int(s))], "processing-state",
                                sm is not None and sm != pmach[p], float(w)))
    for a, b, w in zip(c.pp_src, c.pp_dst, c.pp_weight):
        info.edges.append(_Edge(index[("processing", int(a))], index[("processing", int(b))],
                                "processing-processing", bool(pmach[a] != pmach[b]), float(w)))
    return info


CROWDED_RING = 12  # machines past which the ring's nodes shrink and their labels go outside it
RING_LABEL_AT = 1.25  # a crowded ring's labels start this far out (the nodes lie on radius 1)
WEIGHTS_SHOWN = 12  # cut edges between machines whose weight is written on them, the heaviest


def _aggregated_info(info: _GraphInfo, graph, pmach, state, ppm) -> _GraphInfo:
    """One node per machine; edges carry the summed weight of cut edges between machines."""
    c = graph.cost
    M = info.machines
    info.aggregated = True
    loads = np.bincount(pmach, weights=c.proc_load, minlength=M)
    n_proc = np.bincount(pmach, minlength=M)
    placed = state >= 0
    n_state = np.bincount(state[placed] // ppm, minlength=M)
    top = loads.max() if loads.max() > 0 else 1.0
    angle = np.linspace(0, 2 * np.pi, M, endpoint=False)
    sep = ": " if M > CROWDED_RING else "\n"  # one line outside a crowded ring (two ran into the next)
    for m in range(M):
        info.nodes.append(_Node(f"machine {m}{sep}{n_proc[m]} SPs, {n_state[m]} state", "machine", m,
                                float(np.cos(angle[m])), float(np.sin(angle[m])),
                                1.0 + 2.0 * loads[m] / top))
    between = np.zeros((M, M))
    smach = np.where(state >= 0, state // ppm, -1)
    for p, s, w in zip(c.ps_proc, c.ps_state, c.ps_weight):
        if smach[s] >= 0 and smach[s] != pmach[p]:
            between[min(pmach[p], smach[s]), max(pmach[p], smach[s])] += w
    for a, b, w in zip(c.pp_src, c.pp_dst, c.pp_weight):
        if pmach[a] != pmach[b]:
            between[min(pmach[a], pmach[b]), max(pmach[a], pmach[b])] += w
    for a, b in zip(*np.nonzero(between)):
        info.edges.append(_Edge(int(a), int(b), "cut", True, float(between[a, b])))
    info.columns_height = 3
    return info


def plot_graph(design, graph, ax=None, max_nodes: int = 80):
    """Draw the design's state/processing graph; returns the matplotlib Axes.

    Circles are SPs (bigger = more load), squares are state items, colours are machines
    (grey = replicated); red dashed edges are cut (a MOVE or a distributed access).
    """
    info = _graph_info(design, graph, max_nodes)
    ax = new_axes(ax, figsize=_figsize(info))
    _draw_graph(info, ax)
    return ax


def _figsize(info: _GraphInfo) -> tuple[float, float]:
    if info.aggregated:
        return (6.0, 5.0) if info.machines <= CROWDED_RING else (8.0, 7.5)
    columns = len(info.column_order) + (1 if any(n.machine is None for n in info.nodes) else 0)
    return (min(18.0, max(5.0, 2.0 * columns + 1)), min(14.0, max(3.0, 0.55 * info.columns_height + 1.2)))


def graph_figsize(design, graph, max_nodes: int = 80) -> tuple[float, float]:
    """The figure size `plot_graph` picks for this design (for callers that make the figure)."""
    return _figsize(_graph_info(design, graph, max_nodes))


def _draw_graph(info: _GraphInfo, ax) -> None:
    colours = machine_colours(info.machines)
    max_w = max((e.weight for e in info.edges), default=1.0) or 1.0
    # the heaviest cuts' weights only (their numbers piled up in the ring's centre)
    heaviest = sorted((e.weight for e in info.edges), reverse=True)
    weight_shown = heaviest[WEIGHTS_SHOWN - 1] if len(heaviest) > WEIGHTS_SHOWN else 0.0
    for e in info.edges:
        a, b = info.nodes[e.a], info.nodes[e.b]
        width = 0.6 + 2.4 * e.weight / max_w
        if e.cut:
            style = dict(color="#d62728", linestyle="--", linewidth=width, alpha=0.9)
        elif e.kind == "processing-processing":
            style = dict(color="#333333", linewidth=width, alpha=0.8)
        else:
            style = dict(color="#888888", linewidth=0.5 + width / 2, alpha=0.6)
        same_column = abs(a.x - b.x) < 1e-9
        if same_column:
            rad = 0.35 if abs(a.y - b.y) > 1.01 else 0.0
        else:  # bow edges along a row so they do not run through the nodes between
            rad = 0.25 if abs(a.y - b.y) < 1e-9 else 0.1
        ax.annotate("", xy=(b.x, b.y), xytext=(a.x, a.y), zorder=1,
                    arrowprops=dict(arrowstyle="-|>" if e.kind != "processing-state" else "-",
                                    connectionstyle=f"arc3,rad={rad}", shrinkA=9, shrinkB=9,
                                    mutation_scale=8, **style))
        if info.aggregated and e.weight >= weight_shown:
            ax.text((a.x + b.x) / 2, (a.y + b.y) / 2, f"{e.weight:g}", fontsize=7, color="#d62728",
                    ha="center", va="center", zorder=3)
    crowded = info.aggregated and info.machines > CROWDED_RING
    for n in info.nodes:
        colour = REPLICATED_COLOUR if n.machine is None else colours[n.machine]
        marker = {"state": "s", "window": WINDOW_MARKER}.get(n.kind, "o")
        size = 170 if n.kind != "machine" else 500 * min(1.0, CROWDED_RING / info.machines)
        ax.scatter([n.x], [n.y], s=size * n.size, c=[colour],
                   marker=marker, edgecolors="black", linewidths=0.6, zorder=2)
        if n.kind == "machine" and crowded:  # outside the ring, along its radius: below the
            # node, a label ran into the next machines' nodes once more than a dozen shared it,
            # and level labels still ran into each other at the ring's top and bottom
            degrees = float(np.degrees(np.arctan2(n.y, n.x)))
            left = abs(degrees) > 90  # (read left to right on either side)
            ax.text(n.x * RING_LABEL_AT, n.y * RING_LABEL_AT, label(n.name, 40), fontsize=6, zorder=4,
                    rotation=degrees - 180 if left and degrees > 0 else degrees + 180 if left else degrees,
                    rotation_mode="anchor", ha="right" if left else "left", va="center")
        elif n.kind == "machine":
            ax.text(n.x, n.y - 0.25, label(n.name, 40), fontsize=7, ha="center", va="top", zorder=4)
        else:  # SP names above the node (streams run along the row), state names to the right
            above = n.kind == "processing"
            ax.text(n.x + (0 if above else 0.1), n.y + (0.22 if above else 0), label(n.name, 22),
                    fontsize=7, ha="center" if above else "left", va="bottom" if above else "center",
                    zorder=4, bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.7))
    if not info.aggregated:
        xs = sorted({n.x for n in info.nodes})
        for x in xs if info.column_titles else []:
            i = int(x)
            replicated = i >= len(info.column_order)
            title = "replicated" if replicated else f"machine {info.column_order[i]}"
            ax.text(x, 0.75, title, fontsize=8, ha="center", fontweight="bold",
                    color=REPLICATED_COLOUR if replicated else colours[info.column_order[i]])
        ax.set_xlim(min(xs) - 0.6, max(xs) + 0.9)
        ax.set_ylim(-info.columns_height + 0.4, 1.1)
    else:
        reach = 2.4 if crowded else 1.6  # (the labels outside the ring)
        ax.set_xlim(-reach, reach)
        ax.set_ylim(-reach, reach)
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    legend = _legend_handles(info)
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(legend),
              fontsize=7, frameon=False)
    ax.set_title("state/processing graph" + (" (one node per machine)" if info.aggregated else ""),
                 fontsize=9)


LEGEND_MARKS = {"processing": ("o", "SP"), "state": ("s", "state"), "window": (WINDOW_MARKER, "window (with its SP)"),
                "machine": ("o", "machine (bigger: more load)")}


def _legend_handles(info: _GraphInfo) -> list:
    """A legend entry for each kind of node drawn, and for cut edges where there are any: a
    workload's dataflow (no design, its state left out past 40 SPs) listed "state" and "cut
    edge", and the ring of machines "SP" and "state", none of which they draw."""
    from matplotlib.lines import Line2D

    drawn = {n.kind for n in info.nodes}
    handles = [Line2D([], [], marker=marker, linestyle="", color="#777777", label=said)
               for kind, (marker, said) in LEGEND_MARKS.items() if kind in drawn]
    if any(e.cut for e in info.edges):
        handles.append(Line2D([], [], color="#d62728", linestyle="--", label="cut edge"))
    return handles


def _workload_info(workload) -> _GraphInfo:
    """A workload's dataflow before any design: SPs left to right in dataflow order, each
    window under its owner, each table under the first SP that touches it."""
    order = workload.topological_order()
    info = _GraphInfo(machines=1)
    index: dict[tuple[str, str], int] = {}
    placed: set[str] = set()
    rows = 1
    top = max((p.cost for p in workload.procedures), default=1.0) or 1.0
    for x, name in enumerate(order):
        proc = workload.procedure(name)
        index[("processing", name)] = len(info.nodes)
        info.nodes.append(_Node(name, "processing", 0, float(x), 0.0, 0.6 + 0.8 * proc.cost / top))
        row = 1
        for w in workload.windows_of(name):  # its windows right under it
            placed.add(w.name)
            index[("state", w.name)] = len(info.nodes)
            info.nodes.append(_Node(w.name, "window", 0, float(x), -float(row), 1.0))
            info.edges.append(_Edge(index[("processing", name)], index[("state", w.name)],
                                    "processing-state", False, workload.input_tuples(name)))
            row += 1
        for a in proc.accesses:
            if a.table not in placed:
                placed.add(a.table)
                index[("state", a.table)] = len(info.nodes)
                info.nodes.append(_Node(a.table, "state", 0, float(x), -float(row), 1.0))
                row += 1
        rows = max(rows, row)
    for t in workload.tables:  # tables nobody touches
        if t.name not in placed:
            index[("state", t.name)] = len(info.nodes)
            info.nodes.append(_Node(t.name, "state", 0, float(len(order)), -float(len(placed) % 8), 1.0))
            placed.add(t.name)
    for p in workload.procedures:
        for a in p.accesses:
            info.edges.append(_Edge(index[("processing", p.name)], index[("state", a.table)],
                                    "processing-state", False, a.expected_rows))
    for s in workload.streams:
        info.edges.append(_Edge(index[("processing", s.source)], index[("processing", s.target)],
                                "processing-processing", False, s.tuples))
    info.columns_height = rows
    info.column_order = list(range(len(order) + 1))
    info.column_titles = False
    return info


LARGE_DATAFLOW = 40  # SPs past which the dataflow is drawn by stream depth, its state left out
COLUMNS_A_BAND = 16  # columns side by side in one band of a large dataflow; the next ones wrap below
SPS_A_COLUMN = 12  # SPs stacked in one column; a depth with more takes columns side by side


def stream_depths(workload) -> dict[str, int]:
    """Each SP's depth in the dataflow: 0 for an SP no stream feeds, else one more than the
    deepest SP that feeds it."""
    depth: dict[str, int] = {}
    feeds: dict[str, list[str]] = {}
    for s in workload.streams:
        feeds.setdefault(s.target, []).append(s.source)
    for name in workload.topological_order():
        depth[name] = 1 + max((depth[f] for f in feeds.get(name, ())), default=-1)
    return depth


def _large_workload_info(workload) -> _GraphInfo:
    """A large dataflow's SPs by stream depth, left to right: each depth one column (or more,
    side by side, SPS_A_COLUMN SPs each), COLUMNS_A_BAND columns a band, the next band below.
    Why: one row of 100 SPs with their 165 tables under them was a strip in which no name could
    be read, and one column of a depth 34 SPs deep, a smear."""
    depth = stream_depths(workload)
    by_depth: dict[int, list[str]] = {}
    for name in workload.topological_order():
        by_depth.setdefault(depth[name], []).append(name)
    columns = [names[k:k + SPS_A_COLUMN] for d in sorted(by_depth)
               for names in [by_depth[d]] for k in range(0, len(names), SPS_A_COLUMN)]
    info = _GraphInfo(machines=1)
    index: dict[str, int] = {}
    top = max((p.cost for p in workload.procedures), default=1.0) or 1.0
    band_top = 0
    for band in range(0, len(columns), COLUMNS_A_BAND):
        these = columns[band:band + COLUMNS_A_BAND]
        for x, names in enumerate(these):
            for row, name in enumerate(names):
                index[name] = len(info.nodes)
                info.nodes.append(_Node(name, "processing", 0, float(x), -float(band_top + row),
                                        0.6 + 0.8 * workload.procedure(name).cost / top))
        band_top += max(map(len, these)) + 1
    for s in workload.streams:
        info.edges.append(_Edge(index[s.source], index[s.target], "processing-processing", False, s.tuples))
    info.columns_height = band_top
    info.column_order = list(range(min(COLUMNS_A_BAND, len(columns))))
    info.column_titles = False
    return info


def plot_workload(workload, ax=None):
    """The dataflow of a workload (no design yet): SPs in dataflow order, their tables below;
    past LARGE_DATAFLOW SPs, the SPs by stream depth alone (the title says what is left out)."""
    if not is_a(workload, Workload):
        raise wrong_kind("workload", "a costmodel Workload (advisor.load_workload(name) reads one)", workload)
    large = len(workload.procedures) > LARGE_DATAFLOW
    info = _large_workload_info(workload) if large else _workload_info(workload)
    columns = len(info.column_order) if large else len(workload.procedures)
    ax = new_axes(ax, figsize=(min(18.0, max(5.0, 1.1 * columns + 1)) if large else
                               min(18.0, max(5.0, 1.8 * columns + 1)),
                               min(14.0 if large else 12.0, max(3.0, 0.55 * info.columns_height + 1.2))))
    _draw_graph(info, ax)
    title = f"dataflow of {label(workload.name, 40)}"
    if large:
        state = len(workload.tables) + len(workload.windows)
        title += (f": {len(workload.procedures)} SPs by stream depth, left to right, "
                  f"{state} tables and windows left out (advisor.plot_graph draws them by machine)")
    ax.set_title(title, fontsize=9)
    return ax
