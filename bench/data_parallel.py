"""Where fine grain pays, does it win? The data-parallel pick, checked end to end.

`recommend(..., data_parallel=True)` weighs, after its table-level pick, a data-parallel variant: SPs that split by
a key of their input tuple run one lane per partition over fragments `T#i` of their table. It
keeps the variant only when the simulator predicts it faster. This bench checks that choice
from the user's side, in two parts:

1. Statistics path (as `bench/trace_quality.py`): the engine traces each workload under its
   naive single-machine design, Spark (one local session for the whole bench) aggregates the
   trace at table granularity, and `recommend` works from the statistics alone on each
   machine count. The recommendation and the table-level pick it was weighed against are
   both predicted against the bundled *spec* (the ground truth the trace came from), and so is
   the recommendation made from the spec itself. A row meets the target when the
   data-parallel variant was picked and is predicted faster than the table-level pick.
   Where it was not picked, the row says whether the variant would have paid; where a tie at
   the statistics' measured costs was settled over their uncertainty
   (`advisor.granularity_pick.settle_tie`), a line under the row says how.
2. Engine: on `--engine-machines` machines, the spec path's table-level pick and its
   data-parallel pick run on the multi-process engine (a process per partition, as
   `advisor run` does), alternating, `--repeats` times each. The machine is shared and noisy,
   so only ratios are reported: each pair's dp/table and their median, beside the
   simulator's predicted ratio.

    python bench/data_parallel.py
    python bench/data_parallel.py --workloads fraud-scoring --machines 4 --batches 200 \\
        --sim-batches 300 --repeats 1 --engine-batches 500

The bench always exits 0; misses print MISSED and the summary names the worst row.
"""
from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from advisor.api import recommend  # noqa: E402
from advisor.recommendation import Recommendation  # noqa: E402
from costmodel.design import Design  # noqa: E402
from advisor.sources import load_workload  # noqa: E402
from costmodel.workload import Workload  # noqa: E402
from bench.trace_quality import SPARK_CONF, engine_pairs, trace  # noqa: E402
from engine_sim.sim import Calibration, max_throughput  # noqa: E402

TIE = 0.02  # the pick's tie tolerance: a variant within 2% of the table level does not "pay"


@dataclass
class Row:
    workload: str
    machines: int
    dp: str  # picked, kept (variant weighed, table level kept) or none (no SP can split)
    rec_tps: float
    table_tps: float
    variant_tps: float | None
    stats_over_spec: float
    settled: str = ""  # how a tie at the measured costs was settled, when it was

    @property
    def ratio(self) -> float:
        return self.rec_tps / self.table_tps if self.table_tps > 0 else float("nan")

    @property
    def missed(self) -> bool:
        return self.verdict().startswith("MISSED")

    @property
    def meets(self) -> bool:
        return self.dp == "picked" and self.ratio > 1.0

    def verdict(self) -> str:
        if self.meets:
            return "meets"
        if self.dp == "picked":
            return "MISSED (picked, but not faster against the spec)"
        if self.variant_tps is not None and self.variant_tps > self.table_tps * (1 + TIE):
            return "MISSED (the variant pays against the spec, but was not picked)"
        return "table level (fine grain does not pay here)"


def predict(workload: Workload, design: Design, batches: int, seed: int) -> float:
    """Predicted maximum throughput (tuples/s) on the reference cluster."""
    return float(max_throughput(workload, design, calibration=Calibration.reference(),
                                batches=batches, seed=seed).throughput_tps)


def table_level(rec: Recommendation) -> Design:
    """The table-level pick `rec` weighed its data-parallel variant against."""
    o = rec.selection.chosen
    return Design.from_arrays(rec.graph, o.proc_part, o.state_part, rec.design.weights, method="advisor")


def dp_state(rec: Recommendation) -> str:
    if rec.data_parallel is None:
        return "none"
    return "picked" if rec.data_parallel.picked else "kept"


def stats_row(name: str, stats: Path, m: int, ppm: int, args: argparse.Namespace) -> Row:
    """One row of part 1: the statistics path on `m` machines, predicted against the spec."""
    spec = load_workload(name).with_cluster(m, ppm)
    by_stats = recommend(stats, machines=m, partitions_per_machine=ppm, seed=args.seed, baselines=False,
                         data_parallel=True)
    by_spec = recommend(name, machines=m, partitions_per_machine=ppm, seed=args.seed, baselines=False,
                        data_parallel=True)
    rec_tps, table_tps, spec_tps = (predict(spec, d, args.sim_batches, args.seed)
                                    for d in (by_stats.design, table_level(by_stats), by_spec.design))
    choice = by_stats.data_parallel
    if choice is None:
        variant_tps = None
    elif choice.picked:
        variant_tps = rec_tps
    else:
        variant_tps = predict(spec, choice.variant, args.sim_batches, args.seed)
    settled = choice.settled_by if choice is not None else ""
    return Row(name, m, dp_state(by_stats), rec_tps, table_tps, variant_tps,
               rec_tps / spec_tps if spec_tps > 0 else float("nan"), settled)


def print_row(r: Row) -> None:
    variant = f"{r.variant_tps / r.table_tps:>7.2f}x" if r.variant_tps and r.table_tps else f"{'-':>8}"
    print(f"{r.workload:<16} {r.machines:>2} {r.dp:>7} {r.rec_tps:>10,.0f} {r.table_tps:>10,.0f} "
          f"{r.ratio:>6.2f}x {variant} {r.stats_over_spec:>10.3f}  {r.verdict()}", flush=True)
    if r.settled:
        print(f"{'':<19} a tie at the measured costs, {r.settled}", flush=True)


def engine_ratio(name: str, args: argparse.Namespace) -> float | None:
    """Part 2 for one workload: the median measured dp/table ratio, or None when not picked."""

    m, ppm = args.engine_machines, args.partitions_per_machine
    spec = load_workload(name).with_cluster(m, ppm)
    rec = recommend(name, machines=m, partitions_per_machine=ppm, seed=args.seed, baselines=False,
                    data_parallel=True)
    if rec.data_parallel is None or not rec.data_parallel.picked:
        why = rec.data_parallel.reason if rec.data_parallel else "no SP can run data-parallel"
        print(f"{name:<16} dp not picked on {m} machines ({why}): nothing to run")
        return None
    designs = {"table": table_level(rec), "dp": rec.design}
    predicted = (predict(spec, designs["dp"], args.sim_batches, args.seed)
                 / predict(spec, designs["table"], args.sim_batches, args.seed))
    measured = engine_pairs(spec, designs, args.repeats, args.engine_batches, args.seed)
    ratios = []
    for i, (table, dp) in enumerate(zip(measured["table"], measured["dp"])):
        ratios.append(dp / table)
        print(f"{name:<16} pair {i + 1}: table {table:>9,.0f}  dp {dp:>9,.0f} tuples/s  "
              f"dp/table {ratios[-1]:.2f}", flush=True)
    median = statistics.median(ratios)
    print(f"{name:<16} median dp/table {median:.2f} measured ({args.repeats} pairs, "
          f"{args.engine_batches} batches), {predicted:.2f} predicted", flush=True)
    if args.calibration:
        host = Calibration.load(args.calibration).on_host()  # the engine on the host it measured
        on_host = (max_throughput(spec, designs["dp"], calibration=host, batches=args.sim_batches).throughput_tps
                   / max_throughput(spec, designs["table"], calibration=host, batches=args.sim_batches).throughput_tps)
        print(f"{name:<16} predicted for this engine on the calibrated host: {on_host:.2f}")
        calibrated = recommend(name, machines=m, partitions_per_machine=ppm, seed=args.seed, baselines=False,
                               data_parallel=True, calibration=Calibration.load(args.calibration))
        print(f"{name:<16} with --calibration {args.calibration}: "
              f"{calibrated.data_parallel.describe() if calibrated.data_parallel else 'no SP can split'}")
    print(flush=True)
    return median


def trace_all(names: list[str], args: argparse.Namespace) -> dict[str, Path]:
    """Trace every workload on one machine and aggregate it at table granularity."""
    from traces.aggregate import aggregate
    from traces.spark_session import start_session

    spark = start_session("local[2]", SPARK_CONF)
    tmp = Path(tempfile.mkdtemp(prefix="data-parallel-"))
    atexit.register(shutil.rmtree, tmp, True)  # traces and statistics: gone when the bench ends
    out: dict[str, Path] = {}
    try:
        for name in names:
            t0 = time.perf_counter()
            trace(name, tmp / f"{name}-trace", args.batches, args.seed, False)
            aggregate(tmp / f"{name}-trace", tmp / f"{name}-stats", "table", spark=spark, progress=None)
            out[name] = tmp / f"{name}-stats"
            print(f"traced and aggregated {name} ({args.batches} batches) in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    finally:
        spark.stop()
    return out


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="fraud-scoring,linear-road", help="comma-separated bundled names")
    ap.add_argument("--machines", default="4,8", help="comma-separated machine counts (part 1)")
    ap.add_argument("--partitions-per-machine", type=int, default=1)
    ap.add_argument("--batches", type=int, default=1000, help="batches per trace")
    ap.add_argument("--sim-batches", type=int, default=2000, help="batches per prediction")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engine-machines", type=int, default=2)
    ap.add_argument("--engine-batches", type=int, default=3000, help="batches per engine run")
    ap.add_argument("--repeats", type=int, default=5, help="engine runs of each design")
    ap.add_argument("--no-engine", action="store_true", help="skip part 2")
    ap.add_argument("--calibration", help="also say what the pick does with this host's calibration (part 2)")
    ap.add_argument("--engine-only", action="store_true",
                    help="skip part 1 (no Spark, no Java: for a lent many-core machine)")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    machines = [int(m) for m in args.machines.split(",") if m.strip()]
    rows: list[Row] = []
    errors: list[str] = []
    stats: dict[str, Path] = {}
    try:
        if not args.engine_only:
            stats = trace_all(names, args)
    except Exception as exc:  # a bench: report and carry on to the summary
        errors.append(f"tracing: {type(exc).__name__}: {exc}")
    print(f"\n1. statistics path, predicted against the spec (reference cluster, "
          f"{args.sim_batches} batches, seed {args.seed})\n")
    print(f"{'workload':<16} {'m':>2} {'dp':>7} {'rec tps':>10} {'table tps':>10} {'ratio':>7} "
          f"{'variant':>8} {'stats/spec':>10}  verdict")
    for name, path in stats.items():
        for m in machines:
            try:
                rows.append(stats_row(name, path, m, args.partitions_per_machine, args))
                print_row(rows[-1])
            except Exception as exc:
                errors.append(f"{name} on {m}: {type(exc).__name__}: {exc}")
                print(f"{name:<16} {m:>2} ERROR {errors[-1]}", flush=True)

    medians: dict[str, float | None] = {}
    if not args.no_engine:
        print(f"\n2. engine, {args.engine_machines} machines x {args.partitions_per_machine} "
              f"partition(s), multi-process, alternating runs\n")
        for name in names:
            try:
                medians[name] = engine_ratio(name, args)
            except Exception as exc:
                errors.append(f"engine {name}: {type(exc).__name__}: {exc}")
                print(f"{name:<16} ERROR {errors[-1]}", flush=True)

    print("\nsummary")
    print(f"  rows met: {sum(r.meets for r in rows)}/{len(rows)} "
          f"(MISSED, a wrong call: {sum(r.missed for r in rows)})")
    if rows:
        worst = min(rows, key=lambda r: (not r.missed, r.meets, r.ratio, r.stats_over_spec))
        print(f"  worst row: {worst.workload} on {worst.machines} machines "
              f"(dp {worst.dp}, ratio {worst.ratio:.2f}x, stats/spec {worst.stats_over_spec:.3f}): "
              f"{worst.verdict()}")
    for name, median in medians.items():
        print(f"  engine {name}: " + ("dp not picked" if median is None else f"median dp/table {median:.2f}"))
    for e in errors:
        print(f"  error: {e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
