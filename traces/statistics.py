"""The workload statistics format: four small Parquet tables and a manifest.

    STATS_DIR/
      _stats.json              {"format": "advisor.stats/1", "granularity": ..., "batches": B, ...}
      procedures.parquet       one row per procedure
      procedure_state.parquet  one row per (procedure, state item) the procedure touched
      streams.parquet          one row per (from procedure, to procedure)
      state.parquet            one row per state item

Counts are totals over the trace; divide by the manifest's `batches` (distinct input batches)
for per-batch figures. Written atomically; read back as pandas DataFrames with
`load_statistics` (pyarrow -> pandas, no Spark needed).
"""
from __future__ import annotations

import html

import hashlib
import json
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from costmodel.files import as_path, discard_dir, publish_dir, reading_whole, staging_dir, writing
from traces.errors import TraceError
from costmodel.granularity import FRAGMENT_HASH
from costmodel.text import name_problem
from traces.manifest_fields import check_manifest_fields  # noqa: F401 - also read from here
from traces.windows import finite_number

STATS_FORMAT = "advisor.stats/1"
STATS_MANIFEST = "_stats.json"
DEFAULT_ROW_BYTES = 100  # when neither the trace manifest nor the table says

PROCEDURES = pa.schema([
    ("procedure", pa.string()),
    ("invocations", pa.int64()),  # transaction executions, aborted ones included
    ("commits", pa.int64()),
    ("aborts", pa.int64()),
    ("abort_rate", pa.float64()),  # aborts / invocations
    ("restarts", pa.int64()),
    ("total_cost_us", pa.int64()),
    ("mean_cost_us", pa.float64()),  # cost = end_us - start_us of one execution
    ("p50_cost_us", pa.float64()),  # the median: what the advisor uses as an SP's cost
    ("p95_cost_us", pa.float64()),  # exact, linear interpolation (as pandas' quantile)
    # the median of the trace's `work_us` over commits: the SP's own work where the trace
    # tells it apart from the system's (null where it does not; absent in older statistics)
    ("p50_work_us", pa.float64()),
    # executions that spanned more than one partition (2PC): where the trace times no work,
    # their durations hold the protocol's waits (null in statistics written before)
    ("distributed", pa.int64()),
])

PROCEDURE_STATE = pa.schema([
    ("procedure", pa.string()),
    ("state", pa.string()),
    ("table", pa.string()),
    ("reads", pa.int64()),  # read access rows of the trace
    ("writes", pa.int64()),
    ("read_rows", pa.int64()),  # sum of `rows` over those accesses
    ("write_rows", pa.int64()),
    ("rows", pa.int64()),
    ("txns", pa.int64()),  # distinct executions of the procedure touching the item
    ("probability", pa.float64()),  # txns / the procedure's invocations
])

STREAMS = pa.schema([
    ("from_procedure", pa.string()),
    ("to_procedure", pa.string()),
    ("flows", pa.int64()),
    ("batches", pa.int64()),  # distinct batch ids with a flow on this edge
    ("tuples", pa.int64()),
    ("bytes", pa.int64()),
])

STATE = pa.schema([
    ("state", pa.string()),
    ("table", pa.string()),
    ("kind", pa.string()),  # table | fragment | tuple | window (whole, private to its owner)
    ("fragment", pa.int64()),  # fragment index, -1 otherwise
    ("key", pa.string()),  # the hot tuple's key, null otherwise
    ("reads", pa.int64()),
    ("writes", pa.int64()),
    ("read_rows", pa.int64()),
    ("write_rows", pa.int64()),
    ("heat", pa.int64()),  # rows accessed, reads plus writes
    ("estimated_bytes", pa.float64()),
])

STATE_KINDS = ("table", "fragment", "tuple", "window")
# the rows each table has one of: a second row of one name makes every reader's lookup ambiguous
UNIQUE = {"procedures": ("procedure",), "procedure_state": ("procedure", "state"),
          "streams": ("from_procedure", "to_procedure"), "state": ("state",)}

NULLABLE = frozenset({"key", "p50_work_us", "distributed"})  # columns where null means "not known"
ADDED_LATER = {"procedures": ("p50_work_us", "distributed")}  # read as null from statistics written before

TABLES: dict[str, pa.Schema] = {
    "procedures": PROCEDURES,
    "procedure_state": PROCEDURE_STATE,
    "streams": STREAMS,
    "state": STATE,
}
# what a row of each table is, as `advisor trace aggregate` counts them
ROW_NAMES = {"procedures": "procedures", "state": "state items", "procedure_state": "procedure-state edges",
             "streams": "stream edges"}


@dataclass
class Statistics:
    """The statistics as pandas DataFrames, with the manifest; what notebooks work with."""

    procedures: pd.DataFrame
    procedure_state: pd.DataFrame
    streams: pd.DataFrame
    state: pd.DataFrame
    manifest: dict = field(default_factory=dict)
    path: Path | None = None

    def frames(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}

    def __repr__(self) -> str:
        """One line, never raising (the dataclass's printed its four DataFrames and the
        manifest's every name: 53 lines at 100 procedures); `frames()` and the notebook's
        tables show the rows."""
        m = self.manifest if isinstance(self.manifest, dict) else {}
        counts = ", ".join(f"{len(getattr(self, name)):,} {said}" for name, said in ROW_NAMES.items()
                           if hasattr(getattr(self, name, None), "__len__"))
        return (f"Statistics({str(m.get('workload', '?'))!r:.80}: {counts}; granularity "
                f"{str(m.get('granularity'))!r:.40}, {m.get('batches')!r:.20} batches)")

    def _repr_html_(self) -> str:
        m = self.manifest
        e = html.escape  # the manifest comes from a trace anyone can write
        head = (f"<b>Workload statistics</b> ({e(str(m.get('granularity')))}, {e(str(m.get('batches')))} "
                f"batches, from {e(str(m.get('source_trace')))})")
        return head + "".join(f"<h4>{name}</h4>" + df.head(20).to_html(index=False)
                              for name, df in self.frames().items())


def write_statistics(stats: Statistics, out: str | Path) -> Path:
    """Write all four tables and the manifest into a staging dir, then rename into place."""
    staged = staging_dir(out, STATS_MANIFEST, "a statistics directory")
    try:
        with writing(out):
            digest = hashlib.sha256()
            for name, schema in TABLES.items():
                table = pa.Table.from_pandas(getattr(stats, name), schema=schema, preserve_index=False)
                pq.write_table(table, staged / f"{name}.parquet")
                digest.update((staged / f"{name}.parquet").read_bytes())
            manifest = {"format": STATS_FORMAT, **stats.manifest, "sha256": digest.hexdigest()}
            (staged / STATS_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            stats.manifest = manifest
            path = publish_dir(staged, out, STATS_MANIFEST, "a statistics directory")
    except BaseException:
        discard_dir(staged)
        raise
    stats.path = path
    return path


def is_statistics_dir(path: str | Path) -> bool:
    return (Path(path) / STATS_MANIFEST).is_file()


def read_stats_manifest(stats_dir: str | Path) -> dict:
    path = Path(stats_dir)
    file = path / STATS_MANIFEST
    if not file.is_file():
        raise TraceError(f"{path}: not a statistics directory ({STATS_MANIFEST} is missing)")
    try:
        manifest = json.loads(file.read_text())
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad UTF-8, JSON or a 4,300-digit int
        raise TraceError(f"{path}: {STATS_MANIFEST}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise TraceError(f"{path}: {STATS_MANIFEST}: must be a JSON object")
    fmt = manifest.get("format")
    if fmt is None:
        raise TraceError(f"{path}: {STATS_MANIFEST}: no \"format\" (a statistics manifest says "
                         f"\"format\": \"{STATS_FORMAT}\")")
    if fmt != STATS_FORMAT:
        raise TraceError(f"{path}: {STATS_MANIFEST}: format {fmt!r} is not supported "
                         f"(this version reads {STATS_FORMAT!r})")
    return manifest


def read_statistics_arrow(stats_dir: str | Path) -> tuple[dict[str, pa.Table], dict]:
    """The four tables as Arrow (for building the graph without pandas) and the manifest."""
    path = as_path(stats_dir, TraceError)  # (None or 5 from Python: one line, not pathlib's TypeError)
    with reading_whole(path):  # (one version whole, not one being published over: `reading_whole`)
        return _read_statistics_arrow(path)


def _read_statistics_arrow(path: Path) -> tuple[dict[str, pa.Table], dict]:
    manifest = read_stats_manifest(path)
    tables = {}
    # `sha256` names what was read, as `write_statistics` names what it wrote: a table edited
    # since (the manifest kept) had the old digest, so a report took a design `recommend` picked
    # from the old figures for the search's pick on the new ones and did not search again
    digest = hashlib.sha256()
    for name, schema in TABLES.items():
        file = path / f"{name}.parquet"
        try:
            _digest_file(digest, file)
            table = pq.read_table(file.absolute())  # (a relative `run:2/x.parquet` is a URI to Arrow)
        except FileNotFoundError:
            raise TraceError(f"{path}: {name}.parquet is missing") from None
        except (pa.ArrowException, OSError) as exc:
            raise TraceError(f"{path}: {name}.parquet: not a readable Parquet file ({exc})") from None
        for name_ in ADDED_LATER.get(name, ()):
            if name_ not in table.column_names:
                table = table.append_column(schema.field(name_), pa.nulls(table.num_rows, schema.field(name_).type))
        missing = [f.name for f in schema if f.name not in table.column_names]
        if missing:
            raise TraceError(f"{path}: {name}.parquet: column {missing[0]!r} is missing")
        try:
            tables[name] = table.select(schema.names).cast(schema)
        except (pa.ArrowException, ValueError) as exc:
            raise TraceError(f"{path}: {name}.parquet: unexpected column types ({exc})") from None
        if name == "procedures":  # after the cast: a string or list column reached max() raw (internal error)
            tables[name] = _untimed_work_as_null(tables[name])
    check_statistics(tables, manifest, path)
    return tables, {**manifest, "sha256": digest.hexdigest()}


def _digest_file(digest, file: Path) -> None:
    """Feed a regular file's bytes to `digest` in chunks; anything else is one line. Why: a
    statistics table is one file `write_statistics` wrote, and the Parquet reader said a link
    to /dev/zero or a pipe "is missing" and read a folder as an empty dataset ("column 'state'
    is missing")."""
    if not stat.S_ISREG(file.stat().st_mode):
        raise TraceError(f"{file.parent}: {file.name} is not a regular file (a folder, device or pipe): "
                         "statistics are the files `advisor trace aggregate` writes")
    with file.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)


def _untimed_work_as_null(procs: pa.Table) -> pa.Table:
    """`p50_work_us` that is zero (or null) for every procedure says nothing was timed (a
    writer that filled the column without measuring): read as null, as if it were absent."""
    work = procs.column("p50_work_us")
    # only zeros: all negative or NaN took `max() > 0` as untimed and was dropped, not refused
    if work.null_count == len(work) or not pc.all(pc.equal(work, 0.0)).as_py():
        return procs
    i = procs.schema.get_field_index("p50_work_us")
    return procs.set_column(i, procs.schema.field(i), pa.nulls(procs.num_rows, pa.float64()))


FRACTIONS = {("procedures", "abort_rate"), ("procedure_state", "probability")}  # shares: 0 to 1


def check_statistics(tables: dict[str, pa.Table], manifest: dict, path: Path) -> None:
    """What every reader relies on: `batches` a number > 0 and at most the invocations, every
    count and size a finite number >= 0, no missing names, one row per name, the format's state
    kinds. One TraceError line naming the file, column and row."""
    batches = manifest.get("batches")
    if not finite_number(batches) or batches <= 0:
        raise TraceError(f"{path}: {STATS_MANIFEST}: 'batches' must be a number > 0, got {batches!r}")
    check_manifest_fields(manifest, f"{path}: {STATS_MANIFEST}")
    _check_own_fields(manifest, f"{path}: {STATS_MANIFEST}")
    for name, table in tables.items():
        for field_ in table.schema:
            column = table.column(field_.name)
            if column.null_count and field_.name not in NULLABLE:
                row = int(pc.index(pc.is_null(column), True).as_py())
                raise TraceError(f"{path}: {name}.parquet: column {field_.name!r}, row {row}: missing value")
            if not (pa.types.is_integer(field_.type) or pa.types.is_floating(field_.type)) \
                    or field_.name == "fragment":
                continue
            values = column.to_numpy(zero_copy_only=False).astype(np.float64)
            known = ~pc.is_null(column).to_numpy(zero_copy_only=False)
            bad = known & (~np.isfinite(values) | (values < 0))
            if bad.any():
                row = int(np.argmax(bad))
                raise TraceError(f"{path}: {name}.parquet: column {field_.name!r}, row {row}: must be a "
                                 f"finite number >= 0, got {values[row]:g}")
            over = known & (values > 1) if (name, field_.name) in FRACTIONS else None
            if over is not None and over.any():
                row = int(np.argmax(over))
                raise TraceError(f"{path}: {name}.parquet: column {field_.name!r}, row {row}: a share, "
                                 f"must be from 0 to 1, got {values[row]:g}")
    _check_rows(tables, path)
    _check_names(tables, path)
    invocations = pc.sum(tables["procedures"].column("invocations")).as_py() or 0
    if batches > invocations and tables["procedures"].num_rows:  # none: the workload's reader says so
        raise TraceError(f"{path}: {STATS_MANIFEST}: 'batches' must be at most the {invocations:,} "
                         f"invocations of procedures.parquet (a batch runs at least one), got {batches!r}")


def _check_rows(tables: dict[str, pa.Table], path: Path) -> None:
    """One row per procedure, per (procedure, state item), per stream edge and per state item,
    and a state kind of the format's: what the spec reader asks of names and kinds."""
    for name, columns in UNIQUE.items():
        keys = tables[name].select(list(columns))
        if keys.num_rows == keys.group_by(list(columns)).aggregate([]).num_rows:
            continue
        seen: set[tuple] = set()
        for row, key in enumerate(zip(*(keys.column(c).to_pylist() for c in columns))):
            if key in seen:
                shown = ", ".join(f"{c} {v!r}" for c, v in zip(columns, key))
                raise TraceError(f"{path}: {name}.parquet: row {row}: a second row for {shown}")
            seen.add(key)
    kind = tables["state"].column("kind")
    bad = pc.invert(pc.is_in(kind, pa.array(STATE_KINDS)))
    if pc.any(bad).as_py():
        row = int(pc.index(bad, True).as_py())
        raise TraceError(f"{path}: state.parquet: column 'kind', row {row}: must be one of "
                         f"{', '.join(map(repr, STATE_KINDS))}, got {kind[row].as_py()!r}")


# the columns that hold names: what the workload rebuilt from the statistics calls its SPs and state
NAME_COLUMNS = {"procedures": ("procedure",), "procedure_state": ("procedure", "state", "table"),
                "streams": ("from_procedure", "to_procedure"), "state": ("state", "table")}


def _check_names(tables: dict[str, pa.Table], path: Path) -> None:
    """Each name is one a spec could hold (`costmodel.text.name_problem`): a U+202E printed raw
    made a listing lie; each distinct value is checked once."""
    for name, columns in NAME_COLUMNS.items():
        for column_name in columns:
            column = tables[name].column(column_name)
            bad = next((v for v in pc.unique(column).to_pylist() if v is not None and name_problem(v)), None)
            if bad is not None:
                row = int(pc.index(column, bad).as_py())
                raise TraceError(f"{path}: {name}.parquet: column {column_name!r}, row {row}: name {bad!r} "
                                 f"{name_problem(bad)}")


# the fields the aggregation itself writes (beside the trace manifest's, checked above)
STATS_COUNTS = ("txns", "access_rows", "flow_rows", "unmatched_access_rows", "fragments", "hot_tuples",
                "default_row_bytes")
STATS_CHOICES = {"kind": ("table", "fragment", "tuple"), "key_type": ("string", "int64"),
                 "hash": (FRAGMENT_HASH,)}
STATS_TEXTS = ("granularity", "trace_format", "workload", "workload_sha256", "sha256",
               "source_trace", "spark_master", "created_by")


def _check_own_fields(manifest: dict, where: str) -> None:
    """Counts are integers >= 0, choices one of theirs, texts strings (absent or null is fine)."""
    def fail(name: str, must: str) -> TraceError:
        return TraceError(f"{where}: {name!r} must be {must}, got {manifest[name]!r}")

    for name in STATS_COUNTS:
        value = manifest.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise fail(name, "an integer >= 0")
    for name, choices in STATS_CHOICES.items():
        if manifest.get(name) is not None and manifest[name] not in choices:
            raise fail(name, " or ".join(repr(c) for c in choices))
    for name in STATS_TEXTS:
        if manifest.get(name) is not None and not isinstance(manifest[name], str):
            raise fail(name, "a string")
    seconds = manifest.get("seconds")
    if seconds is not None and (not finite_number(seconds) or seconds < 0):
        raise fail("seconds", "a number >= 0")


def load_statistics(stats_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The statistics as pandas DataFrames: procedures, procedure_state, streams, state.

    For notebooks; the manifest is in each frame's `.attrs["manifest"]`.
    """
    tables, manifest = read_statistics_arrow(stats_dir)
    frames = {}
    for name, table in tables.items():
        df = table.to_pandas()
        df.attrs["manifest"] = manifest
        frames[name] = df
    return frames


def load_statistics_object(stats_dir: str | Path) -> Statistics:
    tables, manifest = read_statistics_arrow(stats_dir)
    return Statistics(**{n: t.to_pandas() for n, t in tables.items()}, manifest=manifest,
                      path=Path(stats_dir))
