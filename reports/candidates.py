"""The dataflow and design changes worth trying for a bottleneck, and the advisor's design for
a changed workload. Each candidate is `(kind, target, text, reason, apply)`, where `apply()`
returns the changed spec (or None for a design-only change) and the tables to replicate."""
from __future__ import annotations

import numpy as np

from costmodel.design import Design
from costmodel.workload import Workload
from costmodel import Bottleneck
from reports.transforms import ChangeError, co_partitioned, merge_procedures, split_key, split_procedure


def design_for(workload: Workload, machines: int, partitions_per_machine: int, weights,
               replicated: tuple[str, ...] = (), seed: int = 0, calibration=None) -> Design:
    """The advisor's design for a (changed) workload, as `recommend` picks it with `calibration`
    (None: its default), with the `replicated` tables on every machine. A table copied
    everywhere pulls no SP towards any machine, so the search runs without it and the copies
    are added to its design (then scored on the full graph)."""
    return picked_for(workload, machines, partitions_per_machine, weights, replicated, seed, calibration)[0]


def picked_for(workload: Workload, machines: int, partitions_per_machine: int, weights,
               replicated: tuple[str, ...] = (), seed: int = 0, calibration=None) -> tuple[Design, float | None]:
    """`design_for`'s design and `recommend`'s own predicted tuples/s for it
    (`Recommendation.prediction`), None where copies of replicated tables were added after
    the pick (another design) or nothing was simulated."""
    from dataclasses import replace as _replace

    from reports.pick_cache import recommend_cached
    from costmodel.graph import WorkloadGraph

    replicated = tuple(t for t in replicated if t in workload.table_names)
    search_on = workload
    if replicated:
        gone = set(replicated)
        search_on = _replace(workload, tables=tuple(t for t in workload.tables if t.name not in gone),
                             procedures=tuple(_replace(p, accesses=tuple(a for a in p.accesses if a.table not in gone))
                                              for p in workload.procedures))
    pick = recommend_cached(search_on.with_cluster(machines, partitions_per_machine), weights, seed, calibration)
    design = pick.design
    if not replicated:
        return design, pick.prediction
    state = {t: (None if t in replicated else design.state[t]) for t in workload.table_names}
    design = _replace(design, state=state, method=f"{design.method}+replicate:{','.join(replicated)}",
                      provenance=dict(design.provenance))
    graph = WorkloadGraph.from_workload(workload.with_cluster(machines, partitions_per_machine))
    design.cost = design.score(graph, weights)
    return design, None


def _shared_read_mostly(workload: Workload, proc, key: str, replicated: tuple[str, ...]) -> list[str]:
    """Read-mostly tables an SP reads that a split on `key` leaves whole (every copy reads them)."""
    out = []
    for a in proc.accesses:
        t = workload.table(a.table)
        if (t.read_mostly and a.mode == "read" and t.name not in replicated and t.name not in out
                and not co_partitioned(t, [x for x in proc.accesses if x.table == t.name], key)):
            out.append(t.name)
    return out


def _split_copies(machines: int, ppm: int) -> list[int]:
    """Copy counts worth trying: small ones, and one copy per machine."""
    top = machines * ppm
    return sorted({c for c in (2, 3, 4, machines) if 2 <= c <= max(top, 2)})


def candidate_changes(workload: Workload, design: Design, graph, bottleneck: Bottleneck,
                      replicated: tuple[str, ...] = ()) -> list[tuple[str, str, str, str, object]]:
    """(kind, target, text, reason, apply) for every change worth trying; `apply()` returns
    (workload or None, replicated tables)."""
    out = []
    procs = {p.name: p for p in workload.procedures}
    c = graph.cost  # loads and edges: the same on any cluster
    heaviest = graph.proc_names[int(np.argmax(c.proc_load))] if c.proc_load.size else None
    # (an SP that already runs as data-parallel lanes is split by key: more copies of it is no change)
    lanes = set(design.data_parallel)
    hot = [n for n in dict.fromkeys([bottleneck.hot_procedure, heaviest]) if n in procs and n not in lanes]
    for name in hot:
        key, why_key = split_key(procs[name], workload)
        if key is None:
            continue
        kind = "split" if procs[name].partition_key else "partition"
        where = ("on the bottleneck machine " + str(bottleneck.machine)
                 if name == bottleneck.hot_procedure else "the heaviest SP")
        for copies in _split_copies(design.machines, design.partitions_per_machine):
            text = (f"split {name} into {copies} parallel copies over {key}" if kind == "split"
                    else f"partition {name} on {key} ({copies} copies)")
            out.append((kind, name, text, f"{name} is {where}; {key}: {why_key}",
                        lambda n=name, k=copies, f=key: (split_procedure(workload, n, k, f), replicated)))
            shared = _shared_read_mostly(workload, procs[name], key, replicated)
            if shared:  # the copies all read these: a copy on every machine keeps them local
                out.append((kind, name, f"{text}, replicating {', '.join(shared)}",
                            f"{name} is {where}; its copies share the read-mostly {', '.join(shared)}",
                            lambda n=name, k=copies, f=key, t=tuple(shared):
                            (split_procedure(workload, n, k, f), replicated + t)))
    together = [n for n in bottleneck.saturated
                if n in procs and n not in lanes and split_key(procs[n], workload)[0]]
    # several machines saturate at once: splitting one alone cannot help, so split the busiest
    # two, three, ... together
    for size in range(2, len(together) + 1):
        group = tuple(together[:size])
        for copies in (2, 3):
            if copies > design.machines * design.partitions_per_machine:
                continue

            def apply(names=group, k=copies):
                w = workload
                for n in names:
                    w = split_procedure(w, n, k, split_key(w.procedure(n), w)[0])
                return w, replicated
            out.append(("split", ", ".join(group),
                        f"split {', '.join(group)} into {copies} parallel copies each over their keys",
                        f"their machines are all near saturation ({size} SPs)", apply))
    read_mostly = {t.name for t in workload.tables if t.read_mostly}
    proc, state = design.arrays(graph)
    ppm = design.partitions_per_machine
    cut_rows: dict[str, float] = {}
    for p, s, w in zip(c.ps_proc, c.ps_state, c.ps_weight):
        table = graph.state_tables[s]
        if state[s] >= 0 and state[s] // ppm != proc[p] // ppm:
            cut_rows[table] = cut_rows.get(table, 0.0) + float(w)
    for table in sorted(cut_rows, key=lambda t: -cut_rows[t]):
        if table in read_mostly and table not in replicated:
            out.append(("replicate", table, f"replicate read-mostly table {table} on every machine",
                        f"{cut_rows[table]:g} rows/batch of it are read across machines",
                        lambda t=table: (None, replicated + (t,))))
    if bottleneck.move:  # (offered even where it is refused: the refusal is what `tune` then says)
        a, b = bottleneck.move[0], bottleneck.move[1]
        out.append(("merge", f"{a}+{b}", f"merge {a} and {b} into one SP",
                    f"{a} -> {b} is the heaviest cut stream and they always run one after the other",
                    lambda a=a, b=b: (_merged(workload, a, b, lanes), replicated)))
    return out


def _merged(workload: Workload, first: str, second: str, lanes: set[str]) -> Workload:
    """`merge_procedures`, which refuses a pair that is not one (its reason is the note's), and
    refuses an SP that runs as data-parallel lanes: merged, the lanes would run as one."""
    split = [n for n in (first, second) if n in lanes]
    if split:
        raise ChangeError(f"{first} -> {second}: {split[0]} runs as data-parallel lanes; merged, they "
                          "would run as one")
    return merge_procedures(workload, first, second)
