"""Dataflow order and cycle detection (graphlib): every stream's source first, ties by
declaration order, and a cycle named edge by edge."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from costmodel.errors import SpecError
from costmodel.spec_reader import parse_workload
from costmodel.workload import dataflow_cycle, dataflow_order

NAMES = [f"P{i}" for i in range(8)]


@st.composite
def dataflows(draw, acyclic: bool):
    names = draw(st.permutations(NAMES).map(lambda p: p[: draw(st.integers(1, 8))]))
    pairs = st.tuples(st.sampled_from(names), st.sampled_from(names))
    edges = draw(st.lists(pairs, max_size=14))
    if acyclic:  # orient every edge along a hidden order, drop self-loops
        hidden = {n: i for i, n in enumerate(draw(st.permutations(names)))}
        edges = [(a, b) if hidden[a] < hidden[b] else (b, a) for a, b in edges if a != b]
    return list(names), edges


@settings(max_examples=300, deadline=None)
@given(dataflows(acyclic=True))
def test_the_order_puts_sources_first_and_otherwise_keeps_declaration_order(flow):
    names, edges = flow
    order = dataflow_order(names, edges)
    assert sorted(order) == sorted(names) and dataflow_cycle(edges) is None
    placed: set[str] = set()
    for name in order:
        ready = [n for n in names if n not in placed
                 and all(a in placed for a, b in edges if b == n)]
        assert name == ready[0]  # the first declared of those whose sources all ran
        placed.add(name)


@settings(max_examples=300, deadline=None)
@given(dataflows(acyclic=False))
def test_a_cycle_is_named_edge_by_edge(flow):
    names, edges = flow
    cycle = dataflow_cycle(edges)
    if cycle is None:
        dataflow_order(names, edges)
        return
    assert cycle[0] == cycle[-1] and len(cycle) >= 2
    assert all(pair in edges for pair in zip(cycle, cycle[1:]))
    with pytest.raises(SpecError, match="cycle in the dataflow: "):
        dataflow_order(names, edges)


def test_the_same_spec_names_the_same_cycle():
    spec = """
name = "t"
[[tables]]
name = "T"
rows = 1
row_bytes = 1
key = "k"
[[procedures]]
name = "A"
cost = 1
[[procedures]]
name = "B"
cost = 1
[[procedures]]
name = "C"
cost = 1
[[streams]]
from = "A"
to = "B"
tuples = 1
[[streams]]
from = "B"
to = "C"
tuples = 1
[[streams]]
from = "C"
to = "B"
tuples = 1
"""
    for _ in range(2):
        with pytest.raises(SpecError) as info:
            parse_workload(spec, "t.toml")
        assert str(info.value).endswith("streams: cycle in the dataflow: B -> C -> B")
