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
