"""Benchmark of the aggregation job on a synthetic trace of 10 million access rows.

Prints, all measured in this one process and Spark session:
- rows per second of `traces.aggregate` at each granularity;
- the ratio of its time to one plain Spark scan-and-groupBy of the same accesses files
  (target: at most 2x);
- the driver's peak memory (Python process, and the driver JVM);
- turning 4.5 million rows into pandas with and without Arrow.

    python bench/aggregate.py [--rows 10000000] [--workload tpcdi-trade] [--keep DIR]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.spec import load_workload  # noqa: E402
from traces.aggregate import aggregate  # noqa: E402
from traces.java import check_java  # noqa: E402
from traces.spark_session import DEFAULT_MASTER, start_session  # noqa: E402
from traces.synth import synthesize  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def jvm_peak_mb(spark) -> float | None:
    """VmHWM of the driver JVM (the gateway's java process), from /proc."""
    try:
        import psutil

        me = psutil.Process()
        for child in me.children(recursive=True):
            if "java" in child.name():
                status = Path(f"/proc/{child.pid}/status").read_text()
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
    except Exception:  # noqa: BLE001 - a figure we can do without
        return None
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="access rows to synthesize")
    ap.add_argument("--workload", default="tpcdi-trade")
    ap.add_argument("--master", default=DEFAULT_MASTER)
    ap.add_argument("--pandas-rows", type=int, default=4_500_000)
    ap.add_argument("--keep", type=Path, default=None, help="keep the trace here")
    args = ap.parse_args()

    workload = load_workload(args.workload)
    spec = dataclasses.asdict(workload)
    spec["topological_order"] = workload.topological_order()
    per_batch = sum(a.rows * a.probability for p in workload.procedures for a in p.accesses)
    batches = int(args.rows / per_batch * 1.01) + 1
    root = Path(tempfile.mkdtemp(prefix="bench-aggregate-"))
    trace = args.keep or root / "trace"
    try:
        summary, t_synth = timed(lambda: synthesize(spec, trace, batches, seed=0))
        size = sum(p.stat().st_size for p in Path(trace).rglob("*.parquet"))
        print(f"trace: {summary.accesses:,} access rows, {summary.txns:,} txns, "
              f"{summary.flows:,} flows ({size / 2**20:.0f} MiB Parquet), synthesized in "
              f"{t_synth:.1f} s ({summary.accesses / t_synth:,.0f} rows/s)")
        print(check_java())
        spark, t_start = timed(lambda: start_session(args.master))
        print(f"Spark {spark.version} on {spark.sparkContext.master}, started in {t_start:.1f} s")
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        from pyspark.sql import functions as F

        accesses = str(Path(trace) / "accesses")

        def plain_scan():
            return (spark.read.parquet(accesses).groupBy("table")
                    .agg(F.sum("rows"), F.count(F.lit(1))).collect())

        plain_scan()  # warm-up: JIT, file listing caches
        aggregate(trace, None, "table", spark=spark, progress=None)
        _, t_plain = timed(plain_scan)
        print(f"plain scan + groupBy(table) of accesses: {t_plain:.2f} s "
              f"({summary.accesses / t_plain:,.0f} rows/s)")
        for granularity, hot in (("table", 0), ("fragment:16", 0), ("tuple:16", 1000)):
            stats, t_agg = timed(lambda: aggregate(trace, root / f"stats-{granularity}",
                                                   granularity, hot, spark=spark, progress=None))
            print(f"aggregate --granularity {granularity:<12}{'--hot-tuples ' + str(hot) if hot else '':<18}"
                  f"{t_agg:6.2f} s  {summary.accesses / t_agg:>12,.0f} rows/s  "
                  f"ratio to plain scan {t_agg / t_plain:4.2f}x  "
                  f"({len(stats.state)} state items)")
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        jvm = jvm_peak_mb(spark)
        print(f"driver peak memory: Python {rss_after:.0f} MiB (grew {rss_after - rss_before:.0f} "
              f"MiB during the aggregations)" + (f", driver JVM {jvm:.0f} MiB" if jvm else ""))

        frame = spark.read.parquet(accesses).limit(args.pandas_rows)
        frame.cache().count()
        times = {}
        for arrow in ("false", "true"):
            spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", arrow)
            pdf, times[arrow] = timed(frame.toPandas)
            assert len(pdf) == min(args.pandas_rows, summary.accesses)
            del pdf
        spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
        print(f"toPandas of {args.pandas_rows:,} rows: without Arrow {times['false']:.1f} s, "
              f"with Arrow {times['true']:.1f} s ({times['false'] / times['true']:.0f}x faster)")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    main()
