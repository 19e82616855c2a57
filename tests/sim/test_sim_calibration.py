"""Calibration: the fit recovers a known engine, the file records the machine and round-trips,
the weights follow the prices, and `advisor calibrate` measures the real engine."""
from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.priced_weights import weights_from_calibration
from advisor.cli import run_app
from engine_sim.sim import Calibration, CalibrationError, SimParams
from costmodel.calibration import prices, normalised_weights
from engine_sim.sim.fit import FIT_BASE, GROUPS, fit_parameters, observe, scale_group
from engine_sim.sim.probes import driver_probe, probes, throughput_checks

pytestmark = pytest.mark.integration


def test_the_fit_recovers_an_engine_that_behaves_like_the_model():
    """Measurements made by the simulator itself with unknown costs: the fitted simulator
    reproduces them, and predicts loaded runs it was not fitted to."""
    base = FIT_BASE.with_(host_cores=2, site_per_partition=True)
    rng = np.random.default_rng(7)
    truth = base
    for group in GROUPS:
        truth = scale_group(truth, group, float(rng.uniform(0.4, 3.0)))
    plist = probes()
    result = fit_parameters(plist, [observe(p, truth) for p in plist], base=base)
    assert result.median_error < 0.01
    assert max(abs(r["relative_error"]) for r in result.residuals.values()) < 0.1
    for check in throughput_checks():
        assert observe(check, result.params) == pytest.approx(observe(check, truth), rel=0.05)


def test_the_bytes_probe_is_wide_enough_that_its_bytes_outweigh_its_message():
    """A fit reads the byte costs off the difference between the two remote hops: with
    narrow tuples that difference was below the per-message costs and their noise, and the
    fitted bandwidth priced wide streams at half what the engine moves."""
    base = FIT_BASE.with_(host_cores=2, site_per_partition=True)
    hop = {p.name: observe(p, base) for p in probes()
           if p.name in ("hop_remote", "hop_remote_bytes") and p.observe == "latency"}
    assert hop["hop_remote_bytes"] - hop["hop_remote"] > hop["hop_remote"]


def test_the_fit_refuses_missing_measurements():
    plist = probes()[:3]
    with pytest.raises(ValueError, match="positive, finite"):
        fit_parameters(plist, [1e-4, 0.0, 1e-4])


def test_weights_follow_the_prices_of_this_cluster():
    base = prices(SimParams())
    w = normalised_weights(base)
    assert w.alpha + w.beta + w.gamma == pytest.approx(1.0, abs=1e-5)
    slow_net = normalised_weights(prices(SimParams(net_latency_s=1e-3)))
    assert slow_net.alpha > w.alpha  # 2PC round trips cost more: distributed txns weigh more
    costly_bytes = normalised_weights(prices(SimParams(ser_byte_s=50e-9, msg_cpu_s=20e-6)))
    assert costly_bytes.beta > w.beta  # MOVEs cost more
    heavy_txn = normalised_weights(prices(SimParams(txn_overhead_s=2e-3)))
    assert heavy_txn.gamma > w.gamma  # idle capacity is worth more


@pytest.mark.process  # records the machine (a subprocess)
def test_the_calibration_file_round_trips_and_feeds_recommend(tmp_path):
    cal = Calibration.from_params(SimParams(txn_overhead_s=77e-6, host_cores=2), {"txn:latency": 3e-4},
                                  fit={"median_relative_error": 0.05})
    path = cal.save(tmp_path / "cal.json")
    data = json.loads(path.read_text())
    assert data["format"] == "advisor.calibration/1"
    assert data["machine"]["hostname"] and data["machine"]["cpus"] and data["machine"]["measured_at"]
    back = Calibration.load(path)
    assert back.params == cal.params and back.weights == cal.weights and back.source == "measured"
    assert weights_from_calibration(path) == cal.weights  # what `advisor recommend --calibration` reads
    reference = Calibration.reference()
    assert reference.source == "reference" and reference.params == SimParams()


@pytest.mark.parametrize("mode, slice_s", [("multi-process", 0.002), ("in-process", 1.0)])
def test_a_file_from_before_the_serving_slice_predicts_the_engine_it_measured(tmp_path, mode, slice_s):
    cal = Calibration.from_params(SimParams(site_per_partition=True, host_cores=2), {"txn:latency": 3e-4})
    data = cal.to_dict()
    del data["simulator"]["serve_slice_s"]
    data["machine"]["engine_mode"] = mode
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = Calibration.load(tmp_path / "old.json")
    assert old.on_host().sim_params().serve_slice_s == slice_s  # as that engine served its queues


@pytest.mark.parametrize("text, problem", [
    ("not json", "not valid JSON"),
    ('{"format": "x"}', "not a calibration file"),
    ('{"format": "advisor.calibration/1", "simulator": {"txn_overhead_s": -1}}', "must be a finite number >= 0"),
    ('{"format": "advisor.calibration/1", "machine": []}', "machine must be an object"),
    ('{"format": "advisor.calibration/1", "simulator": {"crowding": "fast"}}',
     "crowding must be one of occupancy, mean, got 'fast'"),
    # no parameters at all: the reference cluster's were used, labelled "calibrated on" the file's host
    ('{"format": "advisor.calibration/1", "simulator": []}', "simulator must be the object of fitted"),
    ('{"format": "advisor.calibration/1", "simulator": {}}', "simulator must be the object of fitted"),
    ('{"format": "advisor.calibration/1", "simulator": null}', "simulator must be the object of fitted"),
    ('{"format": "advisor.calibration/1"}', "simulator must be the object of fitted"),
    # a misspelt key was read as absent, and any source was taken for "measured"
    ('{"format": "advisor.calibration/1", "simulator": {"cost_unit_s": 1e-4}, "wieghts": {}}',
     "wieghts: not a field of a calibration file"),
    ('{"format": "advisor.calibration/1", "simulator": {"cost_unit_s": 1e-4}, "source": "guessed"}',
     "source must be one of measured, reference, got 'guessed'"),
])
def test_bad_calibration_files_are_one_line_errors(tmp_path, text, problem):
    path = tmp_path / "cal.json"
    path.write_text(text)
    with pytest.raises(CalibrationError, match=problem) as info:
        Calibration.load(path)
    assert info.value.exit_code == 2


@pytest.mark.process  # the engine's probes start processes
def test_advisor_calibrate_measures_the_engine_and_writes_the_file(tmp_path, capsys):
    out = tmp_path / "calibration.json"
    assert run_app(["calibrate", "--quick", "--in-process", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "weights" in printed and f"wrote {out}" in printed
    cal = Calibration.load(out)
    assert cal.source == "measured" and cal.machine["engine_mode"] == "in-process"
    assert cal.params.host_cores == 1 and cal.params.site_per_partition
    assert cal.params.crowding == "mean"  # one thread runs every partition: the work adds up
    # in-process one thread runs the driver and every partition: no driver probe
    assert len(cal.measurements) == len([p for p in probes() if not driver_probe(p)]) < len(probes())
    assert all(v > 0 for v in cal.measurements.values())
    assert cal.fit["median_relative_error"] < 0.5  # the fitted model explains the measurements
    assert set(cal.fit["throughput_checks"]) == {p.key for p in throughput_checks()}
    assert cal.prices["distributed_txn_s"] > cal.prices["single_txn_s"]
    # the stored measurements fit again, with no engine run, to the same calibration
    again = tmp_path / "again.json"
    assert run_app(["calibrate", "--refit", str(out), "--out", str(again)]) == 0
    refitted = Calibration.load(again)
    assert refitted.measurements == cal.measurements and refitted.machine == cal.machine
    assert refitted.params == cal.params and refitted.prices == cal.prices
    # what an in-process run cannot measure is left out of the fit, and listed
    assert refitted.fit["probes_not_measured"] == [p.key for p in probes() if driver_probe(p)]
    assert {k: r["engine_bps"] for k, r in refitted.fit["throughput_checks"].items()} == \
        {k: r["engine_bps"] for k, r in cal.fit["throughput_checks"].items()}


def test_refit_refuses_what_it_cannot_refit(tmp_path, capsys):
    reference = tmp_path / "reference.json"
    Calibration.reference().save(reference)
    assert run_app(["calibrate", "--refit", str(reference), "--out", str(tmp_path / "x.json")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: only a measured calibration (from `advisor calibrate`) can be re-fitted"]
    assert run_app(["calibrate", "--refit", str(tmp_path / "missing.json"), "--quick"]) == 2
    assert "--refit runs no engine" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.slow
def test_advisor_calibrate_on_the_multi_process_engine(tmp_path):
    out = tmp_path / "calibration.json"
    assert run_app(["calibrate", "--quick", "--out", str(out)]) == 0
    cal = Calibration.load(out)
    assert cal.machine["engine_mode"] == "multi-process" and cal.params.host_cores >= 1
    for row in cal.fit["throughput_checks"].values():
        assert 0.33 < row["simulator_bps"] / row["engine_bps"] < 3


@pytest.mark.slow
def test_a_fresh_calibration_prices_the_bytes_a_wide_stream_carries(tmp_path):
    """move-micro across two machines with 100 KB tuples: the engine pads each crossing batch
    to its declared bytes, and the calibration's byte costs are fitted to a probe wide enough
    that the bytes, not the message, dominate it (with 2 KB tuples the fit predicted 0.45x)."""
    import dataclasses

    from advisor.sources import load_graph, load_workload
    from costmodel.design import Design
    from costmodel.weights import Weights
    from engine_sim.engine import run_workload
    from engine_sim.engine.run_options import ClientOptions
    from engine_sim.sim import run_once

    out = tmp_path / "calibration.json"
    assert run_app(["calibrate", "--quick", "--out", str(out)]) == 0
    base = load_workload("move-micro")
    wide = dataclasses.replace(base, streams=tuple(dataclasses.replace(s, tuple_bytes=100_000)
                                                   for s in base.streams))
    graph = load_graph(wide)
    split = Design.from_arrays(graph, [int(n == "SP2") for n in graph.proc_names],
                               [int(n == "T2") for n in graph.state_names], Weights(0.3, 0.1, 0.6))
    measured = run_workload(wide, split, batches=100, seed=0).throughput_tps
    predicted = run_once(wide, split, in_flight=ClientOptions().in_flight, batches=100,
                         calibration=Calibration.load(out).on_host()).throughput_tps
    assert 0.6 < predicted / measured < 1.7, (predicted, measured)
