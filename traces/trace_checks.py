"""Check a trace directory against the format before anything reads it.

Every problem is one line naming the dataset, the column and the first bad row, raised as a
`TraceError` (exit status 2). The data checks stream over record batches of only the columns
they need, so validating a trace of 100 million rows takes memory for one batch, not the trace.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from costmodel import text
from traces.errors import TraceError
from traces.manifest_fields import check_manifest_fields, spec_tables
from traces.schema import DATASETS, MANIFEST, OPTIONAL, TRACE_FORMAT
from traces.trace_integrity import check_integrity
from traces.windows import WindowInfo, manifest_windows

SCAN_BATCH_ROWS = 1 << 20


@dataclass
class TraceInfo:
    """What validation learned: enough for the aggregation to plan its work."""

    path: Path | str  # a local directory, or the URI Spark reads in place
    manifest: dict
    files: dict[str, list]  # per dataset, its Parquet files (Paths, or URIs read in place)
    rows: dict[str, int]
    key_type: str  # "string" | "int64"
    procedures: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)  # every table the accesses name
    rows_bound: int | None = None  # >= the sum of accesses.rows (from Parquet statistics)
    windows: dict[str, WindowInfo] = field(default_factory=dict)  # from the manifest

    @property
    def source(self) -> str:
        """Where the trace is, as Spark is given it: an absolute path or a URI."""
        return str(self.path.absolute()) if isinstance(self.path, Path) else self.path

    def locations(self, dataset: str) -> list[str]:
        """The dataset's files as Spark reads them (each a literal path, never a glob)."""
        return spark_paths(str(f.absolute()) if isinstance(f, Path) else f for f in self.files[dataset])


# Hadoop reads `{}[]*?` in a path given to Spark as a glob (and `\` as its escape): a file named
# `part[1].parquet` was "Path does not exist", and `part*.parquet` read every `part...` file.
_GLOB_CHARS = "\\{}[]*?"


def spark_paths(paths) -> list[str]:
    """Paths as Spark's readers take them literally: each glob character escaped."""
    return ["".join("\\" + c if c in _GLOB_CHARS else c for c in p) for p in paths]


def hidden_part(relative: str) -> bool:
    """A file Spark and Hadoop skip: one under a folder, or named, with a leading `.` or `_`
    (a failed job's `_temporary/`, `.spark-staging-*/`, `_SUCCESS`, `.crc` files)."""
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


def dataset_files(trace_dir: Path, dataset: str) -> list[Path]:
    """The Parquet files of a dataset folder, in name order (hidden and _ files skipped, and the
    files under a hidden or _ folder: a failed Spark job's `_temporary/` holds partial copies)."""
    # absolute: Arrow reads a relative `run:2/txns/x.parquet` as a URI of a filesystem `run`
    folder = (trace_dir / dataset).absolute()
    if not folder.is_dir():
        return []
    found = sorted(p for p in folder.rglob("*.parquet")
                   if p.is_file() and not hidden_part(p.relative_to(folder).as_posix()))
    for p in found:
        if ":" in p.name:  # Hadoop's local filesystem cannot open it (its checksum file's name)
            raise TraceError(f"{trace_dir}: {dataset}: {p.relative_to(folder).as_posix()}: Spark "
                             "cannot read a file whose name holds ':' (a Hadoop path takes none); "
                             "rename it")
        if ":" in str(p) and any(c in _GLOB_CHARS for c in str(p)):
            raise TraceError(f"{trace_dir}: {dataset}: {p.relative_to(folder).as_posix()}: Spark cannot "
                             f"read a path that holds both ':' and one of {_GLOB_CHARS} (Hadoop reads it "
                             "as a pattern, and a folder named with ':' in a pattern as a URI); rename "
                             "or move the trace")
    return found


def is_local_trace(location: str | Path) -> bool:
    """A path or a file:// URI: validated with Arrow before Spark starts. Anything else
    (`hdfs://`, `s3a://`, `viewfs://`...) is read in place by Spark, which validates it."""
    scheme, sep, _ = str(location).partition("://")
    return not sep or scheme.lower() == "file"


def local_trace_path(trace_dir: str | Path) -> Path:
    """A local trace location (a path, or a `file://` URI of this host) as a path."""
    text = str(trace_dir)
    scheme, sep, _ = text.partition("://")
    if not sep:
        return Path(text)
    if scheme.lower() == "file":
        parsed = urlparse(text)
        if parsed.netloc not in ("", "localhost"):
            raise TraceError(f"{text}: a file:// URI of another host ({parsed.netloc}) is not readable here")
        return Path(url2pathname(parsed.path))
    raise TraceError(f"{text}: a trace on {scheme}:// is read in place by Spark: aggregate it "
                     "(advisor trace aggregate), or validate it with a Spark session")


def validate_trace(trace_dir: str | Path) -> TraceInfo:
    """Raise TraceError on the first problem; return a summary of a good trace."""
    path = local_trace_path(trace_dir)
    where = str(path)
    if not path.exists():
        raise TraceError(f"{where}: no such trace directory")
    if not path.is_dir():
        raise TraceError(f"{where}: not a directory (a trace is a directory of Parquet datasets)")
    manifest = _manifest(path)
    windows = manifest_windows(manifest, f"{where}: {MANIFEST}")
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
    for name, w in windows.items():  # (a misspelt owner failed only after the Spark job)
        if w.procedure not in procedures:
            raise TraceError(f"{where}: {MANIFEST}: window {name!r} belongs to procedure {w.procedure!r}, "
                             f"which never ran (no row in txns)")
    tables = _check_accesses(where, files["accesses"], spec_tables(manifest), key_type)
    _check_flows(where, files["flows"], procedures)
    check_integrity(where, files["txns"], files["accesses"], _batches, files["flows"])
    return TraceInfo(path, manifest, files, rows, key_type, sorted(procedures), sorted(tables),
                     _rows_bound(files["accesses"]), windows)


# -- manifest and schema --------------------------------------------------------------------------

def _manifest(path: Path) -> dict:
    file = path / MANIFEST
    if not file.is_file():
        raise TraceError(missing_manifest(path))
    try:
        text = file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: {MANIFEST}: not valid JSON ({exc})") from None
    return parse_manifest(text, str(path))


def missing_manifest(where) -> str:
    return (f"{where}: {MANIFEST} is missing (a trace starts with its manifest, "
            f'{{"format": "{TRACE_FORMAT}"}})')


def parse_manifest(text: str, where: str) -> dict:
    """The manifest's JSON as an object of this format; one TraceError line otherwise."""
    try:
        manifest = json.loads(text)
    except (ValueError, RecursionError) as exc:  # bad JSON, an int of 4,300+ digits; nesting thousands deep
        raise TraceError(f"{where}: {MANIFEST}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise TraceError(f"{where}: {MANIFEST}: must be a JSON object")
    fmt = manifest.get("format")
    if fmt is None:
        raise TraceError(f"{where}: {MANIFEST}: no \"format\" (a trace manifest says \"format\": \"{TRACE_FORMAT}\")")
    if fmt != TRACE_FORMAT:
        raise TraceError(f"{where}: {MANIFEST}: format {fmt!r} is not supported "
                         f"(this version reads {TRACE_FORMAT!r})")
    check_manifest_fields(manifest, f"{where}: {MANIFEST}")
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
    return check_schema(where, dataset, _open(where, dataset, file).schema_arrow, file.name, expected)


def check_schema(where: str, dataset: str, schema: pa.Schema, file_name: str,
                 expected: pa.Schema) -> str | None:
    """Every column the format asks for, of its type; the key's type ('int64' | 'string')."""
    key_type = None
    for f in expected:
        idx = schema.get_field_index(f.name)
        if idx < 0:
            raise TraceError(f"{where}: {dataset}: column {f.name!r} is missing "
                             f"(in {file_name}; columns: {', '.join(schema.names)})")
        actual = schema.field(idx).type
        if dataset == "accesses" and f.name == "key":
            if pa.types.is_int64(actual):
                key_type = "int64"
                continue
            if pa.types.is_string(actual) or pa.types.is_large_string(actual):
                key_type = "string"
                continue
            raise TraceError(f"{where}: {dataset}: column 'key' has type {actual}, "
                             f"expected int64 or string (in {file_name}, from row 0)")
        if not _same_type(actual, f.type):
            raise TraceError(f"{where}: {dataset}: column {f.name!r} has type {actual}, "
                             f"expected {f.type} (in {file_name}, from row 0)")
    for f in OPTIONAL[dataset]:  # may be left out; given, a floating-point number (the Spark job
        # reads it as one: an int64 column passed here and failed there, after Spark started)
        idx = schema.get_field_index(f.name)
        if idx >= 0 and not pa.types.is_floating(schema.field(idx).type):
            raise TraceError(f"{where}: {dataset}: column {f.name!r} has type {schema.field(idx).type}, "
                             f"expected a number of type {f.type} (in {file_name}, from row 0)")
    return key_type


def _num_rows(where: str, dataset: str, file: Path) -> int:
    return _open(where, dataset, file).metadata.num_rows


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# -- data checks ---------------------------------------------------------------------------------
# Strings are read dictionary-encoded: a value check looks at each distinct value once, and a
# bad one is traced back to its first row through the indices. The wide `key` column is read
# plain: string keys for the name rule (Arrow's vectorised `utf8_is_printable` picks the few
# values to check one by one), int64 keys only when the file's statistics cannot vouch that it
# has no nulls.

_STRINGS = {"procedure", "status", "table", "mode", "from_procedure", "to_procedure"}


def _batches(where: str, dataset: str, files: list[Path], columns: list[str],
             only: list[Path] | None = None) -> Iterator[tuple[int, Path, pa.RecordBatch]]:
    """(first row number in the dataset, file, batch) over the files (or `only` those of
    them), reading just `columns`."""
    offset = 0
    for file in files:
        if only is not None and file not in only:
            offset += _num_rows(where, dataset, file)
            continue
        try:
            pf = pq.ParquetFile(file, read_dictionary=[c for c in columns if c in _STRINGS])
            for batch in pf.iter_batches(SCAN_BATCH_ROWS, columns=columns):
                yield offset, file, batch
                offset += batch.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise TraceError(f"{where}: {dataset}: {file.name}: corrupt Parquet data after row "
                             f"{offset} ({_short(exc)})") from None


class _Batch:
    """One record batch of a dataset and how to report its first bad row."""

    def __init__(self, where: str, dataset: str, offset: int, file: Path, batch: pa.RecordBatch):
        self.where, self.dataset, self.offset, self.file, self.batch = where, dataset, offset, file, batch

    def fail(self, column: str, row: int, problem: str) -> None:
        raise TraceError(f"{self.where}: {self.dataset}: column {column!r}, row {self.offset + row} "
                         f"(in {self.file.name}): {problem}")

    def first(self, mask) -> int | None:
        mask = pc.fill_null(mask, False)
        return pc.index(mask, True).as_py() if pc.any(mask).as_py() else None

    def no_nulls(self) -> None:
        for name in self.batch.column_names:
            col = self.batch.column(name)
            if col.null_count:
                self.fail(name, self.first(pc.is_null(col)), "null value")

    def non_negative(self, *names: str) -> None:
        for name in names:
            col = self.batch.column(name)
            if len(col) and pc.min(col).as_py() < 0:
                row = self.first(pc.less(col, 0))
                self.fail(name, row, f"negative value {col[row].as_py()!r}")

    def partitions_non_negative(self) -> None:
        """Every element of the `partitions` lists a partition: an integer >= 0 (a null or a
        negative one was taken)."""
        col = self.batch.column("partitions")
        flat = pc.list_flatten(col)
        bad = pc.fill_null(pc.less(flat, 0), True)
        if len(flat) and pc.any(bad).as_py():
            i = pc.index(bad, True).as_py()
            row = pc.list_parent_indices(col)[i].as_py()
            self.fail("partitions", row, f"a partition must be an integer >= 0, got {flat[i].as_py()!r}")

    def printable(self, name: str, problem) -> None:
        """Every value of string column `name` passes the name rule (`costmodel.text.name_problem`);
        `problem(value)` words the first that does not. Only the distinct values Arrow finds
        unprintable are checked one by one (a superset: it flags a no-break space too), so a
        column of millions of distinct keys costs one vectorised pass."""
        col = self.batch.column(name)
        suspects = pc.unique(pc.filter(col, pc.invert(pc.fill_null(pc.utf8_is_printable(col), True))))
        bad = [v for v in suspects.to_pylist() if text.name_problem(v)]
        if bad:
            self.fail(name, self.first(pc.is_in(col, pa.array(bad, col.type))), problem(bad[0]))

    def values(self, name: str, ok, problem) -> list[str]:
        """Check each distinct value of a dictionary column with `ok`; return the values."""
        col = self.batch.column(name)
        values = col.dictionary.to_pylist()
        bad = [i for i, v in enumerate(values) if not ok(v)]
        if bad:
            row = self.first(pc.is_in(col.indices, pa.array(bad, col.indices.type)))
            if row is not None:
                self.fail(name, row, problem(values[col.indices[row].as_py()]))
        return values


def _check_txns(where: str, files: list[Path]) -> set[str]:
    procedures: set[str] = set()
    columns = ["txn_id", "procedure", "batch_id", "base_partition", "partitions", "start_us", "end_us",
               "status", "restarts"]
    for offset, file, batch in _batches(where, "txns", files, columns):
        b = _Batch(where, "txns", offset, file, batch)
        b.no_nulls()
        b.non_negative("start_us", "batch_id", "base_partition", "restarts")
        b.partitions_non_negative()
        start, end = batch.column("start_us"), batch.column("end_us")
        row = b.first(pc.less(end, start))
        if row is not None:
            b.fail("end_us", row, f"negative duration: end_us {end[row].as_py()!r} is before "
                                  f"start_us {start[row].as_py()!r}")
        b.values("status", lambda v: v in ("commit", "abort"),
                 lambda v: f"status {v!r} is not 'commit' or 'abort'")
        used = pc.unique(batch.column("procedure").indices).to_numpy()
        names = b.values("procedure", one_line_name, lambda v: name_problem("procedure", v))
        procedures.update(names[i] for i in used)
    with_work = [f for f in files if "work_us" in _open(where, "txns", f).schema_arrow.names]
    for offset, file, batch in _batches(where, "txns", files, ["work_us"], only=with_work):
        work = pc.cast(batch.column("work_us"), pa.float64())  # null: not told (traces.schema)
        b = _Batch(where, "txns", offset, file, batch)
        row = b.first(pc.or_(pc.less(work, 0), pc.invert(pc.is_finite(work))))
        if row is not None:
            b.fail("work_us", row, f"work_us must be a finite number >= 0, got {work[row].as_py()!r}")
    return procedures


def _key_may_hold_nulls(file: Path) -> bool:
    """True unless every row group's statistics say the key column has no nulls."""
    meta = pq.ParquetFile(file).metadata
    idx = meta.schema.to_arrow_schema().get_field_index("key")
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(idx).statistics
        if stats is None or stats.null_count is None or stats.null_count > 0:
            return True
    return False


def _rows_bound(files: list[Path]) -> int | None:
    """An upper bound of the total `rows` of all accesses: rows x max per row group, from the
    statistics alone (None when a row group has none)."""
    bound = 0
    for file in files:
        meta = pq.ParquetFile(file).metadata
        idx = meta.schema.to_arrow_schema().get_field_index("rows")
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            stats = group.column(idx).statistics
            if stats is None or not stats.has_min_max:
                return None
            bound += group.num_rows * max(int(stats.max), 0)
    return bound


def _check_accesses(where: str, files: list[Path], declared: frozenset[str] = frozenset(),
                    key_type: str = "string") -> set[str]:
    tables: set[str] = set()
    for offset, file, batch in _batches(where, "accesses", files, ["txn_id", "table", "mode", "rows"]):
        b = _Batch(where, "accesses", offset, file, batch)
        b.no_nulls()
        b.non_negative("rows")
        b.values("mode", lambda v: v in ("read", "write"),
                 lambda v: f"mode {v!r} is not 'read' or 'write'")
        names = b.values("table", one_line_name, lambda v: name_problem("table", v))
        tables.update(names[i] for i in pc.unique(batch.column("table").indices).to_numpy())
    # a string key names its hot tuple (TABLE@KEY): held to the name rule here, as the statistics
    # are (a U+202E in a key passed, and the statistics of it were refused after the Spark job)
    wide = files if key_type == "string" else [f for f in files if _key_may_hold_nulls(f)]
    for offset, file, batch in _batches(where, "accesses", files, ["key"], only=wide):
        b = _Batch(where, "accesses", offset, file, batch)
        b.no_nulls()
        if key_type == "string":
            b.printable("key", key_problem)
    check_table_names(where, tables, declared)
    return tables


def check_table_names(where: str, tables, declared: frozenset[str] = frozenset()) -> None:
    """A traced table may not be named as a fragment (`T#3`) or a hot tuple (`T@KEY`) is,
    unless the manifest's `spec_tables` declare it (`manifest_fields.spec_tables`): every later
    step reads such a name as an item of table T, so a foreign trace's `Dim#3` and `Dim@x`
    became one table `Dim` (summed) in the design and the VoltDB DDL, unsaid; the `T#0` tables
    of a spec `advisor tune` split are its own, and read as the spec reads them. A name ending
    in '@' is the hot tuple of an empty key (`T@`): refused alike, as the rule says ("no '@'")."""
    from costmodel.granularity import FRAGMENT_NAME, TUPLE_NAME

    def reads_as_item(t: str) -> bool:
        return bool(FRAGMENT_NAME.match(t) or TUPLE_NAME.match(t) or t.endswith("@"))

    odd = sorted(t for t in tables if reads_as_item(t) and t not in declared)
    if odd:
        raise TraceError(f"{where}: accesses: table name {odd[0]!r} reads as a fragment (T#i) or a hot "
                         f"tuple (T@KEY) of another table{f' (and {len(odd) - 1} more)' if len(odd) > 1 else ''}; "
                         "rename it in the trace (no '@', no '#' and digits at the end), or list it in the "
                         "manifest's spec_tables if the workload declares a table of that name")


def _check_flows(where: str, files: list[Path], procedures: set[str]) -> None:
    columns = ["batch_id", "from_procedure", "to_procedure", "tuples", "bytes"]
    edges: set[tuple[str, str]] = set()
    for offset, file, batch in _batches(where, "flows", files, columns):
        b = _Batch(where, "flows", offset, file, batch)
        b.no_nulls()
        b.non_negative("batch_id", "tuples", "bytes")
        for c in ("from_procedure", "to_procedure"):
            b.values(c, lambda v: v in procedures,
                     lambda v: f"procedure {v!r} never ran (no row in txns)")
        pairs = pa.Table.from_batches([batch.select(["from_procedure", "to_procedure"])]).group_by(
            ["from_procedure", "to_procedure"]).aggregate([])
        edges.update(zip(pairs.column("from_procedure").to_pylist(), pairs.column("to_procedure").to_pylist()))
    check_acyclic_flows(where, edges)


def one_line_name(name) -> bool:
    """A name a workload can hold: not empty, one line, no invisible or control character (the
    spec's rule, `costmodel.text.name_problem`: the rebuilt workload was refused only after the
    Spark job, and a U+202E printed raw made a listing lie)."""
    return bool(name) and not text.name_problem(name)


def name_problem(kind: str, name) -> str:
    """Why `name` cannot be a `kind` name ("procedure", "table"), in the words every route of
    validation uses (on disk and through Spark; a line break was worded twice)."""
    return f"empty {kind} name" if not name else f"{kind} name {name!r} {text.name_problem(name)}"


def key_problem(key: str) -> str:
    """Why an access key cannot be one (an empty key can): it names its hot tuple (TABLE@KEY)."""
    return f"key {key!r} (a hot tuple is named TABLE@KEY) {text.name_problem(key)}"


def check_names(where: str, dataset: str, kind: str, names) -> None:
    """Every name of `names` (a dataset's distinct values, as Spark collects them) is one a
    workload can hold; one TraceError line for the first that is not."""
    bad = sorted(n for n in names if not one_line_name(n))
    if bad:
        raise TraceError(f"{where}: {dataset}: {name_problem(kind, bad[0])}")


def check_acyclic_flows(where: str, edges) -> None:
    """The flows' stream edges form no cycle (an SP feeding itself, a stray row back upstream):
    a dataflow is acyclic, and the statistics of one with a cycle were refused only after the
    Spark job, by every command that read them."""
    from costmodel.workload import dataflow_cycle

    cycle = dataflow_cycle(sorted(edges))
    if cycle is not None:
        raise TraceError(f"{where}: flows: the stream edges form a cycle ({' -> '.join(cycle)}): a dataflow "
                         "has none; a row from an SP back upstream (or to itself) is not a stream")
