"""`advisor validate`: engine and simulator side by side, the predicted cost, the bottleneck."""
from __future__ import annotations

import json

import pytest

from advisor.cli import run_app
from advisor.sources import load_workload
from costmodel.design import Design
from engine_sim.sim import scenario_designs as designs
from engine_sim.sim import scenarios as S
from reports.validation import engine_partition_limit, measured_bottleneck, static_hotspots, validate_design

pytestmark = pytest.mark.integration


@pytest.fixture
def tpcdi4(tpcdi_trade, tmp_path):
    return designs.tpcdi_design(tpcdi_trade, 4).save(tmp_path / "tpcdi4.json")


@pytest.mark.process  # the multi-process engine
def test_validate_runs_both_and_writes_the_result(tpcdi4, tmp_path, capsys):
    out = tmp_path / "validation.json"
    assert run_app(["validate", "--design", str(tpcdi4), "tpcdi-trade", "--batches", "60", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for label in ("predicted cost", "engine", "simulator", "throughput (tuples/s)", "bottleneck:",
                  "most loaded machine", "most expensive MOVE", "engine history check: ok"):
        assert label in printed
    written = json.loads(out.read_text())
    assert written["format"] == "advisor.validation/1" and written["workload"] == "tpcdi-trade"
    [data] = written["designs"]
    assert data["engine"]["history_check"] == "ok"
    assert data["engine"]["moves"] == data["simulator"]["moves"] == 3 * 60  # every stream crosses
    assert data["engine"]["distributed_txns"] == data["simulator"]["distributed_txns"] == 0
    assert data["predicted_cost"]["processing_colocation"] == pytest.approx(1.0)
    assert data["bottleneck"]["move"]["crosses_machine"] is True
    assert any("uncalibrated" in n for n in data["notes"])
    from reports.validation_view import ValidationView  # the report reads what we write

    view = ValidationView.from_any(out)
    assert view.has_both and any("throughput" in row[1] for row in view.rows)


def test_the_bottleneck_names_the_distributed_sp_and_the_busiest_machine():
    big = S.tpcdi_single_sp()
    d = designs.tpcdi_design(big, 4)
    r = validate_design(big, d, engine=False, batches=200)
    b = r.bottleneck
    assert b["distributed_txn"]["procedure"] == "TradeIngest"
    assert b["distributed_txn"]["count"] == 200
    assert b["machine"]["machine"] == 0  # the big SP's base partition is there
    assert r.engine is None and r.simulator["distributed_txns"] == 200


def test_static_hotspots_from_the_spec_alone(chain32):
    w = chain32
    d = designs.chain_design(w, 2)
    d.procedures["SP5"] = 7  # SP5 away from its table T5 (partition 1)
    dist, moves = static_hotspots(w, d)
    assert [x["procedure"] for x in dist] == ["SP5"]
    assert dist[0]["per_batch"] == pytest.approx(1 - (1 - 0.9) * (1 - 0.1))
    crossing = {m["stream"] for m in moves if m["crosses_machine"]}
    assert crossing == {"SP4->SP5", "SP5->SP6", "SP16->SP17"}
    b = measured_bottleneck(w, d, None, None).evidence  # no simulation: the cost model's view
    assert b["distributed_txn"]["procedure"] == "SP5" and b["move"]["crosses_machine"]
    assert b["move"]["stream"] in crossing


def test_a_design_too_big_for_this_machine_is_simulated_only(chain32, tmp_path, capsys):
    w = chain32
    machines = engine_partition_limit() // 4 + 1
    path = designs.chain_design(w, machines).save(tmp_path / "big.json")
    assert run_app(["validate", "--design", str(path), "chain-32", "--batches", "50", "--json"]) == 0
    [data] = json.loads(capsys.readouterr().out)["designs"]
    assert data["engine"] is None and data["simulator"]["machines"] == machines
    assert any("engine skipped" in n for n in data["notes"])


def test_a_design_of_many_partitions_that_uses_two_still_runs_on_the_engine():
    # empty partitions idle: only those holding an SP or state count against this machine
    many = engine_partition_limit() + 4
    design = Design("move-micro", many, 1, {"SP1": 0, "SP2": many - 1}, {"T1": 0, "T2": many - 1})
    result = validate_design(load_workload("move-micro"), design, batches=40)
    assert result.engine is not None and result.engine["batches"] == 40
    assert result.engine["history_check"] == "ok" and result.engine["machines"] == many
    assert not any("engine skipped" in n for n in result.notes)


def test_validate_errors_are_one_line(tpcdi4, tmp_path, capsys):
    assert run_app(["validate", "--design", str(tmp_path / "missing.json"), "tpcdi-trade"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert run_app(["validate", "--design", str(tpcdi4), "chain-32", "--sim"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_too_few_or_too_many_batches_for_the_simulator_is_one_line_before_the_engine_runs(tpcdi4, tmp_path,
                                                                                        capsys):
    # the simulator used to run 10 batches in silence where it was asked for fewer; a hundred
    # billion ran the engine first, then the simulator died of a MemoryError (745 GiB)
    for batches in ("0", "5", "1000001", "100000000000"):
        out = tmp_path / f"validation-{batches}.json"
        assert run_app(["validate", "--design", str(tpcdi4), "tpcdi-trade", "--batches", batches,
                        "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"error: --batches must be 10 to 1,000,000 for the simulator, got {batches}"
        assert not out.exists()


def test_simulate_refuses_more_batches_than_it_can_draw_in_one_line(tpcdi4, capsys):
    assert run_app(["simulate", "--design", str(tpcdi4), "tpcdi-trade", "--batches", "100000000000"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: batches must be at most 1,000,000 for the simulator (it draws every batch's "
                   "service times up front), got 100,000,000,000\n")
