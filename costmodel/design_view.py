"""A design as rows, a table and HTML: what a notebook and the CLI show of it.

Plain functions over a Design (and, where windows must be told from tables, its graph); the
Design's `assignment_rows`, `to_frame` and `_repr_html_` call them.
"""
from __future__ import annotations

import html

from costmodel.design_file import edited_since_made
from costmodel.granularity import placed_fragments
from costmodel.graph import WorkloadGraph
from costmodel.workload import cluster_text


def lane_partitions(design) -> dict[str, list[int]]:
    """Data-parallel SP -> the partitions its lanes run on beside its own (those holding
    fragments `T#i` of the table it splits on, in fragment order), for the views to show."""
    out = {}
    for sp, table in design.data_parallel.items():
        held = placed_fragments(design.state, table)
        lanes = dict.fromkeys(held[i] for i in sorted(held) if held[i] is not None)
        out[sp] = [p for p in lanes if p != design.procedures.get(sp)]
    return out


def assignment_rows(design, graph: WorkloadGraph | None = None) -> list[dict]:
    """One dict per SP, state item and window: kind, name, machine, partition, replicated,
    owner (the SP a window belongs to, else None). A window is listed on its owner's
    partition, where it lives; without the graph windows cannot be told from tables and
    are listed as the design has them. A data-parallel SP's other lanes are rows of kind
    "lane", owned by it."""
    ppm = design.partitions_per_machine
    owners = graph.window_owners() if graph is not None else {}
    rows = [{"kind": "procedure", "name": n, "machine": p // ppm, "partition": p,
             "replicated": False, "owner": None} for n, p in design.procedures.items()]
    rows += [{"kind": "lane", "name": n, "machine": p // ppm, "partition": p, "replicated": False,
              "owner": n} for n, parts in lane_partitions(design).items() for p in parts]
    for n, p in design.state.items():
        if n in owners:
            continue
        rows.append({"kind": "state", "name": n, "machine": None if p is None else p // ppm,
                     "partition": p, "replicated": p is None, "owner": None})
    for n, owner in owners.items():
        p = design.procedures[owner]
        rows.append({"kind": "window", "name": n, "machine": p // ppm, "partition": p,
                     "replicated": False, "owner": owner})
    return rows


def assignment_frame(design, graph: WorkloadGraph | None = None):
    """`assignment_rows` as a pandas DataFrame (without the graph: no "owner" column)."""
    import pandas as pd

    cols = ["name", "kind", "partition", "machine", "replicated"] + (["owner"] if graph is not None else [])
    return pd.DataFrame([{c: r[c] for c in cols} for r in assignment_rows(design, graph)], columns=cols)


def design_html(design) -> str:
    """The design by machine, its cost and its replicated items, every name escaped."""
    e = html.escape
    ppm = design.partitions_per_machine
    if edited_since_made(design):  # its cost is the design's it was made from
        cost = ("cost not known: edited since the advisor made it (<code>advisor.evaluate(d, source)</code> "
                "prices it with the weights recommend uses)")
    else:
        cost = "" if design.cost is None else design.cost._repr_html_()
    by_machine: dict[int, list[str]] = {}
    for n, p in design.procedures.items():
        by_machine.setdefault(p // ppm, []).append(f"<b>{e(n)}</b>@p{p}")
    for n, parts in lane_partitions(design).items():
        for p in parts:
            by_machine.setdefault(p // ppm, []).append(f"<b>{e(n)}</b> lane@p{p}")
    for n, p in design.state.items():
        if p is not None:
            by_machine.setdefault(p // ppm, []).append(f"{e(n)}@p{p}")
    repl = [e(n) for n, p in design.state.items() if p is None]
    rows = "".join(f"<tr><td>machine {m}</td><td>{', '.join(v)}</td></tr>"
                   for m, v in sorted(by_machine.items()))
    return (f"<b>Design for {e(design.workload)}</b> ({cluster_text(design.machines, ppm)}, "
            f"{e(design.method)}): {cost}"
            f"<table>{rows}</table>" + (f"replicated: {', '.join(repl)}" if repl else ""))
