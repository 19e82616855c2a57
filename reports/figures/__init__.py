"""Figures for notebooks and the HTML report: every `plot_*` takes plain advisor objects and
an optional matplotlib Axes, and returns the Axes (so figures compose). Each is a thin public
function over a private `_*_info` (the numbers) and `_draw_*` (the drawing)."""
from reports.figures._common import figure_png_base64
from reports.figures._cost import plot_cost_breakdown
from reports.figures._graph import plot_graph, plot_workload
from reports.figures._machines import plot_machine_load, plot_machine_memory
from reports.figures._sensitivity import plot_sensitivity
from reports.figures._throughput import plot_engine_vs_simulator, plot_throughput_vs_machines
from reports.figures._tuning import plot_tuning

__all__ = [
    "figure_png_base64",
    "plot_cost_breakdown",
    "plot_engine_vs_simulator",
    "plot_graph",
    "plot_machine_load",
    "plot_machine_memory",
    "plot_sensitivity",
    "plot_throughput_vs_machines",
    "plot_tuning",
    "plot_workload",
]
