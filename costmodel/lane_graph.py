"""A data-parallel design as the cost model sees it: each lane a node of its own.

Why: a data-parallel SP (`costmodel.lanes`) runs as one transaction per partition holding a
fragment of the table it splits on, each against the fragments beside it. On the plain graph
it is one node on its base partition, so the cost model charged all its work to that machine
and every access to a fragment elsewhere as distributed, where the engine and the simulator
find every lane's machine busy and those accesses local. `expand_lanes` gives the cost model,
the bottleneck and the load figures a graph where they are what runs:

- each lane is a node named as its SP, on its lane's partition, carrying the SP's share of
  the batch (the key mass of the split table's fragments there, from the access edges);
- its accesses to the fragments on its own partition are whole and local; those of tables
  fragmented exactly as the split table count alike (the lanes' co-tables: the advisor's
  data-parallel variant lays them out together, `advisor.data_parallel`); every other access
  and every stream edge is shared between the lanes by that share.

Totals are kept (load, rows, tuples per batch), so the cost's ratios keep their meaning.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from costmodel.granularity import fragment_parts
from costmodel.graph import WorkloadGraph


def expand_lanes(design, graph: WorkloadGraph, proc_part: np.ndarray, state_part: np.ndarray
                 ) -> tuple[WorkloadGraph, np.ndarray, np.ndarray]:
    """(graph, SP partitions, state partitions) with each data-parallel SP of `design` one
    node per lane; unchanged for a design without lanes. `proc_part`/`state_part` are the
    design's arrays on `graph` (`Design.arrays`), `graph` on the design's cluster. A lane SP
    keeps its index for its first lane; its other lanes are appended, in SP order."""
    dp = [(graph.proc_index(p), t) for p, t in design.data_parallel.items() if graph.has_procedure(p)]
    if not dp:
        return graph, proc_part, state_part
    c = graph.cost
    fragment_items = _fragment_items(graph, state_part)
    layouts = {t: tuple(int(state_part[j]) for j in items) for t, items in fragment_items.items()}
    names, part, load = list(graph.proc_names), list(proc_part), list(c.proc_load)
    group = list(c.proc_group)
    txns = None if graph.proc_txns is None else list(graph.proc_txns)
    lane_nodes: dict[int, list[tuple[int, float]]] = {}  # SP -> (node, share) per lane
    local_state: dict[int, dict[int, int]] = {}  # SP -> {fragment state index: its lane node}
    for i, table in sorted(dp):
        layout = layouts.get(table)
        if not layout:
            continue  # no fragments placed: `lane_routes` refuses such a design where it runs
        lanes = list(dict.fromkeys(layout))
        fragments = set(fragment_items[table])
        local = {j: int(state_part[j]) for t, lay in layouts.items() if lay == layout
                 for j in fragment_items[t]}
        mass = dict.fromkeys(lanes, 0.0)
        for e in np.flatnonzero(c.ps_proc == i):
            j = int(c.ps_state[e])
            if j in fragments:
                mass[local[j]] += float(c.ps_weight[e])
        total = sum(mass.values())
        shares = [mass[q] / total if total > 0 else 1.0 / len(lanes) for q in lanes]
        nodes = []
        for k, (q, share) in enumerate(zip(lanes, shares)):
            node = i if k == 0 else len(names)
            if k:
                names.append(graph.proc_names[i])
                group.append(-1)
                load.append(0.0)
                part.append(q)
                if txns is not None:
                    txns.append(txns[i])
            part[node] = q
            load[node] = c.proc_load[i] * share
            nodes.append((node, share))
        lane_nodes[i] = nodes
        node_at = {q: node for q, (node, _) in zip(lanes, nodes)}
        local_state[i] = {j: node_at[q] for j, q in local.items()}
    ps = _split_access_edges(c, lane_nodes, local_state)
    pp = _split_stream_edges(c, lane_nodes)
    cost = replace(c, proc_load=np.asarray(load), proc_group=np.asarray(group, dtype=np.int64),
                   ps_proc=ps[0], ps_state=ps[1], ps_weight=ps[2], ps_write=ps[3],
                   pp_src=pp[0], pp_dst=pp[1], pp_weight=pp[2])
    expanded = replace(graph, proc_names=names, cost=cost,
                       proc_txns=None if txns is None else np.asarray(txns, dtype=np.float64))
    expanded._proc_index = graph._proc_index  # a lane SP's name finds its first lane
    return expanded, np.asarray(part, dtype=np.int64), state_part


def _fragment_items(graph: WorkloadGraph, state_part: np.ndarray) -> dict[str, list[int]]:
    """Table -> the state indices of its fragments `T#i`, in fragment order (only tables all
    of whose fragments sit on one partition each: a replicated fragment makes no lane)."""
    found: dict[str, dict[int, int]] = {}
    for j, name in enumerate(graph.state_names):
        fragment = fragment_parts(name, (graph.table_of(j),))  # (a hot tuple `T@k#3` is none)
        if fragment is not None:
            found.setdefault(fragment[0], {})[fragment[1]] = j
    return {t: [items[k] for k in sorted(items)] for t, items in found.items()
            if all(state_part[j] >= 0 for j in items.values())}


def _split_access_edges(c, lane_nodes, local_state):
    """The access edges with a lane SP's own fragments on their lane and the rest shared."""
    src, dst, weight, write = [], [], [], []
    for e in range(c.ps_proc.size):
        i, j, w, wr = int(c.ps_proc[e]), int(c.ps_state[e]), float(c.ps_weight[e]), bool(c.ps_write[e])
        if i not in lane_nodes:
            targets = [(i, 1.0)]
        elif j in local_state[i]:
            targets = [(local_state[i][j], 1.0)]
        else:
            targets = lane_nodes[i]
        for node, share in targets:
            src.append(node), dst.append(j), weight.append(w * share), write.append(wr)
    return (np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
            np.asarray(weight, dtype=np.float64), np.asarray(write, dtype=bool))


def _split_stream_edges(c, lane_nodes):
    """The stream edges, each end that is a lane SP dealt to its lanes by their shares."""
    src, dst, weight = [], [], []
    for e in range(c.pp_src.size):
        a, b, w = int(c.pp_src[e]), int(c.pp_dst[e]), float(c.pp_weight[e])
        for na, sa in lane_nodes.get(a, [(a, 1.0)]):
            for nb, sb in lane_nodes.get(b, [(b, 1.0)]):
                src.append(na), dst.append(nb), weight.append(w * sa * sb)
    return (np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
            np.asarray(weight, dtype=np.float64))
