"""Does a calibration price the bytes a stream carries? move-micro across two machines with
its stream's `tuple_bytes` widened, run on the multi-process engine (which pads each batch
crossing between processes to tuples x tuple_bytes since stop 61) beside the simulator's
closed-loop prediction for this host with each calibration given (the engine's own
measurement simulated: 64 batches in flight).

    python bench/wide_tuples.py --calibration advisor/data/calibration.json /tmp/new.json
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.sources import load_graph, load_workload  # noqa: E402
from costmodel.design import Design  # noqa: E402
from costmodel.weights import Weights  # noqa: E402
from engine_sim.engine import run_workload  # noqa: E402
from engine_sim.engine.run_options import ClientOptions  # noqa: E402
from engine_sim.sim import Calibration, run_once  # noqa: E402

WIDTHS = (64, 10_000, 100_000, 1_000_000)


def widened(tuple_bytes: int):
    w = load_workload("move-micro")
    return dataclasses.replace(w, streams=tuple(dataclasses.replace(s, tuple_bytes=tuple_bytes)
                                                for s in w.streams))


def split_design(workload) -> Design:
    """SP1 and T1 on machine 0, SP2 and T2 on machine 1: every batch crosses once."""
    graph = load_graph(workload)
    procs = [0 if n == "SP1" else 1 for n in graph.proc_names]
    state = [0 if n == "T1" else 1 for n in graph.state_names]
    return Design.from_arrays(graph, procs, state, Weights(0.3, 0.1, 0.6), method="split")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calibration", nargs="+", required=True, help="calibration files of this host")
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--runs", type=int, default=2, help="engine runs per width")
    a = ap.parse_args()
    hosts = [Calibration.load(p).on_host() for p in a.calibration]
    print(f"host: {os.cpu_count()} cores; move-micro over 2 machines, {a.batches} batches, tuples/s")
    columns = "  ".join(f"predicted [{i + 1}]" for i in range(len(hosts)))
    print(f"{'tuple_bytes':>11} {'measured (median)':>17}  {columns}")
    for width in WIDTHS:
        w = widened(width)
        d = split_design(w)
        runs = [run_workload(w, d, batches=a.batches, seed=0).throughput_tps for _ in range(a.runs)]
        measured = statistics.median(runs)
        preds = [run_once(w, d, in_flight=ClientOptions().in_flight, calibration=c,
                          batches=a.batches).throughput_tps for c in hosts]
        print(f"{width:>11,} {measured:>17,.0f}  " + "  ".join(f"{p:>9,.0f} ({p / measured:.2f}x)" for p in preds),
              flush=True)
    for i, p in enumerate(a.calibration):
        print(f"[{i + 1}] {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
