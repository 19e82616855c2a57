"""The METIS input built with numpy alone (`costmodel.graph.adjacency_arrays`) against
scipy.sparse's own sum of duplicates, bit for bit: the search's answers depend on it."""
import numpy as np
import pytest
import scipy.sparse as sp

from costmodel import CostGraph
from costmodel.graph import adjacency, adjacency_arrays


def random_graph(seed: int, n_proc: int, n_state: int, edges: int, repeats: int) -> CostGraph:
    """Random edges with pairs drawn from a small set, so the same pair recurs (up to
    `repeats` times per kind of edge), weights of awkward binary fractions."""
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, [n_proc, n_state], size=(max(edges // repeats, 1), 2))
    ps = pairs[rng.integers(0, len(pairs), edges)]
    streams = rng.integers(0, n_proc, size=(max(edges // repeats, 1), 2))
    pp = streams[rng.integers(0, len(streams), edges)]
    return CostGraph(proc_load=np.ones(n_proc), state_bytes=np.ones(n_state), ps_proc=ps[:, 0],
                     ps_state=ps[:, 1], ps_weight=rng.random(edges) * 1e3 / 7,
                     ps_write=rng.random(edges) < 0.5, pp_src=pp[:, 0], pp_dst=pp[:, 1],
                     pp_weight=rng.random(edges) * 10 / 3, machines=2)


def scipy_sum(cost: CostGraph, ps_scale: float, pp_scale: float) -> sp.csr_matrix:
    """The reference: COO to CSR with scipy, duplicates summed by scipy."""
    n = cost.n_proc + cost.n_state
    keep = cost.pp_src != cost.pp_dst
    s, d, w = cost.pp_src[keep], cost.pp_dst[keep], cost.pp_weight[keep] * pp_scale
    p, t, v = cost.ps_proc, cost.ps_state + cost.n_proc, cost.ps_weight * ps_scale
    m = sp.coo_matrix((np.concatenate([v, v, w, w]),
                       (np.concatenate([p, t, s, d]), np.concatenate([t, p, d, s]))), shape=(n, n)).tocsr()
    m.sum_duplicates()
    return m


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("repeats", [1, 2, 5])
def test_the_numpy_csr_is_scipys_bit_for_bit(seed, repeats):
    g = random_graph(seed, n_proc=7 + seed, n_state=5 + 2 * seed, edges=40 + 10 * seed, repeats=repeats)
    got, want = adjacency_arrays(g, 0.3, 1.7), scipy_sum(g, 0.3, 1.7)
    assert got.shape == want.shape
    assert got.indptr.tolist() == want.indptr.tolist()
    assert got.indices.tolist() == want.indices.tolist()
    assert got.data.tobytes() == want.data.tobytes()
    back = adjacency(g, 0.3, 1.7)  # the public scipy form holds the same matrix
    assert (back != want).nnz == 0


def test_a_graph_without_edges_has_an_empty_csr():
    g = CostGraph(proc_load=np.ones(3), state_bytes=np.ones(2), ps_proc=[], ps_state=[], ps_weight=[],
                  ps_write=[], pp_src=[], pp_dst=[], pp_weight=[])
    a = adjacency_arrays(g)
    assert a.shape == (5, 5) and a.indptr.tolist() == [0] * 6 and a.data.size == 0


def test_pairs_met_twice_are_summed_without_scipy():
    """Each access twice (a read and a write) and streams both ways: every pair has two
    entries, the case numpy sums itself; the result is still scipy's."""
    rng = np.random.default_rng(7)
    ps_proc, ps_state = np.repeat(np.arange(6), 2), np.repeat(np.arange(6) % 4, 2)
    g = CostGraph(proc_load=np.ones(6), state_bytes=np.ones(4), ps_proc=ps_proc, ps_state=ps_state,
                  ps_weight=rng.random(12) / 3, ps_write=np.tile([False, True], 6),
                  pp_src=[0, 1, 2, 3], pp_dst=[1, 0, 3, 2], pp_weight=rng.random(4) * 7)
    got, want = adjacency_arrays(g, 0.9, 0.1), scipy_sum(g, 0.9, 0.1)
    assert got.data.tobytes() == want.data.tobytes() and got.indices.tolist() == want.indices.tolist()
    assert got.data.size < 2 * (12 + 4)  # the duplicates were summed


def test_a_large_graph_is_left_to_scipy_with_the_same_result(monkeypatch):
    import costmodel.graph as graph_module

    g = random_graph(3, n_proc=9, n_state=8, edges=60, repeats=1)
    small = adjacency_arrays(g, 0.5, 2.0)
    monkeypatch.setattr(graph_module, "NUMPY_CSR_MAX_ENTRIES", 0)
    large = adjacency_arrays(g, 0.5, 2.0)
    assert large.indptr.tolist() == small.indptr.tolist() and large.data.tobytes() == small.data.tobytes()
