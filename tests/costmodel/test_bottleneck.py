"""One bottleneck analysis (costmodel.find_bottleneck), and the views that add to it: the
advisor's names, the simulator's busiest resource, the engine's and simulator's measurements."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from costmodel import REPLICATED, CostGraph, find_bottleneck, hottest_procedure
from advisor.sources import load_graph
from advisor.api import DesignBottleneck, design_bottleneck, recommend

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("advisor", "costmodel", "traces", "engine_sim", "reports")


def four_sps(capacity=(1.0, 1.0, 1.0)) -> CostGraph:
    # SP i has load i+1; streams 0->1 (5 tuples), 1->2 (7), 2->3 (1); SP j accesses state j
    return CostGraph(proc_load=[1.0, 2.0, 3.0, 4.0], state_bytes=[1.0, 1.0, 1.0, 1.0],
                     ps_proc=[0, 1, 2, 3], ps_state=[0, 1, 2, 3], ps_weight=[2.0, 3.0, 4.0, 9.0],
                     ps_write=[False, False, False, False], pp_src=[0, 1, 2], pp_dst=[1, 2, 3],
                     pp_weight=[5.0, 7.0, 1.0], machines=3, capacity=list(capacity))


def test_the_cost_model_names_the_busiest_machine_and_the_heaviest_cut_edges():
    g = four_sps()
    proc = np.array([0, 0, 1, 2])  # loads per machine: 3, 3, 4
    state = np.array([0, 2, 1, REPLICATED])  # state 1 away from SP 1; state 3 copied everywhere
    b = find_bottleneck(g, proc, state)
    assert b.machine == 2 and b.hot_proc == 3
    assert b.machine_load_share == pytest.approx(4 / 10)
    assert b.near_peak == (2,)
    assert b.move == (1, 2, 7.0)  # 0->1 is not cut; 1->2 outweighs 2->3
    assert b.distributed_access == (1, 1, 3.0)  # SP 2 reads state 2 on machine 1: not cut
    # capacity counts: the same loads on a machine twice as fast are no longer the peak
    b2 = find_bottleneck(four_sps((1.0, 1.0, 2.0)), proc, state)
    assert b2.machine in (0, 1) and set(b2.near_peak) == {0, 1}
    assert hottest_procedure(g, proc, 0) == 1 and hottest_procedure(g, proc, 1) == 2


def test_a_design_with_nothing_cut_has_no_move_and_no_distributed_access():
    g = four_sps()
    b = find_bottleneck(g, np.zeros(4, dtype=int), np.zeros(4, dtype=int))
    assert b.move is None and b.distributed_access is None
    assert b.machine == 0 and b.machine_load_share == 1.0 and b.hot_proc == 3
    assert hottest_procedure(g, np.zeros(4, dtype=int), 2) is None


def test_the_advisor_adds_names_to_the_cost_model_bottleneck():
    rec = recommend("tpcdi-trade")
    d = rec.design
    # put one SP away from its first table so something is cut
    sp = "SecurityLookup"
    d.procedures[sp] = (d.procedures[sp] + 1) % d.n_partitions
    b = design_bottleneck(d, rec.graph)
    assert isinstance(b, DesignBottleneck)
    proc, state = d.arrays(rec.graph)
    raw = find_bottleneck(rec.graph.cost, proc, state)
    assert b.cost == raw
    assert b.distributed_access[0] == rec.graph.proc_names[raw.distributed_access[0]]
    assert b.distributed_access[1] == rec.graph.state_names[raw.distributed_access[1]]
    assert b.hot_procedure in d.procedures
    lines = b.describe()
    assert lines[0].startswith(f"most loaded machine: {b.machine} ")


def test_the_bottleneck_is_taken_on_the_design_cluster():
    graph = load_graph("tpcdi-trade")  # 4 machines
    rec = recommend(graph, machines=2, partitions_per_machine=2, baselines=False)
    b = design_bottleneck(rec.design, graph)
    assert (b.graph.cost.machines, b.graph.cost.partitions_per_machine) == (2, 2)
    assert 0 <= b.machine < 2


def test_the_simulator_view_keeps_the_cost_model_edges():
    from reports.bottleneck import simulated_bottleneck
    from reports.predict import predict

    rec = recommend("tpcdi-trade", baselines=False)
    d = rec.design
    cost_only = simulated_bottleneck(d, rec.graph)
    assert cost_only.base.cost == design_bottleneck(d, rec.graph).cost
    assert cost_only.machine == cost_only.base.machine and cost_only.peak_utilisation is None
    assert "cost model" in cost_only.resource
    sim = predict(rec.workload, d)
    with_sim = simulated_bottleneck(d, rec.graph, sim)
    assert with_sim.machine == sim.bottleneck_machine and with_sim.resource == sim.bottleneck
    assert with_sim.move == cost_only.move and with_sim.distributed_access == cost_only.distributed_access
    assert with_sim.saturated and with_sim.hot_procedure in with_sim.saturated


def test_the_validation_view_falls_back_to_the_cost_model():
    from advisor.sources import load_workload
    from engine_sim.sim import scenarios as S
    from reports.validation import measured_bottleneck

    w = load_workload("chain-32")
    d = S.chain_design(w, 2)
    d.procedures["SP5"] = 7
    b = measured_bottleneck(w, d, None, None)
    assert b.machine["machine"] == b.base.machine
    assert b.move["stream"] == f"{b.base.move[0]}->{b.base.move[1]}"
    assert b.distributed_txn["procedure"] == b.base.distributed_access[0] == "SP5"


def _defines(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in ast.walk(tree))


def test_one_module_defines_find_bottleneck_and_the_cost_model_imports_nothing_of_ours():
    sources = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    defining = [p.relative_to(ROOT).as_posix() for p in sources if _defines(p, "find_bottleneck")]
    assert defining == ["costmodel/bottleneck.py"]
    assert [p for p in sources if _defines(p, "Bottleneck")] == [ROOT / "costmodel/bottleneck.py"]
    for p in (ROOT / "costmodel").rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] in PACKAGES[:1] + PACKAGES[2:] for n in names), (p, names)
