"""Is the recommendation the fastest design? Three checks, each against baselines measured in
the same run (absolute numbers depend on this machine and its load).

1. Predicted: for every bundled workload on 2, 4 and 8 machines, the simulator's maximum
   throughput of the recommendation (default weights, `--objective throughput`) and of the
   best baseline, at the same fidelity; their ratio. Target: >= 0.95 in every row, median
   >= 1.0. Also the time `recommend` took (target: under 5 s).
2. Measured: for the workloads with shared state, on 2 machines, the engine (one process per
   partition) runs the recommendation and every distinct baseline design; the recommendation
   against the best baseline measured. Target: >= 0.9.
3. The moonshot: on the workloads small enough to try every design on 2 machines, every
   assignment of SPs and state to the machines (up to relabelling; partitions within a machine
   placed as the search places them) is simulated; the recommendation against the best.
   Target: >= 0.98.

A missed target prints MISSED; the bench exits non-zero only on errors.

    python bench/recommend_quality.py               # all of it (several minutes)
    python bench/recommend_quality.py --quick       # fewer simulated batches, one engine run each
    python bench/recommend_quality.py --no-engine   # the simulator parts only
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.api import recommend  # noqa: E402
from costmodel.design import Design  # noqa: E402
from advisor.exhaustive import count_assignments  # noqa: E402
from advisor.candidate_pool import (relabelled_design_key, restricted_growth,  # noqa: E402
                                    scored_candidate, within_machines)
from costmodel.spec_reader import bundled_workloads  # noqa: E402
from engine_sim.sim import Calibration, max_throughput  # noqa: E402

SHARED_STATE = ("streaming-ledger", "online-bidding", "voter-leaderboard", "bank-transfer")
ENUMERABLE = ("voter-leaderboard", "streaming-ledger", "online-bidding", "tpcdi-trade")
PREDICTED_TARGET, MEDIAN_TARGET, ENGINE_TARGET, MOONSHOT_TARGET = 0.95, 1.0, 0.9, 0.98
ENUMERATION_CAP = 5000


def flag(ratio: float, target: float) -> str:
    return "ok" if ratio >= target else f"MISSED (target {target:g})"


def predict(workload, design: Design, batches: int) -> float:
    """Tuples/s the simulator predicts (reference cluster), the same way for every design."""
    return max_throughput(workload, design, calibration=Calibration.reference(),
                          batches=batches).throughput_tps


def predicted_rows(machines: list[int], batches: int) -> list[dict]:
    print(f"1. predicted maximum throughput (simulator, reference cluster, {batches} batches "
          "per design), recommendation vs the best baseline\n")
    head = (f"{'workload':<18} {'m':>2} {'recommended':>12} {'best baseline':>28} {'ratio':>6}  "
            f"{'recommend s':>11}  {'picked':<34} verdict")
    print(head + "\n" + "-" * len(head), flush=True)
    rows = []
    for name in bundled_workloads():
        for m in machines:
            started = time.perf_counter()
            rec = recommend(name, machines=m)
            took = time.perf_counter() - started
            w = rec.workload.with_cluster(m, None)
            mine = predict(w, rec.design, batches)
            base = {b: predict(w, d, batches) for b, d in rec.baselines.items()}
            best = max(base, key=base.get)
            ratio = mine / base[best]
            rows.append({"workload": name, "machines": m, "ratio": ratio, "seconds": took})
            sel = rec.selection
            picked = sel.chosen.label if sel.objective == "throughput" else "cost (fell back)"
            print(f"{name:<18} {m:>2} {mine:>12,.0f} {best:>17} {base[best]:>10,.0f} {ratio:>6.2f}  "
                  f"{took:>11.2f}  {picked[:34]:<34} {flag(ratio, PREDICTED_TARGET)}", flush=True)
    ratios = [r["ratio"] for r in rows]
    med = statistics.median(ratios)
    below = sum(r < PREDICTED_TARGET for r in ratios)
    slowest = max(rows, key=lambda r: r["seconds"])
    print(f"\n   rows below {PREDICTED_TARGET}: {below} of {len(rows)} "
          f"({'ok' if below == 0 else 'MISSED'}); worst {min(ratios):.2f}; median {med:.2f} "
          f"({flag(med, MEDIAN_TARGET)})")
    print(f"   slowest recommend: {slowest['seconds']:.2f} s ({slowest['workload']} on "
          f"{slowest['machines']} machines; target < 5 s: "
          f"{'ok' if slowest['seconds'] < 5 else 'MISSED'})\n", flush=True)
    return rows


def engine_rows(batches: int, repeats: int, calibration: Path | None) -> list[dict]:
    """The engine here runs every emulated machine on this host's cores, which a simulator
    with the reference cluster's parameters does not predict. So two picks are measured: the
    default recommendation (for a real cluster) and the one the simulator makes with this
    host's calibration as this host runs the engine (`calibration=calibration.on_host()`)."""
    from engine_sim.engine import run_workload
    from engine_sim.engine.run_options import CommandLogOptions

    host = None
    if calibration is not None and calibration.is_file():
        host = Calibration.load(calibration).on_host()  # host cores as measured: this host
    print(f"2. measured on the engine (multi-process, 2 machines, {batches} batches, best of "
          f"{repeats}), the recommendation vs the best baseline measured"
          + (f"; 'for this host' = picked with {calibration} as this host runs the engine"
             if host is not None else "") + "\n")
    rows = []
    for name in SHARED_STATE:
        if name not in bundled_workloads():
            print(f"{name}: not bundled, skipped")
            continue
        rec = recommend(name, machines=2)
        w = rec.workload.with_cluster(2, None)
        designs = {"recommended": rec.design}
        if host is not None:
            designs["for this host"] = recommend(name, machines=2, calibration=host).design
        designs.update(rec.baselines)
        seen: dict[bytes, str] = {}
        measured: dict[str, float] = {}
        for label, d in designs.items():
            key = relabelled_design_key(scored_candidate(rec.graph, d.weights, label, "", *d.arrays(rec.graph)),
                                        rec.graph)
            if key in seen:  # the same design (up to relabelling): measured once
                measured[label] = measured[seen[key]]
                continue
            seen[key] = label
            runs = []
            for i in range(repeats):
                r = run_workload(w, d, batches=batches, seed=i, command_log=CommandLogOptions(fsync=False))
                if r.history_check != "ok":
                    raise SystemExit(f"{name} {label}: history check failed: {r.history_check}")
                runs.append(r.throughput_tps)
            measured[label] = max(runs)
        picks = {k: measured.pop(k) for k in ("recommended", "for this host") if k in measured}
        best = max(measured, key=measured.get)
        for label, mine in picks.items():
            ratio = mine / measured[best]
            rows.append({"workload": name, "pick": label, "ratio": ratio})
            print(f"{name:<18} {label:<14} {mine:>9,.0f}  best baseline {best} {measured[best]:>9,.0f}  "
                  f"ratio {ratio:4.2f}  {flag(ratio, ENGINE_TARGET)}", flush=True)
        print("    (" + "  ".join(f"{k} {v:,.0f}" for k, v in measured.items()) + ")", flush=True)
    print()
    return rows


def moonshot_rows(batches: int) -> list[dict]:
    print(f"3. the moonshot: every design on 2 machines, simulated ({batches} batches each)\n")
    rows = []
    for name in ENUMERABLE:
        if name not in bundled_workloads():
            print(f"{name}: not bundled, skipped")
            continue
        rec = recommend(name, machines=2)
        g, weights = rec.graph, rec.design.weights
        w = rec.workload.with_cluster(2, None)
        n = g.n_nodes
        count = count_assignments(n, 2, True)
        if count > ENUMERATION_CAP:
            print(f"{name}: {count} designs, more than {ENUMERATION_CAP}: skipped")
            continue
        started = time.perf_counter()
        best_tps, best_label = 0.0, ""
        for i, row in enumerate(restricted_growth(n, 2)):
            proc, state = within_machines(g.cost, row[:g.n_proc], row[g.n_proc:], weights)
            d = Design.from_arrays(g, proc, state, weights, method=f"enumerated #{i}")
            tps = predict(w, d, batches)
            if tps > best_tps:
                best_tps, best_label = tps, d.method
        mine = predict(w, rec.design, batches)
        ratio = mine / best_tps
        rows.append({"workload": name, "ratio": ratio})
        print(f"{name:<18} {count:>5} designs in {time.perf_counter() - started:5.1f} s: best "
              f"{best_tps:>9,.0f} ({best_label}); recommended {mine:>9,.0f}  ratio {ratio:4.2f}  "
              f"{flag(ratio, MOONSHOT_TARGET)}", flush=True)
    print()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer batches, one engine run each")
    ap.add_argument("--no-engine", action="store_true", help="skip the engine measurements")
    ap.add_argument("--no-moonshot", action="store_true", help="skip trying every design")
    ap.add_argument("--machines", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--calibration", type=Path, default=Path(__file__).resolve().parent / "calibration.json",
                    help="this host's calibration, for the engine part's 'for this host' pick")
    ap.add_argument("--no-predicted", action="store_true", help="skip the predicted table")
    args = ap.parse_args()
    sim_batches = 300 if args.quick else 600
    started = time.perf_counter()
    if not args.no_predicted:
        predicted_rows(args.machines, sim_batches)
    if not args.no_engine:
        engine_rows(batches=150 if args.quick else 300, repeats=1 if args.quick else 2,
                    calibration=args.calibration)
    if not args.no_moonshot:
        moonshot_rows(100 if args.quick else 300)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
