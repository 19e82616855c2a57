"""The aggregation job: a trace directory in, workload statistics out (PySpark DataFrame API).

No Python UDFs: every per-row computation (state item codes, fragment hashing with crc32,
durations) is a Spark SQL expression, so the same job runs in local mode and on any cluster.

The hot path is the pass over `accesses`. State items and procedures travel through it as
small integer codes (table code x fragments + fragment, hot tuples after them; the names are
known from validation), so the per-(transaction, item) aggregation that the exact access
probability needs hashes fixed-width keys only. The four result sets are independent Spark
jobs, submitted together from a thread pool so the small ones fill the cores the big one
leaves idle. The results are small and come back through Arrow; `traces.finish` completes
them on the driver and they are written atomically.
"""
from __future__ import annotations

import contextlib
import sys
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from costmodel.errors import interrupt_behind
from costmodel.files import check_writable
from traces.errors import TraceError
from traces.finish import finish_statistics, tables_info
from costmodel.granularity import fragment_name, tuple_name
from traces.granularity import DEFAULT_HOT_TUPLES, Granularity, parse_granularity
from traces.progress import Progress, StageWatcher, stderr_line
from traces.schema import full_schema
from traces.statistics import STATS_MANIFEST, Statistics, write_statistics
from traces.spark_session import SMALL_JOB_ROWS, small_job_conf
from traces.spark_trace_checks import validate_with_spark
from traces.trace_checks import TraceInfo, is_local_trace, local_trace_path, validate_trace

# Below this bound on all rows of a trace, per-transaction sums are packed two to a long.
PACK_LIMIT = 1 << 31


BROADCAST_OWNERS_MAX = 5_000_000  # transactions; above this the join shuffles instead


def aggregate(trace_dir: str | Path, out: str | Path | None = None,
              granularity: str | Granularity = "table", hot_tuples: int = DEFAULT_HOT_TUPLES,
              *, spark=None, master: str | None = None, conf: dict[str, str] | None = None,
              progress: Callable[[str], None] | None = stderr_line) -> Statistics:
    """Aggregate a trace into statistics; write them to `out` (atomically) if given.

    `spark`: a session to use (kept running); otherwise the active one, otherwise a new one
    on `master` (default local[*]) with `conf`, stopped at the end.
    """
    if isinstance(granularity, Granularity):  # made by hand, it is held to the option's bounds
        granularity, hot_tuples = granularity.label, granularity.hot_tuples
    gran = parse_granularity(granularity, hot_tuples)
    if out is not None:
        # before Spark starts, not after its job
        # a file:// trace is the folder it names: given as the URI, an output inside it was
        # not seen as inside the input and was written into the trace
        inputs = (local_trace_path(trace_dir),) if is_local_trace(trace_dir) else ()
        check_writable(Path(out).absolute(), STATS_MANIFEST, "a statistics directory", inputs=inputs)
    steps = 8 + (gran.kind == "tuple") + (out is not None)
    prog = Progress(steps, progress)
    local = is_local_trace(trace_dir)
    if local:  # checked with Arrow before Spark starts
        with prog.step(f"validating trace {trace_dir}"):
            info = validate_trace(trace_dir)
        _say_trace(prog, info, gran)
    if local and sum(info.rows.values()) <= SMALL_JOB_ROWS:  # a JVM started for it starts lighter
        conf = small_job_conf(conf)
    with prog.step("Spark session"):
        spark, own_session = _session(spark, master, conf, prog)
    try:
        if not local:  # elsewhere, Spark reads it in place and checks it first
            with prog.step(f"validating trace {trace_dir} in place, with Spark"):
                info = validate_with_spark(str(trace_dir), spark)
            _say_trace(prog, info, gran)
        with StageWatcher(spark, prog):
            parts = _run(spark, info, gran, prog)
        master_used = spark.sparkContext.master
    finally:
        if own_session:
            _stop(spark)
    stats = finish_statistics(parts, info, gran)
    stats.manifest["spark_master"] = master_used
    stats.manifest["seconds"] = round(prog.elapsed(), 3)
    if out is not None:
        with prog.step(f"writing statistics to {out}"):
            write_statistics(stats, out)
    return stats


def check_trace(trace_dir: str | Path, *, spark=None, master: str | None = None,
                conf: dict[str, str] | None = None,
                progress: Callable[[str], None] | None = None) -> TraceInfo:
    """Validate a trace wherever it is: a local one with Arrow (no Spark), one elsewhere with
    Spark (the given, the running, or a new session on `master` with `conf`)."""
    if is_local_trace(trace_dir):
        return validate_trace(trace_dir)
    prog = Progress(1, progress)
    spark, own_session = _session(spark, master, conf, prog)
    try:
        return validate_with_spark(str(trace_dir), spark)
    finally:
        if own_session:
            _stop(spark)


def _say_trace(prog: Progress, info: TraceInfo, gran: Granularity) -> None:
    prog.line(f"trace: {info.rows['txns']:,} txns, {info.rows['accesses']:,} access rows, "
              f"{info.rows['flows']:,} flows; granularity {gran.label}")


def _session(spark, master: str | None, conf: dict[str, str] | None, prog: Progress):
    """(the session to use, whether this job started it and must stop it)."""
    if spark is not None:
        return spark, False
    from traces.spark_session import active_session

    spark = active_session()
    if spark is not None:
        prog.line(f"reusing the running Spark session (master {spark.sparkContext.master})")
        return spark, False
    from traces.java import check_java
    from traces.spark_session import DEFAULT_MASTER, start_session

    prog.line(check_java())
    spark = start_session(DEFAULT_MASTER if master is None else master, conf)
    prog.line(f"Spark {spark.version} on {spark.sparkContext.master}")
    return spark, True


def _stop(spark) -> None:
    """Stop a session this job started. Called from a `finally`: when the job is already failing
    (say, its JVM died), an error of the stop itself (ConnectionRefusedError) is dropped so that
    the job's own one-line error is the one the user sees."""
    failing = sys.exc_info()[1] is not None
    try:
        with warnings.catch_warnings():
            # PySpark's "Unable to cleanly shutdown Spark JVM process" (a call into the JVM
            # failed, as one does after a Ctrl-C in the middle of one): the JVM is killed next
            warnings.simplefilter("ignore", RuntimeWarning)
            spark.stop()
    except Exception:  # noqa: BLE001 - only while another error propagates
        if not failing:
            raise


def check_options(granularity: str, hot_tuples: int | None) -> Granularity:
    """Parse the CLI options early (before validation and Spark), one-line errors. `hot_tuples`
    None: not given (the default for tuple granularity); given with another granularity it is
    refused, as it would change nothing (it was ignored without a word)."""
    if hot_tuples is None:
        return parse_granularity(granularity)
    if hot_tuples < 0:
        raise TraceError(f"--hot-tuples must be >= 0, got {hot_tuples}")
    gran = parse_granularity(granularity, hot_tuples)
    if gran.kind != "tuple":
        raise TraceError(f"--hot-tuples applies to --granularity tuple[:N] only, not {granularity!r} "
                         "(it would change nothing)")
    return gran


# -- the Spark jobs ---------------------------------------------------------------------------------

def _run(spark, info: TraceInfo, gran: Granularity, prog: Progress) -> dict[str, pa.Table]:
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    def read(dataset: str):
        schema = full_schema(dataset)  # an optional column a file lacks reads as null
        if dataset == "accesses" and info.key_type == "int64":
            schema = schema.set(schema.get_field_index("key"), pa.field("key", pa.int64()))
        # the schema is known (validated), so Spark need not run a job to infer it
        return spark.read.schema(from_arrow_schema(schema)).parquet(
            *info.locations(dataset))

    try:  # Spark lists the files here: one removed since validation is "Path does not exist"
        txns, flows, accesses = read("txns"), read("flows"), read("accesses")
    except Exception as exc:  # noqa: BLE001 - becomes one line
        raise _as_trace_error(exc, info) from None
    if info.key_type != "string":
        accesses = accesses.withColumn("key", F.col("key").cast("string"))
    # windows are state items of their own, whole at every granularity (codes 0..W-1)
    windows = list(info.windows)
    tables = [t for t in info.tables if t not in info.windows]
    procs = info.procedures
    table_code = F.array_position(F.array(*[F.lit(t) for t in tables]), F.col("table")) - 1
    window_code = (F.array_position(F.array(*[F.lit(w) for w in windows]), F.col("table")) - 1
                   if windows else None)
    proc_code = F.array_position(F.array(*[F.lit(p) for p in procs]), F.col("procedure")) - 1
    parts: dict[str, pa.Table] = {}

    group = f"advisor-aggregate-{uuid.uuid4().hex[:12]}"  # cancel only our own jobs

    def guarded(label: str, job: Callable[[], pa.Table]) -> Callable[[], pa.Table]:
        def run() -> pa.Table:
            sc = spark.sparkContext
            sc.setJobGroup(group, label)
            try:
                with prog.step(label):
                    return job()
            finally:  # the group is a thread-local property: do not leave it behind
                sc.setLocalProperty("spark.jobGroup.id", None)
                sc.setLocalProperty("spark.job.description", None)
        return run

    jobs = {name: guarded(label, job) for name, (label, job) in _small_jobs(F, txns, flows).items()}

    base = accesses
    if gran.kind == "tuple":
        try:
            parts["hot"] = guarded(f"the {gran.hot_tuples} hottest tuples",
                                   lambda: _hot_tuples(F, accesses.filter(
                                       ~F.col("table").isin(windows)) if windows else accesses,
                                       gran.hot_tuples))()
        except Exception as exc:  # noqa: BLE001 - becomes one line
            raise _as_trace_error(exc, info) from None
        if parts["hot"].num_rows:
            hot = parts["hot"].select(["table", "key"]).append_column(
                "hot_index", pa.array(np.arange(parts["hot"].num_rows, dtype=np.int32)))
            base = accesses.join(F.broadcast(spark.createDataFrame(hot.to_pandas())),
                                 ["table", "key"], "left")
    item = _item_code(F, gran, table_code, len(tables)) + F.lit(len(windows))
    if windows:
        item = F.when(window_code >= 0, window_code).otherwise(item)
    with_item = base.withColumn("item", item.cast("int"))

    owners = txns.select("txn_id", proc_code.cast("int").alias("proc"))
    if info.rows["txns"] <= BROADCAST_OWNERS_MAX:
        # one small row per transaction: shipping it to every task saves re-shuffling the
        # per-(transaction, item) sums by transaction (about 12% of the job on tpcdi-trade)
        owners = F.broadcast(owners)
    per_txn, totals = _per_transaction(F, with_item, packed=(
        info.rows_bound is not None and max(info.rows_bound, info.rows["accesses"]) < PACK_LIMIT))
    jobs["procedure_state"] = guarded(
        "procedure x state item (reads, writes, rows, access probability)",
        lambda: per_txn.join(owners, "txn_id", "left").groupBy("proc", "item").agg(
            *totals, F.count(F.lit(1)).alias("txns")).toArrow())

    known = tables_info(info.manifest)
    unsized = [t for t in tables if known.get(t, {}).get("rows") is None]
    label = "distinct keys of tables the trace manifest does not size"
    if unsized:
        jobs["distinct_keys"] = guarded(f"{label} ({', '.join(unsized)})", lambda: (
            with_item.filter(F.col("table").isin(unsized)).select("item", "key").distinct()
            .groupBy("item").agg(F.count(F.lit(1)).alias("distinct_keys")).toArrow()))
    else:
        prog.done += 1
        prog.line(f"[{prog.done}/{prog.total}] {label}: none")

    label = "nested groups (procedures sharing a transaction id)"
    if not info.manifest.get("nested"):
        jobs["shared"] = guarded(label, lambda: _shared_transactions(F, txns))
    else:
        prog.done += 1
        prog.line(f"[{prog.done}/{prog.total}] {label}: given by the trace manifest")

    # the big job first, so its tasks queue ahead; the small ones fill the idle cores
    order = ["procedure_state", "procedures", "batches", "streams", "distinct_keys", "shared"]
    with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="aggregate") as pool:
        futures = {name: pool.submit(jobs[name]) for name in order if name in jobs}
        try:
            for name, future in futures.items():
                parts[name] = future.result()
        except BaseException as exc:
            with contextlib.suppress(Exception):  # a JVM that died with the job cancels nothing
                spark.sparkContext.cancelJobGroup(group)
            raise _as_trace_error(exc, info) from None
    return _decode(parts, gran, tables, procs, windows)


def _small_jobs(F, txns, flows) -> dict[str, tuple[str, Callable[[], pa.Table]]]:
    """The jobs over txns and flows: name -> (progress label, job)."""
    duration = F.col("end_us") - F.col("start_us")

    def count_if(condition):
        return F.sum(F.when(condition, 1).otherwise(0)).cast("long")

    return {
        "procedures": ("per-procedure statistics (invocations, cost, aborts)", lambda: (
            txns.groupBy("procedure").agg(
                F.count(F.lit(1)).alias("invocations"),
                count_if(F.col("status") == "commit").alias("commits"),
                count_if(F.col("status") == "abort").alias("aborts"),
                F.sum("restarts").cast("long").alias("restarts"),
                F.sum(duration).cast("long").alias("total_cost_us"),
                F.avg(duration).alias("mean_cost_us"),
                F.percentile(duration, 0.5).alias("p50_cost_us"),
                F.percentile(duration, 0.95).alias("p95_cost_us"),
                # the SP's own work where the trace tells it (null where it never does)
                F.percentile(F.when(F.col("status") == "commit", F.col("work_us")), 0.5).alias("p50_work_us"),
                count_if(F.size("partitions") > 1).alias("distributed"),
            ).toArrow())),
        "batches": ("distinct input batches", lambda: txns.agg(
            F.countDistinct("batch_id").alias("batches")).toArrow()),
        "streams": ("stream edges (batches, tuples, bytes)", lambda: (
            flows.groupBy("from_procedure", "to_procedure").agg(
                F.count(F.lit(1)).alias("flows"),
                F.countDistinct("batch_id").alias("batches"),
                F.sum("tuples").cast("long").alias("tuples"),
                F.sum("bytes").cast("long").alias("bytes"),
            ).toArrow())),
    }


def _shared_transactions(F, txns) -> pa.Table:
    """The sets of procedures that ran under one transaction id (a nested transaction whose
    members a foreign system logs under the id of the transaction they commit in), with how
    many transactions each set shared."""
    return (txns.groupBy("txn_id").agg(F.array_sort(F.collect_set("procedure")).alias("procedures"))
            .filter(F.size("procedures") > 1).groupBy("procedures").agg(F.count(F.lit(1)).alias("txns"))
            .toArrow())


def _per_transaction(F, with_item, packed: bool):
    """Access totals per (transaction, item), and the expressions that sum them per
    (procedure, item).

    The distinct-transaction count needs this per-transaction step, and its cost grows with
    the width of each row, so when the trace's statistics bound every sum below 2**31, reads
    and writes travel packed in one long (writes in the high 32 bits), and so do read and
    write rows: two sums instead of four, unpacked after the per-transaction step.
    """
    is_read = F.col("mode") == "read"
    if not packed:
        per_txn = with_item.groupBy("txn_id", "item").agg(
            F.sum(F.when(is_read, 1).otherwise(0)).alias("reads"),
            F.sum(F.when(is_read, 0).otherwise(1)).alias("writes"),
            F.sum(F.when(is_read, F.col("rows")).otherwise(0)).alias("read_rows"),
            F.sum(F.when(is_read, 0).otherwise(F.col("rows"))).alias("write_rows"))
        return per_txn, [F.sum(c).cast("long").alias(c)
                         for c in ("reads", "writes", "read_rows", "write_rows")]
    high = F.lit(1 << 32)
    per_txn = with_item.groupBy("txn_id", "item").agg(
        F.sum(F.when(is_read, F.lit(1)).otherwise(high)).alias("accesses"),
        F.sum(F.when(is_read, F.col("rows")).otherwise(F.col("rows") * high)).alias("rows"))
    low = F.lit((1 << 32) - 1)
    return per_txn, [
        F.sum(F.col("accesses").bitwiseAND(low)).cast("long").alias("reads"),
        F.sum(F.shiftright("accesses", 32)).cast("long").alias("writes"),
        F.sum(F.col("rows").bitwiseAND(low)).cast("long").alias("read_rows"),
        F.sum(F.shiftright("rows", 32)).cast("long").alias("write_rows"),
    ]


def _hot_tuples(F, accesses, k: int) -> pa.Table:
    """The `k` hottest (table, key) pairs. An empty key is a table-level access, never a hot
    tuple (`T@` read as a table everywhere): it hashes into the table's fragments, as at
    fragment granularity and in the engine's routing."""
    if k == 0:
        return pa.table({"table": pa.array([], pa.string()), "key": pa.array([], pa.string()),
                         "heat": pa.array([], pa.int64())})
    return (accesses.filter(F.col("key") != "")
            .groupBy("table", "key").agg(F.sum("rows").alias("heat"))
            .orderBy(F.desc("heat"), "table", "key").limit(k).toArrow())


def _item_code(F, gran: Granularity, table_code, n_tables: int):
    """The state item of each access row as an integer: the table's code at table
    granularity; table code x N + fragment; hot tuples numbered after all fragments."""
    if gran.kind == "table":
        return table_code.cast("int")
    fragment = F.crc32(F.col("key").cast("binary")) % F.lit(gran.fragments)
    code = (table_code * F.lit(gran.fragments) + fragment).cast("int")
    if gran.kind == "fragment":
        return code
    return F.coalesce(F.col("hot_index") + F.lit(n_tables * gran.fragments), code).cast("int")


def _decode(parts: dict[str, pa.Table], gran: Granularity, tables: list[str],
            procs: list[str], windows: list[str] = ()) -> dict[str, pa.Table]:
    """Integer codes back to names (on the small results only): the windows first, then the
    tables' items."""
    n = gran.fragments or 1
    hot = parts.get("hot")
    hot_tables = hot.column("table").to_pylist() if hot is not None else []
    hot_keys = hot.column("key").to_pylist() if hot is not None else []
    if gran.kind == "table":
        item_names, item_tables = list(tables), list(tables)
    else:
        item_names = [fragment_name(t, i) for t in tables for i in range(n)]
        item_tables = [t for t in tables for _ in range(n)]
        item_names += [tuple_name(t, k) for t, k in zip(hot_tables, hot_keys)]
        item_tables += hot_tables
    item_names, item_tables = list(windows) + item_names, list(windows) + item_tables
    names, owner = np.array(item_names, dtype=object), np.array(item_tables, dtype=object)
    proc_names = np.array(procs + [None], dtype=object)

    ps = parts["procedure_state"]
    item = ps.column("item").to_numpy()
    proc = ps.column("proc").to_numpy(zero_copy_only=False)
    proc = np.where(np.isnan(proc.astype(float)), len(procs), proc).astype(np.int64)
    decoded = ps.drop_columns(["proc", "item"])
    for i, (column, values) in enumerate((("procedure", proc_names[proc]), ("state", names[item]),
                                          ("table", owner[item]))):
        decoded = decoded.add_column(i, column, pa.array(values, pa.string()))
    parts["procedure_state"] = decoded
    if "distinct_keys" in parts:
        dk = parts["distinct_keys"]
        item = dk.column("item").to_numpy()
        parts["distinct_keys"] = pa.table({"state": pa.array(names[item], pa.string()),
                                           "distinct_keys": dk.column("distinct_keys")})
    return parts


def _as_trace_error(exc: BaseException, info: TraceInfo) -> BaseException:
    """A Spark failure (say, a corrupt data page validation did not read) as one line: the
    file Spark names and the chain of causes, without the stack traces."""
    if isinstance(exc, (TraceError, KeyboardInterrupt)):
        return exc
    interrupt = interrupt_behind(exc)
    if interrupt is not None:  # (Py4J's clean-up after a Ctrl-C failed: the Ctrl-C is the news)
        return interrupt
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    causes = [ln.removeprefix("Caused by:").strip() for ln in lines if ln.startswith("Caused by:")]
    causes = [c.split(": ", 1)[-1] if ": " in c else c for c in causes]
    reading = next((c for c in causes if "while reading file" in c), None)
    detail = [c for c in causes if c is not reading][-2:] or lines[:1] or [type(exc).__name__]
    where = ""
    if reading is not None:
        where = " reading " + reading.split("while reading file", 1)[1].split()[0].rstrip(".")
    if any("ARITHMETIC_OVERFLOW" in d for d in detail):  # Spark's advice (try_add, ansi) is not the user's to take
        detail = ["a sum of the trace's figures overflows 64-bit integers: a value in it (bytes, rows) is "
                  "far beyond any real run's"]
    return TraceError(f"{info.path}: the Spark job failed{where}: {'; '.join(detail)[:400]}")
