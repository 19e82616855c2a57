"""Who ranks random designs as the engine does: the busy-time estimate or the simulator?

Issue 19, item 1 asks the analytical estimate (`advisor.busy_estimate`) to rank designs as
the simulator does (Spearman >= 0.95 within each workload). It misses on linear-road and
online-bidding at 8 machines (`bench/busy_time_rank.py --machines 8 --seed 2`: 0.919 and
0.891). Where the two disagree, which one is wrong? Only the engine can say, and only on a
host with a core for every partition (a lent many-core machine: 8 machines x 2 partitions of
linear-road are 16 processes).

For each workload this bench draws `busy_time_rank.py`'s random designs (same seeds, so the
same designs), and for each design gives
- `est ref` / `sim ref`: the estimate and the simulator for the reference cluster, as
  `busy_time_rank.py` compares them (the issue's figure);
- `est host` / `sim host`: the same with this host's calibration (`--calibration`, as the
  engine runs here: `Calibration.on_host()`);
- `loop host`: the simulator run as the engine measures, a closed loop of 64 batches in flight;
- `engine`: the multi-process engine's tuples/s (median of `--runs`).
It prints every design's row, then Spearman's rank correlation of each prediction with the
engine and of the estimate with the simulator. On a host with fewer cores than partitions
the engine's figures are the crowding's, not the design's: read them on a many-core host.

    python bench/rank_on_engine.py --calibration bench/calibration.json --designs 4 --batches 300
    OUT=dir bash bench/device_rank_on_engine.sh   # on a lent many-core machine
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from advisor.busy_estimate import BusyEstimate  # noqa: E402
from costmodel.files import atomic_write_text  # noqa: E402
from costmodel.graph import WorkloadGraph  # noqa: E402
from engine_sim.engine import run_workload  # noqa: E402
from engine_sim.engine.run_options import ClientOptions  # noqa: E402
from engine_sim.sim import Calibration, SimError, max_throughput, run_once  # noqa: E402
from busy_time_rank import random_designs, workload_of  # noqa: E402

IN_FLIGHT = ClientOptions().in_flight
COLUMNS = ("est_ref", "sim_ref", "est_host", "sim_host", "loop_host", "engine")


def design_rows(name: str, machines: int, n_designs: int, seed: int, host: Calibration,
                sim_batches: int, engine_batches: int, runs: int):
    """Each design's figures (a dict per design, yielded as soon as it is measured)."""
    w = workload_of(name, machines)
    g = WorkloadGraph.from_workload(w)
    ref = Calibration.reference()
    est_ref = BusyEstimate.of(g, w, ref.params)
    est_host = BusyEstimate.of(g, w, host.sim_params())
    for k, (proc, state, d) in enumerate(random_designs(g, n_designs, seed)):
        t0 = time.perf_counter()
        try:
            sim_ref = max_throughput(w, d, batches=sim_batches, calibration=ref).throughput_tps
            sim_host = max_throughput(w, d, batches=sim_batches, calibration=host).throughput_tps
        except SimError:
            continue  # as busy_time_rank.py: a design the simulator refuses is not ranked
        loop = run_once(w, d, in_flight=IN_FLIGHT, calibration=host, batches=engine_batches).throughput_tps
        engine = [run_workload(w, d, batches=engine_batches, seed=0) for _ in range(runs)]
        checks = {r.history_check for r in engine}
        row = {"design": k, "est_ref": est_ref.throughput_tps(proc, state), "sim_ref": sim_ref,
               "est_host": est_host.throughput_tps(proc, state), "sim_host": sim_host,
               "loop_host": loop, "engine": statistics.median(r.throughput_tps for r in engine),
               "history": "ok" if checks == {"ok"} else ",".join(sorted(checks)),
               "proc_part": proc.tolist(), "state_part": state.tolist()}  # the design, to measure again
        print(f"  {name} #{k:<3}" + "".join(f"{row[c]:>11,.0f}" for c in COLUMNS)
              + f"  {row['history']} ({time.perf_counter() - t0:.0f} s)", flush=True)
        yield row


def rank_agreement(rows: list[dict]) -> dict[str, float]:
    """Spearman of each prediction with the engine, and of the estimate with the simulator."""
    col = {c: np.array([r[c] for r in rows]) for c in COLUMNS}
    pairs = [(c, "engine") for c in COLUMNS[:-1]] + [("est_ref", "sim_ref"), ("est_host", "sim_host")]
    return {f"{a}~{b}": float(spearmanr(col[a], col[b]).statistic) for a, b in pairs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="linear-road,online-bidding")
    ap.add_argument("--machines", type=int, default=8)
    ap.add_argument("--seed", type=int, default=2, help="seed of the random designs (busy_time_rank's)")
    ap.add_argument("--designs", type=int, default=16)
    ap.add_argument("--sim-batches", type=int, default=200, help="as busy_time_rank.py")
    ap.add_argument("--batches", type=int, default=1500, help="batches per engine run and closed loop")
    ap.add_argument("--runs", type=int, default=1, help="engine runs per design (median)")
    ap.add_argument("--calibration", required=True, help="this host's calibration (advisor calibrate)")
    ap.add_argument("--save", help="write every figure to this JSON file (rewritten after each design)")
    a = ap.parse_args()
    host = Calibration.load(a.calibration).on_host()
    print(f"host: {os.cpu_count()} cores; {a.machines} machines; designs seed {a.seed}; engine "
          f"{a.runs} x {a.batches} batches", flush=True)
    print(f"  {'design':<18}" + "".join(f"{c:>11}" for c in COLUMNS), flush=True)
    out = {"cores": os.cpu_count(), "machines": a.machines, "seed": a.seed, "workloads": {}}
    for name in a.workloads.split(","):
        rows: list[dict] = []
        out["workloads"][name] = {"rows": rows, "spearman": {}}
        for row in design_rows(name, a.machines, a.designs, a.seed, host, a.sim_batches, a.batches, a.runs):
            rows.append(row)
            if len(rows) > 2:
                out["workloads"][name]["spearman"] = rank_agreement(rows)
            if a.save:  # after every design: a run cut short keeps what it measured
                atomic_write_text(a.save, json.dumps(out, indent=1))
        agree = out["workloads"][name]["spearman"]
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in agree.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
