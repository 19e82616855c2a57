"""Simulator fidelity: does the simulator order designs as the engine's measurements do?

Runs designs of three workloads that fit this machine on the engine (multi-process, the
command log written without fsync: the simulator models no disk) and on the simulator with a
calibration measured on this machine (its host cores shared by the emulated machines, the
same closed loop of 64 batches in flight as the engine's driver):

- TPC-DI Trade.txt (a pipeline of SPs over their own tables; one big distributed SP),
- the 32-SP chain,
- Streaming Ledger (shared state: the sibling SPs Transfer and Deposit both write Accounts
  and AssetBook; designs that keep them together or split them into 2PC).

For each workload alone it prints the Spearman rank correlation (target >= 0.9) and the median
relative error, and whether the design the simulator ranks first measures within 10 % of the
engine's best. Pooled over every design, throughputs are first divided by their workload's
mean (the engine's by the engine's mean, the simulator's by the simulator's), so a workload
that is simply faster does not make the ranking look good (target >= 0.85). The uncalibrated
reference parameters are the baseline.

    python bench/sim_fidelity.py [--calibration calibration.json] [--batches N] [--repeats 3]
                                 [--workloads tpcdi,chain,ledger]
                                 [--save-engine engine.json | --engine-results engine.json]
                                 [--background mean|run|none] [--details]

`--save-engine FILE` writes every engine run (throughput and what the engine reports: partition
busy and CPU time, driver CPU, messages, distributed transactions, MOVEs, the load average)
to FILE; `--engine-results FILE` re-uses such a file instead of running the engine, so the
simulator side can be iterated on offline. With two or more repeats it also prints the
engine's own run-to-run rank agreement (Spearman between repeats, per workload): the ceiling
any simulator can reach on these measurements. The simulator runs beside the host's other
jobs (`SimParams.background_jobs`): by default their mean over the engine runs, each sampled
just before its run.

Without --calibration it measures one first (`advisor calibrate`, ~30 s) and saves it to
bench/calibration.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from costmodel.design import Design  # noqa: E402
from advisor.sources import load_workload  # noqa: E402
from engine_sim.sim import Calibration, SimParams, run_once  # noqa: E402
from engine_sim.sim import scenario_designs as designs  # noqa: E402
from engine_sim.sim import scenarios as S  # noqa: E402

IN_FLIGHT = 64  # batches the client keeps in flight, as the engine's driver by default
TOP_WITHIN = 0.10  # the simulator's pick must measure within 10 % of the engine's best


def _on(w, machines: int, ppm: int, procs: dict, state: dict, method: str) -> Design:
    return Design(w.name, machines, ppm, procs, state, method=method)


def tpcdi_designs() -> list[tuple[str, object, Design]]:
    tp, big = load_workload("tpcdi-trade"), S.tpcdi_single_sp()
    one = _on(tp, 1, 1, {p: 0 for p in tp.procedure_names}, {t: 0 for t in tp.table_names}, "one-partition")
    order = tp.topological_order()
    rotated = designs.tpcdi_design(tp, 2)
    rotated.procedures = {p: (order.index(p) + 1) % 4 for p in order}  # every SP away from its state
    return [("one partition", tp, one),
            ("SP per partition, 1 node", tp, designs.tpcdi_design(tp, 1)),
            ("SP per partition, 4 machines", tp, designs.tpcdi_design(tp, 4)),
            ("SPs away from state, 2 machines", tp, rotated),
            ("one big SP, 1 node", big, designs.tpcdi_design(big, 1)),
            ("one big SP, 4 machines", big, designs.tpcdi_design(big, 4))]


def chain_designs() -> list[tuple[str, object, Design]]:
    chain = load_workload("chain-32")
    rr = designs.chain_design(chain, 1)
    rr.procedures = {f"SP{i + 1}": i % 4 for i in range(32)}  # every hop a MOVE, tables stay
    return [("one partition", chain, _on(chain, 1, 1, {p: 0 for p in chain.procedure_names},
                                         {t: 0 for t in chain.table_names}, "one-partition")),
            ("1 machine x 4", chain, designs.chain_design(chain, 1)),
            ("2 machines x 2", chain, designs.chain_design(chain, 2, 2)),
            ("2 machines x 4", chain, designs.chain_design(chain, 2)),
            ("round robin, state apart", chain, rr)]


def ledger_designs() -> list[tuple[str, object, Design]]:
    """Streaming Ledger: Parse feeds Transfer and Deposit, which both write both tables."""
    w = load_workload("streaming-ledger")

    def d(machines, ppm, parse, transfer, deposit, accounts, books, label):
        return (label, w, _on(w, machines, ppm, {"Parse": parse, "Transfer": transfer, "Deposit": deposit},
                              {"Accounts": accounts, "AssetBook": books}, "fidelity"))

    return [d(1, 1, 0, 0, 0, 0, 0, "one partition"),
            d(2, 1, 0, 1, 1, 1, 1, "Parse apart, 2 machines"),
            d(1, 2, 0, 1, 1, 1, 1, "Parse apart, 1 machine x 2"),
            d(2, 2, 0, 1, 1, 1, 2, "tables split, siblings together (2PC), 2x2"),
            d(2, 2, 0, 1, 2, 1, 2, "tables split, siblings apart (2PC), 2x2"),
            d(2, 2, 1, 2, 2, 0, 3, "everything apart (2PC across machines), 2x2")]


WORKLOADS = {"tpcdi": ("TPC-DI", tpcdi_designs), "chain": ("chain-32", chain_designs),
             "ledger": ("streaming-ledger", ledger_designs)}
# batches per engine run, so every run lasts seconds (2-10 s here): a run of well under a
# second is mostly start-up and warm-up, and its throughput the noisiest
BATCHES = {"tpcdi": 2000, "chain": 300, "ledger": 3000}


ENGINE_FORMAT = "advisor.fidelity-engine/1"
KEPT = ("throughput_tps", "throughput_bps", "latency_p50_ms", "latency_mean_ms", "distributed_txns",
        "moves", "move_txns", "committed", "aborts", "restarts", "messages", "log_records",
        "partition_busy_s", "partition_cpu_s", "driver_cpu_s", "wall_s", "in_flight", "machines",
        "partitions_per_machine")


def engine_run(w, d: Design, batches: int, seed: int) -> dict:
    """What one engine run reported, with the host's load average when it ended and its other
    runnable jobs just before it started."""
    from engine_sim.calibrate import ENGINE_COMMAND_LOG, background_jobs
    from engine_sim.engine import run_workload
    from engine_sim.engine.run_options import ClientOptions

    others = background_jobs()
    r = run_workload(w, d, batches=batches, seed=seed, command_log=ENGINE_COMMAND_LOG,
                     client=ClientOptions(in_flight=IN_FLIGHT))
    if r.history_check != "ok":
        raise SystemExit(f"engine run failed its history check: {r.history_check}")
    rec = {k: v for k, v in r.to_dict().items() if k in KEPT}
    rec["loadavg_1m"] = os.getloadavg()[0]
    rec["background_jobs"] = others
    return rec


def measure_engine(chosen: list[str], batches: dict[str, int], repeats: int, save: Path | None) -> dict:
    """{workload: {design: [run, ...]}}. Repeats are interleaved (every design once, then every
    design again), so a burst of the host's other jobs slows one repeat of many designs rather
    than every repeat of one design; the bench keeps each design's best run."""
    runs_by: dict = {WORKLOADS[key][0]: {} for key in chosen}
    for i in range(repeats):
        for key in chosen:
            name, make = WORKLOADS[key]
            for label, w, d in make():
                rec = engine_run(w, d, batches[name], seed=i)
                runs_by[name].setdefault(label, []).append(rec)
                print(f"  engine {name} {label} (repeat {i + 1}/{repeats}): "
                      f"{rec['throughput_tps']:,.0f} tuples/s", flush=True)
        if save:  # after each round: a crash keeps what was measured
            save_engine(save, runs_by, {n: batches[n] for n in runs_by})
    return runs_by


def save_engine(path: Path, runs: dict, batches: dict[str, int]) -> None:
    """`batches`: per workload name, the batches of each of its runs."""
    from costmodel.files import atomic_write_text

    doc = {"format": ENGINE_FORMAT, "batches": batches, "in_flight": IN_FLIGHT,
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpus": os.cpu_count(), "runs": runs}
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def load_engine(path: Path) -> dict:
    """{workload name: {design label: [run, ...]}} from a `--save-engine` file."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"cannot read engine results {path}: {e}")
    if not isinstance(doc, dict) or doc.get("format") != ENGINE_FORMAT:
        raise SystemExit(f"{path} is not an engine results file ({ENGINE_FORMAT})")
    if not isinstance(doc.get("batches"), dict):  # files before per-workload batch counts
        doc["batches"] = {name: doc.get("batches") for name in doc.get("runs", {})}
    return doc


def repeat_agreement(runs: dict[str, list[dict]]) -> float:
    """Mean Spearman between every two repeats of the engine over one workload's designs."""
    n = min(len(r) for r in runs.values())
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if not pairs:
        return float("nan")
    values = [spearman(np.array([r[i]["throughput_tps"] for r in runs.values()]),
                       np.array([r[j]["throughput_tps"] for r in runs.values()])) for i, j in pairs]
    return float(np.mean(values))


def sim_run(w, d: Design, params: SimParams, batches: int):
    return run_once(w, d, in_flight=IN_FLIGHT, calibration=params, batches=batches)


def sim_tps(w, d: Design, params: SimParams, batches: int) -> float:
    return sim_run(w, d, params, batches).throughput_tps


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def median_error(engine: np.ndarray, sim: np.ndarray) -> float:
    return float(np.median(np.abs(sim - engine) / engine))


def top_pick(engine: np.ndarray, sim: np.ndarray) -> tuple[int, float]:
    """(index of the simulator's first design, its measured throughput / the engine's best)."""
    pick = int(np.argmax(sim))
    return pick, float(engine[pick] / engine.max())


def normalised(values: np.ndarray, groups: list[str]) -> np.ndarray:
    """Each value divided by the mean of its workload's values."""
    out = np.empty_like(values)
    for g in set(groups):
        idx = [i for i, x in enumerate(groups) if x == g]
        out[idx] = values[idx] / values[idx].mean()
    return out


def summarise(rows: list[tuple[str, str, float, float, float]]) -> dict:
    """rows: (workload, design, engine, calibrated sim, reference sim)."""
    groups = [r[0] for r in rows]
    engine, sim, ref = (np.array([r[k] for r in rows]) for k in (2, 3, 4))
    out: dict = {"workloads": {}}
    for g in dict.fromkeys(groups):
        idx = [i for i, x in enumerate(groups) if x == g]
        e, s, f = engine[idx], sim[idx], ref[idx]
        pick, share = top_pick(e, s)
        out["workloads"][g] = {
            "designs": len(idx), "spearman": spearman(e, s), "median_error": median_error(e, s),
            "top_pick": rows[idx[pick]][1], "top_pick_share_of_best": share,
            "top_pick_within": share >= 1 - TOP_WITHIN,
            "reference_spearman": spearman(e, f), "reference_median_error": median_error(e, f)}
    ne, ns, nf = normalised(engine, groups), normalised(sim, groups), normalised(ref, groups)
    out["pooled"] = {"spearman": spearman(ne, ns), "median_error": median_error(ne, ns),
                     "reference_spearman": spearman(ne, nf), "reference_median_error": median_error(ne, nf)}
    return out


def print_summary(summary: dict) -> None:
    print("\nwithin each workload (engine tuples/s vs the simulator's prediction):")
    for g, s in summary["workloads"].items():
        print(f"  {g:<18} {s['designs']} designs: Spearman {s['spearman']:5.2f} (target >= 0.90: "
              f"{'met' if s['spearman'] >= 0.9 else 'NOT met'}), median relative error "
              f"{s['median_error']:6.1%}; reference params: Spearman {s['reference_spearman']:5.2f}, "
              f"error {s['reference_median_error']:6.1%}")
        print(f"  {'':<18} simulator's first pick: {s['top_pick']!r}, measures "
              f"{s['top_pick_share_of_best']:.2f} of the engine's best (within 10 %: "
              f"{'yes' if s['top_pick_within'] else 'NO'})")
    p = summary["pooled"]
    print(f"\npooled, each throughput / its workload's mean: Spearman {p['spearman']:.2f} (target >= 0.85: "
          f"{'met' if p['spearman'] >= 0.85 else 'NOT met'}), median relative error {p['median_error']:.1%}; "
          f"reference params: Spearman {p['reference_spearman']:.2f}, error {p['reference_median_error']:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", type=Path, default=None)
    ap.add_argument("--batches", type=int, default=None,
                    help="batches per engine run, every workload (default: "
                         + ", ".join(f"{k} {v}" for k, v in BATCHES.items()) + ")")
    ap.add_argument("--repeats", type=int, default=3,
                    help="engine runs per design, interleaved across designs (best kept)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help=f"comma-separated subset of {', '.join(WORKLOADS)}")
    ap.add_argument("--save-engine", type=Path, default=None, help="write the engine runs to this JSON file")
    ap.add_argument("--engine-results", type=Path, default=None,
                    help="re-use the engine runs of a --save-engine file instead of running the engine")
    ap.add_argument("--background", choices=("none", "run", "mean"), default="mean",
                    help="the host's other jobs in the simulation: their mean over every engine run "
                         "(default), as sampled before each design's best run, or none (a quiet host)")
    ap.add_argument("--details", action="store_true",
                    help="per design: the engine's and the simulator's load figures side by side")
    args = ap.parse_args()
    chosen = [x.strip() for x in args.workloads.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in WORKLOADS]
    if unknown or not chosen:
        raise SystemExit(f"unknown workload {unknown[0] if unknown else ''!r} (choose from {', '.join(WORKLOADS)})")
    saved = load_engine(args.engine_results) if args.engine_results else None
    if saved is not None:
        batches = saved["batches"]
    else:
        batches = {WORKLOADS[k][0]: args.batches or BATCHES[k] for k in WORKLOADS}
    if args.calibration is None:
        from engine_sim.calibrate import calibrate

        cal = calibrate(progress=lambda m: print(m, flush=True))
        args.calibration = cal.save(Path(__file__).resolve().parent / "calibration.json")
        print(f"saved {args.calibration}\n")
    cal = Calibration.load(args.calibration)
    params = cal.on_host().sim_params()  # the engine runs every machine on this host
    source = (f"engine runs from {args.engine_results} (measured {saved.get('measured_at')})" if saved
              else f"engine best of {args.repeats}")
    print(f"calibration: {args.calibration} (measured on {cal.machine.get('hostname')}, "
          f"{cal.machine.get('cpus')} cpus, {cal.machine.get('engine_mode')} engine, "
          f"host_cores={params.host_cores}); batches per run: "
          f"{', '.join(f'{n} {batches.get(n)}' for n in (WORKLOADS[k][0] for k in chosen))}; {source}; "
          f"load average now {os.getloadavg()[0]:.1f}\n")
    if saved is None:  # measure every design first: the simulation may use the mean load they ran beside
        saved = {"runs": measure_engine(chosen, batches, args.repeats, args.save_engine)}
    figures = [r["background_jobs"] for m in saved["runs"].values() for rs in m.values() for r in rs
               if "background_jobs" in r]
    mean_others = float(np.mean(figures)) if figures else 0.0
    if figures:
        print(f"\nthe host's other jobs before each engine run: mean {mean_others:.2f}, range "
              f"{min(figures):.1f}-{max(figures):.1f}; simulated beside "
              + {"none": "none (a quiet host)", "run": "each design's own figure",
                 "mean": f"their mean, {mean_others:.2f}"}[args.background] + "\n")
    else:
        print("\nthe host's other jobs were not recorded with these runs: simulated on a quiet host\n")
    rows, spreads, measured, agreement = [], [], {}, {}
    for key in chosen:
        name, make = WORKLOADS[key]
        measured[name] = {}
        for label, w, d in make():
            try:
                runs = saved["runs"][name][label]
            except KeyError:
                raise SystemExit(f"{args.engine_results} has no engine runs of {name} {label!r}")
            measured[name][label] = runs
            tps = [r["throughput_tps"] for r in runs]
            best = runs[int(np.argmax(tps))]
            e = best["throughput_tps"]
            spreads.append(e / min(tps))
            others = {"none": 0.0, "run": best.get("background_jobs", 0.0), "mean": mean_others}[args.background]
            sr = sim_run(w, d, params.with_(background_jobs=others), batches[name])
            s = sr.throughput_tps
            ref = sim_tps(w, d, SimParams(), batches[name])
            rows.append((name, label, e, s, ref))
            print(f"{name + ' ' + label:<58} engine {e:>9,.0f} (runs {' '.join(f'{x:,.0f}' for x in tps)})  "
                  f"simulator {s:>9,.0f} ({s / e:4.2f}x)  reference {ref:>9,.0f}", flush=True)
            if args.details:
                print(details(best, sr, batches[name]))
        agreement[name] = repeat_agreement(measured[name])
    print_summary(summarise(rows))
    n = min(len(r) for m in measured.values() for r in m.values())
    print(f"  engine run-to-run spread (best/worst of {n}): median "
          f"{np.median(spreads):.2f}x, largest {max(spreads):.2f}x")
    if n >= 2:
        print("  engine's own rank agreement (mean Spearman between two repeats, the ceiling here): "
              + ", ".join(f"{g} {a:.2f}" for g, a in agreement.items()))
    if args.save_engine and args.engine_results is None:
        print(f"engine runs saved to {args.save_engine}")


def details(run: dict, sr, batches: int) -> str:
    """One line each: busy share of every partition, driver CPU, messages and distributed
    transactions per batch, engine vs simulator."""
    wall = batches / run["throughput_bps"] if run["throughput_bps"] else float("nan")
    eb = " ".join(f"{b / run['wall_s']:.2f}" for b in run["partition_busy_s"])
    sb = " ".join(f"{b / sr.sim_time_s:.2f}" for b in sr.partition_busy_s)
    ec = " ".join(f"{c / run['wall_s']:.2f}" for c in run.get("partition_cpu_s") or [])
    return (f"      engine: busy {eb} | cpu {ec} | driver cpu {run['driver_cpu_s'] / run['wall_s']:.2f} | "
            f"msgs/batch {run['messages'] / batches:.1f} | dtxn/batch {run['distributed_txns'] / batches:.2f} | "
            f"moves/batch {run['moves'] / batches:.1f} | load {run.get('loadavg_1m', float('nan')):.1f}, "
            f"others {run.get('background_jobs', float('nan')):.1f} (~{wall:.1f}s)\n"
            f"      sim:    busy {sb} | coord {' '.join(f'{c:.2f}' for c in sr.coordinator_utilisation)} | "
            f"client {sr.client_utilisation:.2f} | dilation {sr.cpu_dilation:.2f} | "
            f"dtxn/batch {sr.distributed_txns / max(sr.completed_batches, 1):.2f} | "
            f"moves/batch {sr.moves / max(sr.completed_batches, 1):.1f}")


if __name__ == "__main__":
    main()
