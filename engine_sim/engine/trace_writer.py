"""The run's history as a trace in the Parquet format of traces.schema (written through
traces.writer, so it appears atomically): one txns row per SP execution (a nested group
gives one row per SP, each with its own `work_us`: the CPU time of a declared SP's work, the
engine's own part left out), one accesses row per distinct row an execution touched (rows = how
many times), one flows row per stream batch an SP produced for another. A window access is an
ordinary accesses row whose `table` is the window's name and whose key is the tuple's sequence
number in the window (-1: its metadata row): the owner's inserts (and expiries) are writes,
its reads of the active window reads; the manifest lists the windows under `windows`.
The rows stream from the history to Parquet in row groups of bounded size, so a long run's
trace takes no more memory than a short one's."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pyarrow as pa

from costmodel.workload import input_access_keys
from traces.writer import TraceWriter

ROW_GROUP_ROWS = 65_536  # rows a dataset holds in memory before they go to disk as a row group


def _cluster(workload, design) -> dict:
    """The traced cluster: the design's shape, with the spec's memory limit and capacities."""
    c = workload.cluster
    out = {"machines": design.machines, "partitions_per_machine": design.partitions_per_machine}
    if c.machine_memory_mb:
        out["machine_memory_mb"] = c.machine_memory_mb
    if c.machine_capacity and len(c.machine_capacity) == design.machines:
        out["machine_capacity"] = list(c.machine_capacity)
    return out


class _Chunk:
    """One dataset's rows not written yet, as columns; written as a row group of at most
    `rows` rows (None: one row group at the end), so memory holds one row group a dataset."""

    def __init__(self, writer: TraceWriter, dataset: str, names: tuple[str, ...], rows: int | None):
        self.writer, self.dataset, self.names, self.rows = writer, dataset, names, rows
        self.columns: list[list] = [[] for _ in names]

    def add(self, *values) -> None:
        for column, v in zip(self.columns, values):
            column.append(v)
        if self.rows is not None and len(self.columns[0]) >= self.rows:
            self.flush()

    def flush(self) -> None:
        if not self.columns[0]:
            return
        data = dict(zip(self.names, self.columns))
        if "partitions" in data:
            data["partitions"] = pa.array(data["partitions"], pa.list_(pa.int32()))
        if "work_us" in data:  # null where the engine does not time it (bundled code, aborts)
            data["work_us"] = pa.array(data["work_us"], pa.float64())
        self.writer.write(self.dataset, data)
        self.columns = [[] for _ in self.names]


def write_trace(out: str | Path, plan, records: Iterable, metadata: dict,
                row_group_rows: int | None = ROW_GROUP_ROWS) -> Path:
    """`records`: the run's history, read once in order (a list, or the driver's spool), and
    written as it is read, in row groups of `row_group_rows` rows a dataset (None: the whole
    dataset in one row group, held in memory until the end)."""
    w = plan.workload
    meta = {
        "created_by": "engine_sim.engine",
        "workload": w.name,
        "workload_sha256": w.sha256,
        "procedures": [p.name for p in w.procedures],
        "tables": {t.name: {"rows": int(t.rows), "row_bytes": int(t.row_bytes), "key": t.key,
                            "read_mostly": bool(t.read_mostly)} for t in w.tables},
        # the spec's tables by name: a `T#0` of a spec `advisor tune` split is a table, no fragment
        "spec_tables": [t.name for t in w.tables],
        "streams": [{"from": s.source, "to": s.target, "tuples": s.tuples, "tuple_bytes": s.tuple_bytes}
                    for s in w.streams],
        "nested": [list(g) for g in w.nested],
        # what a trace cannot show: the SPs clients invoke, and the input field an SP splits by
        "oltp": [p.name for p in w.procedures if p.oltp],
        "partition_keys": {p.name: p.partition_key for p in w.procedures if p.partition_key},
        # the accesses keyed by a field of the SP's input tuple (what data-parallel lanes split on)
        "access_keys": input_access_keys(w),
        "windows": {win.name: {"procedure": win.procedure, "size": win.size, "slide": win.slide,
                               "kind": win.kind, "tuple_bytes": int(win.tuple_bytes),
                               **({"max_tuples": int(win.max_tuples)} if win.max_tuples else {}),
                               "tuples": float(w.window_tuples(win))}
                    for win in w.windows},
        "cluster": _cluster(w, plan.design),
        "input": {"batch_size": plan.batch_size, "fields": list(w.input.fields),
                  **({"rate": w.input.rate} if w.input.rate else {}),
                  "cost_unit_us": w.input.cost_unit_us, "durations": "execution"},
        **metadata,
    }
    columns = {"txns": ("txn_id", "procedure", "batch_id", "base_partition", "partitions", "start_us",
                        "end_us", "status", "restarts", "work_us"),
               "accesses": ("txn_id", "table", "key", "mode", "rows"),
               "flows": ("batch_id", "from_procedure", "to_procedure", "tuples", "bytes")}
    with TraceWriter(out, meta) as writer:
        chunks = {name: _Chunk(writer, name, cols, row_group_rows) for name, cols in columns.items()}
        txns, acc, flows = chunks["txns"], chunks["accesses"], chunks["flows"]
        for i, r in enumerate(r for r in records if r.kind in ("stream", "oltp")):
            txns.add(i, r.procedure, max(r.batch, 0), r.base, list(r.partitions), max(r.start_us, 0),
                     max(r.end_us, r.start_us, 0), r.status, r.restarts, r.work_us)
            for _part, table, key, mode, n in r.accesses:
                acc.add(i, table, str(key), mode, n)
            if r.status == "commit":
                for to_sp, tuples, nbytes, _moved in r.outputs:
                    flows.add(r.batch, r.procedure, to_sp, tuples, nbytes)
        for chunk in chunks.values():
            chunk.flush()
    return Path(out)
