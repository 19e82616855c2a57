"""The run's history as a trace in the Parquet format of traces.schema (written through
traces.writer, so it appears atomically): one txns row per SP execution (a nested group
gives one row per SP), one accesses row per distinct row an execution touched (rows = how
many times), one flows row per stream batch an SP produced for another. A window access is an
ordinary accesses row whose `table` is the window's name and whose key is the tuple's sequence
number in the window (-1: its metadata row): the owner's inserts (and expiries) are writes,
its reads of the active window reads; the manifest lists the windows under `windows`."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pyarrow as pa

from traces.writer import TraceWriter


def _cluster(workload, design) -> dict:
    """The traced cluster: the design's shape, with the spec's memory limit and capacities."""
    c = workload.cluster
    out = {"machines": design.machines, "partitions_per_machine": design.partitions_per_machine}
    if c.machine_memory_mb:
        out["machine_memory_mb"] = c.machine_memory_mb
    if c.machine_capacity and len(c.machine_capacity) == design.machines:
        out["machine_capacity"] = list(c.machine_capacity)
    return out


def write_trace(out: str | Path, plan, records: Iterable, metadata: dict) -> Path:
    """`records`: the run's history, read once in order (a list, or the driver's spool)."""
    w = plan.workload
    meta = {
        "created_by": "engine_sim.engine",
        "workload": w.name,
        "workload_sha256": w.sha256,
        "procedures": [p.name for p in w.procedures],
        "tables": {t.name: {"rows": int(t.rows), "row_bytes": int(t.row_bytes), "key": t.key,
                            "read_mostly": bool(t.read_mostly)} for t in w.tables},
        "streams": [{"from": s.source, "to": s.target, "tuples": s.tuples, "tuple_bytes": s.tuple_bytes}
                    for s in w.streams],
        "nested": [list(g) for g in w.nested],
        # the accesses keyed by a field of the SP's input tuple (what data-parallel lanes split on)
        "access_keys": {p.name: keyed for p in w.procedures
                        if (keyed := {a.table: a.keys for a in p.accesses if a.key_kind == "input"})},
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
    txns = {k: [] for k in ("txn_id", "procedure", "batch_id", "base_partition", "partitions",
                            "start_us", "end_us", "status", "restarts")}
    acc = {k: [] for k in ("txn_id", "table", "key", "mode", "rows")}
    flows = {k: [] for k in ("batch_id", "from_procedure", "to_procedure", "tuples", "bytes")}
    for i, r in enumerate(r for r in records if r.kind in ("stream", "oltp")):
        txns["txn_id"].append(i)
        txns["procedure"].append(r.procedure)
        txns["batch_id"].append(max(r.batch, 0))
        txns["base_partition"].append(r.base)
        txns["partitions"].append(list(r.partitions))
        txns["start_us"].append(max(r.start_us, 0))
        txns["end_us"].append(max(r.end_us, r.start_us, 0))
        txns["status"].append(r.status)
        txns["restarts"].append(r.restarts)
        for _part, table, key, mode, n in r.accesses:
            acc["txn_id"].append(i)
            acc["table"].append(table)
            acc["key"].append(str(key))
            acc["mode"].append(mode)
            acc["rows"].append(n)
        if r.status == "commit":
            for to_sp, tuples, nbytes, _moved in r.outputs:
                flows["batch_id"].append(r.batch)
                flows["from_procedure"].append(r.procedure)
                flows["to_procedure"].append(to_sp)
                flows["tuples"].append(tuples)
                flows["bytes"].append(nbytes)
    with TraceWriter(out, meta) as writer:
        writer.write("txns", {**txns, "partitions": pa.array(txns["partitions"], pa.list_(pa.int32()))})
        writer.write("accesses", acc)
        writer.write("flows", flows)
    return Path(out)
