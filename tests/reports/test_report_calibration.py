"""A calibration given to a report reaches every pick in it, not only its predictions: the
comparison with the current search, the suggestions' designs and the scaling chart's points
are what `recommend --calibration` gives (issue 21: one answer everywhere)."""
from __future__ import annotations

import json

import pytest

from advisor.api import recommend
from advisor.priced_weights import calibration_path
from advisor.sources import load_workload
from costmodel.calibration import Calibration
from reports.predict import PredictOptions, predicted_tps
from reports.sensitivity import design_signature


@pytest.fixture(scope="module")
def slow_network(tmp_path_factory) -> Calibration:
    """The shipped calibration with messages 50x dearer and 5 ms on the wire: the simulator
    then prefers keeping tpcdi-trade's SPs together, where the default prefers spreading."""
    data = json.loads(calibration_path().read_text())
    data["simulator"]["msg_cpu_s"] *= 50
    data["simulator"]["net_latency_s"] = 0.005
    path = tmp_path_factory.mktemp("cal") / "slow-network.json"
    path.write_text(json.dumps(data))
    return Calibration.load(path)


@pytest.fixture(scope="module")
def spread():
    """The default pick for tpcdi-trade on 2 machines, and the pick under the slow network
    with the same weights; the test below needs them to differ."""
    return recommend("tpcdi-trade", machines=2, seed=0, baselines=False)


def test_the_calibration_changes_the_pick_this_file_relies_on(spread, slow_network):
    other = recommend("tpcdi-trade", machines=2, seed=0, baselines=False, weights=spread.design.weights,
                      calibration=slow_network)
    assert design_signature(other.design) != design_signature(spread.design)


def test_the_report_compares_with_the_search_under_its_calibration(spread, slow_network):
    from reports.compared import CURRENT_SEARCH, report_recommendation

    plain = report_recommendation(spread.design, "tpcdi-trade", seed=0)
    assert CURRENT_SEARCH not in plain.baselines  # the design is the current search's pick
    calibrated = report_recommendation(spread.design, "tpcdi-trade", seed=0, calibration=slow_network)
    expected = recommend(plain.graph, weights=spread.design.weights, seed=0, workload=plain.workload,
                         calibration=slow_network).design
    assert design_signature(calibrated.baselines[CURRENT_SEARCH]) == design_signature(expected)


def test_a_suggestion_and_a_tuning_round_pick_with_the_calibration(spread, slow_network):
    from reports.candidates import design_for

    workload = load_workload("tpcdi-trade").with_cluster(2, 1)
    weights = spread.design.weights
    made = design_for(workload, 2, 1, weights, seed=0, calibration=slow_network)
    expected = recommend(workload, machines=2, partitions_per_machine=1, weights=weights, seed=0,
                         baselines=False, calibration=slow_network).design
    assert design_signature(made) == design_signature(expected)
    assert design_signature(made) != design_signature(design_for(workload, 2, 1, weights, seed=0))


def test_the_scaling_chart_point_is_the_calibrated_pick(spread, slow_network):
    from reports.scaling import scaling_curve

    workload = load_workload("tpcdi-trade")
    options = PredictOptions(calibration=slow_network)
    weights = spread.design.weights
    curve = scaling_curve(workload, [2], weights, 1, 0, baselines=(), options=options)
    [row] = curve.rows
    at_two = workload.with_cluster(2, 1)
    pick = recommend(at_two, weights=weights, seed=0, baselines=False, calibration=slow_network).design
    assert row["throughput_tps"] == pytest.approx(predicted_tps(at_two, pick, options), rel=1e-9)
    # and it is not the uncalibrated pick's figure
    assert row["throughput_tps"] != pytest.approx(predicted_tps(at_two, spread.design, options), rel=1e-3)


def test_a_demo_with_a_bad_calibration_fails_in_one_line_before_writing(tmp_path, capsys):
    from advisor.cli import run_app

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = tmp_path / "demo"
    code = run_app(["demo", "--out", str(out), "--calibration", str(bad)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "bad.json" in err
    assert not out.exists()
