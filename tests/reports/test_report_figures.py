"""reports.figures: every plot_* draws on the Axes it is given and returns it, and the drawing
says what the design does (cut edges marked, loads and limits, costs per design)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from advisor.api import recommend
from reports import figures as F
from reports.figures._graph import _graph_info
from reports.sensitivity import Sensitivity, sensitivity, sweep_weights
from advisor.errors import AdvisorError
from costmodel import Weights
from costmodel.errors import DesignError, UserError

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
    from costmodel.model import machine_memory

    _, state = rec.design.arrays(rec.graph)
    near = 2 * float(machine_memory(rec.graph.cost, state).max())  # a limit in the bars' scale
    graph = rec.graph.with_cluster(None, None, memory_limit_bytes=near)
    ax = F.plot_machine_memory(rec.design, graph, ax=axes())
    limit = graph.cost.memory_limit_bytes / 2**20
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


def test_sensitivity_and_scaling_without_weights_sweep_around_recommends_own():
    """They swept around the old fixed weights (0.3, 0.1, 0.6), so design A was not the
    recommendation and the "given weights" lines not the user's."""
    from advisor.priced_weights import default_weights
    from advisor.sources import load_graph, load_workload
    from reports.scaling import scaling_rows

    s = sensitivity("tpcdi-trade", shares=(0.5,))
    priced = default_weights(load_graph("tpcdi-trade"))
    assert s.base == priced and priced != Weights(0.3, 0.1, 0.6)
    rec = recommend("tpcdi-trade", baselines=False, objective="cost")
    assert s.designs["A"].procedures == rec.design.procedures
    rows = scaling_rows(load_workload("tpcdi-trade"), 4, baselines=(), objective="cost")
    assert rows[0]["cost"] == pytest.approx(rec.design.cost.total)  # the pick at recommend's weights


@pytest.mark.parametrize("shares", ["0.5", 0.5, (1.5,), (-0.1,), ("a",), (), (float("nan"),), (True,),
                                    {0.5}, {0.5: 1}, np.zeros((2, 2))])
def test_sensitivity_refuses_shares_that_are_not_numbers_in_0_1_in_one_line(shares):
    # a string or a number was a TypeError deep in the sweep; 1.5 a negative weight naming neither
    with pytest.raises(AdvisorError, match=r"^shares must be a non-empty list of numbers in \[0, 1\] .*, got ") as exc:
        sensitivity("tpcdi-trade", shares=shares)
    assert "\n" not in str(exc.value)


def test_sensitivity_takes_shares_in_any_ordered_container_as_a_tuple():
    # a pandas Series or Index ran before the shares were checked, and must still
    import pandas as pd

    from reports.sensitivity import check_shares

    for given in (pd.Series([0.2, 0.8]), pd.Index([0.2, 0.8]), np.array([0.2, 0.8]), [0.2, 0.8],
                  (s for s in (0.2, 0.8))):
        assert check_shares(given) == (0.2, 0.8)
    assert check_shares(range(2)) == (0, 1) and check_shares(np.arange(2)) == (0, 1)  # as given, not 0.0
    assert all(type(s) is int for s in check_shares(np.arange(2)))  # numpy scalars as Python numbers
    assert sensitivity("tpcdi-trade", shares=pd.Series([0.1, 0.9])).rows == \
        sensitivity("tpcdi-trade", shares=(0.1, 0.9)).rows


def test_max_nodes_may_be_an_integral_float(rec):
    # the signature says int, but 40.0 drew before the check; 40.5 is no node count
    assert F.plot_graph(rec.design, rec.graph, ax=axes(), max_nodes=40.0).has_data()
    assert _graph_info(rec.design, rec.graph, max_nodes=np.float64(3)) == _graph_info(rec.design, rec.graph, 3)
    with pytest.raises(UserError, match=r"^max_nodes must be an integer >= 1, got 40.5$"):
        F.plot_graph(rec.design, rec.graph, ax=axes(), max_nodes=40.5)
    # an int past a float's range is every node (float() of it was an internal OverflowError)
    assert _graph_info(rec.design, rec.graph, max_nodes=10**400) == _graph_info(rec.design, rec.graph, 10**6)


def test_a_sensitivity_renders_itself_as_the_other_results_do():
    rows = [{"term": t, "share": 0.5, "alpha": 0.3, "beta": 0.1, "gamma": 0.6, "design": d, "total": 0.25,
             "state_colocation": 0.1, "processing_colocation": 0.2, "load_balance": 0.3,
             "base_design_total": 0.5, "regret": 0.25} for t, d in (("alpha", "A"), ("beta", "B"))]
    html = Sensitivity(base=Weights(0.3, 0.1, 0.6), rows=rows)._repr_html_()
    head, table = html.split("<table", 1)
    assert head.startswith("<b>Sensitivity to the weights</b>") and "chose designs A, B" in head
    assert table.count("<tr") == 1 + len(rows)  # the header, then one row per point of the sweeps
    assert "stable" in Sensitivity(base=Weights(), rows=rows[:1])._repr_html_().split("<table")[0]


def test_a_design_of_another_workload_is_one_design_error_in_every_design_figure(rec):
    # the graph and memory figures read the design by name: a KeyError of the first SP
    other = recommend("move-micro", machines=4, objective="cost", baselines=False).design
    for draw in (F.plot_graph, F.plot_machine_load, F.plot_machine_memory):
        with pytest.raises(DesignError, match="^this is a design of workload 'move-micro': design does not "
                                              "place .* of workload 'tpcdi-trade'") as exc:
            draw(other, rec.graph, ax=axes())
        assert "\n" not in str(exc.value)


WRONG_OBJECTS = {  # case -> (the call, given the workload and the recommendation; what the error expects)
    "plot_workload, a name": (lambda w, r: F.plot_workload("tpcdi-trade"), "workload must be a costmodel Workload"),
    "plot_workload, ax a string": (lambda w, r: F.plot_workload(w, ax="x"), "ax must be a matplotlib Axes"),
    "plot_graph, ax a string": (lambda w, r: F.plot_graph(r.design, r.graph, ax="x"), "ax must be a matplotlib Axes"),
    "plot_graph, a file name as the design": (lambda w, r: F.plot_graph("d.json", r.graph),
                                              "design must be a costmodel Design"),
    "plot_graph, a workload as the graph": (lambda w, r: F.plot_graph(r.design, w), "graph must be a WorkloadGraph"),
    "plot_graph, max_nodes a string": (lambda w, r: F.plot_graph(r.design, r.graph, max_nodes="9"),
                                       "max_nodes must be an integer"),
    "plot_machine_load, a file name": (lambda w, r: F.plot_machine_load("d.json", r.graph),
                                       "design must be a costmodel Design"),
    "plot_machine_memory, ax a string": (lambda w, r: F.plot_machine_memory(r.design, r.graph, ax="x"),
                                         "ax must be a matplotlib Axes"),
    "plot_cost_breakdown, a design": (lambda w, r: F.plot_cost_breakdown(r.design),
                                      "recommendation must be an advisor Recommendation"),
    "plot_engine_vs_simulator, a recommendation": (lambda w, r: F.plot_engine_vs_simulator(r),
                                                   "comparison must be a ValidationView"),
    "plot_sensitivity, a frame": (lambda w, r: F.plot_sensitivity(r.to_frame()),
                                  "sensitivity must be a reports.sensitivity.Sensitivity"),
    "plot_tuning, a recommendation": (lambda w, r: F.plot_tuning(r), "study must be a reports.tuning.TuningStudy"),
    "plot_throughput_vs_machines, a string": (lambda w, r: F.plot_throughput_vs_machines("x"),
                                              "curve must be a reports.scaling.ScalingCurve"),
    "Recommendation.plot, ax a string": (lambda w, r: r.plot(ax="x"), "ax must be a matplotlib Axes"),
}


@pytest.mark.parametrize("case", list(WRONG_OBJECTS))
def test_a_figure_given_the_wrong_object_says_what_it_expected_in_one_line(case, tpcdi_trade, rec):
    # each was an AttributeError or a TypeError from inside the drawing ('str' object has no attribute ...)
    draw, expected = WRONG_OBJECTS[case]
    with pytest.raises(UserError, match="^" + expected) as exc:
        draw(tpcdi_trade, rec)
    assert "\n" not in str(exc.value) and ", got " in str(exc.value)


def test_notebook_objects_plot(tpcdi_trade, rec):
    assert rec.plot(ax=axes()) is not None
    ax = axes()
    assert F.plot_graph(rec.design, rec.graph, ax=ax) is ax
    w = tpcdi_trade
    assert list(w.to_frame()["procedure"]) == w.procedure_names
    ax = axes()
    assert F.plot_workload(w, ax=ax) is ax


def test_machines_are_never_the_replicated_grey_and_a_far_limit_is_said_not_drawn():
    """Machine 7 was tab10's grey, read as replicated state; a 2,048 MiB limit over state of
    1-150 MiB squeezed every bar flat against the axis."""
    from matplotlib.colors import to_hex, to_rgb

    from reports.figures._common import REPLICATED_COLOUR, machine_colours

    for n in (8, 9, 16, 18, 24, 54, 80):
        hexes = [to_hex(c) for c in machine_colours(n)]
        assert len(set(hexes)) == n and "#7f7f7f" not in hexes and "#c7c7c7" not in hexes
        assert REPLICATED_COLOUR not in hexes
        assert not any(h[1:3] == h[3:5] == h[5:7] for h in hexes)  # no grey of any shade
    # the first and the last machine of a ring past 18 machines are not one colour (24: two reds)
    for n in (24, 80):
        first, last = (np.array(to_rgb(c)) for c in machine_colours(n)[::n - 1])
        assert np.abs(first - last).sum() > 0.3, n
    rec = recommend("tpcdi-trade", machines=8)
    ax = F.plot_machine_memory(rec.design, rec.graph, ax=axes())
    assert ax.get_title().endswith("(limit 2,048 MiB a machine, far above)")
    assert ax.get_ylim()[1] < 1000  # the bars, not the limit, set the scale


def _overlapping(texts, fig) -> list[tuple[str, str]]:
    """Pairs of these drawn texts whose boxes overlap on the rendered figure."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_text()]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]


def test_a_ring_of_many_machines_keeps_its_labels_apart():
    """24 machines drawn one node each: the labels under the nodes ran into the next nodes and
    into each other, and every cut's weight was written in the ring's centre."""
    from reports.figures._graph import WEIGHTS_SHOWN, graph_figsize

    from advisor.baselines import baseline_design

    r = recommend("chain-32", machines=24, partitions_per_machine=1, baselines=False, objective="cost")
    spread = baseline_design("round-robin", r.graph, r.design.weights)  # every machine used, many cuts
    fig = Figure(figsize=graph_figsize(spread, r.graph, max_nodes=20))
    ax = F.plot_graph(spread, r.graph, ax=fig.add_subplot(), max_nodes=20)
    FigureCanvasAgg(fig).draw()
    labels = [t for t in ax.texts if t.get_text().startswith("machine ")]
    assert len(labels) == 24
    # each along its radius, outside the ring of nodes (radius 1), read left to right
    for t in labels:
        x, y = t.get_position()
        assert np.hypot(x, y) > 1.1
        assert (t.get_rotation() - np.degrees(np.arctan2(y, x))) % 180 == pytest.approx(0, abs=1e-6) or \
            (t.get_rotation() - np.degrees(np.arctan2(y, x))) % 180 == pytest.approx(180, abs=1e-6)
        assert t.get_horizontalalignment() == ("left" if x > 0 else "right")
    # so two labels meet nowhere if the ring leaves a line's height between neighbours where they start
    anchors = ax.transData.transform([t.get_position() for t in labels])
    gaps = np.hypot(*(anchors - np.roll(anchors, 1, axis=0)).T)
    line_px = labels[0].get_fontsize() * fig.dpi / 72
    assert gaps.min() > line_px
    info = _graph_info(spread, r.graph, max_nodes=20)
    weights = sorted((e.weight for e in info.edges), reverse=True)
    shown = [t for t in ax.texts if t.get_text() and t.get_text()[0].isdigit()]
    assert len(info.edges) > WEIGHTS_SHOWN
    assert len(shown) == sum(w >= weights[WEIGHTS_SHOWN - 1] for w in weights)


@pytest.mark.parametrize("machines", [4, 24, 100])
def test_machine_labels_under_the_bars_do_not_run_into_each_other(machines):
    """At the report's size, 24 labels `m0` ... `m23` ran into each other."""
    from reports.figures._machines import TICKS_AT_MOST, machine_ticks

    r = recommend("chain-32", machines=machines, partitions_per_machine=1, baselines=False, objective="cost")
    fig = Figure(figsize=(5.6, 3.4))
    ax = F.plot_machine_load(r.design, r.graph, ax=fig.add_subplot())
    FigureCanvasAgg(fig).draw()
    ticks = ax.get_xticklabels()
    assert len(ticks) == len(machine_ticks(machines)) <= TICKS_AT_MOST
    assert list(machine_ticks(machines))[-1] >= machines - -(-machines // TICKS_AT_MOST)  # to the last bars
    assert _overlapping(ticks, fig) == []


def test_a_large_dataflow_is_drawn_by_stream_depth_its_names_apart():
    """100 SPs were one row, their 165 tables under them: a strip in which no name could be
    read. Now each SP once, by stream depth, at most 12 a column and 16 columns a band."""
    from collections import Counter

    from reports.figures._graph import (COLUMNS_A_BAND, LARGE_DATAFLOW, SPS_A_COLUMN, _large_workload_info,
                                        stream_depths)
    from workload_edits import scale_workload

    workload = scale_workload("shared150")
    assert len(workload.procedures) > LARGE_DATAFLOW
    info = _large_workload_info(workload)
    assert sorted(n.name for n in info.nodes) == sorted(p.name for p in workload.procedures)
    assert all(n.kind == "processing" for n in info.nodes)
    # a band starts where the rows' gap is; within one, a column is an x
    band_of = {}
    tops = sorted({-n.y for n in info.nodes})
    band, previous = 0, None
    for y in tops:
        band += previous is not None and y > previous + 1
        band_of[y], previous = band, y
    columns = Counter((band_of[-n.y], n.x) for n in info.nodes)
    assert max(columns.values()) <= SPS_A_COLUMN and max(x for _, x in columns) < COLUMNS_A_BAND
    assert len({b for b, _ in columns}) > 1  # it wraps
    # every stream runs to a later column: left to right, then down
    depth, where = stream_depths(workload), {n.name: (band_of[-n.y], n.x) for n in info.nodes}
    for s in workload.streams:
        assert depth[s.target] > depth[s.source] and where[s.target] > where[s.source]
    ax = F.plot_workload(workload, ax=axes())
    assert len(ax.collections) == len(workload.procedures)
    assert f"{len(workload.tables) + len(workload.windows)} tables and windows left out" in ax.get_title()


def _legend_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_the_legend_names_only_what_the_figure_draws(rec):
    """A workload's dataflow (no design) listed "cut edge", and past 40 SPs "state" too, and the
    ring of machines "SP" and "state": none of which they draw."""
    from workload_edits import scale_workload

    assert _legend_labels(F.plot_workload(scale_workload("shared150"), ax=axes())) == ["SP"]
    small = rec.workload
    assert _legend_labels(F.plot_workload(small, ax=axes())) == ["SP", "state"]
    assert _legend_labels(F.plot_graph(rec.design, rec.graph, ax=axes())) == ["SP", "state", "cut edge"]
    ring = recommend("chain-32", partitions_per_machine=1, baselines=False)
    labels = _legend_labels(F.plot_graph(ring.design, ring.graph, ax=axes(), max_nodes=20))
    assert labels[0].startswith("machine") and "SP" not in labels and "state" not in labels


def _cut_off(ax) -> list[str]:
    """The labels, title and legend of a figure of its own that lie outside the figure's
    canvas once drawn (what `ax.figure.savefig(path)` writes)."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox.padded(1)
    low, high = sorted(ax.get_ylim())
    ticks = [t for t, y in zip(ax.get_yticklabels(), ax.get_yticks()) if low <= y <= high]  # (those drawn)
    shown = [t for t in (*ticks, ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
    out = [t.get_text() for t in shown if not canvas.contains(*t.get_window_extent(renderer).min)
           or not canvas.contains(*t.get_window_extent(renderer).max)]
    legend = ax.get_legend()
    box = legend.get_window_extent(renderer) if legend is not None else None
    return out + (["legend"] if box is not None and not (canvas.contains(*box.min) and canvas.contains(*box.max)) else [])


def test_a_figure_saved_as_it_is_keeps_its_labels_and_legend(rec):
    """`rec.plot()` saved with `ax.figure.savefig(path)` lost its legend below the bars and the
    first letters of 'recommended', 'single-machine' (a notebook trims its inline PNG to what is
    drawn, which hid it)."""
    import matplotlib.pyplot as plt

    try:
        assert _cut_off(rec.plot()) == []
        assert _cut_off(F.plot_machine_memory(rec.design, rec.graph)) == []
        assert _cut_off(F.plot_workload(rec.workload)) == []
    finally:
        plt.close("all")


def test_bars_of_many_machines_stay_a_notebook_wide():
    """0.8 in a machine: 24 machines made a figure 21 in wide, 64 machines 53 in, which a
    notebook shrinks until nothing in it can be read; past 16 machines every k-th is labelled."""
    import matplotlib.pyplot as plt

    r = recommend("chain-32", machines=64, partitions_per_machine=1, baselines=False, objective="cost")
    try:
        for draw in (F.plot_machine_load, F.plot_machine_memory):
            ax = draw(r.design, r.graph)
            width, _ = ax.figure.get_size_inches()
            assert 4.0 <= width <= 14.0
            assert _overlapping(ax.get_xticklabels(), ax.figure) == []
    finally:
        plt.close("all")
