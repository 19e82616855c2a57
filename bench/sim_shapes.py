"""The dissertation's four distributed results (section 4.6), reproduced by the simulator at
the published scale: prints each series with the ratio that makes its shape, and draws the
figures to bench/figures/*.png.

    python bench/sim_shapes.py [--batches 800] [--calibration calibration.json | --engine-cost-unit]

By default the reference cluster of 2016 (`REFERENCE_2016`: 40 us per unit of SP cost);
`--engine-cost-unit` runs the same experiments at the bundled engine's 100 us per unit.

Ratios are within the same run: DLS vs central at 8 machines, growth 4 -> 8 machines, the
best SP count per partitioning, RPC / txn MOVE per batch size, 4 machines / 1 node.
"""
from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from costmodel.files import atomic_write_bytes  # noqa: E402
from engine_sim.sim import Calibration, SimParams  # noqa: E402
from costmodel.sim_params import REFERENCE_2016  # noqa: E402
from engine_sim.sim import scenarios as S  # noqa: E402

FIGURES = Path(__file__).resolve().parent / "figures"
DRAW = {"figures": True}  # off for --engine-cost-unit: the figures show the 2016 cluster


def _save(fig, name: str) -> Path | str:
    if not DRAW["figures"]:
        plt.close(fig)
        return "(figure not drawn)"
    FIGURES.mkdir(parents=True, exist_ok=True)
    path = FIGURES / name
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return atomic_write_bytes(path, png.getvalue(), fsync=False)


def chain(params, batches: int) -> None:
    r = S.chain_scaling(params, batches)
    m = r["machines"]
    print("32-SP chain (Fig. 4.16a), tuples/s")
    for i, n in enumerate(m):
        print(f"  {n} machines  DLS {r['dls'][i]:>10,.0f}   central {r['central'][i]:>10,.0f}   "
              f"DLS/central {r['dls'][i] / r['central'][i]:.2f}")
    print(f"  DLS 8/1 machines {r['dls'][-1] / r['dls'][0]:.2f} (linear: 8);  central 8/4 machines "
          f"{r['central'][-1] / r['central'][-2]:.2f} (flat: 1)")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(m, r["dls"], "o-", label="S-Store (DLS)")
    ax.plot(m, r["central"], "s--", label="central scheduler")
    ax.set(xlabel="machines (4 partitions each)", ylabel="throughput (tuples/s)", xticks=m,
           title="32-SP chain: scheduler scaling")
    ax.legend()
    print(f"  -> {_save(fig, 'sim_chain_scaling.png')}")


def boundaries(params, batches: int) -> None:
    r = S.procedure_boundaries(params, batches)
    print("Procedure boundaries (Fig. 4.18), tuples/s")
    for parts, by in r.items():
        best = max(by, key=by.get)
        cells = "  ".join(f"{k} SPs {v:>9,.0f}" for k, v in by.items())
        print(f"  {parts:>2} partitions  {cells}   best: {best} SPs")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    sps = list(next(iter(r.values())))
    width = 0.8 / len(sps)
    for j, k in enumerate(sps):
        ax.bar([i + j * width for i in range(len(r))], [r[p][k] for p in r], width, label=f"{k} SPs")
    ax.set_xticks([i + width * (len(sps) - 1) / 2 for i in range(len(r))],
                  [f"{p} partition{'s' if p > 1 else ''}" for p in r])
    ax.set(ylabel="throughput (tuples/s)", title="Procedure boundaries (16 tables)")
    ax.legend()
    print(f"  -> {_save(fig, 'sim_procedure_boundaries.png')}")


def move(params, batches: int) -> None:
    r = S.move_micro(params, batches)
    print("MOVE micro-benchmark (Fig. 4.19), tuples/s")
    for i, bs in enumerate(r["batch_size"]):
        print(f"  batch {bs:>4}  RPC {r['rpc'][i]:>10,.0f}   txn {r['txn'][i]:>10,.0f}   "
              f"gap {r['rpc'][i] - r['txn'][i]:>10,.0f}   RPC/txn {r['rpc'][i] / r['txn'][i]:.2f}")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(r["batch_size"], r["rpc"], "o-", label="RPC MOVE")
    ax.plot(r["batch_size"], r["txn"], "s--", label="distributed-txn MOVE")
    ax.set(xscale="log", xlabel="batch size (tuples)", ylabel="throughput (tuples/s)",
           title="MOVE: RPC vs distributed transaction")
    ax.legend()
    print(f"  -> {_save(fig, 'sim_move.png')}")


def tpcdi(params, batches: int) -> None:
    r = S.tpcdi_pipeline_vs_single_sp(params, batches)
    print("TPC-DI Trade.txt (Fig. 4.21), tuples/s")
    for label, by in r.items():
        one, four = by["1_machine"], by["4_machines"]
        print(f"  {label:<22} 1 node {one:>10,.0f}   4 machines {four:>10,.0f}   4/1 {four / one:.2f}")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    labels = list(r)
    for j, where in enumerate(("1_machine", "4_machines")):
        ax.bar([i + j * 0.4 for i in range(len(labels))], [r[k][where] for k in labels], 0.4,
               label=where.replace("_", " "))
    ax.set_xticks([i + 0.2 for i in range(len(labels))], [k.replace("_", " ") for k in labels])
    ax.set(ylabel="throughput (tuples/s)", title="TPC-DI: 4 partitions, 1 node vs 4 machines")
    ax.legend()
    print(f"  -> {_save(fig, 'sim_tpcdi.png')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=800)
    ap.add_argument("--calibration", type=Path, default=None,
                    help="calibration.json (default: the 2016 reference-cluster parameters)")
    ap.add_argument("--engine-cost-unit", action="store_true",
                    help="the reference cluster with the engine's 100 us per unit of SP cost")
    args = ap.parse_args()
    if args.calibration is not None:
        cal = Calibration.load(args.calibration)
        params = cal.on_host().sim_params()  # as this host runs the engine (as before)
        print(f"parameters: {cal.source} ({cal.machine.get('hostname')})\n")
    else:
        params = SimParams() if args.engine_cost_unit else REFERENCE_2016
        DRAW["figures"] = not args.engine_cost_unit
        print(f"parameters: reference cluster, {params.cost_unit_s * 1e6:.0f} us per unit of SP cost\n")
    for step in (chain, boundaries, move, tpcdi):
        step(params, args.batches)
        print()


if __name__ == "__main__":
    main()
