"""`advisor simulate` (and the one-line errors of the simulator's commands)."""
from __future__ import annotations

import json

import pytest

from advisor.cli import run_app
from engine_sim.sim import Calibration, SimParams
from engine_sim.sim.scenario_designs import chain_design, tpcdi_design

pytestmark = pytest.mark.integration


@pytest.fixture
def tpcdi_json(tpcdi_trade, tmp_path):
    return tpcdi_design(tpcdi_trade, 4).save(tmp_path / "tpcdi.json")


def test_simulate_prints_the_engine_metrics_and_the_bottleneck(tpcdi_json, capsys):
    assert run_app(["simulate", "tpcdi-trade", "--design", str(tpcdi_json), "--batches", "300"]) == 0
    out = capsys.readouterr().out
    assert "simulated tpcdi-trade on 4 machines x 1 partition (dls scheduler, rpc MOVE" in out
    for label in ("throughput", "latency p50 / p99", "distributed txns", "MOVEs", "busiest resource"):
        assert label in out


def test_simulate_json_rescales_the_design_and_writes_the_result(chain32, tmp_path, capsys):
    w = chain32
    design = chain_design(w, 8).save(tmp_path / "chain.json")  # one SP per partition
    out_file = tmp_path / "result.json"
    args = ["simulate", "chain-32", "--design", str(design), "--batches", "300", "--json"]
    assert run_app(args) == 0
    eight = json.loads(capsys.readouterr().out)
    assert run_app(args + ["--machines", "2", "--out", str(out_file)]) == 0
    two = json.loads(capsys.readouterr().out)
    assert eight["machines"] == 8 and two["machines"] == 2
    # the same design squeezed onto 2 machines: 8 partitions, 4 SPs on each
    assert len(two["partition_utilisation"]) == 8
    assert 0.2 * eight["throughput_tps"] < two["throughput_tps"] < 0.3 * eight["throughput_tps"]
    assert json.loads(out_file.read_text())["throughput_tps"] == two["throughput_tps"]
    assert two["calibration"]["source"] == "reference"


@pytest.mark.process  # a calibration file records the machine (a subprocess)
def test_simulate_at_a_given_rate_with_a_calibration_file(tpcdi_json, tmp_path, capsys):
    slow = Calibration.from_params(SimParams(txn_overhead_s=500e-6), {}, source="measured")
    path = slow.save(tmp_path / "cal.json")
    base = ["simulate", "tpcdi-trade", "--design", str(tpcdi_json), "--batches", "300", "--json"]
    assert run_app(base) == 0
    fast = json.loads(capsys.readouterr().out)
    assert run_app(base + ["--calibration", str(path)]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    assert calibrated["throughput_tps"] < 0.5 * fast["throughput_tps"]
    assert run_app(base + ["--rate", "100", "--scheduler", "central", "--move", "txn"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["input_rate"] == 100 and r["throughput_bps"] == pytest.approx(100, rel=0.03)
    assert r["scheduler"] == "central" and r["move_txns"] == 3 * 300


@pytest.mark.parametrize("extra, problem", [
    (["--scheduler", "fifo"], "'fifo' is not one of 'dls', 'central'"),
    (["--move", "copy"], "'copy' is not one of 'rpc', 'txn'"),
    (["--rate", "0"], "input rate must be from 1e-06 to 1e+09 batches per second, got 0"),
    # 1e300 printed a 300-digit rate, 1e-300 "0 batches/s", both with exit 0
    (["--rate", "1e300"], "input rate must be from 1e-06 to 1e+09 batches per second, got 1e+300"),
    (["--rate", "1e-300"], "input rate must be from 1e-06 to 1e+09 batches per second, got 1e-300"),
    (["--machines", "0"], "Invalid value for '--machines' / '-m': Input should be greater than or equal to 1"),
    (["--calibration", "/nonexistent/cal.json"], "no such file"),
    # it ran the reference cluster's parameters as if this host had measured them
    (["--this-host"], "--this-host needs --calibration with a calibration measured on the host"),
])
def test_simulate_bad_input_is_one_line_exit_2(tpcdi_json, capsys, extra, problem):
    assert run_app(["simulate", "tpcdi-trade", "--design", str(tpcdi_json), "--batches", "50"] + extra) == 2
    err = capsys.readouterr().err
    assert problem in err and err.startswith("error: ") and err.count("\n") == 1


def test_simulate_refuses_a_design_of_another_workload(tpcdi_json, tmp_path, capsys):
    assert run_app(["simulate", "chain-32", "--design", str(tpcdi_json)]) == 2
    assert "does not place" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "advisor.calibration/1", "simulator": {"warp_factor": 9}}')
    assert run_app(["simulate", "tpcdi-trade", "--design", str(tpcdi_json), "--calibration", str(bad)]) == 2
    assert "unknown simulator parameter 'warp_factor'" in capsys.readouterr().err


def test_rescale_without_machines_is_refused_as_it_would_change_nothing(tpcdi_json, capsys):
    """`simulate -d d.json --rescale recommend` simulated the design as it is, without a word
    that the option asked for nothing (it applies to --machines N only)."""
    for how in ("recommend", "spread"):
        assert run_app(["simulate", "tpcdi-trade", "--design", str(tpcdi_json), "--rescale", how]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert f"--rescale {how} applies to --machines N only (it would change nothing)" in err
    assert run_app(["simulate", "tpcdi-trade", "--design", str(tpcdi_json), "--machines", "2",
                    "--rescale", "recommend", "--batches", "20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["machines"] == 2
