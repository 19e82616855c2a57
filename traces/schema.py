"""The trace format: three Parquet datasets in one directory, versioned.

    TRACE_DIR/
      _trace.json         {"format": "advisor.trace/1", ...metadata}
      txns/*.parquet      one row per transaction execution
      accesses/*.parquet  one row per state access
      flows/*.parquet     one row per stream batch moved between procedures

Keys are stored as strings in `accesses.key` (int64 keys are written in decimal), so one
column type serves integer and string keys alike.
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
