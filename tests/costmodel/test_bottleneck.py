"""One bottleneck record (costmodel.Bottleneck) from every source: the cost model's busiest
machine and heaviest cut edges, the simulator's busiest resource, a validation's evidence."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from costmodel import (REPLICATED, Bottleneck, CostGraph, cost_model_bottleneck, find_bottleneck,
                       hottest_procedure)
from costmodel.graph import WorkloadGraph
from advisor.sources import load_graph
from advisor.api import recommend

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("advisor", "costmodel", "traces", "engine_sim", "reports")


def four_sps(capacity=(1.0, 1.0, 1.0)) -> WorkloadGraph:
    # SP i has load i+1; streams 0->1 (5 tuples), 1->2 (7), 2->3 (1); SP j accesses state j
    cost = CostGraph(proc_load=[1.0, 2.0, 3.0, 4.0], state_bytes=[1.0, 1.0, 1.0, 1.0],
                     ps_proc=[0, 1, 2, 3], ps_state=[0, 1, 2, 3], ps_weight=[2.0, 3.0, 4.0, 9.0],
                     ps_write=[False, False, False, False], pp_src=[0, 1, 2], pp_dst=[1, 2, 3],
                     pp_weight=[5.0, 7.0, 1.0], machines=3, capacity=list(capacity))
    states = [f"T{j}" for j in range(4)]
    return WorkloadGraph("four", [f"SP{i}" for i in range(4)], states, states, [False] * 4, cost)


def test_the_cost_model_names_the_busiest_machine_and_the_heaviest_cut_edges():
    g = four_sps()
    proc = np.array([0, 0, 1, 2])  # loads per machine: 3, 3, 4
    state = np.array([0, 2, 1, REPLICATED])  # state 1 away from SP 1; state 3 copied everywhere
    b = find_bottleneck(g, proc, state)
    assert b.source == "cost model" and b.utilisation is None
    assert b.machine == 2 and b.hot_procedure == "SP3"
    assert b.machine_load_share == pytest.approx(4 / 10)
    assert b.saturated == ("SP3",)
    assert b.move == ("SP1", "SP2", 7.0)  # 0->1 is not cut; 1->2 outweighs 2->3
    assert b.distributed_access == ("SP1", "T1", 3.0)  # SP 2 reads state 2 on machine 1: not cut
    # capacity counts: the same loads on a machine twice as fast are no longer the peak
    b2 = find_bottleneck(four_sps((1.0, 1.0, 2.0)), proc, state)
    assert b2.machine in (0, 1) and set(b2.saturated) == {"SP1", "SP2"}
    assert hottest_procedure(g.cost, proc, 0) == 1 and hottest_procedure(g.cost, proc, 1) == 2


def test_a_design_with_nothing_cut_has_no_move_and_no_distributed_access():
    g = four_sps()
    b = find_bottleneck(g, np.zeros(4, dtype=int), np.zeros(4, dtype=int))
    assert b.move is None and b.distributed_access is None
    assert b.machine == 0 and b.machine_load_share == 1.0 and b.hot_procedure == "SP3"
    assert hottest_procedure(g.cost, np.zeros(4, dtype=int), 2) is None
    assert b.describe() == ["most loaded machine: 0 (100% of all load, cost model), hottest SP there: SP3"]


def test_a_busier_machine_given_by_the_caller_is_the_bottleneck():
    g = four_sps()
    proc, state = np.array([0, 0, 1, 2]), np.zeros(4, dtype=int)
    b = find_bottleneck(g, proc, state, busy=[0.9, 0.5, 0.2], near_peak=0.5, source="simulated",
                        resource="partition 0", utilisation=0.9)
    assert (b.machine, b.hot_procedure, b.saturated) == (0, "SP1", ("SP1", "SP2"))
    assert b.machine_load_share == pytest.approx(3 / 10)
    assert b.describe()[0] == "busiest resource: partition 0 (90% busy)"
    with pytest.raises(ValueError, match="source"):
        Bottleneck("guessed", 0, 0.0, None)


def test_the_recommendation_names_its_cost_model_bottleneck():
    rec = recommend("tpcdi-trade")
    d = rec.design
    # put one SP away from its first table so something is cut
    sp = "SecurityLookup"
    d.procedures[sp] = (d.procedures[sp] + 1) % d.n_partitions
    b = cost_model_bottleneck(d, rec.graph)
    assert isinstance(b, Bottleneck) and b.source == "cost model"
    proc, state = d.arrays(rec.graph)
    assert b == find_bottleneck(rec.graph, proc, state)
    assert b.distributed_access[0] == sp and b.distributed_access[1] in d.state
    assert b.hot_procedure in d.procedures
    lines = b.describe()
    assert lines[0].startswith(f"most loaded machine: {b.machine} ")
    assert any(line.startswith("most frequent distributed access: SecurityLookup -> ") for line in lines)
    fresh = recommend("tpcdi-trade", baselines=False)
    assert fresh.bottleneck == cost_model_bottleneck(fresh.design, fresh.graph) != b


def test_the_bottleneck_is_taken_on_the_design_cluster():
    graph = load_graph("tpcdi-trade")  # 4 machines
    rec = recommend(graph, machines=2, partitions_per_machine=2, baselines=False)
    b = cost_model_bottleneck(rec.design, graph)
    assert 0 <= b.machine < 2 and f"machine {b.machine} " in b.resource


def test_the_simulator_view_keeps_the_cost_model_edges():
    from reports.bottleneck import simulated_bottleneck
    from reports.predict import predict

    rec = recommend("tpcdi-trade", baselines=False)
    d = rec.design
    cost_only = simulated_bottleneck(d, rec.graph)
    assert cost_only == cost_model_bottleneck(d, rec.graph)
    assert cost_only.utilisation is None and "cost model" in cost_only.resource
    sim = predict(rec.workload, d)
    with_sim = simulated_bottleneck(d, rec.graph, sim)
    assert with_sim.source == "simulated"
    assert with_sim.machine == sim.bottleneck_machine and with_sim.resource == sim.bottleneck
    assert with_sim.utilisation == pytest.approx(sim.peak_utilisation)
    assert with_sim.move == cost_only.move and with_sim.distributed_access == cost_only.distributed_access
    assert with_sim.saturated and with_sim.hot_procedure in with_sim.saturated
    assert with_sim.describe()[0].startswith(f"busiest resource: {sim.bottleneck} (")


def test_a_simulated_busiest_machine_is_described_by_how_busy_it_is_not_its_sp_share():
    # the machine holding DimTrade alone is the simulator's busiest (TradeInsert reaches it
    # remotely); by the cost model it has no SP load: "most loaded machine: 1 (0% of all load)"
    from costmodel.design import Design
    from reports.bottleneck import simulated_bottleneck
    from reports.predict import predict

    graph = load_graph("tpcdi-trade", 4, 1)
    d = Design("tpcdi-trade", 4, 1, {"DateTimeLookup": 3, "SecurityLookup": 2, "AccountLookup": 0,
                                     "TradeInsert": 3},
               {"DimDate": 3, "DimTime": 3, "StatusType": 3, "TradeType": 3, "DimSecurity": 2,
                "DimAccount": 0, "DimTrade": 1})
    from advisor.sources import load_workload

    sim = predict(load_workload("tpcdi-trade"), d)
    b = simulated_bottleneck(d, graph, sim)
    assert b.machine == 1 and b.hot_procedure is None and b.machine_load_share == 0.0
    busy = sim.machine_utilisation[1]
    line = next(x for x in b.describe() if x.startswith("most loaded machine"))
    assert line == f"most loaded machine: 1 (its partitions {busy:.0%} busy in the simulator)" and busy > 0.5
    assert cost_model_bottleneck(d, graph).describe()[0].startswith("most loaded machine: 3 (")


def test_the_validation_view_falls_back_to_the_cost_model():
    from advisor.sources import load_workload
    from engine_sim.sim import scenario_designs as designs
    from reports.validation import measured_bottleneck

    w = load_workload("chain-32")
    d = designs.chain_design(w, 2)
    d.procedures["SP5"] = 7
    b = measured_bottleneck(w, d, None, None)
    assert b.source == "cost model"
    assert b.evidence["machine"]["machine"] == b.machine
    assert b.evidence["move"]["stream"] == f"{b.move[0]}->{b.move[1]}"
    assert b.evidence["distributed_txn"]["procedure"] == b.distributed_access[0] == "SP5"
    assert b.describe() == [b.evidence[k]["text"] for k in ("machine", "move", "distributed_txn")]


def test_the_validation_view_takes_the_simulated_machine():
    from advisor.sources import load_workload
    from engine_sim.sim import scenario_designs as designs
    from engine_sim.sim import simulate
    from reports.validation import measured_bottleneck

    w = load_workload("chain-32")
    d = designs.chain_design(w, 2)
    d.procedures["SP5"] = 7
    sim = simulate(w, d, batches=20).to_dict()
    b = measured_bottleneck(w, d, sim, None)
    assert b.source == "simulated" and b.resource == sim["bottleneck"]
    assert b.machine == b.evidence["machine"]["machine"]
    assert b.utilisation == pytest.approx(sim["machine_utilisation"][b.machine])
    assert b.distributed_access[0] == "SP5"  # the cost model's edges stay


def test_the_validation_view_takes_the_engine_machine_its_partitions_were_held_longest():
    # the engine's measured machine is the one whose partitions were locked longest (as the
    # simulator's utilisation counts), not the one that executed most; an older validation
    # file, without holds, is read by execution
    from advisor.sources import load_workload
    from engine_sim.engine import run_workload
    from engine_sim.sim import scenario_designs as designs
    from reports.validation import measured_bottleneck

    w = load_workload("chain-32")
    d = designs.chain_design(w, 2)
    engine = run_workload(w, d, batches=20, in_process=True).to_dict()
    engine["wall_s"] = 1.0
    assert (d.machines, d.partitions_per_machine) == (2, 4)
    engine["partition_busy_s"] = [0.5] * 4 + [0.2] * 4
    engine["partition_held_s"] = [0.6] * 4 + [0.9] * 4
    b = measured_bottleneck(w, d, None, engine)
    assert b.source == "measured" and b.machine == 1 and b.utilisation == pytest.approx(0.9)
    assert "90% held, 20% executing" in b.evidence["machine"]["text"]
    engine["partition_held_s"] = []
    old = measured_bottleneck(w, d, None, engine)
    assert old.machine == 0 and "(50% busy on the engine)" in old.evidence["machine"]["text"]


def _classes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]


def _defines(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in ast.walk(tree))


def test_one_module_defines_the_bottleneck_and_the_cost_model_imports_nothing_of_ours():
    sources = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    defining = [p.relative_to(ROOT).as_posix() for p in sources if _defines(p, "find_bottleneck")]
    assert defining == ["costmodel/bottleneck.py"]
    records = [p.relative_to(ROOT).as_posix() for p in sources
               if any(c.endswith("Bottleneck") for c in _classes(p))]
    assert records == ["costmodel/bottleneck.py"]
    for p in (ROOT / "costmodel").rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] in PACKAGES[:1] + PACKAGES[2:] for n in names), (p, names)


def test_a_cut_between_partitions_of_one_machine_is_said_as_such():
    """The report put "most expensive MOVE" beside a processing co-location of 0: the cost
    model's terms count machines, and that MOVE was between partitions of one machine."""
    rec = recommend("linear-road", machines=4)
    b = rec.bottleneck
    assert rec.design.cost.processing_colocation == 0.0 and b.move is not None
    assert b.move_on_one_machine
    assert any(line.endswith(", between partitions of one machine)") and line.startswith("most expensive MOVE")
               for line in b.describe())
    spread = recommend("tpcdi-trade", machines=4, objective="cost")
    assert spread.bottleneck.move is not None and not spread.bottleneck.move_on_one_machine
