"""`DesignSearch` as a notebook drives it: its parameters set in the constructor (or as
attributes since) and the graph given to `fit`, each wrong one one AdvisorError line before any
work, not an error from numpy, pymetis or deep in the search."""
from __future__ import annotations

import numpy as np
import pytest

from advisor.errors import AdvisorError
from advisor.search import DesignSearch
from advisor.sources import load_workload
from costmodel.graph import WorkloadGraph


@pytest.fixture(scope="module")
def graph():
    return WorkloadGraph.from_workload(load_workload("move-micro"))


@pytest.mark.parametrize("params, said", [
    (dict(machines=0), "machines must be an integer >= 1, got 0"),  # ValueError of costmodel.problem
    (dict(machines=2.5), "machines must be an integer >= 1, got 2.5"),  # numpy's TypeError
    (dict(machines="4"), "machines must be an integer >= 1, got '4'"),  # "'<' not supported"
    (dict(partitions_per_machine=0), "partitions per machine must be an integer >= 1, got 0"),
    (dict(weights=(0.3, 0.3, 0.4)), r"weights must be costmodel.Weights\(alpha, beta, gamma\), got \(0.3"),
    (dict(weights=None), r"weights must be costmodel.Weights\(alpha, beta, gamma\), got None"),
    (dict(partition_weights=(1, 1, 1)), "partition_weights must be costmodel.Weights"),
    (dict(seed=-1), "seed must be an integer >= 0, got -1"),  # numpy: "expected non-negative integer"
    (dict(seed="a"), "seed must be an integer >= 0, got 'a'"),
    (dict(ufactors=(0,)), r"ufactors must be a tuple of integers >= 1"),  # pymetis: "Caught an unknown exception!"
    (dict(ufactors=5), r"ufactors must be a tuple of integers >= 1 .*, got 5"),
    (dict(seeds_per_ufactor=-1), "seeds_per_ufactor must be an integer >= 0, got -1"),
    (dict(pool_size=0), "pool_size must be an integer >= 1, got 0"),
    (dict(local_search_budget_s=-1), "local_search_budget_s must be None or a number of seconds > 0"),
])
def test_a_wrong_parameter_is_one_line_naming_it(graph, params, said):
    with pytest.raises(AdvisorError, match=f"^{said}"):
        DesignSearch(**{"machines": 2, **params}).fit(graph)


def test_a_parameter_set_as_an_attribute_is_checked_too(graph):
    search = DesignSearch(machines=2).fit(graph)
    search.seed = -1
    with pytest.raises(AdvisorError, match="^seed must be an integer >= 0, got -1"):
        search.fit(graph)


@pytest.mark.parametrize("given", ["move-micro", None])
def test_fit_given_no_graph_says_what_it_takes(given):
    with pytest.raises(AdvisorError, match="^fit takes a WorkloadGraph, a CostGraph or a Workload, got"):
        DesignSearch(machines=2).fit(given)


def test_fit_takes_a_workload_as_its_graph_and_numpy_counts_as_counts(graph):
    by_graph = DesignSearch(machines=2, seed=1).fit(graph)
    by_workload = DesignSearch(machines=np.int64(2), seed=np.int64(1)).fit(load_workload("move-micro"))
    assert by_workload.cost_ == by_graph.cost_
    assert list(by_workload.proc_part_) == list(by_graph.proc_part_)


def test_a_search_of_another_cluster_than_the_recommendation_s_is_refused():
    # recommend(machines=4, search=DesignSearch(machines=2)) went on without a word
    from advisor.api import recommend

    with pytest.raises(AdvisorError, match=r"^search is set for 2 machines x 1 partition and the "
                                           r"recommendation is for 4 machines x 1 partition: "):
        recommend("move-micro", machines=4, search=DesignSearch(machines=2), objective="cost")
    with pytest.raises(AdvisorError, match=r"^search is set for 4 machines x 2 partitions and "):
        recommend("move-micro", machines=4, search=DesignSearch(partitions_per_machine=2), objective="cost")
    for search in (DesignSearch(machines=4), DesignSearch()):
        rec = recommend("move-micro", machines=4, search=search, objective="cost")
        assert rec.design.machines == 4 and search.candidates_
