"""Check a trace that Spark reads in place (`hdfs://`, `s3a://`, `viewfs://`... any filesystem
the Spark session knows) against the format, before the aggregation job reads it.

A local trace is checked with Arrow before Spark starts (`traces.trace_checks`); a trace
elsewhere can only be reached through Spark's own filesystems, so the same checks run there:
the manifest and the file listing through Hadoop's FileSystem API on the driver, the schema
from the Parquet footers, and the data checks (nulls, negative counts, unknown values,
procedures a flow names that never ran) as one aggregation per dataset. A check fails in one
line naming the dataset, the column, how many rows and the first file holding one. What
Spark itself cannot read (a scheme it has no filesystem for, a path that does not exist, no
permission) is one line with Spark's reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from costmodel.text import HIDDEN_CATEGORIES
from traces.errors import TraceError
from traces.manifest_fields import spec_tables
from traces.schema import DATASETS, MANIFEST, full_schema
from traces.trace_checks import (TraceInfo, check_acyclic_flows, check_names, check_schema, check_table_names,
                                 hidden_part, key_problem, missing_manifest, name_problem, parse_manifest,
                                 spark_paths)
from traces.trace_integrity import MAX_UNMATCHED_FRACTION, unmatched_flows_message, unmatched_message
from traces.windows import manifest_windows

MAX_REASON_CHARS = 300
# a character the name rule refuses (`costmodel.text.hidden_character`: its Unicode categories), as
# a Java regex for Spark's `rlike`; the value found is worded by the same helpers as on disk
HIDDEN = "[" + "".join(f"\\p{{{c}}}" for c in sorted(HIDDEN_CATEGORIES)) + "]"


def spark_reason(exc: BaseException) -> str:
    """The reason Spark (or the JVM under it) gives, as one short line: the innermost
    distinct messages of the Java cause chain, without stack traces."""
    java = getattr(exc, "java_exception", None)
    messages: list[str] = []
    while java is not None and len(messages) < 8:
        message = java.getMessage()
        text = str(message) if message is not None else str(java.getClass().getSimpleName())
        first = text.strip().splitlines()[0] if text.strip() else text
        if first and first not in messages:
            messages.append(first)
        java = java.getCause()
    messages = [m for m in messages if not any(m != other and m in other for other in messages)]
    if not messages:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        messages = lines[:1] or [type(exc).__name__]
    return "; ".join(messages[-2:])[:MAX_REASON_CHARS]


class _HadoopDir:
    """A directory on one of the session's Hadoop filesystems, through the JVM."""

    def __init__(self, spark, location: str):
        jvm = spark._jvm
        self._jvm = jvm
        self.location = location.rstrip("/")
        self.path = jvm.org.apache.hadoop.fs.Path(self.location)
        self.fs = self.path.getFileSystem(spark._jsc.hadoopConfiguration())

    def child(self, name: str):
        return self._jvm.org.apache.hadoop.fs.Path(self.path, name)

    def kind(self, path=None) -> str | None:
        """'dir', 'file' or None (absent)."""
        path = self.path if path is None else path
        if not self.fs.exists(path):
            return None
        return "dir" if self.fs.getFileStatus(path).isDirectory() else "file"

    def read_text(self, path) -> str:
        stream = self.fs.open(path)
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def parquet_files(self, path) -> list[str]:
        """The Parquet files under `path`, in name order; hidden and _ files skipped, as the
        local listing does."""
        found = []
        root = str(self.fs.makeQualified(path).toString()).rstrip("/") + "/"
        entries = self.fs.listFiles(path, True)
        while entries.hasNext():
            entry = entries.next()
            name = str(entry.getPath().getName())
            full = str(entry.getPath().toString())
            if (entry.isFile() and name.endswith(".parquet")
                    and not hidden_part(full.removeprefix(root))):
                found.append(full)
        return sorted(found)


@dataclass(frozen=True)
class _Check:
    """One data check: rows where `bad` holds fail with `problem` (shown with one bad value), or
    with `words(value)` of one bad value where given (a name's, as the checks on disk word it)."""

    column: str
    problem: str
    bad: object  # a pyspark Column
    words: Callable[[str], str] | None = None


def validate_with_spark(location: str, spark) -> TraceInfo:
    """Raise TraceError on the first problem; return a summary of a good trace."""
    where = location.rstrip("/")
    try:
        return _validate(where, spark)
    except TraceError:
        raise
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # Py4JJavaError, AnalysisException...: Spark's reason, one line
        raise TraceError(f"{where}: Spark cannot read this trace: {spark_reason(exc)}") from None


def _validate(where: str, spark) -> TraceInfo:
    root = _HadoopDir(spark, where)
    kind = root.kind()
    if kind is None:
        raise TraceError(f"{where}: no such trace directory")
    if kind != "dir":
        raise TraceError(f"{where}: not a directory (a trace is a directory of Parquet datasets)")
    manifest_path = root.child(MANIFEST)
    if root.kind(manifest_path) != "file":
        raise TraceError(missing_manifest(where))
    manifest = parse_manifest(root.read_text(manifest_path), where)
    windows = manifest_windows(manifest, f"{where}: {MANIFEST}")
    files: dict[str, list[str]] = {}
    for name in DATASETS:
        folder = root.child(name)
        files[name] = root.parquet_files(folder) if root.kind(folder) == "dir" else []
        if not files[name]:
            detail = "no Parquet files in it" if root.kind(folder) == "dir" else "directory missing"
            raise TraceError(f"{where}: dataset {name!r} is missing ({name}/: {detail})")
    key_type = "string"
    for name, expected in DATASETS.items():
        found = check_schema(where, name, _footer_schema(spark, files[name]),
                             files[name][0].rsplit("/", 1)[-1], expected)
        if found is not None:
            key_type = found
    txns = _read(spark, files["txns"], "txns", key_type)
    accesses = _read(spark, files["accesses"], "accesses", key_type)
    flows = _read(spark, files["flows"], "flows", key_type)
    from pyspark.sql import functions as F

    def non_negative(*names: str) -> list[_Check]:
        return [_Check(n, "negative value", F.col(n) < 0) for n in names]

    def nulls(dataset: str) -> list[_Check]:
        return [_Check(n, "null value", F.col(n).isNull()) for n in DATASETS[dataset].names]

    def name_check(kind: str) -> _Check:
        """An empty name, or one holding a character the name rule refuses (a line break too)."""
        return _Check(kind, f"a {kind} name the name rule refuses",
                      (F.col(kind) == "") | F.col(kind).rlike(HIDDEN), lambda v: name_problem(kind, v))

    txn_rows, procedures = _run_checks(where, "txns", txns, nulls("txns") + non_negative(
        "start_us", "batch_id", "base_partition", "restarts") + [
        _Check("end_us", "end_us before start_us (negative duration)", F.col("end_us") < F.col("start_us")),
        _Check("status", "status is not 'commit' or 'abort'", ~F.col("status").isin("commit", "abort")),
        name_check("procedure"),
        _Check("work_us", "work_us must be a finite number >= 0",
               (F.col("work_us") < 0) | F.isnan("work_us") | (F.col("work_us") == float("inf")))],
        collect="procedure")
    if txn_rows == 0:
        raise TraceError(f"{where}: txns: empty trace (no transaction rows)")
    # the rule in Python on the names collected too (Java's Unicode tables may be older than Python's)
    check_names(where, "txns", "procedure", procedures)
    # a string key names its hot tuple (TABLE@KEY): held to the name rule, as on disk
    key_checks = ([_Check("key", "a key the name rule refuses", F.col("key").rlike(HIDDEN), key_problem)]
                  if key_type == "string" else [])
    access_rows, tables = _run_checks(where, "accesses", accesses, nulls("accesses") + non_negative("rows") + [
        _Check("mode", "mode is not 'read' or 'write'", ~F.col("mode").isin("read", "write")),
        name_check("table")] + key_checks, collect="table")
    check_names(where, "accesses", "table", tables)
    check_table_names(where, tables, spec_tables(manifest))
    known = sorted(procedures)
    flow_checks = nulls("flows") + non_negative("batch_id", "tuples", "bytes") + [
        _Check(c, "a procedure that never ran (no row in txns)", ~F.col(c).isin(*known))
        for c in ("from_procedure", "to_procedure")]
    flow_rows, _ = _run_checks(where, "flows", flows, flow_checks)
    check_acyclic_flows(where, {(r[0], r[1]) for r in flows.select("from_procedure", "to_procedure").distinct().collect()})
    _check_integrity(where, txns, accesses, access_rows, flows, flow_rows)
    rows_bound = accesses.agg(F.sum("rows")).first()[0]
    rows = {"txns": txn_rows, "accesses": access_rows, "flows": flow_rows}
    return TraceInfo(where, manifest, files, rows, key_type, known, sorted(tables),
                     int(rows_bound or 0), windows)


def _check_integrity(where: str, txns, accesses, access_rows: int, flows, flow_rows: int) -> None:
    """The referential checks of `traces.trace_integrity`, as two Spark jobs."""
    from pyspark.sql import functions as F

    per_txn = txns.groupBy("txn_id").agg(
        F.count(F.lit(1)).alias("rows"), F.countDistinct("procedure").alias("procedures"),
        F.min("batch_id").alias("low"), F.max("batch_id").alias("high"),
        F.first("procedure").alias("procedure"))
    bad = per_txn.filter((F.col("rows") > F.col("procedures")) | (F.col("low") != F.col("high")))
    found = bad.orderBy("txn_id").limit(1).collect()
    if found:
        t = found[0]
        problem = (f"transaction {t['txn_id']} has {t['rows']} rows for {t['procedures']} procedure(s)"
                   if t["rows"] > t["procedures"] else
                   f"transaction {t['txn_id']} is in batch {t['low']} and in batch {t['high']}")
        raise TraceError(f"{where}: txns: column 'txn_id': {problem}; a txn_id names one execution")
    refs = accesses.select("txn_id", F.col("_metadata.file_path").alias("file"))
    orphans = refs.join(txns.select("txn_id").distinct(), "txn_id", "left_anti")
    found = orphans.agg(F.count(F.lit(1)).alias("n"), F.min("txn_id").alias("txn"),
                        F.min("file").alias("file")).first()
    if found["n"] > MAX_UNMATCHED_FRACTION * access_rows:
        raise TraceError(unmatched_message(where, found["n"], access_rows, None,
                                           str(found["file"]).rsplit("/", 1)[-1], found["txn"]))
    stray = (flows.select("batch_id", F.col("_metadata.file_path").alias("file"))
             .join(txns.select("batch_id").distinct(), "batch_id", "left_anti"))
    found = stray.agg(F.count(F.lit(1)).alias("n"), F.min("batch_id").alias("batch"),
                      F.min("file").alias("file")).first()
    if found["n"] > MAX_UNMATCHED_FRACTION * flow_rows:
        raise TraceError(unmatched_flows_message(where, found["n"], flow_rows, None,
                                                 str(found["file"]).rsplit("/", 1)[-1], found["batch"]))


def _footer_schema(spark, files: list[str]) -> pa.Schema:
    """The dataset's schema as its Parquet footers declare it (first file)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark.read.parquet(*spark_paths(files[:1])).schema)


def _read(spark, files: list[str], dataset: str, key_type: str):
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = full_schema(dataset)  # an optional column a file lacks reads as null
    if dataset == "accesses" and key_type == "int64":
        schema = schema.set(schema.get_field_index("key"), pa.field("key", pa.int64()))
    return spark.read.schema(from_arrow_schema(schema)).parquet(*spark_paths(files))


def _run_checks(where: str, dataset: str, frame, checks: list[_Check],
                collect: str | None = None) -> tuple[int, set[str]]:
    """One aggregation: the row count, and per check how many rows fail, one failing value
    and the first file holding one. The first failing check is raised."""
    from pyspark.sql import functions as F

    file = F.col("_metadata.file_path")
    aggs = [F.count(F.lit(1)).alias("rows")]
    for i, c in enumerate(checks):
        aggs += [F.sum(c.bad.cast("long")).alias(f"n{i}"),
                 F.min(F.when(c.bad, file)).alias(f"f{i}"),
                 F.first(F.when(c.bad, F.col(c.column).cast("string")), ignorenulls=True).alias(f"v{i}")]
    if collect is not None:
        aggs.append(F.collect_set(collect).alias("names"))
    row = frame.agg(*aggs).first()
    for i, c in enumerate(checks):
        failing = row[f"n{i}"] or 0
        if failing:
            if c.words is not None:
                problem = c.words(row[f"v{i}"])
            else:
                problem = c.problem + ("" if c.problem == "null value" else f" (e.g. {row[f'v{i}']!r})")
            first_file = str(row[f"f{i}"]).rsplit("/", 1)[-1]
            raise TraceError(f"{where}: {dataset}: column {c.column!r}: {problem} in "
                             f"{failing:,} rows (first in {first_file})")
    names = set(row["names"]) if collect is not None else set()
    return int(row["rows"]), names
