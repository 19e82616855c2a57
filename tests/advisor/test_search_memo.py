"""The machine-level stage's memo (`advisor.search.STAGE_MEMO`): a graph searched again with
the same settings is answered from it, with the same designs as a fresh search, and nothing
a caller does to an answer changes the next one."""
import numpy as np

from costmodel import CostGraph, Weights
from advisor import search as search_module
from advisor.search import BoundedMemo, DesignSearch, cost_graph_key


def small_graph(stream_weight: float = 5.0, machines: int = 3, partitions_per_machine: int = 2) -> CostGraph:
    """Six SPs in a pipeline, each with a table of its own and one shared with the next."""
    n = 6
    ps_proc = [v for v in range(n) for _ in (0, 1)]
    ps_state = [s for v in range(n) for s in (v, n + min(v, n - 2))]
    return CostGraph(proc_load=np.arange(1.0, n + 1), state_bytes=np.full(2 * n - 1, 1000.0),
                     ps_proc=ps_proc, ps_state=ps_state, ps_weight=np.linspace(1, 3, 2 * n),
                     ps_write=[v % 2 == 0 for v in range(2 * n)], pp_src=list(range(n - 1)),
                     pp_dst=list(range(1, n)), pp_weight=np.full(n - 1, stream_weight),
                     machines=machines, partitions_per_machine=partitions_per_machine)


def pool_of(search: DesignSearch) -> list[tuple]:
    return [(c.label, c.proc_part.tolist(), c.state_part.tolist(), c.cost.total) for c in search.pool_]


def test_a_search_answered_from_the_memo_equals_a_fresh_one():
    search_module.STAGE_MEMO.clear()
    first = DesignSearch(weights=Weights(0.4, 0.2, 0.4), seed=3).fit(small_graph())
    remembered = len(search_module.STAGE_MEMO)
    assert remembered > 0
    again = DesignSearch(weights=Weights(0.4, 0.2, 0.4), seed=3).fit(small_graph())
    assert len(search_module.STAGE_MEMO) == remembered  # nothing new was searched
    assert pool_of(again) == pool_of(first)
    assert again.local_search_steps_ == first.local_search_steps_ > 0
    search_module.STAGE_MEMO.clear()
    fresh = DesignSearch(weights=Weights(0.4, 0.2, 0.4), seed=3).fit(small_graph())
    assert pool_of(fresh) == pool_of(first)


def test_changing_an_answer_does_not_change_the_memo():
    search_module.STAGE_MEMO.clear()
    g = small_graph(partitions_per_machine=1)  # the machine-level stage: one partition each
    s = DesignSearch(weights=Weights(0.4, 0.2, 0.4), seed=1)
    best = s.best_candidate(g)
    kept = (best.proc_part.copy(), best.state_part.copy())
    best.proc_part[:] = 99
    best.state_part[:] = 99
    again = s.best_candidate(g)
    assert np.array_equal(again.proc_part, kept[0]) and np.array_equal(again.state_part, kept[1])


def test_another_graph_or_other_settings_are_searched_again():
    search_module.STAGE_MEMO.clear()
    DesignSearch(seed=0).fit(small_graph())
    n = len(search_module.STAGE_MEMO)
    DesignSearch(seed=0).fit(small_graph(stream_weight=6.0))
    assert len(search_module.STAGE_MEMO) > n
    n = len(search_module.STAGE_MEMO)
    DesignSearch(seed=1).fit(small_graph())
    assert len(search_module.STAGE_MEMO) > n
    assert cost_graph_key(small_graph()) == cost_graph_key(small_graph())
    assert cost_graph_key(small_graph()) != cost_graph_key(small_graph(machines=4))


def test_the_memo_forgets_its_oldest_entries_beyond_its_limit():
    memo = BoundedMemo(3)
    for k in range(5):
        memo.put(k, str(k))
    assert list(memo) == [2, 3, 4] and memo[4] == "4"
