"""Write a trace directory in row groups, so memory stays flat however long the trace is.

    with TraceWriter(out, {"workload": "x"}) as w:
        w.write("txns", {...columns...})      # any number of times, per dataset
        w.write("accesses", table)

Everything goes to a staging directory next to `out` and appears under `out` (with its
`_trace.json` manifest) only when the block ends without an exception. The engine and the
synthetic generator both use it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from costmodel.files import discard_dir, publish_dir, staging_dir, writing
from traces.errors import TraceError
from traces.schema import DATASETS, MANIFEST, OPTIONAL, TRACE_FORMAT

PART_FILE = "part-00000.parquet"


class TraceWriter:
    """Streams the three datasets to Parquet (one file each, one row group per write)."""

    def __init__(self, out: str | Path, metadata: Mapping[str, Any] | None = None,
                 compression: str = "snappy"):
        self.out = Path(out)
        self.metadata = dict(metadata or {})
        self.compression = compression
        self.rows = {name: 0 for name in DATASETS}
        self._staged = staging_dir(self.out, MANIFEST, "a trace directory")
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._closed = False

    # -- writing --------------------------------------------------------------------------
    def write(self, dataset: str, data: pa.Table | pa.RecordBatch | Mapping[str, Any]) -> None:
        """Append rows to a dataset: an Arrow table/batch or a mapping of column -> array."""
        if dataset not in DATASETS:
            raise TraceError(f"unknown trace dataset {dataset!r} (datasets: {', '.join(DATASETS)})")
        table = self._as_table(dataset, data)
        if table.num_rows == 0:
            return
        with writing(self.out):
            writer = self._writers.get(dataset)
            if writer is None:
                folder = self._staged / dataset
                folder.mkdir()
                writer = pq.ParquetWriter(folder / PART_FILE, table.schema,
                                          compression=self.compression)
                self._writers[dataset] = writer
            elif not table.schema.equals(writer.schema):
                table = _conform(table, writer.schema, dataset)
            writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.rows[dataset] += table.num_rows

    @staticmethod
    def _as_table(dataset: str, data) -> pa.Table:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if not isinstance(data, pa.Table):
            data = pa.table({k: v if isinstance(v, (pa.Array, pa.ChunkedArray)) else pa.array(v)
                             for k, v in dict(data).items()})
        schema = DATASETS[dataset]
        missing = [f.name for f in schema if f.name not in data.column_names]
        if missing:
            raise TraceError(f"{dataset}: missing column {missing[0]!r}")
        if dataset == "accesses" and pa.types.is_integer(data.schema.field("key").type):
            schema = schema.set(schema.get_field_index("key"), pa.field("key", pa.int64()))
        for f in OPTIONAL[dataset]:  # an optional column given is kept (see traces.schema)
            if f.name in data.column_names:
                schema = schema.append(f)
        return data.select(schema.names).cast(schema)

    # -- finishing ------------------------------------------------------------------------
    def close(self) -> Path:
        """Finish every file, write the manifest, and publish the directory."""
        if self._closed:
            return self.out
        try:
            with writing(self.out):
                for name, schema in DATASETS.items():
                    if name in self._writers:
                        self._writers.pop(name).close()
                    else:  # an empty dataset still exists, with its schema
                        folder = self._staged / name
                        folder.mkdir()
                        pq.write_table(schema.empty_table(), folder / PART_FILE)
                manifest = {"format": TRACE_FORMAT, **self.metadata, "rows": dict(self.rows)}
                (self._staged / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
                publish_dir(self._staged, self.out, MANIFEST, "a trace directory")
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return self.out

    def abort(self) -> None:
        """Drop everything written so far; `out` is left as it was."""
        for writer in self._writers.values():
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - already failing; the staging dir goes anyway
                pass
        self._writers.clear()
        discard_dir(self._staged)
        self._closed = True

    def __enter__(self) -> "TraceWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _conform(table: pa.Table, schema: pa.Schema, dataset: str) -> pa.Table:
    """A later write in the file's schema: an optional column the first write set up is null
    where this write lacks it; one the first write did not have is refused (its values would
    be lost)."""
    extra = [n for n in table.column_names if n not in schema.names]
    if extra:
        raise TraceError(f"{dataset}: column {extra[0]!r} first appears after the dataset's first write; "
                         "give it in every write (null where unknown)")
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f, pa.nulls(table.num_rows, f.type))
    return table.select(schema.names).cast(schema)
