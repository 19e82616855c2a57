"""The rate search aimed at the edge against plain bisection, in one process.

`engine_sim.sim.rate_search` aims a bracket's next probe at the rate an overloaded probe says
the design would just keep up with, where it used to bisect. Both close the bracket to the
same tolerance; this bench says what aiming saves and how far the answers move. For random
designs of each workload (`bench/busy_time_rank.py`'s draw: half of them with the state placed
as the advisor places it), each maximum-throughput search runs twice, bisecting and aiming,
one right after the other, at the pick's two settings: screening (100 batches, 8 %) and the
final round (300 batches, 1 %). It prints the probes and the CPU time of each (the ratio is
what to read: this machine is shared) and the aimed figure over the bisected one (each is
within its tolerance of the edge, so they may differ by up to it).

    python bench/rate_search_speed.py
    python bench/rate_search_speed.py --machines 4 --designs 6 --seed 3 --workloads linear-road,chain-32
"""
from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import engine_sim.sim.run as sim_run  # noqa: E402
from costmodel.graph import WorkloadGraph  # noqa: E402
from engine_sim.sim import Calibration, SimError, max_throughput  # noqa: E402
from engine_sim.sim.rate_search import search_rate  # noqa: E402
from busy_time_rank import random_designs, workload_of  # noqa: E402

SETTINGS = ((100, 0.08, "screening"), (300, 0.01, "final"))
WORKLOADS = ("linear-road,boundaries-32sp,online-bidding,tpcdi-trade,chain-32,gen20,"
             "streaming-ledger,voter-leaderboard")


def searched(workload, design, batches: int, tolerance: float, params, aim: bool):
    """(figure in tuples/s, probes, CPU seconds) of one maximum-throughput search."""
    sim_run.search_rate = functools.partial(search_rate, aim_at_edge=aim)
    try:
        started = time.process_time()
        r = max_throughput(workload, design, batches=batches, tolerance=tolerance, calibration=params)
        return r.throughput_tps, len(r.search), time.process_time() - started
    finally:
        sim_run.search_rate = search_rate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default=WORKLOADS)
    ap.add_argument("--machines", type=int, default=8)
    ap.add_argument("--designs", type=int, default=5, help="random designs per workload")
    ap.add_argument("--seed", type=int, default=4, help="seed of the random designs")
    ap.add_argument("--gen-seed", type=int, default=11, help="seed of the generated dataflows")
    args = ap.parse_args()
    params = Calibration.reference().params
    rows = []  # (setting, bisected figure, aimed figure, probes b, probes a, cpu b, cpu a)
    for name in args.workloads.split(","):
        w = workload_of(name, args.machines, args.gen_seed)
        g = WorkloadGraph.from_workload(w)
        for _proc, _state, design in random_designs(g, args.designs, args.seed):
            for batches, tolerance, label in SETTINGS:
                try:  # alternate which goes first, so drift in the machine's speed evens out
                    order = (False, True) if len(rows) % 2 == 0 else (True, False)
                    out = {aim: searched(w, design, batches, tolerance, params, aim) for aim in order}
                except SimError:
                    continue
                rows.append((label, out[False][0], out[True][0], out[False][1], out[True][1],
                             out[False][2], out[True][2]))
        print(f"{name}: done", file=sys.stderr)
    print(f"{len(rows)} searches ({args.designs} random designs x {len(args.workloads.split(','))} workloads "
          f"x 2 settings, {args.machines} machines)")
    print(f"{'setting':10} {'probes: bisect':>15} {'aim':>6} {'ratio':>6} {'CPU s: bisect':>14} {'aim':>6} "
          f"{'ratio':>6}   aimed / bisected figure: min  median  max")
    for label in [s[2] for s in SETTINGS] + ["all"]:
        sel = [r for r in rows if label in (r[0], "all")]
        if not sel:
            continue
        a = np.array([r[1:] for r in sel], dtype=float)
        fig = a[:, 1] / a[:, 0]
        print(f"{label:10} {a[:, 2].sum():15.0f} {a[:, 3].sum():6.0f} {a[:, 3].sum() / a[:, 2].sum():6.2f} "
              f"{a[:, 4].sum():14.1f} {a[:, 5].sum():6.1f} {a[:, 5].sum() / a[:, 4].sum():6.2f}   "
              f"{fig.min():30.3f} {np.median(fig):7.3f} {fig.max():5.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
