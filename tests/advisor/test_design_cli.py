"""Design JSON round trip and the core CLI commands."""
import json

import pytest

from advisor.api import recommend
from advisor.cli import run_app
from costmodel.design import Design
from costmodel.errors import DesignError
from costmodel.graph import WorkloadGraph
from advisor.sources import load_workload
from costmodel import Weights

pytestmark = pytest.mark.integration


def test_design_json_round_trips_and_names_machines(tmp_path):
    d = recommend("tpcdi-trade", seed=3).design
    path = d.save(tmp_path / "d.json")
    data = json.loads(path.read_text())
    assert data["format"] == "advisor.design/1" and data["workload"] == "tpcdi-trade"
    assert data["cluster"] == {"machines": 4, "partitions_per_machine": 1}
    for name, place in data["procedures"].items():
        assert place["machine"] == place["partition"] // 1
    assert data["provenance"]["seed"] == 3 and len(data["provenance"]["input_sha256"]) == 64
    # the provenance says how the design was picked, and what the simulator predicted for it
    assert data["provenance"]["objective"] == "throughput"
    assert data["provenance"]["predicted_tuples_per_s"] > 0
    back = Design.load(path)
    assert back.procedures == d.procedures and back.state == d.state
    assert back.cost.total == pytest.approx(d.cost.total)
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def _two_partitions_a_machine(data: dict) -> None:
    data["cluster"]["partitions_per_machine"] = 2
    for kind in ("procedures", "state"):
        for entry in data[kind].values():
            if "partition" in entry:
                entry["machine"] = entry["partition"] // 2


@pytest.mark.parametrize("mutate, problem", [
    (lambda d: d.update(format="x"), "not a design file"),
    (lambda d: d["procedures"]["SecurityLookup"].update(partition=9), "partition must be an integer in 0..3"),
    (lambda d: d["procedures"]["SecurityLookup"].update(machine=0, partition=2), "does not hold partition 2"),
    (lambda d: d["cluster"].update(machines=0), "cluster.machines must be an integer >= 1"),
    (lambda d: d["procedures"].update(SecurityLookup={"replicated": True}), "cannot be replicated"),
    (lambda d: d["weights"].update(alpha=-2), "weights:"),
    (lambda d: d.update(provenance=[1]), "provenance must be an object"),
    (lambda d: d.update(provenance="x"), "provenance must be an object"),
    # an empty list, false or "" were taken for no provenance or no lanes: the check skipped them
    (lambda d: d.update(provenance=[]), r"provenance must be an object, got \[\]"),
    (lambda d: d.update(provenance=False), "provenance must be an object, got False"),
    (lambda d: d.update(data_parallel=[]), "data_parallel must be an object of procedure -> table names"),
    (lambda d: d.update(data_parallel=""), "data_parallel must be an object of procedure -> table names"),
    (lambda d: d["state"].update(DimDate={"replicated": False}),
     r'state.DimDate: needs "partition" \(or "replicated": true\), and "replicated": false places it nowhere'),
    (lambda d: _two_partitions_a_machine(d) or d["procedures"].update(SecurityLookup={"machine": 1}),
     'a machine of 2 partitions needs "partition" too'),
    (lambda d: d["state"].update(DimDate={"machine": 0, "replicated": True}),
     "state.DimDate: replicated and placed on a partition too"),
])
def test_bad_design_files_are_refused_with_one_line(tmp_path, mutate, problem):
    data = recommend("tpcdi-trade", baselines=False).design.to_dict()
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DesignError, match=problem):
        Design.load(path)


def test_design_for_another_workload_is_refused(tmp_path, capsys):
    recommend("move-micro", baselines=False).design.save(tmp_path / "m.json")
    assert run_app(["evaluate", "--design", str(tmp_path / "m.json"), "tpcdi-trade"]) == 2
    err = capsys.readouterr().err
    assert "does not place" in err and err.count("\n") == 1
    # the likely mistake is said first: the file is a design of another workload
    assert err.startswith("error: this is a design of workload 'move-micro': ")


def test_every_check_of_an_unplaced_node_names_the_designs_own_workload():
    """The cost model, the simulator and the engine refuse a design that leaves an SP of the
    workload unplaced; each says when the design is of another workload, and only then."""
    from engine_sim.engine.runner import check_design
    from engine_sim.sim import SimError
    from engine_sim.sim.compiled import _check_design

    design = recommend("move-micro", baselines=False).design
    other = load_workload("tpcdi-trade")
    graph = WorkloadGraph.from_workload(other)
    for check, error in ((lambda: design.arrays(graph), DesignError), (lambda: _check_design(other, design), SimError),
                         (lambda: check_design(other, design), DesignError)):
        with pytest.raises(error, match="^this is a design of workload 'move-micro': design does not place "):
            check()
    own = load_workload("move-micro")
    design.procedures.pop(own.procedure_names[0])
    for check, error in ((lambda: design.arrays(WorkloadGraph.from_workload(own)), DesignError),
                         (lambda: _check_design(own, design), SimError), (lambda: check_design(own, design), DesignError)):
        with pytest.raises(error, match="^design does not place .*of workload 'move-micro'"):
            check()


def test_looking_up_a_name_the_design_does_not_place_is_one_design_error():
    # procedure_machine was a bare KeyError 'nope'; is_replicated said False, as for a placed table
    d = Design("w", 2, 1, {"A": 0, "B": 1}, {"T": None, "U": 1})
    assert d.procedure_machine("B") == 1 and d.is_replicated("T") and not d.is_replicated("U")
    with pytest.raises(DesignError, match="^design of workload 'w' places no procedure 'nope'$"):
        d.procedure_machine("nope")
    with pytest.raises(DesignError, match="^design of workload 'w' places no state item 'nope'$"):
        d.is_replicated("nope")
    with pytest.raises(DesignError, match=r"places no procedure \['A'\]"):
        d.procedure_machine(["A"])  # (not a TypeError: unhashable)


def test_recommend_cli_writes_design_and_prints_every_baseline(tmp_path, capsys):
    out = tmp_path / "sub" / "design.json"
    assert run_app(["recommend", "tpcdi-trade", "--machines", "4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    for name in ("recommended", "single-machine", "round-robin", "random", "hash-by-table",
                 "state-only", "processing-only", "exhaustive-optimum"):
        assert name in text
    assert "most loaded machine" in text
    d = Design.load(out)
    assert d.machines == 4
    # evaluate agrees with the cost the recommendation printed
    assert run_app(["evaluate", "--design", str(out), "tpcdi-trade", "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)
    assert cost["total"] == pytest.approx(d.cost.total)


def test_hand_written_design_is_evaluated(tmp_path, capsys):
    hand = {"format": "advisor.design/1", "workload": "move-micro",
            "cluster": {"machines": 2, "partitions_per_machine": 1},
            "procedures": {"SP1": {"partition": 0}, "SP2": {"partition": 0}},
            "state": {"T1": {"partition": 0}, "T2": {"partition": 1}}}
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(hand))
    assert run_app(["evaluate", "--design", str(path), "move-micro", "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)
    assert cost["state_colocation"] == pytest.approx(0.5)
    assert cost["load_balance"] == pytest.approx(1.0)


def test_a_design_without_weights_is_costed_with_the_weights_recommend_uses(tmp_path, capsys):
    rec = recommend("tpcdi-trade", machines=4)
    data = rec.design.to_dict()
    del data["weights"], data["cost"]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(data))
    assert run_app(["evaluate", "--design", str(path), "tpcdi-trade", "--json"]) == 0
    total = json.loads(capsys.readouterr().out)["total"]
    assert total == pytest.approx(rec.design.cost.total, abs=1e-9)  # the same weights, the same cost
    fixed = rec.design.score(rec.graph.with_cluster(4, 1), Weights())
    assert abs(fixed.total - total) > 1e-3  # the fixed defaults (what it used) give another figure
    # one weight given: the others are the priced ones, not the fixed defaults
    assert run_app(["evaluate", "--design", str(path), "tpcdi-trade", "--alpha", str(rec.design.weights.alpha), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == pytest.approx(total, rel=1e-6)


def test_cli_overrides_cluster_and_weights(capsys):
    assert run_app(["recommend", "tpcdi-trade", "--machines", "2", "-p", "2", "--alpha", "1",
                    "--beta", "0", "--gamma", "0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cluster"] == {"machines": 2, "partitions_per_machine": 2}
    assert data["weights"] == {"alpha": 1.0, "beta": 0.0, "gamma": 0.0}
    assert data["cost"]["state_colocation"] == 0.0


def test_workloads_lists_every_bundled_workload(capsys):
    assert run_app(["workloads"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    from costmodel.spec_reader import bundled_workloads

    assert len(lines) == len(bundled_workloads()) == 13
    assert all(len(line.split(None, 1)) == 2 for line in lines)
    assert "window-micro" in [line.split()[0] for line in lines]


def test_written_files_get_normal_permissions(tmp_path):
    import os
    import stat

    from costmodel.files import atomic_write_text

    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "x.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_usage_errors_are_one_line_with_exit_2(capsys):
    for argv in (["recommend", "tpcdi-trade", "--alpha", "x"], ["recommend"], ["no-such-command"]):
        assert run_app(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_unwritable_output_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert run_app(["recommend", "move-micro", "--out", str(blocker / "sub" / "d.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "cannot write" in err and err.count("\n") == 1


def test_a_report_of_a_design_without_weights_uses_the_priced_weights(tmp_path):
    from reports.compared import report_recommendation

    rec = recommend("tpcdi-trade", machines=4)
    data = rec.design.to_dict()
    del data["weights"], data["cost"]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(data))
    shown = report_recommendation(path, "tpcdi-trade", baselines=False).design
    assert shown.weights == rec.design.weights
    assert shown.cost.total == pytest.approx(rec.design.cost.total, abs=1e-9)
