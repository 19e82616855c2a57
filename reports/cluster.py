"""A graph on a design's cluster: a design may be made for another machine count than the
spec declares, and everything that scores or draws it needs the graph on the same cluster."""
from __future__ import annotations


def on_cluster(graph, design):
    c = graph.cost
    if (c.machines, c.partitions_per_machine) == (design.machines, design.partitions_per_machine):
        return graph
    capacity = c.capacity if c.capacity.size == design.machines else None
    return graph.with_cluster(design.machines, design.partitions_per_machine, capacity,
                              c.memory_limit_bytes)
