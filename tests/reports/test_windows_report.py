"""Windows in the report and the notebook views: the graph figure draws each window with its
owner (a diamond in the owner's column), the memory figure counts its bytes on the owner's
machine, and the assignment table (HTML and DataFrame) lists it as a window with its owner."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re

import numpy as np
import pytest
from matplotlib.figure import Figure

from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from costmodel.spec_reader import parse_workload
from costmodel.spec_writer import workload_to_toml
from reports import figures as F
from reports.figures._graph import _graph_info, _workload_info
from reports.figures._machines import _memory_info
from reports.report import ReportOptions, build_report
from reports.compared import report_recommendation
from window_specs import procedure, reads, spec_text, stream, table, window, writes


def report_spec_text(windowed=True, **window_fields) -> str:
    """Ingest -> Clean -> Trend on 2 machines; Trend owns the window RecentBids (20,000 tuples of
    64 bytes, or as `window_fields` say); `windowed=False`: no window and no reads of it."""
    window_reads = (reads("RecentBids", 5),) if windowed else ()
    fields = dict(size=20000, slide=10, tuple_bytes=64) | window_fields
    windows = (window("RecentBids", "Trend", **fields),) if windowed else ()
    return spec_text("wreport", table("Bids", rows=1000, row_bytes=100),
                     procedure("Ingest", 3.0, writes("Bids", 1)), procedure("Clean", 3.0),
                     procedure("Trend", 0.5, *window_reads),
                     stream("Ingest", "Clean", 10), stream("Clean", "Trend", 4), *windows,
                     machines=2)


SPEC = report_spec_text()


@pytest.fixture(scope="module")
def workload():
    return parse_workload(SPEC, "wreport.toml")


@pytest.fixture(scope="module")
def graph(workload):
    return WorkloadGraph.from_workload(workload)


def design_with_window_on(machine: int | None) -> Design:
    """Ingest alone on machine 0, Clean and Trend on machine 1; the design JSON puts the window
    on `machine`, or leaves it out (None: a design made before the window was declared)."""
    state = {"Bids": 0} if machine is None else {"Bids": 0, "RecentBids": machine}
    return Design("wreport", 2, 1, {"Ingest": 0, "Clean": 1, "Trend": 1}, state)


def axes():
    return Figure().add_subplot()


@pytest.mark.parametrize("where", [None, 1])
def test_the_graph_figure_draws_the_window_under_its_owner(graph, where):
    info = _graph_info(design_with_window_on(where), graph, max_nodes=80)
    node = {n.name: n for n in info.nodes}
    win, owner = node["RecentBids"], node["Trend"]
    assert win.kind == "window" and node["Bids"].kind == "state"
    assert win.machine == owner.machine == 1 and win.x == owner.x
    assert win.y == owner.y - 1  # right under it
    to_window = [e for e in info.edges if info.nodes[e.b].name == "RecentBids"]
    assert to_window and not any(e.cut for e in to_window)
    ax = F.plot_graph(design_with_window_on(where), graph, ax=axes())
    assert len(ax.collections) == graph.n_nodes
    assert "window (with its SP)" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_the_dataflow_figure_draws_windows_under_their_owner(workload):
    info = _workload_info(workload)
    node = {n.name: n for n in info.nodes}
    assert node["RecentBids"].kind == "window" and node["RecentBids"].x == node["Trend"].x
    assert F.plot_workload(workload, ax=axes()).has_data()


@pytest.mark.parametrize("where", [None, 1])
def test_the_memory_figure_counts_the_window_on_its_owners_machine(workload, graph, where):
    info = _memory_info(design_with_window_on(where), graph)
    window_mb = workload.window_bytes(workload.window("RecentBids")) / 2**20
    assert ("RecentBids" in info.windows) and window_mb == pytest.approx(20000 * 64 / 2**20)
    assert [(m, x) for m, n, x, _ in info.segments if n == "RecentBids"] == [(1, pytest.approx(window_mb))]
    np.testing.assert_allclose(info.totals, [1000 * 100 / 2**20, window_mb])
    ax = F.plot_machine_memory(design_with_window_on(where), graph, ax=axes())
    hatched = [p for p in ax.patches if p.get_hatch() == "xx"]
    assert len(hatched) == 1 and hatched[0].get_x() + hatched[0].get_width() / 2 == pytest.approx(1)
    assert any("(window)" in t.get_text() for t in ax.texts)


def test_the_assignment_lists_the_window_with_its_owner(graph):
    d = design_with_window_on(1)
    rows = {r["name"]: r for r in d.assignment_rows(graph)}
    assert rows["RecentBids"] == {"kind": "window", "name": "RecentBids", "machine": 1,
                                  "partition": 1, "replicated": False, "owner": "Trend"}
    assert rows["Bids"]["kind"] == "state" and rows["Bids"]["owner"] is None
    frame = d.to_frame(graph)
    window = frame[frame["kind"] == "window"]
    assert list(window["name"]) == ["RecentBids"] and list(window["owner"]) == ["Trend"]
    assert list(window["partition"]) == [d.procedures["Trend"]]
    assert set(d.to_frame()["kind"]) == {"procedure", "state"}  # without a source: as before


def test_the_rendered_report_shows_the_window(workload):
    d = design_with_window_on(1)
    html = build_report(report_recommendation(d, workload),
                        options=ReportOptions(sensitivity=False, scaling=False, suggestions=False))
    assert "<th>owner</th>" in html
    row = re.search(r'<tr class="window">(.*?)</tr>', html).group(1)
    assert re.findall(r"<td>(.*?)</td>", row) == ["window", "RecentBids", "1", "1", "Trend"]
    assert "diamonds are windows" in html
    # the machines table counts the window's megabytes on the owner's machine
    mb = workload.window_bytes(workload.window("RecentBids")) / 2**20
    assert f"{mb:,.1f}" in html
    assert len(re.findall(r'src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', html)) >= 4


def test_a_report_without_windows_has_no_owner_column():
    plain = parse_workload(report_spec_text(windowed=False), "plain.toml")
    d = Design("wreport", 2, 1, {"Ingest": 0, "Clean": 1, "Trend": 1}, {"Bids": 0})
    html = build_report(report_recommendation(d, plain, baselines=False),
                        options=ReportOptions(sensitivity=False, scaling=False,
                                              suggestions=False, baselines=False))
    assert "<th>owner</th>" not in html and 'class="window"' not in html


def test_specs_written_back_carry_their_windows(workload):
    text = workload_to_toml(workload)
    assert "[[windows]]" in text
    again = parse_workload(text, "again.toml")
    assert again.windows == workload.windows
    time = parse_workload(report_spec_text(kind="time", max_tuples=500, size=60), "t.toml")
    assert parse_workload(workload_to_toml(time), "t2.toml").windows == time.windows
