"""The cost model sees a data-parallel design as it runs: each lane on its own machine, its
own fragments local (`costmodel.lane_graph`), in the cost, the bottleneck, the load figure and
the views of the design."""
import numpy as np
import pytest

from advisor.cli.format import design_table
from advisor.data_parallel import data_parallel_variant
from advisor.sources import load_workload
from costmodel import cost_model_bottleneck
from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from costmodel.granularity import workload_at
from costmodel.lanes import lane_routes
from costmodel.model import machine_loads
from engine_sim.sim import max_throughput


@pytest.fixture(scope="module")
def lanes_case():
    """fraud-scoring on 4 machines: ScoreCard and its tables alone on machine 3 (table level),
    and the advisor's data-parallel variant of that, on the graph at the variant's items."""
    w = load_workload("fraud-scoring").with_cluster(4, 1)
    table = Design("fraud-scoring", 4, 1, {"Ingest": 0, "RaiseAlert": 0, "ScoreCard": 3},
                   {"CardProfiles": 3, "CardStats": 3, "Alerts": 0})
    variant = data_parallel_variant(w, table)
    graph = WorkloadGraph.from_workload(workload_at(w, variant.state))
    return w, table, variant, graph


def test_each_lane_is_a_node_on_its_partition_with_its_share_of_the_work(lanes_case):
    w, _, variant, graph = lanes_case
    g, proc, state = variant.cost_view(graph)
    lanes = [i for i, n in enumerate(g.proc_names) if n == "ScoreCard"]
    assert sorted(proc[lanes].tolist()) == sorted(lane_routes(w, variant)["ScoreCard"].lanes) == [1, 2, 3]
    # work, rows and tuples per batch are dealt out, never made or lost
    c, plain = g.cost, graph.cost
    assert c.proc_load.sum() == pytest.approx(plain.proc_load.sum())
    assert c.proc_load[lanes].sum() == pytest.approx(plain.proc_load[graph.proc_names.index("ScoreCard")])
    assert c.ps_weight.sum() == pytest.approx(plain.ps_weight.sum())
    assert c.pp_weight.sum() == pytest.approx(plain.pp_weight.sum())
    # each lane reaches only the fragments on its own partition (CardStats is split alike)
    fragment_edges = [e for e in np.flatnonzero(np.isin(c.ps_proc, lanes)) if "#" in g.state_names[c.ps_state[e]]]
    assert len(fragment_edges) == 32  # 16 fragments each of CardProfiles and CardStats
    assert all(state[c.ps_state[e]] == proc[c.ps_proc[e]] for e in fragment_edges)
    assert g._proc_index["ScoreCard"] == graph.proc_names.index("ScoreCard")


def test_the_cost_and_the_bottleneck_see_the_lanes_machines_busy(lanes_case):
    w, table, variant, graph = lanes_case
    plain_proc, _ = variant.arrays(graph)
    b = cost_model_bottleneck(variant, graph)
    # before: all of ScoreCard's work on its base machine (81 % of all load) and every
    # fragment elsewhere a distributed access; as it runs, no lane reaches past its partition
    assert machine_loads(graph.cost, plain_proc).max() / graph.cost.proc_load.sum() > 0.75
    assert b.machine_load_share < 0.5 and b.distributed_access is None
    g, proc, _ = variant.cost_view(graph)
    assert (machine_loads(g.cost, proc) > 0).all()  # machine 0 runs Ingest and RaiseAlert, 1-3 a lane each
    cost = variant.score(graph)
    assert cost.state_colocation == 0.0
    # the design that runs faster in the simulator is now the cheaper one too
    table_graph = WorkloadGraph.from_workload(w)
    assert cost.total < table.score(table_graph, variant.weights).total
    table_tps, variant_tps = (max_throughput(w, d, batches=100).throughput_tps for d in (table, variant))
    assert variant_tps > table_tps


def test_a_design_without_lanes_is_scored_on_its_own_graph(lanes_case):
    w, table, _, _ = lanes_case
    graph = WorkloadGraph.from_workload(w)
    g, proc, state = table.cost_view(graph)
    assert g is graph
    plain_proc, plain_state = table.arrays(graph)
    assert np.array_equal(proc, plain_proc) and np.array_equal(state, plain_state)


def test_the_views_of_a_design_show_its_lanes(lanes_case):
    _, _, variant, graph = lanes_case
    text = design_table(variant, graph)
    base = variant.procedures["ScoreCard"]
    for line in text.splitlines():
        if not line.startswith("machine "):
            continue
        part = int(line.split("partition ")[1].split(":")[0])
        assert ("[ScoreCard]" in line) == (part == base)
        assert ("[ScoreCard lane]" in line) == (part in {1, 2, 3} - {base})
    lanes = [r for r in variant.assignment_rows(graph) if r["kind"] == "lane"]
    assert sorted(r["partition"] for r in lanes) == sorted({1, 2, 3} - {base})
    assert all(r["name"] == r["owner"] == "ScoreCard" for r in lanes)
    assert variant._repr_html_().count("lane@p") == len(lanes) == 2


def test_the_load_figure_puts_each_lane_on_its_machine(lanes_case):
    from reports.figures._machines import _load_info

    _, _, variant, graph = lanes_case
    info = _load_info(variant, graph)
    on = sorted(m for m, name, amount, _ in info.segments if name == "ScoreCard" and amount > 0)
    assert on == [1, 2, 3]
    assert info.totals.sum() == pytest.approx(graph.cost.proc_load.sum())


def test_the_graph_figure_draws_each_lane_on_its_machine_and_no_false_cut(lanes_case):
    """It drew ScoreCard on its base machine only, with a red "distributed" edge to every
    fragment elsewhere, where state co-location is 0 and the engine runs no distributed txn."""
    from reports.figures._graph import _graph_info

    _, _, variant, graph = lanes_case
    info = _graph_info(variant, graph, max_nodes=200)
    lanes = {n.machine for n in info.nodes if n.kind == "processing" and n.name.startswith("ScoreCard")}
    assert lanes == {1, 2, 3}
    fragment_cuts = [e for e in info.edges if e.cut and e.kind == "processing-state"
                     and "#" in info.nodes[e.b].name]
    assert fragment_cuts == []


def test_no_suggestion_splits_or_merges_an_sp_that_runs_as_lanes(lanes_case):
    """A report of the data-parallel pick suggested "partition ScoreCard on card_id (3 copies)"
    for an SP that already runs as lanes split by that key."""
    from reports.suggestions import suggest

    w, _, variant, graph = lanes_case
    from costmodel.granularity import workload_at

    found = suggest(workload_at(w, variant.state), variant)
    assert not any("ScoreCard" in s.target for s in found.items + found.not_helping)


@pytest.mark.process  # the report's sections run in worker processes
def test_the_report_of_the_lanes_pick_compares_it_as_recommend_did(tmp_path):
    """It searched again on the fragment graph ("advisor (current search)" at 31,648 tuples/s,
    a design never weighed for lanes), set baselines that split every table beside it (round-
    robin 0.7889 where recommend's table said 0.5638), swept weights that never weigh lanes
    ("changes at 18 of 18 points") and charted table-level picks beside it."""
    import re

    from advisor.api import recommend
    from reports.report import report_design

    rec = recommend("fraud-scoring", machines=4, data_parallel=True)
    path = rec.design.save(tmp_path / "lanes.json")
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", report_design(path, "fraud-scoring")))
    assert "advisor (current search)" not in text
    for name, d in rec.baselines.items():  # the baselines recommend showed, at the same cost
        assert f"{name} " in text and f"{d.cost.total:.4f}" in text
    assert "table-level pick" in text
    assert "never weighs data-parallel lanes" in text and "weigh no data-parallel lanes" in text
    # its table-level rows are simulated at the design's fragments: said, as recommend's figures differ
    assert "placed at this design's fragments" in text.replace("&#39;", "'")
