"""`resolve_weights`: what the CLI's --alpha/--beta/--gamma/--calibration mean, as an API."""
from __future__ import annotations

import json

import pytest

from advisor.sources import load_graph
from advisor.api import resolve_weights
from advisor.priced_weights import default_weights, weights_from_calibration
from costmodel.errors import UserError
from costmodel import DEFAULT_WEIGHTS, Weights


def test_nothing_given_leaves_the_pricing_to_recommend():
    assert resolve_weights() is None
    assert resolve_weights(source="tpcdi-trade") is None


def test_all_three_given_are_taken_as_they_are():
    assert resolve_weights(1.0, 0.5, 0.25, source="tpcdi-trade") == Weights(1.0, 0.5, 0.25)


def test_a_partial_override_fills_in_from_the_priced_defaults_of_the_graph():
    priced = default_weights(load_graph("tpcdi-trade", 4))
    w = resolve_weights(alpha=7.0, source="tpcdi-trade", machines=4)
    assert w == Weights(7.0, priced.beta, priced.gamma)
    # without a source there is no graph to price: the fixed defaults fill in
    assert resolve_weights(gamma=3.0) == Weights(DEFAULT_WEIGHTS.alpha, DEFAULT_WEIGHTS.beta, 3.0)


def test_a_calibration_prices_the_graph_or_gives_its_own_weights(tmp_path):
    from advisor.priced_weights import calibration_path

    path = tmp_path / "cal.json"
    path.write_text(json.dumps(json.loads(calibration_path().read_text())))
    graph = load_graph("tpcdi-trade")
    assert resolve_weights(calibration=path, source="tpcdi-trade") == default_weights(graph, path)
    assert resolve_weights(calibration=path) == weights_from_calibration(path)


def test_one_calibration_argument_takes_an_object_or_its_file_and_prices_recommend(tmp_path):
    """`recommend(calibration=...)` prices its default weights with the calibration it
    simulates with: the same design from the object and from its file, and a calibration with
    another MOVE price gives other weights than the default one."""
    from advisor.api import recommend
    from advisor.priced_weights import as_calibration, calibration_path
    from costmodel.calibration import Calibration

    data = json.loads(calibration_path().read_text())
    data["prices"]["move_s"] = data["prices"]["move_s"] * 100
    path = tmp_path / "dear-moves.json"
    path.write_text(json.dumps(data))
    cal = Calibration.load(path)
    assert as_calibration(cal) is cal and as_calibration(path).prices == cal.prices
    graph = load_graph("tpcdi-trade", 2)
    assert default_weights(graph, cal) == default_weights(graph, path)
    assert default_weights(graph, cal).beta > default_weights(graph).beta
    by_object = recommend("tpcdi-trade", machines=2, calibration=cal, objective="cost", baselines=False)
    by_file = recommend("tpcdi-trade", machines=2, calibration=path, objective="cost", baselines=False)
    assert by_object.design.weights == by_file.design.weights == default_weights(graph, cal)
    assert by_object.design.to_dict()["procedures"] == by_file.design.to_dict()["procedures"]


def test_partition_weights_of_beta_alone_with_a_free_local_move_are_not_all_zero():
    """Inside a machine beta shrinks by the local MOVE's price; beta alone and a calibration
    whose local MOVE costs nothing made Weights(0, 0, 0), which Weights refuses."""
    from advisor.priced_weights import calibration_path, local_move_ratio, partition_weights
    from costmodel.calibration import Calibration

    data = json.loads(calibration_path().read_text())
    data["simulator"]["local_msg_cpu_s"] = 0.0
    free = Calibration.from_dict(data)
    assert local_move_ratio(free) == 0.0
    assert partition_weights(Weights(0, 1, 0), free) == Weights(0, 1, 0)
    assert partition_weights(Weights(0.3, 0.1, 0.6), free) == Weights(0.3, 0.0, 0.6)  # as before


@pytest.mark.parametrize("weights, problem", [
    ((-1.0, 1.0, 1.0), "weight alpha must be a finite number >= 0"),
    ((0.0, 0.0, 0.0), "at least one of --alpha, --beta, --gamma must be positive"),
    ((1.0, 1e308, 1.0), r"weight beta must be at most 1e\+09 .*got 1e\+308"),  # every cost was inf or 300 digits
])
def test_bad_weights_are_one_advisor_error(weights, problem):
    with pytest.raises(UserError, match=problem):
        resolve_weights(*weights)


def test_evaluate_says_where_the_design_files_weights_are_not_those_priced_for_the_workload(tmp_path, capsys):
    # the same placement read 0.3032 in `evaluate` (its file's weights) and 0.3112 in
    # `recommend --current` (the workload's weights now), unsaid
    from dataclasses import replace as replaced

    from advisor.api import recommend
    from advisor.cli import run_app
    from advisor.sources import load_workload

    spec = load_workload("tpcdi-trade")
    path = recommend(spec, machines=4, baselines=False).design.save(tmp_path / "d.json")
    heavier = replaced(spec, procedures=tuple(replaced(p, cost=5 * p.cost) for p in spec.procedures))
    from costmodel.spec_writer import workload_to_toml
    (tmp_path / "heavier.toml").write_text(workload_to_toml(heavier))
    assert run_app(["evaluate", "--design", str(path), "tpcdi-trade"]) == 0
    assert "weights: the design file's own" not in capsys.readouterr().out  # priced alike: nothing said
    assert run_app(["evaluate", "--design", str(path), str(tmp_path / "heavier.toml"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    priced = default_weights(load_graph(heavier, 4))
    assert out["note"].startswith(f"weights: the design file's own; recommend prices this workload at "
                                  f"alpha={priced.alpha:g} beta={priced.beta:g} gamma={priced.gamma:g} (total ")
    assert run_app(["evaluate", "--design", str(path), str(tmp_path / "heavier.toml"), "--alpha", "1"]) == 0
    assert "weights: the design file's own" not in capsys.readouterr().out  # weights asked for: theirs
