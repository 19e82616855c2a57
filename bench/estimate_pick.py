"""The pick past what the simulator judges in time: by the busy-time estimate, against the cost
model's cheapest design (the pick before) and, with `--simulated`, against the simulated pick
with the simulator's size limits lifted (what a user would get by waiting).

Each pick is simulated the same way afterwards (300 batches, the reference cluster, 1 %
tolerance: the recommendation's own figure) and its `recommend` timed in this process, one
process at a time (`jobs=1`); the ratios are what to read, the seconds only on a quiet machine.

Cases: generated dataflows of `bench/recommend_scale.py`'s two shapes beyond its sizes, seeds
fixed: gen300 (300 SPs, 64 machines), gen500 (500, 100), shared300 (300 SPs, 64 machines x 2
partitions, tables shared anywhere), or any of recommend_scale's case names, `#SEED` for
another seed of a shape. A case small enough to simulate is picked by the estimate here all the
same (the limits are set to 0 for that pick), so the small ones show how the estimate's pick
compares with the simulated one where both can run.

    python bench/estimate_pick.py
    python bench/estimate_pick.py --cases gen300,gen40,shared40 --simulated
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import advisor.sim_limits as sim_limits  # noqa: E402
from advisor.api import recommend  # noqa: E402
from engine_sim.sim import Calibration, max_throughput  # noqa: E402
from recommend_scale import case_workload, generated_workload, shared_workload  # noqa: E402

BEYOND = {"gen300": (300, 64, 1), "gen500": (500, 100, 1), "shared300": (300, 64, 2)}  # SPs, machines, ppm


def workload_of(case: str):
    """(workload, machines, partitions per machine) of a case name."""
    name, _, seed = case.partition("#")
    if name in BEYOND:
        n, m, ppm = BEYOND[name]
        if name.startswith("gen"):
            return generated_workload(n, m, seed=int(seed) if seed else 19_000 + n), m, ppm
        return shared_workload(n, m, int(seed) if seed else 509), m, ppm
    return case_workload(case)


def timed_pick(w, machines: int, ppm: int, **kw):
    started = time.perf_counter()
    rec = recommend(w, machines=machines, partitions_per_machine=ppm, seed=0, baselines=False, jobs=1, **kw)
    return rec, time.perf_counter() - started


def simulated(w, design) -> float:
    return max_throughput(w, design, batches=300, tolerance=0.01,
                          calibration=Calibration.reference().params).throughput_tps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="gen300,gen500,shared300")
    ap.add_argument("--simulated", action="store_true",
                    help="also the simulated pick with the simulator's size limits lifted (slow)")
    args = ap.parse_args()
    limits = sim_limits.MAX_SIM_SIZE, sim_limits.MAX_SIM_BATCH_WORK, sim_limits.MAX_SIM_PARTITIONS
    print(f"{'case':<14}{'cost pick':>11}{'estimate pick':>15}{'x cost':>8}{'s':>7}"
          + (f"{'simulated pick':>16}{'s':>7}{'est/sim':>9}" if args.simulated else ""))
    for case in args.cases.split(","):
        w, m, ppm = workload_of(case)
        cheapest, _ = timed_pick(w, m, ppm, objective="cost")
        try:
            sim_limits.MAX_SIM_SIZE = sim_limits.MAX_SIM_BATCH_WORK = sim_limits.MAX_SIM_PARTITIONS = 0
            by_estimate, est_s = timed_pick(w, m, ppm)
            if args.simulated:
                sim_limits.MAX_SIM_SIZE = sim_limits.MAX_SIM_BATCH_WORK = sim_limits.MAX_SIM_PARTITIONS = 10 ** 12
                by_simulator, sim_s = timed_pick(w, m, ppm)
        finally:
            sim_limits.MAX_SIM_SIZE, sim_limits.MAX_SIM_BATCH_WORK, sim_limits.MAX_SIM_PARTITIONS = limits
        assert by_estimate.selection.objective == "estimate"
        cost_tps, est_tps = simulated(w, cheapest.design), simulated(w, by_estimate.design)
        line = f"{case:<14}{cost_tps:>11,.0f}{est_tps:>15,.0f}{est_tps / cost_tps:>8.2f}{est_s:>7.1f}"
        if args.simulated:
            sim_tps = simulated(w, by_simulator.design)
            line += f"{sim_tps:>16,.0f}{sim_s:>7.1f}{est_tps / sim_tps:>9.3f}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
