"""After the workload drifts: how much of the best design's throughput a budgeted migration keeps.

Issue 20. For each case a design is recommended for the workload as it was (the deployed
design); then the workload drifts (seeded: a few SPs start reading a table of another part
of the dataflow, and one SP's work doubles), and `recommend(current=deployed, ...)` weighs
the designs reachable from the deployed one. Printed per case: the deployed design's
predicted throughput on the drifted workload, the best within 10 %, 25 % and 50 % of the
megabytes the unconstrained best moves, and the unconstrained best, each as tuples/s and as
a share of the unconstrained best; then `advisor check`'s verdict (10 % tolerance).

Every prediction is the simulator's, reference cluster, as `recommend` predicts.

    python bench/migration.py
    python bench/migration.py --cases tpcdi-trade@4,gen20 --seed 3

`--engine` runs the engine half instead: live migration against stop, move and restart,
measured on the multi-process engine (2 machines), per case (`engine_migration`):

- `hot-shift`: the hot accounts move from one stream to the other. The engine cannot change a
  run's key distribution mid-run (one spec per run, and zipf keys are always hottest at key 0),
  so this is the closest honest variant: phase 1 (Transfer's keys zipf, Deposit's uniform) and
  phase 2 (the reverse) are each traced on the engine and aggregated with Spark at tuple
  granularity; design A is recommended from phase 1's statistics, design B from phase 2's
  starting at A (`recommend(current=A)`); then phase 2's input runs on A and migrates to B at
  batch K. Both designs are picked by the cost model: the simulator, like the engine, locks
  every partition holding a piece of a table an SP declares, whatever keys a batch draws, so
  every split of the shared table costs both SPs 2PC on every batch; by throughput it keeps
  one machine for both phases, which leaves nothing to migrate.
- `drift:<bundled>`: the bundled workload on 2 machines drifts as above (`drift`), A is
  recommended for it before, B after (from A), by the simulator; the drifted workload runs on
  A and migrates to B at batch K.

Printed per case and mode: the pause (drain, move and switch), rows and declared bytes moved,
input tuples/s before the pause, during (the pause until the batches that waited are done)
and after, and after/before; then the simulator's budgeted frontier for the same pair.

    python bench/migration.py --engine
    python bench/migration.py --engine --engine-cases hot-shift --batches 300 --at-batch 150
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from advisor.api import default_simulator, recommend
from costmodel.design import Design
from advisor.migration_pick import predict_designs
from costmodel.spec_reader import parse_workload
from advisor.sources import load_workload
from costmodel.workload import Access, Workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recommend_scale import generated_workload  # noqa: E402  (the same generator, seeds)

BUNDLED = {"tpcdi-trade@4": ("tpcdi-trade", 4), "streaming-ledger@4": ("streaming-ledger", 4),
           "online-bidding@4": ("online-bidding", 4), "linear-road@4": ("linear-road", 4),
           "bank-transfer@4": ("bank-transfer", 4)}
GENERATED = {"gen20": (20, 6), "gen40": (40, 8)}


def drift(workload: Workload, seed: int) -> tuple[Workload, list[str]]:
    """The workload after a drift: two SPs read 20 rows per batch of a table they did not
    touch, and one SP's declared work doubles (seeded)."""
    rng = np.random.default_rng(seed)
    procs = list(workload.procedures)
    tables = [t.name for t in workload.tables]
    said = []
    for k in rng.choice(len(procs), size=min(2, len(procs)), replace=False):
        p = procs[int(k)]
        touched = {a.table for a in p.accesses}
        others = [t for t in tables if t not in touched]
        if not others:
            continue
        t = others[int(rng.integers(len(others)))]
        procs[int(k)] = replace(p, accesses=p.accesses + (Access(t, "read", 20.0),))
        said.append(f"{p.name} reads {t}")
    declared = [i for i, p in enumerate(procs) if p.code is None and p.cost > 0]
    if declared:
        i = declared[int(rng.integers(len(declared)))]
        procs[i] = replace(procs[i], cost=procs[i].cost * 2)
        said.append(f"{procs[i].name} x2 work")
    return replace(workload, procedures=tuple(procs)), said


def case_workload(name: str, seed: int) -> tuple[Workload, int]:
    if name in BUNDLED:
        bundled, machines = BUNDLED[name]
        return load_workload(bundled), machines
    n_sps, machines = GENERATED[name]
    return generated_workload(n_sps, machines, seed), machines


# -- the engine half: live migration against stop, move and restart ---------------------------------

ENGINE_CASES = ("hot-shift", "drift:tpcdi-trade")
ENGINE_MACHINES = 2
HOT_SPS = ("Transfer", "Deposit")
HOT_THETA = 3.0  # zipf theta of the stream whose accounts are hot: key 0 takes ~83 % of its writes
HOT_TUPLES = 1  # tuple granularity: the hottest tuple (Accounts@0) is an item of its own
TUPLE_FRAGMENTS = 2  # the other rows of each table, hashed into this many fragments

# Two streams write one account table, each with a log of its own: which stream's writes
# concentrate on a few accounts is what shifts between the phases.
HOT_SHIFT_SPEC = """
name = "hot-shift"
description = "Transfers and deposits over one account table; which stream's accounts are hot shifts"
[input]
batch_size = 10
fields = ["account", "amount"]
[cluster]
machines = 2
partitions_per_machine = 1
[[tables]]
name = "Accounts"
rows = 5000
row_bytes = 64
key = "account_id"
[[tables]]
name = "TransferLog"
rows = 20000
row_bytes = 64
key = "id"
[[tables]]
name = "DepositLog"
rows = 20000
row_bytes = 64
key = "id"
[[procedures]]
name = "Parse"
cost = 0.5
accesses = []
[[procedures]]
name = "Transfer"
cost = 20
accesses = [ { table = "Accounts", mode = "write", rows = 1, keys = "@Transfer@" },
             { table = "TransferLog", mode = "write", rows = 1, keys = "sequential" } ]
[[procedures]]
name = "Deposit"
cost = 20
accesses = [ { table = "Accounts", mode = "write", rows = 1, keys = "@Deposit@" },
             { table = "DepositLog", mode = "write", rows = 1, keys = "sequential" } ]
[[streams]]
from = "Parse"
to = "Transfer"
tuples = 5
tuple_bytes = 32
[[streams]]
from = "Parse"
to = "Deposit"
tuples = 5
tuple_bytes = 32
"""


@dataclass
class ModeFigures:
    """What one migration mode took and the throughput around it (engine, measured)."""

    mode: str  # live | restart
    outcome: str
    pause_ms: float
    drain_ms: float
    move_ms: float
    rows_moved: int
    bytes_moved: int  # declared bytes of the rows moved (restart: of every row reloaded)
    wire_bytes: int
    held_batches: int
    tps_before: float
    tps_during: float
    tps_after: float
    history_check: str
    serial_equal: bool  # the serial replay reached the run's final state

    @property
    def after_over_before(self) -> float | None:
        return self.tps_after / self.tps_before if self.tps_before > 0 else None

    @property
    def dip(self) -> float | None:
        """Throughput during the migration as a share of before it."""
        return self.tps_during / self.tps_before if self.tps_before > 0 else None

    @classmethod
    def of_run(cls, run) -> "ModeFigures":
        m = run.migration
        return cls(m.mode, m.outcome, m.pause_s * 1000, m.drain_s * 1000, m.move_s * 1000, m.rows_moved,
                   m.bytes_moved, m.wire_bytes, m.held_batches, m.tps_before, m.tps_during, m.tps_after,
                   run.history_check, bool(run.serial_digest) and run.serial_digest == run.state_digest)


@dataclass
class FrontierPoint:
    """One budget of the simulator's frontier from A on the workload after the change."""

    budget: str
    megabytes: float
    predicted_tps: float
    share_of_best: float


@dataclass
class EngineMigrationCase:
    """One workload change: designs A (before) and B (after, from A), the engine's migration
    A -> B measured live and by stop, move and restart, and the simulator's frontier."""

    case: str
    change: str
    picked_by: str  # what chose A and B: "simulator" or "cost"
    batches: int
    at_batch: int
    procedures_moved: list[str]
    items_moved: list[str]
    modes: list[ModeFigures]
    frontier: list[FrontierPoint]


def hot_shift_phase(hot_sp: str) -> Workload:
    """The hot-shift workload with `hot_sp`'s account keys zipf (hot) and the other's uniform."""
    if hot_sp not in HOT_SPS:
        raise ValueError(f"the hot stream must be one of {', '.join(HOT_SPS)}, got {hot_sp!r}")
    text = HOT_SHIFT_SPEC
    for sp in HOT_SPS:
        text = text.replace(f"@{sp}@", f"zipf:{HOT_THETA:g}" if sp == hot_sp else "uniform")
    return parse_workload(text, f"bench:hot-shift({hot_sp} hot)")


def _hot_shift_designs(workdir: Path, trace_batches: int, seed: int, spark):
    """Phase 1 and 2 traced on the engine and aggregated at tuple granularity; A from phase 1's
    statistics, B from phase 2's starting at A (both by the cost model, see the docstring)."""
    from engine_sim.engine import run_workload
    from traces.aggregate import aggregate

    phases = [hot_shift_phase(sp) for sp in HOT_SPS]
    tracing = recommend(phases[0], seed=seed, objective="cost").design  # any design traces the accesses
    stats = []
    for i, phase in enumerate(phases, 1):
        trace = workdir / f"trace-phase{i}"
        run_workload(phase, tracing, batches=trace_batches, in_process=True, seed=seed, trace_out=trace)
        stats.append(workdir / f"stats-phase{i}")
        aggregate(trace, stats[-1], f"tuple:{TUPLE_FRAGMENTS}", hot_tuples=HOT_TUPLES, spark=spark,
                  progress=None)
    a = recommend(str(stats[0]), seed=seed, objective="cost").design
    rec = recommend(str(stats[1]), current=a, seed=seed, objective="cost")
    change = f"hot accounts move from {HOT_SPS[0]} to {HOT_SPS[1]} (zipf:{HOT_THETA:g} <-> uniform)"
    return phases[1], load_workload(stats[1]), a, rec, change


def _drift_designs(bundled: str, seed: int):
    """The bundled workload on the bench's cluster before and after `drift`, by the simulator."""
    workload = load_workload(bundled)
    workload = workload.with_cluster(ENGINE_MACHINES, workload.cluster.partitions_per_machine)
    a = recommend(workload, machines=ENGINE_MACHINES, seed=seed).design
    drifted, said = drift(workload, seed)
    rec = recommend(drifted, current=a, seed=seed)
    return drifted, drifted, a, rec, "; ".join(said)


def _frontier(plan, sim_workload: Workload, seed: int) -> list[FrontierPoint]:
    """The plan's frontier with a simulator prediction for every point (a plan picked by cost
    has none: they are simulated here, on the reference cluster)."""
    points = plan.frontier()
    missing = [r.design for _, r in points if r.predicted_tps is None]
    predicted = iter(predict_designs(missing, sim_workload, None, seed, simulator=default_simulator())
                     if missing else [])
    tps = [r.predicted_tps if r.predicted_tps is not None else next(predicted) for _, r in points]
    best = tps[-1] or 1.0
    return [FrontierPoint(label, r.megabytes, t, t / best) for (label, r), t in zip(points, tps)]


def check_engine_case(case: str) -> None:
    """Refuse a case name `engine_migration` does not know (ValueError, one line)."""
    kind, _, bundled = case.partition(":")
    if case == "hot-shift":
        return
    if kind != "drift" or not bundled:
        raise ValueError(f"unknown engine case {case!r} (hot-shift or drift:<bundled workload>)")
    from costmodel.spec_reader import bundled_workloads

    if bundled not in bundled_workloads():
        raise ValueError(f"unknown bundled workload {bundled!r} in case {case!r} "
                         f"(bundled: {', '.join(bundled_workloads())})")


def engine_migration(case: str, workdir: str | Path, *, batches: int = 300, at_batch: int = 150,
                     in_flight: int = 64, trace_batches: int = 200, seed: int = 0,
                     spark=None) -> EngineMigrationCase:
    """Designs A and B for `case` (see the module docstring), then the engine runs the workload
    after the change on A, multi-process on 2 machines, migrating to B at `at_batch`: once
    live and once by stop, move and restart (`compare_migration`); and the simulator's
    budgeted frontier from A. `workdir` holds the traces and statistics (hot-shift only);
    `spark`: a session for the aggregation (default: one started and stopped per phase)."""
    from engine_sim.engine.migration_compare import compare_migration
    from engine_sim.engine.migration_plan import moved_items, moved_procedures
    from engine_sim.engine.run_options import ClientOptions
    from engine_sim.engine.plan import build_plan

    check_engine_case(case)
    if case == "hot-shift":
        run_on, sim_on, a, rec, change = _hot_shift_designs(Path(workdir), trace_batches, seed, spark)
    else:
        run_on, sim_on, a, rec, change = _drift_designs(case.partition(":")[2], seed)
    b: Design = rec.design
    both = compare_migration(run_on, a, b, batches=batches, at_batch=at_batch, seed=seed,
                             client=ClientOptions(in_flight=in_flight))
    plan_a, plan_b = build_plan(run_on, a, seed=seed), build_plan(run_on, b, seed=seed)
    return EngineMigrationCase(
        case=case, change=change, picked_by=rec.migration.judged_by, batches=batches, at_batch=at_batch,
        procedures_moved=moved_procedures(plan_a, plan_b), items_moved=moved_items(plan_a, plan_b),
        modes=[ModeFigures.of_run(both.live), ModeFigures.of_run(both.restart)],
        frontier=_frontier(rec.migration, sim_on, seed))


def describe_engine_case(c: EngineMigrationCase) -> list[str]:
    """The printed figures of one case."""
    def ratio(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    lines = [f"== {c.case}: {c.change}",
             f"   A -> B (picked by {c.picked_by}): SPs moved {', '.join(c.procedures_moved) or 'none'}; "
             f"state items moved {', '.join(c.items_moved) or 'none'}; {c.batches} batches, migrating "
             f"at batch {c.at_batch}",
             f"   {'mode':<8} {'outcome':<10} {'pause ms':>9} {'drain':>7} {'move':>7} {'rows':>7} "
             f"{'bytes':>9} {'wire':>9} {'held':>5} {'tps before':>11} {'during':>8} {'after':>8} "
             f"{'dip':>5} {'aft/bef':>7}  checks"]
    for m in c.modes:
        ok = "ok" if m.history_check == "ok" and m.serial_equal else f"FAILED ({m.history_check})"
        lines.append(f"   {m.mode:<8} {m.outcome:<10} {m.pause_ms:>9.1f} {m.drain_ms:>7.1f} {m.move_ms:>7.1f} "
                     f"{m.rows_moved:>7,} {m.bytes_moved:>9,} {m.wire_bytes:>9,} {m.held_batches:>5} "
                     f"{m.tps_before:>11,.0f} {m.tps_during:>8,.0f} {m.tps_after:>8,.0f} "
                     f"{ratio(m.dip):>5} {ratio(m.after_over_before):>7}  {ok}")
    live, restart = c.modes
    if restart.pause_ms > 0:
        lines.append(f"   live pause / restart pause: {live.pause_ms / restart.pause_ms:.2f}")
    lines.append("   simulator frontier from A (reference cluster): "
                 + "; ".join(f"{p.budget}: {p.megabytes:,.4f} MB -> {p.predicted_tps:,.0f} tuples/s "
                             f"({p.share_of_best:.2f})" for p in c.frontier))
    return lines


def engine_main(args) -> None:
    """`--engine`: every engine case, printed as it finishes."""
    cases = args.engine_cases.split(",")
    try:
        for case in cases:
            check_engine_case(case)
    except ValueError as exc:
        print(f"bench/migration.py: {exc}", file=sys.stderr)
        sys.exit(2)
    spark = None
    if "hot-shift" in cases:
        from traces.spark_session import start_session

        spark = start_session("local[2]", {"spark.sql.shuffle.partitions": "4"})
    try:
        with tempfile.TemporaryDirectory(prefix="bench-migration-") as workdir:
            for case in cases:
                started = time.perf_counter()
                result = engine_migration(case, Path(workdir) / case.replace(":", "-"), batches=args.batches,
                                          at_batch=args.at_batch, in_flight=args.in_flight, seed=args.seed,
                                          spark=spark)
                print("\n".join(describe_engine_case(result)) + f"\n   ({time.perf_counter() - started:.0f} s)",
                      flush=True)
    finally:
        if spark is not None:
            spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=",".join([*BUNDLED, *GENERATED]))
    ap.add_argument("--seed", type=int, default=0, help="seed of the drift (and the generator)")
    ap.add_argument("--engine", action="store_true",
                    help="the engine half: live migration against stop, move and restart")
    ap.add_argument("--engine-cases", default=",".join(ENGINE_CASES),
                    help="hot-shift and/or drift:<bundled workload>")
    ap.add_argument("--batches", type=int, default=300, help="engine: batches per run")
    ap.add_argument("--at-batch", type=int, default=150, help="engine: the batch the migration starts at")
    ap.add_argument("--in-flight", type=int, default=64, help="engine: batches in flight")
    args = ap.parse_args()
    if args.engine:
        engine_main(args)
        return
    unknown = [c for c in args.cases.split(",") if c not in BUNDLED and c not in GENERATED]
    if unknown:
        print(f"bench/migration.py: unknown case {unknown[0]!r} (cases: {', '.join([*BUNDLED, *GENERATED])})",
              file=sys.stderr)
        sys.exit(2)
    print(f"{'case':<20} {'drift':<44} {'no move':>14} {'10 %':>14} {'25 %':>14} {'50 %':>14} "
          f"{'best (MB)':>16} {'s':>5}")
    for name in args.cases.split(","):
        workload, machines = case_workload(name, args.seed + 11)
        workload = workload.with_cluster(machines, workload.cluster.partitions_per_machine)
        deployed = recommend(workload, machines=machines, seed=0).design
        drifted, said = drift(workload, args.seed)
        started = time.perf_counter()
        rec = recommend(drifted, current=deployed, seed=0)
        seconds = time.perf_counter() - started
        plan = rec.migration
        best = plan.best.predicted_tps or 1.0
        cells = [plan.reachable[0]] + [plan.best_within(f * plan.best.megabytes) for f in (0.1, 0.25, 0.5)]
        shown = [f"{r.predicted_tps:>7,.0f} {r.predicted_tps / best:.2f}" for r in cells]
        print(f"{name:<20} {'; '.join(said)[:44]:<44} " + " ".join(f"{c:>14}" for c in shown)
              + f" {best:>8,.0f} ({plan.best.megabytes:,.1f})" + f" {seconds:>5.1f}")


if __name__ == "__main__":
    main()
