"""Shared bits of the figures: axes creation, machine colours, safe labels, PNG export."""
from __future__ import annotations

import base64
import io

import numpy as np

REPLICATED_COLOUR = "#9e9e9e"
WINDOW_MARKER = "D"  # a window: a diamond, next to its owner
WINDOW_HATCH = "xx"  # a window's memory in the stacked bars


def new_axes(ax=None, figsize=(6.4, 3.6)):
    """The given Axes, or a fresh one (pyplot, so notebooks show it inline)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def machine_colours(n: int) -> list:
    """One distinct colour per machine (tab10, then tab20, then a hue wheel)."""
    import matplotlib

    if n <= 10:
        cmap = matplotlib.colormaps["tab10"]
        return [cmap(i) for i in range(n)]
    if n <= 20:
        cmap = matplotlib.colormaps["tab20"]
        return [cmap(i) for i in range(n)]
    cmap = matplotlib.colormaps["hsv"]
    return [cmap(i / n) for i in range(n)]


def label(text: str, limit: int = 22) -> str:
    """A name as matplotlib draws it literally: `$` would start mathtext, long names clip."""
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    return text.replace("\\", "\\\\").replace("$", r"\$")


def figure_png_base64(fig, dpi: int = 96) -> str:
    """The figure as a base64 PNG (for `<img src="data:image/png;base64,...">`)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def detached_figure(figsize=(6.4, 3.6)):
    """A Figure with no pyplot state and no GUI backend (safe in servers and threads)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def as_array(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def graph_for(design, graph):
    """The graph on the design's cluster (the design may use another machine count)."""
    return graph.with_cluster(design.machines, design.partitions_per_machine)


def node_partitions(design, graph) -> tuple[np.ndarray, np.ndarray]:
    """(partition of each SP, of each state item) as the figures show them: a window sits on
    its owner's partition (where it lives, whatever a design says; a design may predate it)."""
    import numpy as np

    if all(n in design.state for n in graph.state_names):
        proc, state = design.arrays(graph)
    else:  # a design without the windows of the graph: place them below
        proc = np.array([design.procedures[n] for n in graph.proc_names], dtype=np.int64)
        state = np.array([-1 if design.state.get(n) is None else design.state[n]
                          for n in graph.state_names], dtype=np.int64)
    owner = getattr(graph.cost, "state_owner", None)
    if owner is not None and (owner >= 0).any():
        state = np.where(owner >= 0, proc[np.maximum(owner, 0)], state)
    return proc, state
