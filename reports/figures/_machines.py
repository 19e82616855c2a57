"""Load and memory per machine: stacked by SP (load) and by state item (memory), against
the machine's fair share of the load and its memory limit."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reports.figures._common import (WINDOW_HATCH, graph_for, label, machine_colours, new_axes,
                                     node_partitions)


@dataclass
class _StackInfo:
    machines: int
    segments: list[tuple[int, str, float, bool]]  # machine, item, amount, replicated copy
    totals: np.ndarray
    limit: np.ndarray | None  # per machine; None: no limit
    limit_label: str
    unit: str
    title: str
    hard_limit: bool = False  # memory is a hard limit; the fair share of load is not
    windows: frozenset[str] = frozenset()  # items drawn as windows (on their owner's machine)


def _load_info(design, graph) -> _StackInfo:
    graph = graph_for(design, graph)  # (first: it checks the design and the graph)
    graph, proc, _ = design.cost_view(graph)  # a data-parallel SP: a segment per lane
    c = graph.cost
    mach = proc // design.partitions_per_machine
    segments = [(int(mach[i]), n, float(c.proc_load[i]), False) for i, n in enumerate(graph.proc_names)]
    totals = np.bincount(mach, weights=c.proc_load, minlength=design.machines)
    share = c.capacity / c.capacity.sum() * c.proc_load.sum()
    return _StackInfo(design.machines, segments, totals, share, "fair share of the load at capacity",
                      "load (cost units per batch)", "load per machine")


def _memory_info(design, graph) -> _StackInfo:
    graph = graph_for(design, graph)
    _, state = node_partitions(design, graph)  # a window's bytes count on its owner's machine
    c = graph.cost
    ppm = design.partitions_per_machine
    mb = c.state_bytes / 2**20
    segments = []
    for j, n in enumerate(graph.state_names):
        if state[j] < 0:
            segments += [(m, n, float(mb[j]), True) for m in range(design.machines)]
        else:
            segments.append((int(state[j] // ppm), n, float(mb[j]), False))
    totals = np.zeros(design.machines)
    for m, _, x, _ in segments:
        totals[m] += x
    limit = None
    if c.memory_limit_bytes is not None:
        limit = np.full(design.machines, c.memory_limit_bytes / 2**20)
    return _StackInfo(design.machines, segments, totals, limit, "memory limit", "state (MiB)",
                      "memory per machine", hard_limit=True,
                      windows=frozenset(graph.window_owners()))


TICKS_AT_MOST = 16  # machine labels under the bars (24 of them, `m0m1m2...`, ran into each other)


def machine_ticks(machines: int) -> range:
    """The machines labelled under the bars: every one up to TICKS_AT_MOST, else every k-th."""
    return range(0, machines, -(-machines // TICKS_AT_MOST))


WIDEST_IN = 12.0  # 0.8 in a machine made 24 machines 21 in wide (a notebook shrank its text by half)


def stacks_figsize(machines: int) -> tuple[float, float]:
    """0.8 in a machine's bar, at most WIDEST_IN (past 16 machines every k-th is labelled)."""
    return min(WIDEST_IN, max(4.0, 0.8 * machines + 2)), 3.2


OFF_THE_SCALE = 4.0  # a memory limit this many times the fullest machine's state is said, not drawn


def plot_machine_load(design, graph, ax=None):
    """Processing load per machine, stacked by SP, against each machine's fair share."""
    info = _load_info(design, graph)  # (first: it checks the design and the graph)
    ax = new_axes(ax, figsize=stacks_figsize(design.machines))
    _draw_stacks(info, ax)
    return ax


def plot_machine_memory(design, graph, ax=None):
    """State size per machine, stacked by item (hatched = a replicated copy, cross-hatched = a
    window, on its owner's machine), against the limit."""
    info = _memory_info(design, graph)  # (first: it checks the design and the graph)
    ax = new_axes(ax, figsize=stacks_figsize(design.machines))
    _draw_stacks(info, ax)
    return ax


def _draw_stacks(info: _StackInfo, ax) -> None:
    colours = machine_colours(info.machines)
    bottom = np.zeros(info.machines)
    top = info.totals.max() if info.totals.size and info.totals.max() > 0 else 1.0
    for m, name, amount, replicated in info.segments:
        if amount <= 0:
            continue
        window = name in info.windows
        ax.bar(m, amount, bottom=bottom[m], color=colours[m], edgecolor="white", linewidth=0.8,
               hatch="//" if replicated else WINDOW_HATCH if window else None,
               alpha=0.55 if replicated else 0.9)
        if amount >= 0.08 * top and info.machines <= 16:
            # (narrower bars on more machines: a longer label spilled into the next bar)
            text = label(name, 14 if info.machines <= 4 else 9) + (" (window)" if window else "")
            ax.text(m, bottom[m] + amount / 2, text, ha="center", va="center", fontsize=6)
        bottom[m] += amount
    title = info.title
    limit = info.limit
    if limit is not None and info.hard_limit and float(np.min(limit)) > OFF_THE_SCALE * top:
        # a limit far above the state: drawn, it squeezed every bar flat against the axis
        title += f" (limit {float(np.min(limit)):,.0f} {info.unit.split('(')[-1].rstrip(')')} a machine, far above)"
        limit = None
    if limit is not None:
        xs = np.arange(info.machines)
        ax.hlines(limit, xs - 0.45, xs + 0.45, colors="#d62728", linestyles="--",
                  label=info.limit_label)
        if info.hard_limit:
            over = info.totals > limit * (1 + 1e-9)
            for m in np.flatnonzero(over):
                ax.text(m, info.totals[m], "over the limit", color="#d62728", ha="center",
                        va="bottom", fontsize=7)
        ax.legend(fontsize=7, loc="upper right", frameon=False)
        ymax = max(top, float(np.max(limit)))
    else:
        ymax = top
    ax.set_ylim(0, ymax * 1.15)
    ax.set_xticks(machine_ticks(info.machines))
    ax.set_xticklabels([f"m{m}" if info.machines <= 12 else str(m) for m in machine_ticks(info.machines)],
                       fontsize=7)
    ax.set_xlabel("machine", fontsize=8)
    ax.set_ylabel(info.unit, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
