"""bench/engine_picks.py: its committed design pairs still fit the workloads the bench rebuilds
(a generator that changed would have the bench measure designs of another dataflow), and the
predicted ratio it sets beside the engine's is the simulator's."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine_sim.sim import Calibration, max_throughput

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import engine_picks as B  # noqa: E402


@pytest.mark.parametrize("case", B.CASES, ids=lambda c: c.name)
def test_each_pair_places_everything_of_its_workload_on_its_cluster(case):
    w = B.case_workload(case)
    designs = case.designs()
    assert set(designs) == {case.new, case.old}
    for label, d in designs.items():
        assert set(d.procedures) == {p.name for p in w.procedures}, label
        assert {t.name for t in w.tables} <= set(d.state), label
        assert (d.machines, d.partitions_per_machine) == (w.cluster.machines, w.cluster.partitions_per_machine)
    assert designs[case.new].procedures != designs[case.old].procedures or designs[case.new].state != designs[case.old].state


def test_the_predicted_ratio_is_the_two_designs_simulated():
    case = next(c for c in B.CASES if c.name == "generated-1136-x2")
    w, designs = B.case_workload(case), case.designs()
    ref = Calibration.reference()
    tps = {k: max_throughput(w, d, calibration=ref, batches=300).throughput_tps for k, d in designs.items()}
    assert B.predicted_ratio(w, designs, case.new, case.old, ref, 300) == pytest.approx(tps["after"] / tps["before"])
    assert tps["after"] > tps["before"]  # what stop 42's search saw (the engine measured the opposite)


def test_the_closed_loop_ratio_is_the_engine_measurement_simulated():
    from engine_sim.sim import run_once

    case = next(c for c in B.CASES if c.name == "generated-1136-x2")
    w, designs = B.case_workload(case), case.designs()
    ref = Calibration.reference()
    tps = {k: run_once(w, d, in_flight=64, calibration=ref, batches=200).throughput_tps for k, d in designs.items()}
    assert B.IN_FLIGHT == 64  # the engine client's default, which the bench measures with
    assert B.closed_loop_ratio(w, designs, case.new, case.old, ref, 200) == pytest.approx(tps["after"] / tps["before"])
    assert B.closed_loop_tps(w, designs, ref, 200) == pytest.approx(tps)  # what --save keeps per design


@pytest.mark.integration
def test_write_pair_writes_recommends_two_picks(tmp_path, monkeypatch):
    """`--write`: the pair of a held-out case is recommend's pick by throughput and its pick by
    cost, called as recommend_scale calls it (and a pair with one placement is said to be one)."""
    from advisor.api import recommend
    from advisor.sources import load_workload

    monkeypatch.setattr(B, "DESIGNS", tmp_path)
    case = B.Case("tpcdi-at-2", "tpcdi-trade@2", 2, "throughput", "cost")
    written = B.write_pair(case)
    w = load_workload("tpcdi-trade").with_cluster(2, load_workload("tpcdi-trade").cluster.partitions_per_machine)
    for label, objective in (("throughput", "throughput"), ("cost", "cost")):
        saved = B.Design.load(tmp_path / f"tpcdi-at-2-{label}.json")
        picked = recommend(w, machines=2, partitions_per_machine=w.cluster.partitions_per_machine,
                           baselines=False, objective=objective).design
        assert (saved.procedures, saved.state) == (picked.procedures, picked.state), label
    same = (B.Design.load(written[0]).procedures, B.Design.load(written[0]).state) == \
        (B.Design.load(written[1]).procedures, B.Design.load(written[1]).state)
    assert written[2:] == (["(the same placement: not a pair worth measuring)"] if same else [])
