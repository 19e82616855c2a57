"""The trace format: three Parquet datasets in one directory, versioned.

    TRACE_DIR/
      _trace.json         {"format": "advisor.trace/1", ...metadata}
      txns/*.parquet      one row per transaction execution
      accesses/*.parquet  one row per state access
      flows/*.parquet     one row per stream batch moved between procedures

Keys are stored as strings in `accesses.key` (int64 keys are written in decimal), so one
column type serves integer and string keys alike.

A dataset may also carry the optional columns of `OPTIONAL` (a trace without them is just as
valid): `txns.work_us` is the CPU time of the SP's own work within the execution, apart from
what the system spent on it (locks, state accesses, logging, commit), where the system can
tell the two apart, as H-Store's procedure profiler does; null where it cannot.
"""
from __future__ import annotations

import pyarrow as pa

TRACE_FORMAT = "advisor.trace/1"
MANIFEST = "_trace.json"

TXNS = pa.schema([
    ("txn_id", pa.int64()),
    ("procedure", pa.string()),
    ("batch_id", pa.int64()),
    ("base_partition", pa.int32()),
    ("partitions", pa.list_(pa.int32())),
    ("start_us", pa.int64()),
    ("end_us", pa.int64()),
    ("status", pa.string()),  # "commit" | "abort"
    ("restarts", pa.int32()),
])

ACCESSES = pa.schema([
    ("txn_id", pa.int64()),
    ("table", pa.string()),
    ("key", pa.string()),
    ("mode", pa.string()),  # "read" | "write"
    ("rows", pa.int64()),
])

FLOWS = pa.schema([
    ("batch_id", pa.int64()),
    ("from_procedure", pa.string()),
    ("to_procedure", pa.string()),
    ("tuples", pa.int64()),
    ("bytes", pa.int64()),
])

DATASETS: dict[str, pa.Schema] = {"txns": TXNS, "accesses": ACCESSES, "flows": FLOWS}

# optional columns (nullable), by dataset: read as null where a file does not have them
OPTIONAL: dict[str, pa.Schema] = {"txns": pa.schema([("work_us", pa.float64())]),
                                  "accesses": pa.schema([]), "flows": pa.schema([])}


def full_schema(dataset: str) -> pa.Schema:
    """A dataset's columns with its optional ones (what a reader asks Spark for)."""
    schema = DATASETS[dataset]
    for f in OPTIONAL[dataset]:
        schema = schema.append(f)
    return schema
