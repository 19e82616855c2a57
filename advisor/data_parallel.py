"""The advisor's data-parallel variant of a design (S-Store, dissertation chapter 4): the
SPs that can run as lanes (`costmodel.lanes`) spread over every partition, their tables split
into fragments, for the pick to weigh against the table-level design it came from.
"""
from __future__ import annotations

from dataclasses import replace

from costmodel.design import Design
from costmodel.granularity import fragment_parts, fragment_shares
from costmodel.lanes import data_parallel_blocker, keyed_field, lane_tables
from costmodel.workload import Workload


FRAGMENTS_PER_PARTITION = 4  # fragments a split table gets per partition: the finer, the better balanced
# what a transaction costs beyond its SP's declared work, in units of SP cost (the reference
# cluster's 50 us per transaction over 100 us per unit): a lane is one more transaction a batch
TXN_OVERHEAD_UNITS = 0.5


def data_parallel_variant(workload: Workload, design: Design,
                          fragments_per_partition: int = FRAGMENTS_PER_PARTITION,
                          txn_overhead: float = TXN_OVERHEAD_UNITS,
                          only: frozenset[str] | None = None) -> Design | None:
    """`design` with every SP that can run data-parallel spread over the partitions: each
    table it splits on (with the tables it reaches by the same key, so its lanes stay
    single-partition) becomes `fragments_per_partition` fragments per partition, dealt out
    largest key mass first to the partition with the least declared work so far (the SPs
    `design` keeps where they are count as they are placed, each transaction also counting
    `txn_overhead`, so a partition's first lane costs one more transaction). The rest stays where `design`
    put it. `only` limits the split to those SPs. None when no SP can, or the design already
    splits tables."""
    if design.data_parallel or _splits_tables(workload, design):
        return None
    rows = {t.name: t.rows for t in workload.tables}
    # (a table the workload holds only as fragments, as statistics at fragment granularity do:
    # its lanes are weighed on a table-level workload, `lanes_not_weighed`)
    chosen = {p: t for p, t in lane_tables(workload).items() if (only is None or p in only) and t in rows}
    if not chosen:
        return None
    n = design.n_partitions
    load = [0.0] * n
    for p in workload.procedures:
        if p.name not in chosen:
            load[design.procedures[p.name]] += p.cost + txn_overhead
    layouts: dict[str, list[int]] = {}
    for proc in sorted(chosen, key=lambda name: (-workload.procedure(name).cost, name)):
        table, cost = chosen[proc], workload.procedure(proc).cost
        field = keyed_field(workload, proc, table)
        group = [t for t in dict.fromkeys(a.table for a in workload.procedure(proc).accesses)
                 if keyed_field(workload, proc, t) == field and rows[t] == rows[table]]
        layout = next((layouts[t] for t in group if t in layouts), None)
        shares = fragment_shares(rows[table], f"input:{field}",
                                 len(layout) if layout else fragments_per_partition * n)
        lanes: set[int] = set()

        def add(i: int, q: int) -> None:
            load[q] += shares[i] * cost + (0.0 if q in lanes else txn_overhead)
            lanes.add(q)

        if layout is None:
            layout = [0] * len(shares)
            for i in sorted(range(len(shares)), key=lambda i: (-shares[i], i)):
                layout[i] = min(range(n), key=lambda q: (load[q] + shares[i] * cost
                                                         + (0.0 if q in lanes else txn_overhead), q))
                add(i, layout[i])
        else:
            for i, q in enumerate(layout):
                add(i, q)
        for t in group:
            layouts.setdefault(t, layout)
        chosen[proc] = next(t for t in group if layouts[t] is layout)
    state = {}
    for name, part in design.state.items():
        if name in layouts:
            state.update({f"{name}#{i}": q for i, q in enumerate(layouts[name])})
        else:
            state[name] = part
    return replace(design, state=state, data_parallel=dict(chosen), cost=None,
                   method=f"{design.method} + data-parallel".strip(" +"))


def lanes_not_weighed(workload: Workload, design: Design) -> str:
    """Why `data_parallel_variant` has no variant of `design` (one line, for a user who asked
    for data-parallel lanes and would otherwise hear nothing)."""
    if design.data_parallel:
        return "the design already runs data-parallel lanes"
    if _splits_tables(workload, design):
        return "the design already splits tables into fragments"
    lanes = lane_tables(workload)
    whole = {t.name for t in workload.tables}
    if lanes and not any(t in whole for t in lanes.values()):
        return ("the workload holds the tables its SPs would split on as fragments only (statistics at "
                "fragment or tuple granularity); aggregate the trace at table granularity to weigh lanes")
    blockers = [f"{p.name}: {why}" for p in workload.procedures if (why := data_parallel_blocker(workload, p.name))]
    return ("no SP can run as lanes (" + "; ".join(blockers[:3]) + (" ..." if len(blockers) > 3 else "")
            + "); from a trace, an SP's input-keyed accesses are the manifest's access_keys")


def _splits_tables(workload: Workload, design: Design) -> bool:
    """The design places fragments of the workload's tables (not tables the workload itself
    names `T#i`, as statistics at fragment granularity do; nor a hot tuple `T@k#3`)."""
    tables = set(workload.table_names)
    return any(n not in tables and fragment_parts(n, tables) for n in design.state)
