"""Export a design for real systems (`advisor export`): VoltDB DDL, a CSV placement table, or
the workload graph as GraphML with every node's placement.

A design is JSON the advisor reads; a deployment needs the target's own language (VoltDB's
DDL), and analysis tools want plain tables or graphs (a spreadsheet, Gephi, networkx). Each
export is checked against the design's workload first (`Design.arrays`: a design of another
workload is one line), and what a target cannot express is listed, never dropped.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from costmodel.design import Design
from advisor.errors import AdvisorError
from advisor.export_voltdb import escaped, voltdb_ddl
from costmodel.graph import WorkloadGraph
from costmodel.model import REPLICATED
from costmodel.workload import Workload
from costmodel.files import as_path, atomic_write_text

FORMATS = ("voltdb", "csv", "graphml")
CSV_COLUMNS = ("kind", "name", "table", "owner", "partition", "machine", "replicated", "bytes",
               "load", "data_parallel")


@dataclass
class ExportResult:
    """An export's text and what its target cannot express of the design (VoltDB only: the
    CSV table and GraphML hold every placement)."""

    format: str
    text: str
    not_expressible: list[str] = field(default_factory=list)

    def write(self, path: str | Path) -> Path:
        """Write the text atomically; a missing directory is one line, nothing written."""
        check_output(path)
        return atomic_write_text(path, self.text)


def check_output(path: str | Path) -> None:
    """Refuse (AdvisorError) an output path whose directory does not exist: an export names
    one file, so a typo in its directory should not create a tree. A path no system call
    takes is one line too (`is_dir()` raised ENAMETOOLONG on a path over 4,095 bytes)."""
    parent = as_path(path).parent
    if not parent.is_dir():
        raise AdvisorError(f"{path}: directory {parent} does not exist")


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise AdvisorError(f"unknown export format {fmt!r} (choose {', '.join(FORMATS)})")
    return fmt


def placed_graph(design: Design, graph: WorkloadGraph) -> WorkloadGraph:
    """`graph` on the design's cluster, once the design is checked to place exactly its nodes
    (DesignError, one line, otherwise)."""
    graph = graph.with_cluster(design.machines, design.partitions_per_machine)
    design.arrays(graph)
    return graph


def node_rows(design: Design, graph: WorkloadGraph) -> list[dict]:
    """One record per node of the graph with its placement (partition and machine None when
    replicated), the state's bytes and the procedures' load: what CSV and GraphML carry."""
    graph = graph.with_cluster(design.machines, design.partitions_per_machine)
    _, state = design.arrays(graph)  # (checks it; a window the design leaves out sits by its owner)
    c, ppm = graph.cost, design.partitions_per_machine
    rows = [{"kind": "procedure", "name": n, "table": "", "owner": "", "partition": design.procedures[n],
             "machine": design.procedures[n] // ppm, "replicated": False, "bytes": None,
             "load": float(c.proc_load[i]), "data_parallel": design.data_parallel.get(n, "")}
            for i, n in enumerate(graph.proc_names)]
    for j, n in enumerate(graph.state_names):
        p, kind = (None if state[j] == REPLICATED else int(state[j])), graph.state_kind(j)
        rows.append({"kind": kind, "name": n, "table": "" if kind == "window" else graph.table_of(j),
                     "owner": graph.owner_of(n) or "", "partition": p,
                     "machine": None if p is None else p // ppm, "replicated": p is None,
                     "bytes": float(c.state_bytes[j]), "load": None, "data_parallel": ""})
    return rows


def export_voltdb(design: Design, workload: Workload | None, graph: WorkloadGraph) -> ExportResult:
    """VoltDB DDL (`advisor.export_voltdb`): needs the workload, for its tables' keys and its
    procedures' accesses."""
    if workload is None:
        raise AdvisorError("VoltDB DDL needs the workload (its tables' keys), not a bare graph")
    placed_graph(design, graph)
    text, notes = voltdb_ddl(design, workload)
    return ExportResult("voltdb", text, notes)


def export_placement_csv(design: Design, graph: WorkloadGraph) -> ExportResult:
    """One row per node (`CSV_COLUMNS`): empty partition and machine when replicated, bytes
    for state, load for procedures."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in node_rows(design, graph):
        # names escaped: csv quotes a newline but not a lone \r, which would split the row
        writer.writerow({k: "" if v is None else str(v).lower() if isinstance(v, bool)
                         else escaped(v) if isinstance(v, str) else v for k, v in row.items()})
    return ExportResult("csv", buf.getvalue())


def export_graphml(design: Design, graph: WorkloadGraph) -> ExportResult:
    """`WorkloadGraph.to_networkx` with kind, partition, machine and replicated on every node
    (GraphML holds no None: a replicated item has partition and machine -1)."""
    import networkx as nx

    g = graph.with_cluster(design.machines, design.partitions_per_machine).to_networkx()
    g.graph.update(workload=graph.name, machines=design.machines,
                   partitions_per_machine=design.partitions_per_machine)
    for row in node_rows(design, graph):
        attrs = {k: -1 if v is None else v for k, v in row.items()
                 if k in ("kind", "partition", "machine", "replicated")}
        if row["kind"] == "procedure":
            attrs["data_parallel"] = row["data_parallel"]
        g.nodes[row["name"]].update(attrs)
    # XML 1.0 cannot carry most control characters, even as references: names escaped
    # (`escaped`, one to one), so the file always parses and ids stay distinct
    g = nx.relabel_nodes(g, {n: escaped(n) for n in g if escaped(n) != n})
    for attrs in (g.graph, *(a for _, a in g.nodes(data=True))):
        attrs.update({k: escaped(v) for k, v in attrs.items() if isinstance(v, str)})
    return ExportResult("graphml", "\n".join(nx.generate_graphml(g)) + "\n")


def export_design(design: Design, source, fmt: str) -> ExportResult:
    """Export `design` in format `fmt` for `source` (bundled name, spec path or object, or a
    statistics directory), loaded at the design's granularity."""
    from advisor.sources import load_source_for

    check_format(fmt)
    workload, graph = load_source_for(design, source)
    if fmt == "voltdb":
        return export_voltdb(design, workload, graph)
    if fmt == "csv":
        return export_placement_csv(design, graph)
    return export_graphml(design, graph)
