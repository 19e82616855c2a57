"""The scaling chart's baselines far below the advisor's line are screened, as `recommend`'s
table screens its candidates, not simulated in full; the rows, the figure and the report say
which (`reports.scaling.SCREEN_BELOW`)."""
from __future__ import annotations

import pytest

from advisor.baselines import BASELINE_FUNCTIONS
from advisor.busy_estimate import BusyEstimate
from advisor.selection import SCREEN_BATCHES, SCREEN_TOLERANCE
from advisor.sources import load_graph, load_workload
from costmodel.design import Design
from engine_sim.sim import sim_params_for
from reports.predict import PredictOptions, predicted_tps
from reports.scaling import SCREEN_BELOW, ScalingCurve, scaling_rows

pytestmark = pytest.mark.integration

SCREENING = PredictOptions(batches=SCREEN_BATCHES, tolerance=SCREEN_TOLERANCE)


@pytest.fixture(scope="module")
def tpcdi4():
    return load_workload("tpcdi-trade").with_cluster(4)


def _baseline(workload, rows, name: str):
    """The baseline `name` as `scaling_rows` places it (its default weights and seed), with its
    busy-time estimate."""
    graph = load_graph(workload)
    advisor_row = next(r for r in rows if r["design"] == "advisor")
    from advisor.priced_weights import default_weights

    weights = default_weights(graph, None)
    proc, state = BASELINE_FUNCTIONS[name](graph, weights, 0)
    estimate = BusyEstimate.of(graph, workload, sim_params_for(None)).throughput_tps(proc, state)
    return Design.from_arrays(graph, proc, state, weights, method=name), estimate, advisor_row["throughput_tps"]


def test_a_baseline_far_below_the_advisor_is_screened_and_its_row_says_so(tpcdi4):
    rows = scaling_rows(tpcdi4, 4)
    by_name = {r["design"]: r for r in rows}
    rr = by_name["round-robin"]
    design, _, advisor_tps = _baseline(tpcdi4, rows, "round-robin")
    assert rr["screened"] is True and by_name["advisor"]["screened"] is False
    assert rr["throughput_tps"] == predicted_tps(tpcdi4, design, SCREENING)
    assert rr["throughput_tps"] < SCREEN_BELOW * advisor_tps
    full = scaling_rows(tpcdi4, 4, screen_below=None)
    assert not any(r["screened"] for r in full)
    full_rr = next(r for r in full if r["design"] == "round-robin")
    assert full_rr["throughput_tps"] == predicted_tps(tpcdi4, design, PredictOptions())
    assert full_rr["throughput_tps"] != rr["throughput_tps"]  # the screen's shorter run is another figure


def test_the_screened_run_decides_not_the_estimate(tpcdi4):
    """The estimate only chooses which run goes first: a threshold between the estimate's figure
    and the screening run's screens nothing, whichever of the two is lower; one above both
    screens the baseline."""
    rows = scaling_rows(tpcdi4, 4, screen_below=None)
    design, estimate, advisor_tps = _baseline(tpcdi4, rows, "round-robin")
    screened = predicted_tps(tpcdi4, design, SCREENING)
    assert abs(estimate - screened) > 1e-6 * screened  # (else there is nothing between them)
    between = (estimate + screened) / 2 / advisor_tps
    rr = next(r for r in scaling_rows(tpcdi4, 4, screen_below=between) if r["design"] == "round-robin")
    assert rr["screened"] is False
    assert rr["throughput_tps"] == predicted_tps(tpcdi4, design, PredictOptions())
    above = 1.01 * max(estimate, screened) / advisor_tps
    rr = next(r for r in scaling_rows(tpcdi4, 4, screen_below=above) if r["design"] == "round-robin")
    assert rr["screened"] is True and rr["throughput_tps"] == screened


def test_options_as_short_as_the_screen_screen_nothing(tpcdi4):
    """A run of at most the screen's batches is already a screening run: every baseline is
    simulated on the options as given, none marked screened."""
    short = PredictOptions(batches=SCREEN_BATCHES, tolerance=0.1)
    rows = scaling_rows(tpcdi4, 4, options=short, screen_below=1.0)
    design, _, _ = _baseline(tpcdi4, rows, "round-robin")
    rr = next(r for r in rows if r["design"] == "round-robin")
    assert rr["screened"] is False
    assert rr["throughput_tps"] == predicted_tps(tpcdi4, design, short)


def test_screened_points_are_drawn_hollow_and_named_in_one_line():
    import matplotlib

    matplotlib.use("Agg")
    rows = [{"machines": m, "design": d, "throughput_tps": t, "cost": 0.1, "screened": s}
            for m, d, t, s in ((1, "advisor", 100.0, False), (2, "advisor", 190.0, False),
                               (1, "round-robin", 100.0, False), (2, "round-robin", 20.0, True),
                               (1, "hash-by-table", 100.0, False), (2, "hash-by-table", 90.0, False))]
    curve = ScalingCurve(rows=rows)
    assert curve.screened() == {"round-robin": [2]}
    note = curve.screened_note()
    assert "round-robin on 2 machines" in note and "hash-by-table" not in note
    assert f"{SCREEN_BATCHES} batches" in note
    ax = curve.plot()
    hollow = [ln for ln in ax.lines if ln.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [2] and list(hollow[0].get_ydata()) == [20.0]
    frame = curve.to_frame()
    assert list(frame["screened"]) == [r["screened"] for r in rows]
    assert ScalingCurve(rows=[{**r, "screened": False} for r in rows]).screened_note() == ""


def test_the_report_marks_its_screened_figures(tpcdi_report):
    """The bundled tpcdi-trade report (4 machines): round-robin lies far below this design
    (10-16 % of it on 2, 4 and 8 machines): its row in the candidate table and its points on
    the chart are screened, and both say so; this design's own row is simulated in full."""
    _, html = tpcdi_report
    rows = html.split("<tr")
    rr = next(r for r in rows if r.split("<td>", 1)[-1].startswith("round-robin"))
    own = next(r for r in rows if 'class="chosen"' in r)
    assert "(screened)" in rr and "(screened)" not in own
    assert "(screened): below 25% of this design" in html
    line = next(p for p in html.split("<p") if "Screened, as recommend" in p)
    assert "round-robin on 2, 4, 8 machines" in line


def test_a_curve_prints_as_one_line_and_renders_its_rows():
    rows = [{"machines": m, "design": d, "throughput_tps": t, "cost": 0.1, "screened": s}
            for m, d, t, s in ((1, "advisor", 100.0, False), (4, "advisor", 390.0, False),
                               (1, "round-robin", 100.0, False), (4, "round-robin", 20.0, True))]
    curve = ScalingCurve(rows=rows)
    line = repr(curve)
    assert "\n" not in line and len(line) < 200
    assert "advisor, round-robin on 1, 4 machines" in line and "at most 390 tuples/s, on 4" in line
    assert "1 screened" in line
    html = curve._repr_html_()
    assert html.count("<tr") == 1 + len(rows) and "390" in html


@pytest.mark.parametrize("bad", [-1, 0.0, 1.5, float("nan"), "0.25", True, [0.25]])
def test_a_screen_threshold_out_of_range_is_one_line(tpcdi4, bad):
    from advisor.errors import AdvisorError
    from reports.scaling import scaling_curve

    for call in (lambda: scaling_rows(tpcdi4, 2, screen_below=bad),
                 lambda: scaling_curve(tpcdi4, [2], screen_below=bad)):
        with pytest.raises(AdvisorError, match=r"screen_below must be None or a share .* in \(0, 1\], got"):
            call()
