"""The simulator's terminal summary lives with its result (`SimResult.describe`), and the
calibration says what it stands for (`Calibration.label`)."""
from __future__ import annotations

from dataclasses import replace

from advisor.sources import load_workload
from engine_sim.sim import Calibration, simulate
from engine_sim.sim.scenario_designs import tpcdi_design


def test_the_summary_reports_the_result_s_own_numbers():
    w = load_workload("tpcdi-trade")
    r = simulate(w, tpcdi_design(w, 4), batches=300, seed=1)
    lines = r.describe("reference-cluster parameters")
    assert lines[0] == ("simulated tpcdi-trade on 4 machines x 1 partition "
                        "(dls scheduler, rpc MOVE, reference-cluster parameters)")
    text = "\n".join(lines)
    assert f"{r.throughput_tps:,.0f} tuples/s" in text and f"{r.distributed_txns:,} (" in text
    assert f"{r.bottleneck} ({r.peak_utilisation:.0%} busy)" in text
    assert ("NOT MET" in text) == (not r.within_bound)
    missed = replace(r, within_bound=False, machines=20, machine_utilisation=[0.5] * 20)
    assert "NOT MET" in "\n".join(missed.describe("x")) and missed.describe("x")[-1].endswith(" ... (4 more; --json has every one)")


def test_a_calibration_names_where_it_was_measured():
    ref = Calibration.reference()
    assert ref.label() == "reference-cluster parameters"
    measured = Calibration.from_params(ref.params, {}, machine={"hostname": "box"})
    assert measured.label() == "calibrated on box, as a cluster"
    assert measured.on_host().label() == "calibrated on box, as that host runs the engine"


def test_a_batch_of_one_tuple_is_said_in_the_singular():
    w = load_workload("tpcdi-trade")
    r = simulate(w, tpcdi_design(w, 2), batches=100, seed=1)
    assert f"batch of {r.batch_size} tuples)" in "\n".join(r.describe())
    one = "\n".join(replace(r, batch_size=1).describe())
    assert "batch of 1 tuple)" in one and "1 tuples" not in one
