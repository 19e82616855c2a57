"""Simulator speed: simulated transactions per second of wall time on the 32-SP chain over
8 machines (4 partitions each, DLS, RPC MOVEs) at 90 % of its capacity. Target: 200,000.

Baseline, measured in the same process: a bare heapq event loop (pop, dispatch to a handler
that pushes the next event) doing the same number of events with no model at all, i.e. the
ceiling any heap-based Python simulator of this event count can reach.

    python bench/sim_speed.py [--batches 5000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from heapq import heappop, heappush
from itertools import count
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.sources import load_workload  # noqa: E402
from engine_sim.sim.model import EngineModel  # noqa: E402
from costmodel.sim_params import SimParams  # noqa: E402
from engine_sim.sim.compiled import compile_plan  # noqa: E402
from engine_sim.sim.scenario_designs import chain_design  # noqa: E402

TARGET = 200_000


def bare_loop(events: int) -> float:
    """Seconds a minimal heap loop takes for `events` events (one pending event at a time)."""
    heap: list = []
    seq = count()
    left = [events]

    def handler(t, a, b):
        left[0] -= 1
        if left[0] > 0:
            heappush(heap, (t + 1e-6, next(seq), handler, a, b))

    for i in range(64):  # about as many events in flight as the chain keeps
        heappush(heap, (i * 1e-7, next(seq), handler, 0, 0))
    started = time.perf_counter()
    while heap:
        t, _, fn, a, b = heappop(heap)
        fn(t, a, b)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    w = load_workload("chain-32")
    d = chain_design(w, 8)
    params = SimParams()
    t0 = time.perf_counter()
    plan = compile_plan(w, d, params=params, scheduler="dls", move="rpc", batches=args.batches,
                        batch_size=None, seed=0)
    compile_s = time.perf_counter() - t0
    capacity = 1.0 / max(sum(u.service) / len(u.service) for u in plan.units)  # one SP per partition
    best = float("inf")
    events = txns = 0
    for _ in range(args.repeat):
        model = EngineModel(plan, 0.9 * capacity)
        t0 = time.perf_counter()
        model.run()
        best = min(best, time.perf_counter() - t0)
        model.check_finished()  # every batch completed: the run counts
        events = model.env.events
        txns = sum(model.u_commits)  # transactions the run committed, counted by its handlers
    bare = min(bare_loop(events) for _ in range(args.repeat))
    tps = txns / best
    print(f"chain-32 on 8 machines x 4 partitions, DLS, {args.batches} batches at "
          f"{0.9 * capacity:,.0f} batches/s: {txns:,} transactions, {events:,} events")
    print(f"  plan compile            {compile_s * 1e3:8.1f} ms")
    print(f"  event loop (best of {args.repeat})  {best * 1e3:8.1f} ms")
    print(f"  simulated txns / s      {tps:12,.0f}   (target {TARGET:,}: ratio {tps / TARGET:.2f})")
    print(f"  events / s              {events / best:12,.0f}   (bare heap loop {events / bare:,.0f}/s: "
          f"ratio {bare / best:.2f})")


if __name__ == "__main__":
    main()
