"""The cluster as a search parameter: a graph on another cluster keeps what still fits, and
`DesignSearch(machines=..., partitions_per_machine=...)` searches that cluster."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from costmodel import CostGraph, score
from advisor.sources import load_graph
from costmodel.design import Design
from advisor.search import DesignSearch, contract_groups, place_within_machines


def small_graph(**kw) -> CostGraph:
    return CostGraph(proc_load=[1.0, 2.0, 3.0], state_bytes=[10.0, 20.0], ps_proc=[0, 1, 2],
                     ps_state=[0, 1, 1], ps_weight=[1.0, 1.0, 2.0], ps_write=[True, False, True],
                     pp_src=[0, 1], pp_dst=[1, 2], pp_weight=[5.0, 5.0], **kw)


def test_with_cluster_keeps_capacity_while_the_machine_count_is_the_same():
    g = small_graph(machines=3, partitions_per_machine=1, capacity=[1.0, 2.0, 4.0],
                    memory_limit_bytes=64.0, idle_capacity=[0.5])
    more_partitions = g.with_cluster(3, 4)
    assert more_partitions.partitions_per_machine == 4
    assert more_partitions.capacity.tolist() == [1.0, 2.0, 4.0]
    assert more_partitions.idle_capacity.tolist() == [0.5]
    assert more_partitions.memory_limit_bytes == 64.0
    # another machine count: the per-machine capacities no longer fit, the memory limit does
    fewer = g.with_cluster(2, 1)
    assert fewer.capacity.tolist() == [1.0, 1.0] and fewer.idle_capacity.size == 0
    assert fewer.memory_limit_bytes == 64.0
    # what a caller passes wins
    other = g.with_cluster(2, 1, capacity=[3.0, 1.0], memory_limit_bytes=128.0)
    assert other.capacity.tolist() == [3.0, 1.0] and other.memory_limit_bytes == 128.0
    # the graph itself is untouched, and its own cluster is the graph itself
    assert (g.machines, g.partitions_per_machine, g.capacity.tolist()) == (3, 1, [1.0, 2.0, 4.0])
    assert g.with_cluster(3, 1) is g and g.with_cluster(None, None) is g
    assert g.with_cluster(None, 2).machines == 3


def test_with_cluster_keeps_every_array_of_the_graph():
    g = small_graph(machines=2, proc_group=[0, 0, -1])
    h = g.with_cluster(4, 2)
    for name in ("proc_load", "state_bytes", "ps_proc", "ps_state", "ps_weight", "ps_write",
                 "pp_src", "pp_dst", "pp_weight", "proc_group"):
        assert np.array_equal(getattr(h, name), getattr(g, name)), name


def test_workload_graph_on_the_design_cluster_keeps_capacity_and_memory():
    graph = load_graph("tpcdi-trade")
    graph = replace(graph, cost=graph.cost.with_cluster(4, 1, capacity=[1.0, 1.0, 2.0, 2.0],
                                                        memory_limit_bytes=2**30))
    on_two = graph.with_cluster(4, 2)
    assert on_two.cost.capacity.tolist() == [1.0, 1.0, 2.0, 2.0]
    assert on_two.cost.memory_limit_bytes == 2**30
    assert on_two.proc_names == graph.proc_names and on_two.name == graph.name
    assert graph.with_cluster(4, 1) is graph


def test_search_takes_the_cluster_as_a_parameter():
    graph = load_graph("tpcdi-trade")  # the spec's own cluster: 4 machines x 1 partition
    search = DesignSearch(seed=0, machines=2, partitions_per_machine=2).fit(graph)
    assert (search.graph_.cost.machines, search.graph_.cost.partitions_per_machine) == (2, 2)
    assert search.proc_part_.max() < 4 and search.state_part_.max() < 4
    # the same as searching the graph already put on that cluster
    on_cluster = graph.with_cluster(2, 2)
    plain = DesignSearch(seed=0).fit(on_cluster)
    assert np.array_equal(plain.proc_part_, search.proc_part_)
    assert np.array_equal(plain.state_part_, search.state_part_)
    assert plain.cost_ == search.cost_
    design = Design.from_arrays(search.graph_, search.proc_part_, search.state_part_, search.weights)
    assert (design.machines, design.partitions_per_machine) == (2, 2)
    # None: the graph's own cluster
    own = DesignSearch(seed=0).fit(graph)
    assert own.graph_ is graph


def test_search_refuses_a_cluster_of_no_machines():
    with pytest.raises(ValueError, match=">= 1"):
        DesignSearch(machines=0).fit(load_graph("tpcdi-trade"))


def test_place_within_machines_keeps_every_node_on_its_machine():
    graph = load_graph("tpcdi-trade", 2, 2)
    c = graph.cost
    machine_of_proc = np.arange(graph.n_proc) % 2
    machine_of_state = np.arange(graph.n_state) % 2
    proc, state = place_within_machines(c, machine_of_proc, machine_of_state)
    assert np.array_equal(proc // 2, machine_of_proc)
    assert np.array_equal(state // 2, machine_of_state)
    # the machine-level cost is the given one; only the split inside machines was searched
    by_machine = score(c.with_cluster(2, 1), machine_of_proc, machine_of_state)
    assert score(c, proc, state).total == pytest.approx(by_machine.total)


def test_place_within_machines_refuses_a_split_nested_group():
    graph = load_graph("voter-leaderboard")
    c = graph.cost
    assert c.has_groups, "voter-leaderboard declares a nested group"
    _, unit_of = contract_groups(c)
    members = np.flatnonzero(c.proc_group == c.proc_group[c.proc_group >= 0][0])
    machine_of_proc = np.zeros(graph.n_proc, dtype=np.int64)
    machine_of_proc[members[0]] = 1
    with pytest.raises(ValueError, match="nested group"):
        place_within_machines(c.with_cluster(2, 1), machine_of_proc,
                              np.zeros(graph.n_state, dtype=np.int64))
