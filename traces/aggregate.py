"""The aggregation job: a trace directory in, workload statistics out (PySpark DataFrame API).

No Python UDFs: every per-row computation (state item naming, fragment hashing with crc32,
durations) is a Spark SQL expression, so the same job runs in local mode and on any cluster.
Spark does the heavy passes over the trace; the results (one row per procedure, per
procedure x state item, per stream edge) are small and come back to the driver through
Arrow, where `traces.finish` completes them and they are written atomically.

Steps: validate (Arrow, before Spark starts) -> Java check and session -> per-procedure
statistics -> hot tuples (tuple granularity) -> procedure x state item -> stream edges ->
distinct keys (only for tables whose size the trace manifest does not give) -> write.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pyarrow as pa

from traces.atomic_dir import check_replaceable
from traces.errors import TraceError
from traces.finish import finish_statistics, tables_info
from traces.granularity import DEFAULT_HOT_TUPLES, Granularity, parse_granularity
from traces.progress import Progress, StageWatcher, stderr_line
from traces.schema import DATASETS
from traces.statistics import Statistics, write_statistics
from traces.validate import TraceInfo, validate_trace

# Broadcast the txn_id -> procedure map when the trace has at most this many transactions
# (about 40 MB on the executors); above, Spark picks a shuffle join itself.
BROADCAST_TXNS = 2_000_000


def aggregate(trace_dir: str | Path, out: str | Path | None = None,
              granularity: str | Granularity = "table", hot_tuples: int = DEFAULT_HOT_TUPLES,
              *, spark=None, master: str | None = None, conf: dict[str, str] | None = None,
              progress: Callable[[str], None] | None = stderr_line) -> Statistics:
    """Aggregate a trace into statistics; write them to `out` (atomically) if given.

    `spark`: a session to use (kept running); otherwise the active one, otherwise a new one
    on `master` (default local[*]) with `conf`, stopped at the end.
    """
    gran = granularity if isinstance(granularity, Granularity) else parse_granularity(
        granularity, hot_tuples)
    if out is not None:
        check_replaceable(Path(out).absolute())
    steps = 6 + (gran.kind == "tuple") + (out is not None)
    prog = Progress(steps, progress)
    with prog.step(f"validating trace {trace_dir}"):
        info = validate_trace(trace_dir)
    prog.line(f"trace: {info.rows['txns']:,} txns, {info.rows['accesses']:,} access rows, "
              f"{info.rows['flows']:,} flows; granularity {gran.label}")
    own_session = False
    with prog.step("Spark session"):
        if spark is None:
            from traces.spark_session import active_session

            spark = active_session()
            if spark is not None:
                prog.line(f"reusing the running Spark session (master {spark.sparkContext.master})")
        if spark is None:
            from traces.java import check_java
            from traces.spark_session import DEFAULT_MASTER, start_session

            prog.line(check_java())
            spark = start_session(master or DEFAULT_MASTER, conf)
            own_session = True
            prog.line(f"Spark {spark.version} on {spark.sparkContext.master}")
    try:
        with StageWatcher(spark, prog):
            parts = _run(spark, info, gran, prog)
        master_used = spark.sparkContext.master
    finally:
        if own_session:
            spark.stop()
    stats = finish_statistics(parts, info, gran)
    stats.manifest["spark_master"] = master_used
    stats.manifest["seconds"] = round(prog.elapsed(), 3)
    if out is not None:
        with prog.step(f"writing statistics to {out}"):
            write_statistics(stats, out)
    return stats


def _run(spark, info: TraceInfo, gran: Granularity, prog: Progress) -> dict[str, pa.Table]:
    from pyspark.sql import functions as F

    from pyspark.sql.pandas.types import from_arrow_schema

    def read(dataset: str):
        schema = DATASETS[dataset]
        if dataset == "accesses" and info.key_type == "int64":
            schema = schema.set(schema.get_field_index("key"), pa.field("key", pa.int64()))
        # the schema is known (validated), so Spark need not run a job to infer it
        return spark.read.schema(from_arrow_schema(schema)).parquet(
            *[str(p.absolute()) for p in info.files[dataset]])

    txns, flows = read("txns"), read("flows")
    accesses = read("accesses")
    if info.key_type != "string":
        accesses = accesses.withColumn("key", F.col("key").cast("string"))
    parts: dict[str, pa.Table] = {}

    with prog.step("per-procedure statistics (invocations, cost, aborts)"):
        duration = F.col("end_us") - F.col("start_us")
        parts["procedures"] = txns.rollup("procedure").agg(
            F.grouping("procedure").alias("is_total"),
            F.count(F.lit(1)).alias("invocations"),
            F.sum(F.when(F.col("status") == "commit", 1).otherwise(0)).cast("long").alias("commits"),
            F.sum(F.when(F.col("status") == "abort", 1).otherwise(0)).cast("long").alias("aborts"),
            F.sum("restarts").cast("long").alias("restarts"),
            F.countDistinct("batch_id").alias("batches"),
            F.sum(duration).cast("long").alias("total_cost_us"),
            F.avg(duration).alias("mean_cost_us"),
            F.percentile(duration, 0.95).alias("p95_cost_us"),
        ).toArrow()

    hot = None
    if gran.kind == "tuple":
        with prog.step(f"the {gran.hot_tuples} hottest tuples"):
            parts["hot"] = (accesses.groupBy("table", "key").agg(F.sum("rows").alias("heat"))
                            .orderBy(F.desc("heat"), "table", "key").limit(gran.hot_tuples)
                            .toArrow()) if gran.hot_tuples else pa.table(
                {"table": pa.array([], pa.string()), "key": pa.array([], pa.string()),
                 "heat": pa.array([], pa.int64())})
            if parts["hot"].num_rows:
                hot = spark.createDataFrame(
                    parts["hot"].select(["table", "key"]).append_column(
                        "hot", pa.array([True] * parts["hot"].num_rows)).to_pandas())

    base = accesses if hot is None else accesses.join(F.broadcast(hot), ["table", "key"], "left")
    with_state = base.withColumn("state", _state_column(F, gran, hot is not None))

    with prog.step("procedure x state item (reads, writes, rows, access probability)"):
        owners = txns.select("txn_id", "procedure")
        if info.rows["txns"] <= BROADCAST_TXNS:
            owners = F.broadcast(owners)
        is_read = F.col("mode") == "read"
        per_txn = (with_state.join(owners, "txn_id", "left")
                   .groupBy("procedure", "state", "table", "txn_id").agg(
                       F.sum(F.when(is_read, 1).otherwise(0)).alias("reads"),
                       F.sum(F.when(is_read, 0).otherwise(1)).alias("writes"),
                       F.sum(F.when(is_read, F.col("rows")).otherwise(0)).alias("read_rows"),
                       F.sum(F.when(is_read, 0).otherwise(F.col("rows"))).alias("write_rows")))
        parts["procedure_state"] = per_txn.groupBy("procedure", "state", "table").agg(
            F.sum("reads").cast("long").alias("reads"),
            F.sum("writes").cast("long").alias("writes"),
            F.sum("read_rows").cast("long").alias("read_rows"),
            F.sum("write_rows").cast("long").alias("write_rows"),
            F.count(F.lit(1)).alias("txns"),
        ).toArrow()

    with prog.step("stream edges (batches, tuples, bytes)"):
        parts["streams"] = flows.groupBy("from_procedure", "to_procedure").agg(
            F.count(F.lit(1)).alias("flows"),
            F.countDistinct("batch_id").alias("batches"),
            F.sum("tuples").cast("long").alias("tuples"),
            F.sum("bytes").cast("long").alias("bytes"),
        ).toArrow()

    seen = set(parts["procedure_state"].column("table").to_pylist())
    known = tables_info(info.manifest)
    unsized = sorted(t for t in seen if known.get(t, {}).get("rows") is None)
    with prog.step("distinct keys of tables the trace manifest does not size"
                   + (f" ({', '.join(unsized)})" if unsized else " (none)")):
        if unsized:
            parts["distinct_keys"] = (with_state.filter(F.col("table").isin(unsized))
                                      .select("table", "state", "key").distinct()
                                      .groupBy("table", "state")
                                      .agg(F.count(F.lit(1)).alias("distinct_keys")).toArrow())
    return parts


def _state_column(F, gran: Granularity, with_hot: bool):
    """The state item name of each access row, as a Spark SQL expression."""
    if gran.kind == "table":
        return F.col("table")
    fragment = F.concat(F.col("table"), F.lit("#"),
                        (F.crc32(F.col("key").cast("binary")) % F.lit(gran.fragments)).cast("string"))
    if gran.kind == "fragment" or not with_hot:
        return fragment
    return F.when(F.col("hot"), F.concat(F.col("table"), F.lit("@"), F.col("key"))).otherwise(fragment)


def check_options(granularity: str, hot_tuples: int) -> Granularity:
    """Parse the CLI options early (before validation and Spark), one-line errors."""
    if hot_tuples < 0:
        raise TraceError(f"--hot-tuples must be >= 0, got {hot_tuples}")
    return parse_granularity(granularity, hot_tuples)
