"""How the advisor's search scales: a synthetic graph of 1,000,000 state nodes, 1,000 SPs and
10,000,000 processing-to-state edges.

Prints the time of `recommend` (single-candidate search: one METIS call plus exact scoring,
refinement and state placement) divided by the time of one raw `pymetis.part_graph` call on
the same CSR arrays in the same process (target <= 2x), and the peak memory (target < 4 GiB).

    python bench/advisor_scale.py                 # full size
    python bench/advisor_scale.py --scale 0.05    # quick look
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pymetis

from costmodel import CostGraph
from advisor import metis
from advisor.api import recommend
from costmodel.graph import WorkloadGraph, adjacency
from advisor.search import DesignSearch


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def synthetic_graph(n_proc: int, n_state: int, n_edges: int, machines: int, seed: int,
                    locality: float = 0.0) -> WorkloadGraph:
    """Random SP-to-state edges; with `locality` > 0 that share of edges goes from a state
    item to its 'home' SP instead (structure METIS can find). Plus a dataflow."""
    rng = np.random.default_rng(seed)
    state = rng.integers(0, n_state, n_edges)
    home = state % n_proc
    stray = rng.random(n_edges) >= locality
    proc = np.where(stray, rng.integers(0, n_proc, n_edges), home)
    pp_src = np.concatenate([np.arange(n_proc - 1), rng.integers(0, n_proc, 4 * n_proc)])
    pp_dst = np.concatenate([np.arange(1, n_proc), rng.integers(0, n_proc, 4 * n_proc)])
    keep = pp_src != pp_dst
    cost = CostGraph(
        proc_load=rng.uniform(0.5, 2.0, n_proc), state_bytes=rng.integers(100, 10_000, n_state),
        ps_proc=proc, ps_state=state, ps_weight=rng.exponential(5.0, n_edges),
        ps_write=rng.random(n_edges) < 0.2, pp_src=pp_src[keep], pp_dst=pp_dst[keep],
        pp_weight=rng.uniform(1, 100, keep.sum()), machines=machines,
    )
    return WorkloadGraph("synthetic", [f"SP{i}" for i in range(n_proc)],
                         [f"S{j}" for j in range(n_state)], ["T"] * n_state,
                         np.zeros(n_state, dtype=bool), cost)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--machines", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--locality", type=float, default=0.0,
                        help="share of edges from a state item to its home SP (0 = random graph)")
    args = parser.parse_args()
    n_proc, n_state, n_edges = 1000, int(1_000_000 * args.scale), int(10_000_000 * args.scale)
    started = time.perf_counter()
    graph = synthetic_graph(n_proc, n_state, n_edges, args.machines, args.seed, args.locality)
    print(f"graph: {n_proc} SPs, {n_state} state nodes, {n_edges} state edges, "
          f"{graph.cost.pp_src.size} stream edges, {args.machines} machines, locality {args.locality} "
          f"(built in {time.perf_counter() - started:.1f} s)")

    search = DesignSearch(seed=args.seed, ufactors=(30,), seeds_per_ufactor=1, extra_starts=False,
                          machine_sweep=False)
    adj = adjacency(graph.cost, *search._edge_scales(graph.cost))
    adj.data = metis.integer_weights(adj.data)
    vweights = metis.vertex_weights(np.concatenate([graph.cost.proc_load, np.zeros(graph.n_state)]))
    csr = pymetis.CSRAdjacency(adj_starts=adj.indptr.astype(np.int64), adjacent=adj.indices.astype(np.int64))
    eweights = adj.data.astype(np.int64)
    del adj

    def raw_metis() -> float:
        """The baseline: one raw pymetis call on the same CSR arrays and weights."""
        t0 = time.perf_counter()
        pymetis.part_graph(args.machines, adjacency=csr, vweights=vweights, eweights=eweights,
                           recursive=False, options=pymetis.Options(ufactor=30, seed=1))
        return time.perf_counter() - t0

    # baseline before and after, so a noisy neighbour weighs on both sides alike
    t_metis_before = raw_metis()
    started = time.perf_counter()
    rec = recommend(graph, baselines=False, search=search)
    t_recommend = time.perf_counter() - started
    t_metis_after = raw_metis()
    t_metis = (t_metis_before + t_metis_after) / 2
    c = rec.design.cost
    print(f"recommend: {t_recommend:.1f} s (of which {search.metis_s_:.1f} s inside METIS, "
          f"{t_recommend - search.metis_s_:.1f} s scoring, refining, placing, building the design); "
          f"cost {c.total:.4f} (state {c.state_colocation:.3f}, processing {c.processing_colocation:.3f}, "
          f"balance {c.load_balance:.3f})")
    print(f"raw pymetis.part_graph: {t_metis_before:.1f} s before, {t_metis_after:.1f} s after")
    print(f"ratio recommend / raw METIS: {t_recommend / t_metis:.2f}x (target <= 2x)")
    print(f"peak memory: {peak_rss_gib():.2f} GiB (target < 4 GiB)")


if __name__ == "__main__":
    main()
