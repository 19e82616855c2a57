"""Does recommend's pick depend on its seed? A search that stops short shows it first.

The bench's annealer (`bench/recommend_scale.py`) runs out of time long before its budget on
100 SPs and more, so it bounds nothing there. A cheaper signal: recommend the same dataflow
with several seeds (the seed draws the cost search's METIS runs and the random starts) and
predict each pick on the same longer run. Where the busy-time estimate orders the picks as
the simulator does, a spread of several percent says the search stopped short on some seeds
(stops 63 and 64 found their climbs' local optima so: gen100 by 20 %, gen100#4503 by 17 %);
where it does not, the estimate's ranking is what to look at (`bench/busy_time_rank.py`).

Cases: `recommend_scale`'s (gen100, shared60#4605, ...: `#SEED` draws that shape with another
seed), or `gen-SEED@MACHINES` for `trace_quality`'s small generated dataflows. Each pick is
predicted by the simulator on `--batches` batches, reference cluster, seed 0; the estimate's
figure of each pick is printed beside it.

    python bench/seed_spread.py --cases gen100#4501,shared60#4605
    python bench/seed_spread.py --cases gen-3807@4 --seeds 0,1,2,3
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from advisor.api import recommend  # noqa: E402
from advisor.busy_estimate import BusyEstimate  # noqa: E402
from costmodel.graph import WorkloadGraph  # noqa: E402
from costmodel.workload import Workload  # noqa: E402
from engine_sim.sim import Calibration, max_throughput  # noqa: E402
from recommend_scale import case_workload  # noqa: E402
from trace_quality import generated_workload  # noqa: E402


@dataclass
class Pick:
    seed: int
    predicted_tps: float  # on the bench's batches
    estimated_tps: float
    recommend_s: float


def workload_of(case: str) -> Workload:
    """The case's workload on its own cluster."""
    if case.startswith("gen-"):
        seed, _, machines = case[4:].partition("@")
        w = generated_workload(int(seed))
        return w.with_cluster(int(machines or w.cluster.machines), w.cluster.partitions_per_machine)
    w, machines, ppm = case_workload(case)
    return w.with_cluster(machines, ppm)


def picks(workload: Workload, seeds: list[int], batches: int) -> list[Pick]:
    params = Calibration.reference().params
    graph = WorkloadGraph.from_workload(workload)
    estimate = BusyEstimate.of(graph, workload, params)
    out = []
    for seed in seeds:
        started = time.perf_counter()
        rec = recommend(workload, baselines=False, seed=seed)
        took = time.perf_counter() - started
        proc, state = rec.design.arrays(graph)
        tps = max_throughput(workload, rec.design, batches=batches, calibration=params).throughput_tps
        out.append(Pick(seed, float(tps), estimate.throughput_tps(proc, state), took))
    return out


def spread(found: list[Pick]) -> float:
    """The fastest pick over the slowest, by the simulator."""
    figures = [p.predicted_tps for p in found]
    return max(figures) / min(figures)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", required=True, help="comma-separated: gen100, shared60#4605, gen-3807@4 ...")
    ap.add_argument("--seeds", default="0,1,2", help="recommend's seeds")
    ap.add_argument("--batches", type=int, default=2000, help="batches per prediction of a pick")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"{'case':<18}{'seed':>5}{'predicted':>11}{'estimated':>11}{'recommend s':>13}")
    for case in args.cases.split(","):
        found = picks(workload_of(case), seeds, args.batches)
        for p in found:
            print(f"{case:<18}{p.seed:>5}{p.predicted_tps:>11,.0f}{p.estimated_tps:>11,.0f}{p.recommend_s:>13.1f}")
        print(f"{case:<18} spread {spread(found):.3f} (fastest / slowest pick)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
