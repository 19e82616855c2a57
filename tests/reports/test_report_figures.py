"""reports.figures: every plot_* draws on the Axes it is given and returns it, and the drawing
says what the design does (cut edges marked, loads and limits, costs per design)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from advisor.api import recommend
from reports import figures as F
from reports.figures._graph import _graph_info
from reports.sensitivity import sensitivity, sweep_weights
from costmodel import Weights

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def rec():
    return recommend("tpcdi-trade")


def axes():
    return Figure().add_subplot()


def test_every_figure_returns_the_axes_it_was_given(tpcdi_trade, rec):
    d, g = rec.design, rec.graph
    for draw in (lambda ax: F.plot_graph(d, g, ax=ax), lambda ax: F.plot_machine_load(d, g, ax=ax),
                 lambda ax: F.plot_machine_memory(d, g, ax=ax), lambda ax: F.plot_cost_breakdown(rec, ax=ax),
                 lambda ax: F.plot_workload(tpcdi_trade, ax=ax)):
        ax = axes()
        assert draw(ax) is ax
        assert ax.has_data() or ax.patches or ax.texts


def test_graph_marks_exactly_the_cut_edges(rec):
    g = rec.graph
    proc, state = rec.design.arrays(g)
    c = g.cost
    cut_pp = int(np.sum(proc[c.pp_src] != proc[c.pp_dst]))  # ppm = 1: partition = machine
    cut_ps = int(np.sum((state[c.ps_state] >= 0) & (state[c.ps_state] != proc[c.ps_proc])))
    info = _graph_info(rec.design, g, max_nodes=80)
    assert sum(e.cut for e in info.edges) == cut_pp + cut_ps
    ax = F.plot_graph(rec.design, g, ax=axes())
    arrows = [t.arrow_patch for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == c.pp_weight.size + c.ps_weight.size
    red = [a for a in arrows if a.get_linestyle() == "--"]
    assert len(red) == cut_pp + cut_ps
    # every node is coloured by its machine: one scatter per node
    assert len(ax.collections) == g.n_nodes


def test_big_graph_is_drawn_per_machine():
    r = recommend("chain-32", partitions_per_machine=1, baselines=False)
    info = _graph_info(r.design, r.graph, max_nodes=20)
    assert info.aggregated and len(info.nodes) == r.design.machines
    ax = F.plot_graph(r.design, r.graph, ax=axes(), max_nodes=20)
    assert len(ax.collections) == r.design.machines


def test_machine_load_bars_sum_to_the_load(rec):
    ax = F.plot_machine_load(rec.design, rec.graph, ax=axes())
    heights = sum(p.get_height() for p in ax.patches)
    assert heights == pytest.approx(rec.graph.cost.proc_load.sum())


def test_memory_shows_the_limit(rec):
    ax = F.plot_machine_memory(rec.design, rec.graph, ax=axes())
    limit = rec.graph.cost.memory_limit_bytes / 2**20
    segments = [c for c in ax.collections if c.get_segments()]
    assert any(np.allclose(s[0][1], limit) for c in segments for s in [c.get_segments()[0]])


def test_cost_breakdown_has_one_bar_stack_per_design(rec):
    ax = F.plot_cost_breakdown(rec, ax=axes())
    assert [t.get_text() for t in ax.get_yticklabels()] == list(rec.all_designs())
    widths = {}
    for p in ax.patches:
        y = round(p.get_y() + p.get_height() / 2)
        widths[y] = widths.get(y, 0.0) + p.get_width()
    totals = sorted(d.cost.total for d in rec.all_designs().values())
    assert sorted(widths.values()) == pytest.approx(totals)


def test_dollar_signs_in_names_are_drawn_literally():
    from reports.figures._common import label

    assert label("$x$") == r"\$x\$"
    fig = Figure()
    ax = fig.add_subplot()
    ax.set_title(label("a$b$c"))
    fig.savefig(__import__("io").BytesIO(), format="png")  # would fail or mangle as mathtext


def test_sensitivity_sweeps_keep_the_other_ratio_and_name_designs():
    w = sweep_weights(Weights(0.3, 0.1, 0.6), "beta", 0.5)
    assert w.beta == pytest.approx(0.5) and w.alpha / w.gamma == pytest.approx(0.5)
    s = sensitivity("tpcdi-trade", shares=(0.1, 0.9))
    frame = s.to_frame()
    assert len(frame) == 6 and set(frame["design"]) <= set(s.designs)
    # the chosen design is never worse than keeping design A at those weights
    assert (frame["total"] <= frame["base_design_total"] + 1e-9).all()
    ax = F.plot_sensitivity(s, ax=axes())
    assert len(ax.lines) >= 6


def test_notebook_objects_plot(tpcdi_trade, rec):
    assert rec.plot(ax=axes()) is not None
    ax = axes()
    assert F.plot_graph(rec.design, rec.graph, ax=ax) is ax
    w = tpcdi_trade
    assert list(w.to_frame()["procedure"]) == w.procedure_names
    ax = axes()
    assert F.plot_workload(w, ax=ax) is ax
