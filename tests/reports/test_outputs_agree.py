"""The same design's figures read alike wherever a user meets them: `recommend`, `evaluate`,
`simulate`, the report and a notebook's objects name the cluster, the cost terms and the
busiest resource in one wording and at one precision (real runs, tpcdi-trade on 4 machines)."""
from __future__ import annotations

import contextlib
import html
import io
import re

import pytest

import advisor
from advisor.cli import run_app
from reports.report import ReportOptions, build_report
from reports.compared import report_recommendation

pytestmark = pytest.mark.integration

TERMS = "state co-location 0.0000, processing co-location 1.0000, load balance 0.1667"


def text_of(page: str) -> str:
    """The words of an HTML page or fragment, tags stripped and spaces collapsed."""
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """(recommendation, design file, `evaluate` output, `simulate` output, report text) of
    tpcdi-trade on 4 machines: the figures a user compares."""
    tmp = tmp_path_factory.mktemp("agree")
    design = tmp / "design.json"
    printed = {}  # (module scope has no capsys: stdout redirected around each command)
    for name, argv in (("recommend", ["recommend", "tpcdi-trade", "--machines", "4", "--jobs", "1",
                                      "--out", str(design)]),
                       ("evaluate", ["evaluate", "--design", str(design)]),
                       ("simulate", ["simulate", "--design", str(design)])):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert run_app(argv) == 0
        printed[name] = out.getvalue()
    rec = advisor.recommend("tpcdi-trade", machines=4, jobs=1)
    compared = report_recommendation(str(design), "tpcdi-trade")
    options = ReportOptions(sensitivity=False, scaling=False, suggestions=False, jobs=1)
    report = text_of(build_report(compared, options=options))
    return rec, printed, report


def test_every_output_names_the_cluster_as_the_cli_does(outputs):
    rec, printed, report = outputs
    assert "tpcdi-trade: 4 machines x 1 partition" in printed["recommend"]
    assert "workload tpcdi-trade · 4 machines x 1 partition ·" in report  # was "4 machines × 1 partitions"
    sim = advisor.simulate("tpcdi-trade", rec.design)
    assert "on 4 machines x 1 partition (" in text_of(sim._repr_html_())  # was "on 4x1"


def test_the_cost_terms_read_alike_in_evaluate_the_report_and_a_notebook(outputs):
    rec, printed, report = outputs
    lines = printed["evaluate"].splitlines()
    assert [line.split()[-4] for line in lines[1:4]] == ["0.0000", "1.0000", "0.1667"]
    assert "total                   0.0901" in printed["evaluate"]
    assert f"Design cost 0.0901 ({TERMS})" in report
    cost = advisor.evaluate(rec.design, "tpcdi-trade")
    assert text_of(cost._repr_html_()) == f"cost 0.0901 ({TERMS})"  # was "state 0.000, ... balance 0.167"
    assert f"cost 0.0901 ({TERMS})" in text_of(rec._repr_html_())
    row = rec.to_frame().loc["recommended"]
    assert [f"{row[k]:.4f}" for k in ("state_colocation", "processing_colocation", "load_balance", "total")] \
        == ["0.0000", "1.0000", "0.1667", "0.0901"]


def test_the_busiest_resource_reads_alike_in_simulate_and_the_report(outputs):
    rec, printed, report = outputs
    line = next(x for x in printed["simulate"].splitlines() if "busiest resource" in x)
    said = line.split("busiest resource", 1)[1].strip()
    assert said == "partition 2 (99% busy)"
    assert f"busiest resource: {said}" in report  # was "(99% utilised)"
    assert "37,715 tuples/s" in printed["simulate"] and "This design (37,715 tuples/s predicted)" in report
    assert f"{rec.prediction:,.0f}" == "37,715"


def test_the_cost_models_busiest_machine_says_whose_it_is(outputs):
    """`recommend` names the cost model's busiest machine, the report the simulator's: on 2
    machines of equal load they name different machines, so each line says whose it is."""
    rec, printed, report = outputs
    assert "most loaded machine: 2 (33% of all load, cost model), hottest SP there: SecurityLookup" \
        in printed["recommend"]
    assert "most loaded machine: 2 (its partitions 99% busy in the simulator)" in report


def test_a_frames_screened_figure_says_its_batches(outputs):
    """The recommendation's row of `to_frame` is the pick's screening run, shorter than the
    `prediction` every other output shows: the frame says on how many batches, as the design
    file's candidate table does."""
    rec, printed, report = outputs
    frame, sel = rec.to_frame(), rec.selection
    row = frame.loc["recommended"]
    assert f"{row['predicted_tps']:,.0f}" == "36,983" and f"{rec.prediction:,.0f}" == "37,715"
    assert row["batches"] == sel.chosen.batches == 100 and sel.prediction_batches == 300
    picked = next(r for r in rec.design.provenance["candidate_table"] if r["design"] == sel.chosen.label)
    assert picked["batches"] == row["batches"]
    assert frame.loc["single-machine", "batches"] == 100
    assert "predicted 37,715 tuples/s (simulator, reference-cluster parameters, 300 batches" in printed["recommend"]
