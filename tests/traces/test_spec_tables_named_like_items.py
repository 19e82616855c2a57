"""A table the spec names like a hot tuple (`Trade@Type`, listed in its trace's `spec_tables`) is a
table at every granularity, as a spec's `T#0` already was: at tuple granularity its hot tuples
`Trade@Type@KEY` are tuples of it, and at table granularity it is a table. The item names were
cut at the first '@': the statistics' graph read `Trade@Type@0` as key `Type@0` of a table
`Trade` (and `Trade@Type` as a hot tuple of it), the spec at the recommended design's granularity
refused the design ("not a table of workload"), and so did the engine's row routing."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from advisor.sources import load_workload
from costmodel.granularity import fragment_name, table_among, with_hot_set, workload_at
from costmodel.workload import Workload, workload_as_plain
from engine_sim.engine.migration_plan import row_bytes
from engine_sim.engine.row_routing import RowRouter

TABLE = "Trade@Type"  # was TradeType: its keys are the trace's hottest tuples


@pytest.fixture(scope="module")
def spec() -> Workload:
    """tpcdi-trade with its table TradeType named `Trade@Type`."""
    w = load_workload("tpcdi-trade")

    def named(t: str) -> str:
        return TABLE if t == "TradeType" else t

    return replace(w, tables=tuple(replace(t, name=named(t.name)) for t in w.tables),
                   procedures=tuple(replace(p, accesses=tuple(replace(a, table=named(a.table)) for a in p.accesses))
                                    for p in w.procedures))


def _tuple_names(tables, fragments: int, hot: dict[str, list[str]]) -> list[str]:
    """State items at tuple granularity, as the aggregation names them."""
    return ([fragment_name(t, i) for t in tables for i in range(fragments)]
            + [f"{t}@{k}" for t, keys in hot.items() for k in keys])


TABLES = [TABLE, "Trade", "Users"]
ITEMS = {f"{TABLE}@7": TABLE, f"{TABLE}#1": TABLE, "Trade#0": "Trade", "Trade@9": "Trade",
         "Users@bob@example.org": "Users"}  # (a key may hold '@' too)


def test_a_hot_tuple_is_read_against_the_tables_beside_it():
    names = set(_tuple_names(TABLES, 2, {TABLE: ["0", "7"], "Trade": ["9"], "Users": ["bob@example.org"]}))
    assert {n: table_among(n, names) for n in ITEMS} == ITEMS
    assert [table_among(n, set(TABLES)) for n in TABLES] == TABLES  # table granularity: each is a table


def test_given_the_tables_an_item_name_reads_as_one_of_them():
    from costmodel.granularity import base_table, tuple_parts

    assert {n: base_table(n, set(TABLES)) for n in ITEMS} == ITEMS
    assert [base_table(n, set(TABLES)) for n in TABLES] == TABLES
    assert tuple_parts(f"{TABLE}@7", set(TABLES)) == (TABLE, "7")
    assert tuple_parts("Users@bob@example.org", set(TABLES)) == ("Users", "bob@example.org")
    assert tuple_parts(f"{TABLE}@7", {"Users"}) is None and tuple_parts(f"{TABLE}@", {TABLE}) is None


def test_a_design_placing_its_hot_tuples_runs_on_the_spec(spec):
    names = _tuple_names(spec.table_names, 4, {TABLE: ["0", "3"], "DimDate": ["1"]})
    at = workload_at(spec, names)
    assert {f"{TABLE}@0", f"{TABLE}@3", "DimDate@1"} <= set(at.table_names)
    assert sum(t.rows for t in at.tables if t.name.startswith((f"{TABLE}@", f"{TABLE}#"))) \
        == pytest.approx(spec.table(TABLE).rows, abs=4)
    state = {n: i % 4 for i, n in enumerate(names)}
    router = RowRouter({t.name: t.rows for t in spec.tables}, state, 4)
    assert router.row_partition(TABLE, "3") == state[f"{TABLE}@3"]
    assert router.hot[TABLE] == {"0": state[f"{TABLE}@0"], "3": state[f"{TABLE}@3"]}
    assert row_bytes(spec, f"{TABLE}@3") == spec.table(TABLE).row_bytes  # (what a migration copies)
    # another trace's hot set: the new hot tuple of `Trade@Type` goes where its fragment is
    carried = with_hot_set(state, _tuple_names(spec.table_names, 4, {TABLE: ["0", "5"], "DimDate": ["1"]}))
    assert carried is not None and carried[f"{TABLE}@5"] == router.row_partition(TABLE, "5")


@pytest.mark.spark
def test_its_trace_aggregates_at_tuple_and_table_granularity_into_items_of_the_table(spark, spec, tmp_path):
    from advisor.statistics_graph import graph_from_statistics
    from traces.aggregate import aggregate
    from traces.synth import synthesize

    synthesize(workload_as_plain(spec), tmp_path / "t", batches=20, seed=1)
    assert TABLE in json.loads((tmp_path / "t" / "_trace.json").read_text())["spec_tables"]
    aggregate(tmp_path / "t", tmp_path / "tuple", "tuple", spark=spark, progress=None)
    graph = graph_from_statistics(tmp_path / "tuple")
    hot = [n for n in graph.state_names if n.startswith(f"{TABLE}@")]
    assert hot
    for name in hot + [fragment_name(TABLE, 0)]:
        j = graph.state_index(name)
        assert (graph.table_of(j), graph.state_kind(j)) == (TABLE, "fragment" if "#" in name else "tuple")
    placed = [n for n in graph.state_names if n not in graph.window_names]
    assert set(hot) <= set(workload_at(spec, placed).table_names)  # the spec takes the design's items

    aggregate(tmp_path / "t", tmp_path / "table", "table", spark=spark, progress=None)
    graph = graph_from_statistics(tmp_path / "table")
    j = graph.state_index(TABLE)
    assert (graph.table_of(j), graph.state_kind(j)) == (TABLE, "table")
