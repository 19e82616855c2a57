"""`WorkloadGraph.state_kind` is worked out once per graph (a migration plan asks for every
moved item of thousands of designs), so it must answer as the names do, and a graph made from
another (`dataclasses.replace`, `with_cluster`) must not answer from the first one's memo."""
from __future__ import annotations

from dataclasses import replace

from advisor.sources import load_graph


def test_kinds_follow_the_names_and_a_replaced_graph_its_own_names():
    graph = load_graph("linear-road")
    kinds = [graph.state_kind(j) for j in range(graph.n_state)]
    assert set(kinds) == {"table", "window"}
    assert [k == "window" for k in kinds] == [graph.is_window(j) for j in range(graph.n_state)]
    # the same graph with its tables renamed as fragments (`T#0`): asked after the first
    # graph's memo is filled, it answers by its own names
    j = next(j for j, k in enumerate(kinds) if k == "table")
    names = list(graph.state_names)
    names[j] = f"{names[j]}#0"
    other = replace(graph, state_names=names, state_tables=list(graph.state_tables))
    assert other.state_kind(j) == "fragment" and graph.state_kind(j) == "table"
    assert graph.with_cluster(graph.cost.machines + 1, 1).state_kind(j) == "table"
