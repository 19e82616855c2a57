"""The full assignment as rows (the report's table, `Design.to_frame(source)` in notebooks):
every SP, table and window with its machine and partition. A window is listed as a window,
with its owner, on its owner's partition (where it lives)."""
from __future__ import annotations

from reports.figures._common import window_owners


def assignment_rows(design, graph=None) -> list[dict]:
    """One dict per SP, state item and window: kind, name, machine, partition, replicated,
    owner (the SP a window belongs to, else None). Without a graph, windows cannot be told
    from tables and are listed as the design has them."""
    ppm = design.partitions_per_machine
    owners = window_owners(graph) if graph is not None else {}
    rows = [{"kind": "procedure", "name": n, "machine": p // ppm, "partition": p,
             "replicated": False, "owner": None} for n, p in design.procedures.items()]
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
