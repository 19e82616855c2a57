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
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from advisor.api import recommend
from advisor.spec import load_workload
from advisor.workload import Access, Workload

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=",".join([*BUNDLED, *GENERATED]))
    ap.add_argument("--seed", type=int, default=0, help="seed of the drift (and the generator)")
    args = ap.parse_args()
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
