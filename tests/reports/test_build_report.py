"""A report built from results already computed: `build_report(recommendation, *,
predictions=None, validation=None)` uses what it is given and computes only what is missing;
`report_recommendation` computes the same inputs from a design file and a source."""
from __future__ import annotations

import pytest

from advisor.api import recommend
from reports.predict import FarBelowScreen, PredictOptions, predict
from reports.report import ReportOptions, build_report
from reports.compared import report_recommendation

pytestmark = pytest.mark.integration

QUICK = ReportOptions(sensitivity=False, scaling=False, suggestions=False)


@pytest.fixture(scope="module")
def rec():
    return recommend("tpcdi-trade")


def test_given_predictions_are_shown_and_only_the_missing_ones_simulated(rec):
    fewer = PredictOptions(batches=60)  # not the report's options: a prediction made elsewhere
    given = {"recommended": predict(rec.workload, rec.design, fewer),
             "round-robin": predict(rec.workload, rec.baselines["round-robin"], fewer)}
    fresh = {name: predict(rec.workload, d, QUICK.predict) for name, d in rec.all_designs().items()}
    assert given["round-robin"].throughput_tps != fresh["round-robin"].throughput_tps
    messages = []
    html = build_report(rec, predictions=given, options=QUICK, progress=messages.append)
    assert f"simulating {len(rec.all_designs()) - 2} designs" in messages
    # the missing ones as the report simulates them: screened where far below this design
    screen = FarBelowScreen.of(rec.workload, rec.graph, given["recommended"].throughput_tps, QUICK.predict)
    for name, expected in (("round-robin", given["round-robin"]), ("random", screen.predict(rec.baselines["random"])),
                           ("hash-by-table", screen.predict(rec.baselines["hash-by-table"]))):
        assert f"{expected.throughput_tps:,.0f}" in html, name
    assert f"{given['recommended'].throughput_tps:,.0f} tuples/s predicted" in html
    # everything given: nothing is simulated again
    messages.clear()
    build_report(rec, predictions=fresh, options=QUICK, progress=messages.append)
    assert not [m for m in messages if m.startswith("simulating")]


def test_the_report_of_a_design_file_computes_the_same_inputs(rec, tmp_path):
    from advisor.recommendation import Recommendation

    path = rec.design.save(tmp_path / "design.json")
    computed = report_recommendation(path, "tpcdi-trade")
    assert computed.design.procedures == rec.design.procedures
    assert computed.design.cost.total == pytest.approx(rec.design.cost.total)
    assert (computed.workload.cluster.machines, computed.graph.cost.machines) == (rec.design.machines,) * 2
    for name, d in rec.baselines.items():
        assert (computed.baselines[name].procedures, computed.baselines[name].state) == (d.procedures, d.state)
    # the current search is what `advisor recommend` picks (by predicted throughput, the
    # workload simulated), shown where it is not the design itself
    current = recommend(computed.graph, weights=rec.design.weights, workload=computed.workload,
                        baselines=False).design
    if current.procedures != rec.design.procedures or current.state != rec.design.state:
        assert computed.baselines["advisor (current search)"].procedures == current.procedures
    # the same inputs held in memory give the same report
    in_memory = Recommendation(rec.design, rec.graph, computed.baselines, workload=rec.workload)
    a = build_report(in_memory, source="tpcdi-trade", options=QUICK)
    b = build_report(computed, source="tpcdi-trade", options=QUICK)
    assert a == b


def test_a_changed_design_is_compared_with_the_current_search(rec):
    d = rec.design
    moved = type(d).from_dict(d.to_dict())
    sp = next(iter(moved.procedures))
    moved.procedures[sp] = (moved.procedures[sp] + 1) % moved.n_partitions
    computed = report_recommendation(moved, "tpcdi-trade")
    assert "advisor (current search)" in computed.baselines
    assert computed.design.cost.total > rec.design.cost.total  # rescored on the source
    html = build_report(computed, options=QUICK)
    assert "<td>advisor (current search)" in html
    assert moved.cost.total == pytest.approx(rec.design.cost.total)  # the caller's object is as it was


def test_the_verdict_counts_a_prediction_within_two_percent_a_tie():
    # "beats every baseline" over a 0.005 % difference, and "does NOT beat" an equal one, where
    # recommend counts predictions within 2 % a tie
    from types import SimpleNamespace

    from costmodel.design import Design
    from reports.report_context import THIS_DESIGN, _verdict

    def design(p: int) -> Design:
        return Design("move-micro", 2, 1, {"SP1": 0, "SP2": p}, {"T1": 0, "T2": p})

    def sim(tps: float):
        return SimpleNamespace(throughput_tps=tps)

    designs = {THIS_DESIGN: design(1), "a": design(0), "b": design(0), "c": design(1)}
    tied = _verdict(designs, {THIS_DESIGN: sim(1000.0), "a": sim(1000.0), "b": sim(900.0), "c": sim(1000.0)})
    assert tied["ok"] and tied["text"] == ("This design (1,000 tuples/s predicted) ties a (1,000 tuples/s) "
                                           "(within 2%) and beats every other baseline in predicted throughput; "
                                           "c found the same placement.")
    losing = _verdict(designs, {THIS_DESIGN: sim(1000.0), "a": sim(1015.0), "b": sim(1100.0)})
    assert not losing["ok"] and losing["text"] == ("This design (1,000 tuples/s predicted) does NOT beat: "
                                                   "b (1,100 tuples/s); it ties a (1,015 tuples/s).")
    plain = _verdict(designs, {THIS_DESIGN: sim(1000.0), "a": sim(900.0)})
    assert plain["text"] == "This design (1,000 tuples/s predicted) beats every baseline in predicted throughput."
