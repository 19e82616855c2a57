"""Simulator fidelity: does the simulator order designs as the engine's measurements do?

Runs designs of TPC-DI and the 32-SP chain that fit this machine on the engine (multi-process,
the command log written without fsync: the simulator models no disk) and on the simulator with
a calibration measured on this machine (its host cores shared by the emulated machines, the
same closed loop of 64 batches in flight as the engine's driver). Prints both throughputs, the
Spearman rank correlation (target >= 0.9) and the median relative error, each against the
uncalibrated reference-cluster parameters as the baseline.

    python bench/sim_fidelity.py [--calibration calibration.json] [--batches 300] [--repeats 2]

Without --calibration it measures one first (`advisor calibrate`, ~30 s) and saves it to
bench/calibration.json.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from advisor.design import Design  # noqa: E402
from advisor.spec import load_workload  # noqa: E402
from engine_sim.sim import Calibration, SimParams, run_once  # noqa: E402
from engine_sim.sim import scenarios as S  # noqa: E402

WINDOW = 64


def designs() -> list[tuple[str, object, Design]]:
    """(label, workload, design): everything fits 8 partitions."""
    tp, big, chain = load_workload("tpcdi-trade"), S.tpcdi_single_sp(), load_workload("chain-32")
    out = []

    def on(w, machines, ppm, procs, state, method):
        return Design(w.name, machines, ppm, procs, state, method=method)

    one = on(tp, 1, 1, {p: 0 for p in tp.procedure_names}, {t: 0 for t in tp.table_names}, "one-partition")
    out.append(("tpcdi one partition", tp, one))
    out.append(("tpcdi SP per partition, 1 node", tp, S.tpcdi_design(tp, 1)))
    out.append(("tpcdi SP per partition, 4 machines", tp, S.tpcdi_design(tp, 4)))
    order = tp.topological_order()
    rotated = S.tpcdi_design(tp, 2)
    rotated.procedures = {p: (order.index(p) + 1) % 4 for p in order}  # every SP away from its state
    out.append(("tpcdi SPs away from state, 2 machines", tp, rotated))
    out.append(("tpcdi one big SP, 1 node", big, S.tpcdi_design(big, 1)))
    out.append(("tpcdi one big SP, 4 machines", big, S.tpcdi_design(big, 4)))
    out.append(("chain-32 one partition", chain,
                on(chain, 1, 1, {p: 0 for p in chain.procedure_names}, {t: 0 for t in chain.table_names},
                   "one-partition")))
    out.append(("chain-32 1 machine x 4", chain, S.chain_design(chain, 1)))
    out.append(("chain-32 2 machines x 2", chain, S.chain_design(chain, 2, 2)))
    out.append(("chain-32 2 machines x 4", chain, S.chain_design(chain, 2)))
    rr = S.chain_design(chain, 1)
    rr.procedures = {f"SP{i + 1}": i % 4 for i in range(32)}  # every hop a MOVE, tables stay
    out.append(("chain-32 round robin, state apart", chain, rr))
    return out


def engine_tps(w, d: Design, batches: int, repeats: int) -> list[float]:
    """Throughput of each engine run (the bench keeps the best: the least disturbed)."""
    from engine_sim.calibration import ENGINE_OPTIONS
    from engine_sim.engine import run_workload

    runs = []
    for i in range(repeats):
        r = run_workload(w, d, batches=batches, window=WINDOW, seed=i, **ENGINE_OPTIONS)
        if r.history_check != "ok":
            raise SystemExit(f"engine run failed its history check: {r.history_check}")
        runs.append(r.throughput_tps)
    return runs


def sim_tps(w, d: Design, params: SimParams, batches: int) -> float:
    return run_once(w, d, window=WINDOW, calibration=params, batches=batches).throughput_tps


def report(label: str, engine: np.ndarray, sim: np.ndarray, idx: list[int]) -> tuple[float, float]:
    rho = spearmanr(engine[idx], sim[idx]).statistic if len(set(sim[idx])) > 1 else float("nan")
    err = float(np.median(np.abs(sim[idx] - engine[idx]) / engine[idx]))
    print(f"  {label:<34} Spearman {rho:5.2f}   median relative error {err:6.1%}")
    return rho, err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", type=Path, default=None)
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2, help="engine runs per design (best kept)")
    args = ap.parse_args()
    if args.calibration is None:
        from engine_sim.calibration import calibrate

        cal = calibrate(progress=lambda m: print(m, flush=True))
        args.calibration = cal.save(Path(__file__).resolve().parent / "calibration.json")
        print(f"saved {args.calibration}\n")
    cal = Calibration.load(args.calibration)
    params = cal.params  # host_cores as measured: the engine runs every machine on this host
    print(f"calibration: {args.calibration} (measured on {cal.machine.get('hostname')}, "
          f"{cal.machine.get('cpus')} cpus, {cal.machine.get('engine_mode')} engine, "
          f"host_cores={params.host_cores})\n")
    rows, spreads = [], []
    for label, w, d in designs():
        runs = engine_tps(w, d, args.batches, args.repeats)
        e = max(runs)
        spreads.append(e / min(runs))
        s = sim_tps(w, d, params, args.batches)
        ref = sim_tps(w, d, SimParams(), args.batches)
        rows.append((label, w.name.split("/")[0], e, s, ref))
        print(f"{label:<40} engine {e:>9,.0f} (runs {' '.join(f'{x:,.0f}' for x in runs)})  "
              f"simulator {s:>9,.0f} ({s / e:4.2f}x)  reference params {ref:>9,.0f} tuples/s",
              flush=True)
    engine = np.array([r[2] for r in rows])
    sim = np.array([r[3] for r in rows])
    ref = np.array([r[4] for r in rows])
    all_idx = list(range(len(rows)))
    print(f"\n{len(rows)} designs, engine throughput (tuples/s) vs simulator prediction:")
    rho, err = report("calibrated, all designs", engine, sim, all_idx)
    for wl in sorted({r[1] for r in rows}):
        report(f"calibrated, {wl} only", engine, sim, [i for i, r in enumerate(rows) if r[1] == wl])
    rho_ref, err_ref = report("reference params (baseline)", engine, ref, all_idx)
    print(f"  engine run-to-run spread (best/worst of {args.repeats}): median "
          f"{np.median(spreads):.2f}x, largest {max(spreads):.2f}x")
    print(f"\nSpearman {rho:.2f} (target >= 0.90: {'met' if rho >= 0.9 else 'NOT met'}); "
          f"median error {err:.1%} vs {err_ref:.1%} uncalibrated (ratio {err / err_ref:.2f})")


if __name__ == "__main__":
    main()
