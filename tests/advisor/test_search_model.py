"""Nested groups in the graph, the cost model and the search; weights priced from a
calibration; clusters with more machines than the workload can use."""
import json

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from costmodel import CostGraph, Weights, score, split_procedures
from advisor.sources import load_graph
from advisor.api import recommend
from advisor.priced_weights import (ENV_VARIABLE, PACKAGE_CALIBRATION, Prices, calibration_path,
                                default_weights, load_prices, price_scales, weights_from_prices)
from costmodel.errors import UserError
from costmodel.graph import drop_idle_machines
from advisor.search import DesignSearch, contract_groups

pytestmark = pytest.mark.integration


# -- nested groups ---------------------------------------------------------------------------
def test_voter_leaderboard_keeps_its_nested_group_on_one_machine():
    rec = recommend("voter-leaderboard", machines=2, baselines=False)
    group = rec.workload.nested[0]
    assert len({rec.design.procedure_machine(p) for p in group}) == 1
    assert rec.design.cost.state_colocation == 0.0


def test_a_split_group_makes_every_access_of_its_sps_distributed():
    graph = load_graph("voter-leaderboard", 2, 1)
    c = graph.cost
    together = np.zeros(c.n_proc, dtype=int)
    state = np.zeros(c.n_state, dtype=int)
    split = together.copy()
    split[graph.proc_index("DeleteContestant")] = 1  # its tables stay beside the others
    assert score(c, together, state).state_colocation == 0.0
    group = np.isin(np.arange(c.n_proc), [graph.proc_index(p) for p in graph.nested[0]])
    share = c.ps_weight[group[c.ps_proc]].sum() / c.ps_weight.sum()
    assert score(c, split, state).state_colocation == pytest.approx(share)
    assert split_procedures(c, np.stack([together, split])).tolist() == [
        [False] * c.n_proc, group.tolist()]


@st.composite
def grouped_graphs(draw):
    n_proc = draw(st.integers(2, 7))
    n_state = draw(st.integers(1, 5))
    n_ps = draw(st.integers(1, 10))
    n_pp = draw(st.integers(0, 8))
    machines = draw(st.integers(2, 4))
    ints = lambda hi, n: st.lists(st.integers(0, hi), min_size=n, max_size=n)  # noqa: E731
    floats = lambda n: st.lists(st.floats(0.1, 50), min_size=n, max_size=n)  # noqa: E731
    g = CostGraph(
        proc_load=draw(floats(n_proc)), state_bytes=[1] * n_state,
        ps_proc=draw(ints(n_proc - 1, n_ps)), ps_state=draw(ints(n_state - 1, n_ps)),
        ps_weight=draw(floats(n_ps)), ps_write=draw(st.lists(st.booleans(), min_size=n_ps, max_size=n_ps)),
        pp_src=draw(ints(n_proc - 1, n_pp)), pp_dst=draw(ints(n_proc - 1, n_pp)),
        pp_weight=draw(floats(n_pp)), machines=machines,
        proc_group=draw(st.lists(st.integers(-1, 2), min_size=n_proc, max_size=n_proc)),
    )
    units, unit_of = contract_groups(g)
    unit_part = np.array(draw(ints(machines - 1, units.n_proc)))
    state_part = np.array(draw(ints(machines - 1, n_state)))
    return g, units, unit_of, unit_part, state_part


@settings(max_examples=80, deadline=None)
@given(grouped_graphs(), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_contracting_groups_keeps_the_cost_of_every_design_that_keeps_them_whole(case, a, b, c):
    g, units, unit_of, unit_part, state_part = case
    assume(a + b + c > 0)  # Weights refuses all zero
    w = Weights(a, b, c)
    whole = score(g, unit_part[unit_of], state_part, w)
    contracted = score(units, unit_part, state_part, w)
    assert whole.total == pytest.approx(contracted.total, abs=1e-12)
    assert not split_procedures(g, unit_part[unit_of]).any()


@settings(max_examples=40, deadline=None)
@given(grouped_graphs(), st.integers(0, 3))
def test_the_search_never_splits_a_group(case, seed):
    g = case[0]
    found = DesignSearch(seed=seed).fit(g)
    assert not split_procedures(g, found.proc_part_).any()
    for cand in found.pool_:
        assert not split_procedures(g, cand.proc_part).any()


def _statistics_dir(path, nested):
    """A small statistics directory written by hand: A -> B -> C, each with its own table,
    A and B sharing one more; 10 batches, every SP once per batch."""
    import pandas as pd

    from traces.statistics import TABLES, Statistics, write_statistics

    def frame(name, rows):
        schema = TABLES[name]
        filled = [{f.name: row.get(f.name, "" if str(f.type) == "string" else 0) for f in schema}
                  for row in rows]
        return pd.DataFrame(filled, columns=schema.names)

    procs = frame("procedures", [{"procedure": p, "invocations": 10, "commits": 10,
                                  "mean_cost_us": c, "p50_cost_us": c}
                                 for p, c in (("A", 300.0), ("B", 200.0), ("C", 500.0))])
    ps = frame("procedure_state", [{"procedure": p, "state": t, "table": t, "read_rows": r,
                                    "write_rows": w}
                                   for p, t, r, w in (("A", "TA", 10, 10), ("B", "TB", 10, 5),
                                                      ("C", "TC", 20, 20), ("A", "TS", 5, 0),
                                                      ("B", "TS", 5, 5))])
    streams = frame("streams", [{"from_procedure": "A", "to_procedure": "B", "tuples": 100},
                                {"from_procedure": "B", "to_procedure": "C", "tuples": 100}])
    state = frame("state", [{"state": t, "table": t, "kind": "table", "fragment": -1,
                             "read_rows": 10, "write_rows": 10, "estimated_bytes": 1000.0}
                            for t in ("TA", "TB", "TC", "TS")])
    state["key"] = None
    manifest = {"workload": "abc", "batches": 10, "nested": nested,
                "cluster": {"machines": 3, "partitions_per_machine": 1}}
    return write_statistics(Statistics(procs, ps, streams, state, manifest), path)


def test_statistics_graphs_keep_nested_groups_and_price_in_microseconds(tmp_path):
    from advisor.statistics_graph import graph_from_statistics

    graph = graph_from_statistics(_statistics_dir(tmp_path / "stats", [["B", "C"]]))
    group = graph.cost.proc_group
    assert group[graph.proc_index("B")] == group[graph.proc_index("C")] >= 0
    assert group[graph.proc_index("A")] == -1
    assert graph.load_unit_s == 1e-6 and graph.proc_txns.tolist() == [1.0, 1.0, 1.0]
    prices = Prices(distributed_txn_s=1e-3, move_s=1e-4, cost_unit_s=1.0)
    # load is 1000 µs per batch: the balance price is 1 ms whatever cost_unit_s says
    assert price_scales(graph, prices) == pytest.approx((3e-3, 2e-4, 1e-3))
    rec = recommend(graph, machines=3, baselines=False, weights=Weights(0.1, 0.1, 0.8))
    assert rec.design.procedure_machine("B") == rec.design.procedure_machine("C")
    assert rec.design.cost.machines_used == 2  # balance-heavy: A alone, the group together


# -- weights in prices -----------------------------------------------------------------------
def test_weights_are_the_prices_of_each_term_over_their_sum():
    g = CostGraph(proc_load=[2.0, 3.0, 5.0], state_bytes=[1, 1],
                  ps_proc=[0, 0, 1], ps_state=[0, 1, 1], ps_weight=[4.0, 1.0, 2.0],
                  ps_write=[True, False, True], pp_src=[0, 1], pp_dst=[1, 2],
                  pp_weight=[10.0, 5.0], machines=2)
    prices = Prices(distributed_txn_s=1e-3, move_s=1e-4, cost_unit_s=2e-4)
    # SPs 0 and 1 touch state: 2 distributed txns at most; 2 streams: 2 MOVEs; load 10 units
    assert price_scales(g, prices) == pytest.approx((2e-3, 2e-4, 2e-3))
    w = weights_from_prices(g, prices)
    assert (w.alpha, w.beta, w.gamma) == pytest.approx((2 / 4.2, 0.2 / 4.2, 2 / 4.2))
    # doubling every SP's cost doubles the balance price only
    heavier = weights_from_prices(g.with_cluster(2, 1), Prices(1e-3, 1e-4, 4e-4))
    assert heavier.gamma > w.gamma and heavier.alpha < w.alpha


def test_default_weights_come_from_the_shipped_calibration(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert calibration_path() == PACKAGE_CALIBRATION
    graph = load_graph("voter-leaderboard", 2)
    assert default_weights(graph) == weights_from_prices(graph, load_prices(PACKAGE_CALIBRATION))
    assert recommend(graph, baselines=False).design.weights == default_weights(graph)


def test_a_user_calibration_replaces_the_shipped_one(monkeypatch, tmp_path):
    data = json.loads(PACKAGE_CALIBRATION.read_text())
    data["prices"]["distributed_txn_s"] = 0.0  # distributed transactions free
    user = tmp_path / "sstore-advisor" / "calibration.json"
    user.parent.mkdir()
    user.write_text(json.dumps(data))
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert calibration_path() == user
    graph = load_graph("voter-leaderboard", 2)
    assert default_weights(graph).alpha == 0.0
    other = tmp_path / "other.json"
    data["prices"]["move_s"] = 0.0
    other.write_text(json.dumps(data))
    monkeypatch.setenv(ENV_VARIABLE, str(other))
    assert default_weights(graph).beta == 0.0 and default_weights(graph).gamma == pytest.approx(1.0)


def test_a_broken_calibration_is_one_clear_error(tmp_path):
    bad = tmp_path / "c.json"
    fitted = {"txn_overhead_s": 5e-5}  # (a calibration carries its simulator parameters)
    bad.write_text(json.dumps({"format": "advisor.calibration/1", "simulator": fitted, "prices": {"move_s": 1e-4}}))
    with pytest.raises(UserError, match="prices.distributed_txn_s is missing"):
        load_prices(bad)
    bad.write_text(json.dumps({"format": "advisor.calibration/1", "simulator": fitted,
                               "prices": {"move_s": -1, "distributed_txn_s": 1}}))
    with pytest.raises(UserError, match="prices.move_s must be a finite number >= 0"):
        load_prices(bad)


# -- clusters larger than the workload -------------------------------------------------------
@pytest.mark.parametrize("name, machines", [("chain-32", 5000), ("tpcdi-trade", 100_000)])
def test_a_huge_cluster_uses_the_machines_the_workload_can_use(name, machines):
    rec = recommend(name, machines=machines)
    d = rec.design
    assert d.machines == machines
    assert 1 <= d.cost.machines_used <= rec.graph.n_proc + rec.graph.n_state
    proc, state = d.arrays(rec.graph)
    assert d.cost.total == pytest.approx(score(rec.graph.cost, proc, state, d.weights).total)
    # no worse than the design found for a cluster of just the machines it uses, placed here
    small = recommend(name, machines=d.cost.machines_used, partitions_per_machine=d.partitions_per_machine,
                      weights=d.weights, baselines=False)
    small_proc, small_state = small.design.arrays(small.graph)
    assert d.cost.total <= score(rec.graph.cost, small_proc, small_state, d.weights).total + 1e-9


@settings(max_examples=40, deadline=None)
@given(grouped_graphs(), st.integers(5, 50))
def test_dropping_idle_machines_keeps_every_cost(case, machines):
    g = case[0].with_cluster(machines, 1)
    reduced, kept = drop_idle_machines(g)
    assert reduced.machines <= g.n_proc and kept.size == reduced.machines
    rng = np.random.default_rng(machines)
    proc = rng.integers(0, reduced.machines, g.n_proc)
    state = rng.integers(0, reduced.machines, g.n_state)
    assert score(reduced, proc, state).total == pytest.approx(
        score(g, kept[proc], kept[state]).total, abs=1e-12)
