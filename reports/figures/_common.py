"""Shared bits of the figures: axes creation, machine colours, safe labels, PNG export."""
from __future__ import annotations

import base64
import io

import numpy as np

from costmodel.design import Design
from costmodel.errors import UserError, is_a
from costmodel.graph import WorkloadGraph
from costmodel.text import visible

REPLICATED_COLOUR = "#9e9e9e"
WINDOW_MARKER = "D"  # a window: a diamond, next to its owner
WINDOW_HATCH = "xx"  # a window's memory in the stacked bars


def wrong_kind(name: str, expected: str, value) -> UserError:
    """One line for a figure given the wrong object (a workload's name where the Workload goes,
    a string as `ax`): deep in the drawing it was an AttributeError naming neither."""
    got = repr(value) if isinstance(value, str) and len(value) <= 60 else type(value).__name__
    return UserError(f"{name} must be {expected}, got {got}")


def new_axes(ax=None, figsize=(6.4, 3.6)):
    """The given Axes, or a fresh one (pyplot, so notebooks show it inline), laid out to keep
    its labels and a legend below the axes inside the figure: `ax.figure.savefig(path)` cut
    them off (the notebook's inline PNG is trimmed to what is drawn and hid it)."""
    if ax is not None:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise wrong_kind("ax", "a matplotlib Axes (or None for a new figure)", ax)
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


# the greys of each qualitative map, which read as replicated state (REPLICATED_COLOUR)
_GREYS = {"tab10": (7,), "tab20": (14, 15), "tab20b": (), "tab20c": (16, 17, 18, 19)}


def machine_colours(n: int) -> list:
    """One distinct colour per machine, never a grey: tab10, then tab20, then up to 54 from
    tab20, tab20b and tab20c together, then a hue wheel short of a full turn. Why not the wheel
    from 19 machines: a full turn made the first and last machines the same red (24 machines:
    0 and 23), and neighbours on it differ little."""
    import matplotlib

    def qualitative(*names: str) -> list:
        return [matplotlib.colormaps[m](i) for m in names for i in range(matplotlib.colormaps[m].N)
                if i not in _GREYS[m]]

    for names in (("tab10",), ("tab20",), ("tab20", "tab20b", "tab20c")):
        colours = qualitative(*names)
        if n <= len(colours):
            return colours[:n]
    cmap = matplotlib.colormaps["hsv"]
    return [cmap(0.9 * i / max(n - 1, 1)) for i in range(n)]


def label(text: str, limit: int = 22) -> str:
    """A name as matplotlib draws it literally: `$` would start mathtext, long names clip,
    control characters are shown as their escapes (`costmodel.text.visible`; no font draws them)."""
    text = visible(str(text))
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
    if not is_a(design, Design):
        raise wrong_kind("design", "a costmodel Design (rec.design, or Design.load(path))", design)
    if not is_a(graph, WorkloadGraph):
        raise wrong_kind("graph", "a WorkloadGraph (rec.graph; advisor.plot_graph reads one from any source)",
                         graph)
    design.check_fields()  # one changed in Python: a partition 5 of 2 was numpy's IndexError
    return graph.with_cluster(design.machines, design.partitions_per_machine)


def node_partitions(design, graph) -> tuple[np.ndarray, np.ndarray]:
    """(partition of each SP, of each state item) as the figures show them: a window sits on
    its owner's partition (where it lives; a design may predate it and not name it)."""
    design = design.with_windows(graph)
    # `arrays` checks the rest: another workload's design is one DesignError line (a KeyError here)
    return design.arrays(graph)
