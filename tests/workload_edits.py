"""Workloads changed the way a test needs them: bundled ones with tables renamed."""
from __future__ import annotations

from dataclasses import replace

from advisor.sources import load_workload
from costmodel.workload import Workload

AT_TABLE, TABLE = "Trade@Type", "Trade"  # tpcdi-trade's TradeType and DimDate, renamed


def tables_renamed(w: Workload, names: dict[str, str]) -> Workload:
    """`w` with its tables named anew (`names`: old -> new), in the tables and every access."""
    def named(t: str) -> str:
        return names.get(t, t)

    return replace(w, tables=tuple(replace(t, name=named(t.name)) for t in w.tables),
                   procedures=tuple(replace(p, accesses=tuple(replace(a, table=named(a.table)) for a in p.accesses))
                                    for p in w.procedures))


def tpcdi_trade_with_an_at_table() -> Workload:
    """tpcdi-trade with DimDate named `Trade` and TradeType named `Trade@Type`: a table whose
    name reads as a hot tuple of another."""
    return tables_renamed(load_workload("tpcdi-trade"), {"DimDate": TABLE, "TradeType": AT_TABLE})


def memory_bound_case():
    """generated-1031 on 8 machines under a 100 MB limit a machine, and a spread start within it
    (at most 87 MB a machine) that the searches would consolidate past it (188 MB on one):
    (workload, graph, limit in bytes, (proc, state))."""
    import sys
    from pathlib import Path

    import numpy as np

    from costmodel.graph import WorkloadGraph

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1031).with_cluster(8, 1)
    w = replace(w, cluster=replace(w.cluster, machine_memory_mb=100))
    start = np.array([1, 1, 7, 3, 1, 5, 5, 7, 7]), np.array([5, 0, 7, 0, 7, 3, 1, 1, 5, 7])
    return w, WorkloadGraph.from_workload(w), 100 * 2**20, start


def scale_workload(case: str) -> Workload:
    """A generated dataflow of `bench/recommend_scale.py` (`gen40`, `shared150#7` ...) on its
    own cluster."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    try:
        from recommend_scale import case_workload
    finally:
        sys.path.pop(0)
    workload, machines, ppm = case_workload(case)
    return workload.with_cluster(machines, ppm)
