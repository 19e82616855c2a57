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

from advisor.sources import load_workload  # noqa: E402
from traces.aggregate import aggregate  # noqa: E402
from traces.java import check_java  # noqa: E402
from traces.spark_session import DEFAULT_MASTER, start_session, to_pandas  # noqa: E402
from traces.synth import synthesize  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def jvm_process():
    import psutil

    for child in psutil.Process().children(recursive=True):
        if "java" in child.name():
            return child
    return None


def best_of(n: int, fn) -> tuple[float, float]:
    """Best wall time and best JVM CPU time (user + system) of n runs: the machine may be
    shared, and the minimum is the least disturbed run."""
    jvm = jvm_process()
    walls, cpus = [], []
    for _ in range(n):
        c0 = sum(jvm.cpu_times()[:2]) if jvm else 0.0
        _, wall = timed(fn)
        walls.append(wall)
        cpus.append((sum(jvm.cpu_times()[:2]) - c0) if jvm else float("nan"))
    return min(walls), min(cpus)


def jvm_peak_mb() -> float | None:
    """VmHWM (peak resident memory) of the driver JVM, from /proc."""
    jvm = jvm_process()
    if jvm is None:
        return None
    for line in Path(f"/proc/{jvm.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="access rows to synthesize")
    ap.add_argument("--workload", default="tpcdi-trade")
    ap.add_argument("--master", default=DEFAULT_MASTER)
    ap.add_argument("--pandas-rows", type=int, default=4_500_000)
    ap.add_argument("--keep", type=Path, default=None, help="keep the trace here")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each timed step (best kept)")
    args = ap.parse_args()

    workload = load_workload(args.workload)
    spec = dataclasses.asdict(workload)
    spec["topological_order"] = workload.topological_order()
    root = Path(tempfile.mkdtemp(prefix="bench-aggregate-"))
    trace = args.keep or root / "trace"
    try:
        # rows per batch after repeated keys coalesce, from a sample with the same seed
        sample = synthesize(spec, root / "sample", 2000, seed=0)
        batches = int(args.rows / (sample.accesses / 2000) * 1.003) + 1
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

        def plain_accesses():
            return (spark.read.parquet(accesses).groupBy("table")
                    .agg(F.sum("rows"), F.count(F.lit(1))).collect())

        def plain_trace():
            plain_accesses()
            spark.read.parquet(str(Path(trace) / "txns")).groupBy("procedure").count().collect()
            spark.read.parquet(str(Path(trace) / "flows")).groupBy(
                "from_procedure", "to_procedure").count().collect()

        plain_trace()  # warm-up: JIT, file listing caches
        aggregate(trace, None, "table", spark=spark, progress=None)
        base_a = best_of(args.repeat, plain_accesses)
        base_t = best_of(args.repeat, plain_trace)
        print(f"baseline A, plain scan + groupBy(table) of the accesses files: {base_a[0]:.2f} s "
              f"wall, {base_a[1]:.2f} s JVM CPU ({summary.accesses / base_a[0]:,.0f} rows/s)")
        print(f"baseline T, plain scan + groupBy of all three datasets: {base_t[0]:.2f} s wall, "
              f"{base_t[1]:.2f} s JVM CPU")
        print("(best of", args.repeat, "runs each; ratios are aggregate / baseline)")
        for granularity, hot, repeat in (("table", 0, args.repeat), ("fragment:16", 0, 1),
                                         ("tuple:16", 1000, 1)):
            result = {}

            def run():
                result["stats"] = aggregate(trace, root / f"stats-{granularity}", granularity,
                                            hot, spark=spark, progress=None)
            wall, cpu = best_of(repeat, run)
            stats = result["stats"]
            label = f"--granularity {granularity}" + (f" --hot-tuples {hot}" if hot else "")
            print(f"aggregate {label:<40} {wall:6.2f} s wall {summary.accesses / wall:>11,.0f} "
                  f"rows/s | wall ratio A {wall / base_a[0]:4.1f}x T {wall / base_t[0]:4.1f}x | "
                  f"CPU ratio A {cpu / base_a[1]:4.1f}x T {cpu / base_t[1]:4.1f}x | "
                  f"{len(stats.state)} state items")
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        jvm = jvm_peak_mb()
        print(f"driver peak memory: Python {rss_after:.0f} MiB (grew {rss_after - rss_before:.0f} "
              f"MiB during the aggregations)" + (f", driver JVM {jvm:.0f} MiB" if jvm else ""))

        frame = spark.read.parquet(accesses).limit(args.pandas_rows)
        frame.cache().count()
        paths = {
            "toPandas() without Arrow": ("false", frame.toPandas),
            "toPandas() with Arrow": ("true", frame.toPandas),
            "traces.spark_session.to_pandas (toArrow)": ("true", lambda: to_pandas(frame)),
            "to_pandas(arrow_dtypes=True)": ("true", lambda: to_pandas(frame, arrow_dtypes=True)),
        }
        times = {}
        for label, (arrow, fn) in paths.items():
            spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", arrow)
            pdf, times[label] = timed(fn)
            assert len(pdf) == min(args.pandas_rows, summary.accesses)
            del pdf
        spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
        slow = times["toPandas() without Arrow"]
        print(f"{args.pandas_rows:,} rows (5 columns) into pandas:")
        for label, t in times.items():
            print(f"  {label:<42} {t:6.1f} s  ({slow / t:4.1f}x faster than without Arrow)")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    main()
