"""The state/processing graph built from workload statistics (what `advisor trace aggregate`
writes) instead of a spec: straight from Arrow columns into the CostGraph arrays, with
Arrow/numpy vector operations only (no per-edge Python loop), so a tuple-granularity graph
with many thousands of state items builds as fast as it loads.

Weights, all per input batch (totals divided by the number of distinct batches):
- processing node load: median cost (µs) x invocations per batch (the median, not the mean:
  one garbage-collection pause or a burst of load on the traced machine must not make an SP
  look several times heavier than it is; traces without a median fall back to the mean);
- processing-to-state edges: rows read per batch and rows written per batch, as two edges
  (`ps_write` false / true), exactly as `WorkloadGraph.from_workload` splits them;
- processing-to-processing edges: tuples per batch;
- state node weight: the estimated bytes of the item;
- a window item (state kind "window") gets `state_owner` = its owner (from the manifest's
  `windows`), so every search keeps it with that SP.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from costmodel import CostGraph
from advisor.errors import AdvisorError
from costmodel.graph import WorkloadGraph, group_of

# Without a read_mostly flag in the trace manifest, a table is read-mostly when at most this
# share of the rows accessed in it are writes.
READ_MOSTLY_WRITE_SHARE = 0.05


def graph_from_statistics(stats_dir: str | Path, machines: int | None = None,
                          partitions_per_machine: int | None = None,
                          memory_limit_bytes: float | None = None,
                          capacity=None) -> WorkloadGraph:
    """A WorkloadGraph of a statistics directory.

    The cluster is the one given, else the one the trace recorded (the synthetic generator
    copies the spec's), else a single machine with one partition.
    """
    from traces.errors import TraceError
    from traces.statistics import read_statistics_arrow

    try:
        tables, manifest = read_statistics_arrow(stats_dir)
    except TraceError as exc:
        raise AdvisorError(str(exc)) from None
    where = str(stats_dir)
    batches = float(manifest.get("batches") or 0)
    if batches <= 0:
        raise AdvisorError(f"{where}: _stats.json: 'batches' must be > 0")

    procs, state = tables["procedures"], tables["state"]
    proc_names = procs.column("procedure")
    state_names = state.column("state")
    if procs.num_rows == 0:
        raise AdvisorError(f"{where}: procedures.parquet has no procedures")

    proc_load = (_np(procs, _load_column(procs)) * _np(procs, "invocations")) / batches

    ps = tables["procedure_state"]
    ps_proc = _index(ps.column("procedure"), proc_names, where, "procedure_state.procedure")
    ps_state = _index(ps.column("state"), state_names, where, "procedure_state.state")
    read_rows, write_rows = _np(ps, "read_rows"), _np(ps, "write_rows")
    has_read, has_write = read_rows > 0, write_rows > 0
    edge_proc = np.concatenate([ps_proc[has_read], ps_proc[has_write]])
    edge_state = np.concatenate([ps_state[has_read], ps_state[has_write]])
    edge_weight = np.concatenate([read_rows[has_read], write_rows[has_write]]) / batches
    edge_write = np.concatenate([np.zeros(has_read.sum(), bool), np.ones(has_write.sum(), bool)])

    streams = tables["streams"]
    pp_src = _index(streams.column("from_procedure"), proc_names, where, "streams.from_procedure")
    pp_dst = _index(streams.column("to_procedure"), proc_names, where, "streams.to_procedure")
    pp_weight = _np(streams, "tuples") / batches

    cluster = manifest.get("cluster") or {}
    machines = int(machines or cluster.get("machines") or 1)
    ppm = int(partitions_per_machine or cluster.get("partitions_per_machine") or 1)
    if capacity is None:
        recorded = cluster.get("machine_capacity")
        capacity = recorded if isinstance(recorded, list) and len(recorded) == machines else None
    if memory_limit_bytes is None and cluster.get("machine_memory_mb"):
        memory_limit_bytes = float(cluster["machine_memory_mb"]) * 2**20

    names = proc_names.to_pylist()
    known = set(names)
    nested = tuple(tuple(g) for g in manifest.get("nested") or [] if set(g) <= known)
    owner = _window_owners(state, manifest, names, where)
    try:
        cost = CostGraph(
            proc_load=proc_load, state_bytes=_np(state, "estimated_bytes"),
            ps_proc=edge_proc, ps_state=edge_state, ps_weight=edge_weight, ps_write=edge_write,
            pp_src=pp_src, pp_dst=pp_dst, pp_weight=pp_weight,
            machines=machines, partitions_per_machine=ppm, capacity=capacity,
            memory_limit_bytes=memory_limit_bytes, proc_group=group_of(names, nested),
            state_owner=owner,
        )
    except ValueError as exc:
        raise AdvisorError(f"{where}: {exc}") from None
    return WorkloadGraph(
        str(manifest.get("workload") or Path(stats_dir).name), names, state_names.to_pylist(),
        state.column("table").to_pylist(), read_mostly_items(state, manifest) & (owner < 0), cost,
        str(manifest.get("sha256", "")), nested, load_unit_s=1e-6,
        proc_txns=_np(procs, "invocations") / batches,
    )


def priced_as_workload(graph: WorkloadGraph, workload) -> WorkloadGraph:
    """`graph` (built straight from the statistics' columns) with each SP's load and each
    state item's bytes as the workload rebuilt from the same statistics has them
    (`advisor.statistics_workload`: SP work net of the overheads the simulator charges, a
    nested group's shared duration split, the manifest's table sizes), priced as a spec's
    cost units are.

    Why: statistics too large to simulate got their graph from the columns, and those read
    the load otherwise (raw durations, one missing work figure dropping every SP's, a group's
    duration charged to each member, microseconds priced as microseconds, invocations as
    transactions): the same trace's cost and weights depended on its size."""
    from dataclasses import replace

    costs = {p.name: p.cost for p in workload.procedures}
    unit_us = float(workload.input.cost_unit_us)
    load = [costs[n] if n in costs else float(x) / unit_us  # (microseconds in units)
            for n, x in zip(graph.proc_names, graph.cost.proc_load)]
    sizes = {t.name: t.bytes for t in workload.tables} | {w.name: workload.window_bytes(w) for w in workload.windows}
    state_bytes = [sizes.get(n, float(b)) for n, b in zip(graph.state_names, graph.cost.state_bytes)]
    return replace(graph, cost=replace(graph.cost, proc_load=load, state_bytes=state_bytes),
                   load_unit_s=None, proc_txns=None, cost_unit_us=unit_us)


def _window_owners(state: pa.Table, manifest: dict, procs: list[str], where: str) -> np.ndarray:
    """state_owner: the owning SP of each window item (kind "window"), -1 for the rest."""
    windows = manifest.get("windows") or {}
    owner = np.full(state.num_rows, -1, dtype=np.int64)
    index = {n: i for i, n in enumerate(procs)}
    for j, (name, kind) in enumerate(zip(state.column("state").to_pylist(),
                                         state.column("kind").to_pylist())):
        if kind != "window":
            continue
        proc = (windows.get(name) or {}).get("procedure")
        if proc not in index:
            raise AdvisorError(f"{where}: window {name!r}: its owner {proc!r} is not among the "
                               f"statistics' procedures")
        owner[j] = index[proc]
    return owner


def _load_column(procs: pa.Table) -> str:
    """What an SP's load is read from: its own work where the trace timed it for every SP
    (`p50_work_us`: the load a spec declares), else its median execution time (one scale for
    all SPs either way)."""
    if "p50_work_us" in procs.column_names and procs.num_rows and procs.column("p50_work_us").null_count == 0:
        return "p50_work_us"
    return "p50_cost_us" if "p50_cost_us" in procs.column_names else "mean_cost_us"


def _np(table: pa.Table, column: str) -> np.ndarray:
    return table.column(column).to_numpy().astype(np.float64)


def _index(values: pa.ChunkedArray, names: pa.ChunkedArray, where: str, column: str) -> np.ndarray:
    """Positions of `values` in `names` (Arrow hash lookup); every value must be present."""
    idx = pc.index_in(values, value_set=names.combine_chunks())
    if idx.null_count:
        first = values[pc.index(pc.is_null(idx), True).as_py()].as_py()
        raise AdvisorError(f"{where}: {column}: {first!r} is not in the statistics' list")
    return idx.to_numpy().astype(np.int64)


def read_mostly_items(state: pa.Table, manifest: dict) -> np.ndarray:
    """Per state item: its table's read_mostly flag from the trace manifest, else derived from
    the table's write share."""
    flags = {t: info.get("read_mostly") for t, info in (manifest.get("tables") or {}).items()
             if isinstance(info, dict)}
    per_table = state.group_by("table").aggregate([("read_rows", "sum"), ("write_rows", "sum")])
    reads = per_table.column("read_rows_sum").to_numpy().astype(np.float64)
    writes = per_table.column("write_rows_sum").to_numpy().astype(np.float64)
    derived = writes <= READ_MOSTLY_WRITE_SHARE * np.maximum(reads + writes, 1.0)
    table_names = per_table.column("table")
    declared = pa.array([flags.get(t) for t in table_names.to_pylist()], pa.bool_())
    table_flag = np.where(pc.is_null(declared).to_numpy(zero_copy_only=False), derived,
                          pc.fill_null(declared, False).to_numpy(zero_copy_only=False))
    return table_flag[_index(state.column("table"), table_names, "state", "table")]
