"""Windows in the graph and the advisor: a window is a state node owned by its SP; every
search path keeps it on its owner's partition, its bytes count on that machine, it never
makes a design distributed, and a design that separates it from its owner is refused."""
import json
from dataclasses import replace

import numpy as np
import pytest

from costmodel import CostGraph, Weights, machine_memory, score
from advisor.api import evaluate, memory_per_machine, recommend
from advisor.baselines import BASELINE_FUNCTIONS
from advisor.cli import run_app
from costmodel.errors import DesignError
from advisor.exhaustive import count_assignments, exhaustive_optimum
from costmodel.graph import WorkloadGraph, drop_idle_machines, subgraph
from advisor.local_search import TabuSearch
from advisor.placement import place_state
from advisor.processing_moves import refine_processing
from advisor.search import DesignSearch, contract_groups
from advisor.candidate_pool import enumerated_candidates
from costmodel.spec_reader import parse_workload
from advisor.sources import load_workload
from window_specs import (heavy_upstream_spec, procedure, reads, spec_text, stream, table,
                          window, writes)

pytestmark = pytest.mark.integration


def spec(machines=3, ppm=2, memory_mb=None, size=1000):
    return parse_workload(heavy_upstream_spec(machines, ppm, memory_mb, size), "window-owner.toml")


def without_window(machines=3, ppm=2):
    return parse_workload(heavy_upstream_spec(machines, ppm, windowed=False), "no-window.toml")


def on_owner(design, window="RecentBids", owner="Trend") -> bool:
    return design.state[window] == design.procedures[owner]


def test_graph_has_one_state_node_per_window_after_the_tables():
    w = spec()
    g = WorkloadGraph.from_workload(w)
    assert g.state_names == ["Bids", "Items", "RecentBids"]
    assert g.window_names == ["RecentBids"] and g.owner_of("RecentBids") == "Trend"
    assert [g.is_window(j) for j in range(3)] == [False, False, True]
    c = g.cost
    assert list(c.state_owner) == [-1, -1, g.proc_index("Trend")]
    assert c.state_bytes[2] == w.window_bytes(w.window("RecentBids")) == 1000 * 32
    edges = {(g.proc_names[p], g.state_names[s], bool(wr)): float(x)
             for p, s, x, wr in zip(c.ps_proc, c.ps_state, c.ps_weight, c.ps_write)}
    assert edges[("Trend", "RecentBids", True)] == w.input_tuples("Trend") == 4  # inserts
    assert edges[("Trend", "RecentBids", False)] == 20  # the reads it declares
    assert not g.state_read_mostly[2]
    nx_graph = g.to_networkx()
    assert nx_graph.nodes["RecentBids"]["kind"] == "window"
    assert nx_graph.nodes["RecentBids"]["owner"] == "Trend"
    assert nx_graph.nodes["Bids"]["kind"] == "state"


def test_state_owner_is_kept_by_every_copy_and_checked():
    g = WorkloadGraph.from_workload(spec(machines=6, ppm=2))
    c = g.cost
    trend = g.proc_index("Trend")
    assert list(g.with_cluster(2, 3).cost.state_owner) == list(c.state_owner)
    assert list(drop_idle_machines(c.with_cluster(6, 1))[0].state_owner) == list(c.state_owner)
    # a subgraph renumbers the owner; without the owner the window is free there
    sub = subgraph(c, np.array([trend]), np.array([2]), machines=2)
    assert list(sub.state_owner) == [0]
    assert list(subgraph(c, np.array([0]), np.array([2]), machines=2).state_owner) == [-1]
    grouped = CostGraph(c.proc_load, c.state_bytes, c.ps_proc, c.ps_state, c.ps_weight,
                        c.ps_write, c.pp_src, c.pp_dst, c.pp_weight, machines=2,
                        proc_group=[-1, 0, 0], state_owner=c.state_owner)
    units, unit_of = contract_groups(grouped)
    assert units.state_owner[2] == unit_of[trend] == 1
    for bad in ([-1, -1, 3], [-1, -2, 0], [-1, 0]):
        with pytest.raises(ValueError):
            CostGraph(c.proc_load, c.state_bytes, c.ps_proc, c.ps_state, c.ps_weight,
                      c.ps_write, c.pp_src, c.pp_dst, c.pp_weight, state_owner=bad)


def test_a_window_beside_its_owner_changes_no_cost_and_away_from_it_is_infeasible():
    g = WorkloadGraph.from_workload(spec())
    plain = WorkloadGraph.from_workload(without_window())
    w = Weights(0.5, 0.2, 0.3)
    rng = np.random.default_rng(0)
    trend = g.proc_index("Trend")
    for _ in range(20):
        proc = rng.integers(0, 6, 3)
        tables = rng.integers(0, 6, 2)
        with_w = score(g.cost, proc, np.r_[tables, proc[trend]], w)
        assert with_w.feasible and not with_w.misplaced_state
        assert with_w.total == pytest.approx(score(plain.cost, proc, tables, w).total)
        elsewhere = (proc[trend] + 1 + int(rng.integers(0, 5))) % 6
        moved = score(g.cost, proc, np.r_[tables, elsewhere], w)
        assert not moved.feasible and moved.misplaced_state == (2,)
        assert moved.to_dict()["misplaced_state"] == [2]
    # the window's bytes count on its owner's machine
    mem = machine_memory(g.cost, np.array([0, 0, 4]))
    assert mem[2] == 32_000 and mem[0] == 200_000


@pytest.mark.parametrize("machines, objective", [
    (2, "cost"), (3, "cost"), (4, "cost"), (3, "throughput"),
    pytest.param(2, "throughput", marks=pytest.mark.slow),
    pytest.param(4, "throughput", marks=pytest.mark.slow),
])
def test_recommended_design_puts_the_window_on_its_owners_partition(machines, objective):
    rec = recommend(spec(machines=machines), objective=objective, seed=1)
    assert on_owner(rec.design)
    assert rec.design.cost.feasible
    assert rec.design.state["RecentBids"] // 2 == rec.design.procedure_machine("Trend")
    for name, d in rec.baselines.items():
        assert on_owner(d), name
    for c in rec.search.pool_:
        assert c.state_part[2] == c.proc_part[rec.graph.proc_index("Trend")], c.label
    for o in rec.selection.candidates:
        assert o.cost.feasible or o.cost.worst_overflow_mb > 0, o.label  # never misplaced


@pytest.mark.parametrize("objective", ["cost", pytest.param("throughput", marks=pytest.mark.slow)])
def test_same_seed_same_design(objective):
    a = recommend(spec(machines=4), seed=7, objective=objective, baselines=False).design
    b = recommend(spec(machines=4), seed=7, objective=objective, baselines=False).design
    assert (a.procedures, a.state) == (b.procedures, b.state) and on_owner(a)


def memory_spec(memory_mb=None, size=1_000_000):
    """A big table and a big window on 2 machines, with or without a memory limit."""
    return parse_workload(spec_text("window-memory", table("Orders", rows=300000, row_bytes=100),
                                    procedure("Ingest", 4.0, writes("Orders", 10)),
                                    procedure("Trend", 1.0, reads("Orders", 2)),
                                    stream("Ingest", "Trend", 10),
                                    window("Recent", "Trend", size=size, slide=1000),
                                    machines=2, machine_memory_mb=memory_mb),
                          "window-memory.toml")


@pytest.mark.parametrize("objective", ["throughput", "cost"])
def test_window_bytes_count_against_the_memory_limit(objective):
    # Orders (28.6 MB) and the window (30.5 MB) fit one machine without a limit, not in 50 MB
    free = recommend(memory_spec(), objective="cost").design
    assert len({free.procedure_machine("Ingest"), free.procedure_machine("Trend")}) == 1
    rec = recommend(memory_spec(memory_mb=50), objective=objective)
    d = rec.design
    assert d.cost.feasible and on_owner(d, "Recent")
    mem = memory_per_machine(d, rec.graph)
    assert (mem <= 50 * 2**20).all()
    assert mem[d.procedure_machine("Trend")] >= 1_000_000 * 32  # the window is counted there
    # the owner moved with its window; the heavier access (Ingest's writes) stayed local
    assert d.state["Orders"] == d.procedures["Ingest"] != d.procedures["Trend"]


def test_a_window_no_machine_can_hold_is_reported_infeasible():
    rec = recommend(memory_spec(memory_mb=20), objective="cost")  # the window is 30.5 MB
    d = rec.design
    assert on_owner(d, "Recent") and not d.cost.feasible
    assert d.cost.worst_overflow_mb > 0 and not d.cost.misplaced_state


def owned_dataflow(seed: int, machines: int = 4, memory: float | None = None) -> CostGraph:
    """A seeded dataflow whose last few state items are windows: only their owner touches them."""
    rng = np.random.default_rng(seed)
    n_proc, n_table, n_window = 10, 8, 4
    src = [int(rng.integers(0, v)) for v in range(1, n_proc)]
    dst = list(range(1, n_proc))
    owner = rng.choice(n_proc, n_window, replace=False)
    ps = []
    for v in range(n_proc):
        for t in {int(v * n_table / n_proc), int(rng.integers(0, n_table))}:
            ps.append((v, t, float(rng.integers(1, 20)), bool(rng.random() < 0.4)))
    for k, v in enumerate(owner):
        ps.append((int(v), n_table + k, float(rng.integers(1, 30)), True))
        ps.append((int(v), n_table + k, float(rng.integers(1, 30)), False))
    p, s, w, wr = zip(*ps)
    return CostGraph(
        proc_load=rng.uniform(1, 5, n_proc),
        state_bytes=np.r_[rng.integers(1_000, 10_000, n_table), rng.integers(20_000, 60_000, n_window)],
        ps_proc=p, ps_state=s, ps_weight=w, ps_write=wr, pp_src=src, pp_dst=dst,
        pp_weight=rng.integers(1, 50, len(src)).astype(float), machines=machines,
        memory_limit_bytes=memory, state_owner=np.r_[np.full(n_table, -1), owner],
    )


def misplaced(g: CostGraph, proc, state) -> np.ndarray:
    owned = g.owned_state
    return owned[np.asarray(state)[owned] != np.asarray(proc)[g.state_owner[owned]]]


@pytest.mark.parametrize("seed", [0, 1, pytest.param(2, marks=pytest.mark.slow),
                                  pytest.param(3, marks=pytest.mark.slow)])
def test_local_search_and_every_candidate_keep_windows_with_their_owners(seed):
    w = Weights(0.5, 0.2, 0.3)
    g = owned_dataflow(seed)
    # the tabu search moves SPs only; placing state after it pins each window to its owner
    rng = np.random.default_rng(seed)
    tabu = TabuSearch(w, seed=seed, restarts=3).run(g, [("random", rng.integers(0, 4, g.n_proc))])
    assert tabu.results_
    for _, part, _ in tabu.results_:
        assert misplaced(g, part, place_state(g, part, np.zeros(g.n_state, dtype=np.int64))).size == 0
    # greedy moves take an SP's windows along
    start = rng.integers(0, 4, g.n_proc)
    proc, state = refine_processing(g, w, start, place_state(g, start, np.zeros(g.n_state, dtype=np.int64)))
    assert misplaced(g, proc, state).size == 0
    # every candidate the search keeps, with and without a memory limit that the windows strain
    total = g.state_bytes.sum()
    for limit in (None, total / 3):
        search = DesignSearch(weights=w, seed=seed).fit(g.with_cluster(4, 1, None, limit))
        assert search.local_search_steps_ > 0
        for c in search.pool_:
            assert misplaced(g, c.proc_part, c.state_part).size == 0, c.label
            assert not c.cost.misplaced_state
        if limit is not None:
            assert search.cost_.feasible
            assert (machine_memory(g.with_cluster(4, 1), search.state_part_) <= limit).all()


def test_exhaustive_and_enumeration_move_windows_with_their_owners():
    g = WorkloadGraph.from_workload(spec(machines=2, ppm=1))
    w = Weights(0.5, 0.2, 0.3)
    proc, state, cost = exhaustive_optimum(g.cost, w)
    assert state[2] == proc[g.proc_index("Trend")]
    assert cost == pytest.approx(score(g.cost, proc, state, w).total)
    candidates = enumerated_candidates(g, w, limit=10_000)
    # SPs and tables are enumerated, the window follows
    assert len(candidates) == count_assignments(g.n_proc + 2, 2, True)
    for o in candidates:
        assert o.state_part[2] == o.proc_part[g.proc_index("Trend")] and o.cost.feasible
    for source in (spec(machines=3), load_workload("linear-road")):
        graph = WorkloadGraph.from_workload(source)
        for name, fn in BASELINE_FUNCTIONS.items():
            result = fn(graph, w, 3)
            if result is not None:
                assert misplaced(graph.cost, *result).size == 0, name


def test_place_state_pins_a_window_that_has_no_edges():
    c = WorkloadGraph.from_workload(spec()).cost
    keep = c.ps_state != 2  # the window's edges dropped: nothing pulls it to its owner
    g = CostGraph(c.proc_load, c.state_bytes, c.ps_proc[keep], c.ps_state[keep],
                  c.ps_weight[keep], c.ps_write[keep], c.pp_src, c.pp_dst, c.pp_weight,
                  machines=3, state_owner=c.state_owner)
    state = place_state(g, np.array([0, 1, 2]), np.zeros(3, dtype=np.int64))
    assert state[2] == 2 and list(state[:2]) == [0, 1]


def write_spec(tmp_path, workload_text):
    path = tmp_path / "window-owner.toml"
    path.write_text(workload_text)
    return path


@pytest.mark.parametrize("edit, where", [
    (lambda place, other: {"machine": other // 2, "partition": other}, "puts it on partition"),
    (lambda place, other: {"replicated": True}, "replicates it"),
])
def test_evaluate_refuses_a_design_that_moves_the_window(tmp_path, capsys, edit, where):
    spec_path = write_spec(tmp_path, heavy_upstream_spec())
    design = recommend(load_workload(spec_path), objective="cost", baselines=False).design
    good = design.save(tmp_path / "good.json")
    assert run_app(["evaluate", "--design", str(good), str(spec_path)]) == 0
    capsys.readouterr()
    data = json.loads(good.read_text())
    owner_part = data["procedures"]["Trend"]["partition"]
    data["state"]["RecentBids"] = edit(data["state"]["RecentBids"], (owner_part + 1) % 6)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert run_app(["evaluate", "--design", str(bad), str(spec_path)]) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "'RecentBids'" in err and "'Trend'" in err and where in err
    with pytest.raises(DesignError, match="window 'RecentBids'"):
        evaluate(bad, spec_path)
    # the simulator reads the design without the graph: it refuses it too
    assert run_app(["simulate", str(spec_path), "--design", str(bad), "--batches", "50"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'RecentBids'" in err and "'Trend'" in err


def test_linear_road_has_its_segment_windows_and_keeps_them_with_their_owner():
    w = load_workload("linear-road")
    assert {x.name: x.procedure for x in w.windows} == {
        "SegmentSpeeds": "SegmentStatistics", "SegmentCars": "SegmentStatistics"}
    for x in w.windows:
        assert x.kind == "time" and 0 < x.slide <= x.size and w.window_bytes(x) < 64 * 2**20
    rec = recommend("linear-road", objective="cost")
    for name in ("SegmentSpeeds", "SegmentCars"):
        assert on_owner(rec.design, name, "SegmentStatistics")
    assert evaluate(rec.design, "linear-road").total == pytest.approx(rec.design.cost.total)


def test_a_design_that_leaves_its_windows_out_puts_them_with_their_owners():
    # `advisor simulate` and `run` took such a design; `evaluate` and `report` refused it
    w = spec()
    rec = recommend(w, objective="cost")
    windows = set(rec.graph.window_names)
    assert windows
    left_out = replace(rec.design, state={k: v for k, v in rec.design.state.items() if k not in windows})
    proc, state = left_out.arrays(rec.graph)
    assert [proc.tolist(), state.tolist()] == [a.tolist() for a in rec.design.arrays(rec.graph)]
    assert evaluate(left_out, w).total == pytest.approx(evaluate(rec.design, w).total)
    no_table = replace(rec.design, state={k: v for k, v in rec.design.state.items() if k in windows})
    with pytest.raises(DesignError, match="does not place"):  # a table is still needed
        no_table.arrays(rec.graph)
