"""Check a trace directory against the format before anything reads it.

Every problem is one line naming the dataset, the column and the first bad row, raised as a
`TraceError` (exit status 2). The data checks stream over record batches of only the columns
they need, so validating a trace of 100 million rows takes memory for one batch, not the trace.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from traces.errors import TraceError
from traces.schema import DATASETS, MANIFEST, TRACE_FORMAT

SCAN_BATCH_ROWS = 1 << 20


@dataclass
class TraceInfo:
    """What validation learned: enough for the aggregation to plan its work."""

    path: Path
    manifest: dict
    files: dict[str, list[Path]]
    rows: dict[str, int]
    key_type: str  # "string" | "int64"
    procedures: list[str] = field(default_factory=list)


def dataset_files(trace_dir: Path, dataset: str) -> list[Path]:
    """The Parquet files of a dataset folder, in name order (hidden and _ files skipped)."""
    folder = trace_dir / dataset
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.parquet")
                  if p.is_file() and not p.name.startswith((".", "_")))


def validate_trace(trace_dir: str | Path) -> TraceInfo:
    """Raise TraceError on the first problem; return a summary of a good trace."""
    path = Path(trace_dir)
    where = str(path)
    if not path.exists():
        raise TraceError(f"{where}: no such trace directory")
    if not path.is_dir():
        raise TraceError(f"{where}: not a directory (a trace is a directory of Parquet datasets)")
    manifest = _manifest(path)
    files = {}
    for name in DATASETS:
        files[name] = dataset_files(path, name)
        if not files[name]:
            detail = "no Parquet files in it" if (path / name).is_dir() else "directory missing"
            raise TraceError(f"{where}: dataset {name!r} is missing ({name}/: {detail})")
    key_types: dict[str, Path] = {}
    for name, schema in DATASETS.items():
        for f in files[name]:
            kt = _check_schema(where, name, f, schema)
            if kt is not None:
                key_types.setdefault(kt, f)
    if len(key_types) > 1:
        (t1, f1), (t2, f2) = sorted(key_types.items(), key=lambda kv: kv[1])[:2]
        raise TraceError(f"{where}: accesses: column 'key' is {t1} in {f1.name} but {t2} in "
                         f"{f2.name} (one key type per trace)")
    key_type = next(iter(key_types), "string")
    rows = {name: sum(_num_rows(where, name, f) for f in files[name]) for name in DATASETS}
    if rows["txns"] == 0:
        raise TraceError(f"{where}: txns: empty trace (no transaction rows)")
    procedures = _check_txns(where, files["txns"])
    _check_accesses(where, files["accesses"])
    _check_flows(where, files["flows"], procedures)
    return TraceInfo(path, manifest, files, rows, key_type, sorted(procedures))


# -- manifest and schema --------------------------------------------------------------------------

def _manifest(path: Path) -> dict:
    file = path / MANIFEST
    if not file.is_file():
        raise TraceError(f"{path}: {MANIFEST} is missing (a trace starts with its manifest, "
                         f'{{"format": "{TRACE_FORMAT}"}})')
    try:
        manifest = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceError(f"{path}: {MANIFEST}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise TraceError(f"{path}: {MANIFEST}: must be a JSON object")
    fmt = manifest.get("format")
    if fmt != TRACE_FORMAT:
        raise TraceError(f"{path}: {MANIFEST}: format {fmt!r} is not supported "
                         f"(this version reads {TRACE_FORMAT!r})")
    return manifest


def _same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    if pa.types.is_string(expected):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual)
    if pa.types.is_list(expected):
        return ((pa.types.is_list(actual) or pa.types.is_large_list(actual))
                and actual.value_type == expected.value_type)
    return actual == expected


def _open(where: str, dataset: str, file: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(file)
    except (pa.ArrowException, OSError) as exc:
        raise TraceError(f"{where}: {dataset}: {file.name}: not a readable Parquet file "
                         f"({_short(exc)})") from None


def _check_schema(where: str, dataset: str, file: Path, expected: pa.Schema) -> str | None:
    schema = _open(where, dataset, file).schema_arrow
    key_type = None
    for f in expected:
        idx = schema.get_field_index(f.name)
        if idx < 0:
            raise TraceError(f"{where}: {dataset}: column {f.name!r} is missing "
                             f"(in {file.name}; columns: {', '.join(schema.names)})")
        actual = schema.field(idx).type
        if dataset == "accesses" and f.name == "key":
            if pa.types.is_int64(actual):
                key_type = "int64"
                continue
            if pa.types.is_string(actual) or pa.types.is_large_string(actual):
                key_type = "string"
                continue
            raise TraceError(f"{where}: {dataset}: column 'key' has type {actual}, "
                             f"expected int64 or string (in {file.name}, from row 0)")
        if not _same_type(actual, f.type):
            raise TraceError(f"{where}: {dataset}: column {f.name!r} has type {actual}, "
                             f"expected {f.type} (in {file.name}, from row 0)")
    return key_type


def _num_rows(where: str, dataset: str, file: Path) -> int:
    return _open(where, dataset, file).metadata.num_rows


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# -- data checks ---------------------------------------------------------------------------------

def _batches(where: str, dataset: str, files: list[Path], columns: list[str]
             ) -> Iterator[tuple[int, Path, pa.RecordBatch]]:
    """(first row number in the dataset, file, batch) over all files, only `columns`."""
    offset = 0
    for file in files:
        try:
            for batch in _open(where, dataset, file).iter_batches(SCAN_BATCH_ROWS, columns=columns):
                yield offset, file, batch
                offset += batch.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise TraceError(f"{where}: {dataset}: {file.name}: corrupt Parquet data after row "
                             f"{offset} ({_short(exc)})") from None


def _fail_first(where: str, dataset: str, column: str, mask, offset: int, file: Path,
                problem) -> None:
    """Raise naming the first row where `mask` is true (nulls in mask count as false)."""
    mask = pc.fill_null(mask, False)
    if not pc.any(mask).as_py():
        return
    i = pc.index(mask, True).as_py()
    raise TraceError(f"{where}: {dataset}: column {column!r}, row {offset + i} "
                     f"(in {file.name}): {problem(i)}")


def _no_nulls(where, dataset, batch, offset, file, columns) -> None:
    for c in columns:
        col = batch.column(c)
        if col.null_count:
            _fail_first(where, dataset, c, pc.is_null(col), offset, file, lambda i: "null value")


def _check_txns(where: str, files: list[Path]) -> set[str]:
    procedures: set[str] = set()
    columns = ["txn_id", "procedure", "batch_id", "base_partition", "start_us", "end_us",
               "status", "restarts"]
    for offset, file, b in _batches(where, "txns", files, columns):
        _no_nulls(where, "txns", b, offset, file, columns)
        start, end = b.column("start_us"), b.column("end_us")
        _fail_first(where, "txns", "start_us", pc.less(start, 0), offset, file,
                    lambda i: f"negative time {start[i].as_py()!r}")
        _fail_first(where, "txns", "end_us", pc.less(end, start), offset, file,
                    lambda i: f"negative duration: end_us {end[i].as_py()!r} is before start_us {start[i].as_py()!r}")
        status = b.column("status")
        _fail_first(where, "txns", "status",
                    pc.invert(pc.is_in(status, pa.array(["commit", "abort"]))), offset, file,
                    lambda i: f"status {status[i].as_py()!r} is not 'commit' or 'abort'")
        for c in ("restarts", "base_partition", "batch_id"):
            col = b.column(c)
            _fail_first(where, "txns", c, pc.less(col, 0), offset, file,
                        lambda i, col=col: f"negative value {col[i].as_py()!r}")
        proc = b.column("procedure")
        _fail_first(where, "txns", "procedure", pc.equal(pc.utf8_length(proc), 0), offset, file,
                    lambda i: "empty procedure name")
        procedures.update(pc.unique(proc).to_pylist())
    return procedures


def _check_accesses(where: str, files: list[Path]) -> None:
    columns = ["txn_id", "table", "key", "mode", "rows"]
    for offset, file, b in _batches(where, "accesses", files, columns):
        _no_nulls(where, "accesses", b, offset, file, columns)
        mode, rows, table = b.column("mode"), b.column("rows"), b.column("table")
        _fail_first(where, "accesses", "mode", pc.invert(pc.is_in(mode, pa.array(["read", "write"]))),
                    offset, file, lambda i: f"mode {mode[i].as_py()!r} is not 'read' or 'write'")
        _fail_first(where, "accesses", "rows", pc.less(rows, 0), offset, file,
                    lambda i: f"negative row count {rows[i].as_py()!r}")
        _fail_first(where, "accesses", "table", pc.equal(pc.utf8_length(table), 0), offset, file,
                    lambda i: "empty table name")


def _check_flows(where: str, files: list[Path], procedures: set[str]) -> None:
    columns = ["batch_id", "from_procedure", "to_procedure", "tuples", "bytes"]
    known = pa.array(sorted(procedures), pa.string())
    for offset, file, b in _batches(where, "flows", files, columns):
        _no_nulls(where, "flows", b, offset, file, columns)
        for c in ("batch_id", "tuples", "bytes"):
            col = b.column(c)
            _fail_first(where, "flows", c, pc.less(col, 0), offset, file,
                        lambda i, col=col: f"negative value {col[i].as_py()!r}")
        for c in ("from_procedure", "to_procedure"):
            col = b.column(c)
            _fail_first(where, "flows", c, pc.invert(pc.is_in(col, known)), offset, file,
                        lambda i, col=col: f"procedure {col[i].as_py()!r} never ran (no row in txns)")
