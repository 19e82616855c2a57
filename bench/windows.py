"""Native windows against the naive H-Store-style window (dissertation 3.4.3, Figures 3.10
and 3.11), both on the bundled engine, in one run on this machine.

- native: one SP owns a tuple-based sliding window (`[[windows]]`); each execution stages its
  batch, the engine slides, expires and activates inside the window table, keeping the
  window's statistics (bounds, count, and the running sum of its active and staged tuples) in
  the table's metadata row, and the owner reads the active window's aggregate from there when
  it slid: a slide costs O(slide), the read O(1) (engine_sim/engine/windows.py);
- naive: the same window as a regular table with an ordering column and a staging flag plus
  a metadata table, maintained by a two-step SP - two transactions per batch, real row work:
  the flag update and the aggregate query over the active rows scan the table (no index on
  the flag), the delete of expired rows goes by key (the ordering column)
  (engine_sim/workloads/naive_window.py).

Both get the same input batches (10 tuples each), start empty and compute the same aggregate
when the window slides; each case runs at least four windows' worth of batches, so the window
is full for 3/4 of the run or more. With many batches in flight (the engine's default 64)
the naive insert step of later batches runs ahead of the maintenance step of earlier ones, so
the naive table also holds their staged rows, which its flag scans read; `--in-flight 1` is
H-Store's serial client (one batch at a time, both steps before the next batch). Throughput
is input batches per second (best of `--repeat` runs, native and naive alternating); the
table prints native/naive per window size (slide fixed) and per slide (size fixed), and the
same per CPU second of the run (in-process: the thread running driver and partition;
steadier than wall time on a loaded host). The dissertation reports about 2x, with window
size changing the gap much more than slide does.

    python bench/windows.py                 # in-process engine (default), best of 5
    python bench/windows.py --multi-process # one process per partition
    python bench/windows.py --quick         # fewer batches, once each
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from costmodel.design import Design  # noqa: E402
from costmodel.workload import (Cluster, InputSpec, Procedure, Stream, Table, Window,  # noqa: E402
                              Workload)
from engine_sim.engine import run_workload  # noqa: E402
from engine_sim.engine.run_options import ClientOptions  # noqa: E402

BATCH = 10  # tuples per input batch
FIELDS = ("tuple_id", "value")


def native(size: int, slide: int) -> Workload:
    """One SP owning the window; it does nothing else (no declared CPU work)."""
    return Workload(f"native-{size}-{slide}", (), (Procedure("InsertWindow", 1.0),),
                    windows=(Window("W", "InsertWindow", size, slide),),
                    input=InputSpec(BATCH, None, FIELDS, 0.0), cluster=Cluster(1, 1))


def naive(size: int, slide: int) -> Workload:
    """The window table, its metadata table, and the two-step SP (two transactions)."""
    tables = (Table("WindowTable", size + slide + BATCH, 32, "seq"), Table("WindowMeta", 1, 24, "id"))
    procs = (Procedure("Insert", 1.0, code="naive_window.insert"),
             Procedure("Maintain", 1.0, code=f"naive_window.maintain:{size}:{slide}"))
    return Workload(f"naive-{size}-{slide}", tables, procs, (Stream("Insert", "Maintain", 1, 8),),
                    input=InputSpec(BATCH, None, FIELDS, 0.0), cluster=Cluster(1, 1))


def one_partition(w: Workload) -> Design:
    state = {name: 0 for name in [*w.table_names, *w.window_names]}
    return Design(w.name, 1, 1, {p.name: 0 for p in w.procedures}, state, method="bench")


def batches_for(size: int, args) -> int:
    """Enough batches that the window is full for at least 3/4 of the run (both variants start
    empty; the naive one's scans cost what the window holds)."""
    return max(args.batches, 4 * -(-size // BATCH))


def run_once(w: Workload, batches: int, args) -> tuple[float, float]:
    """(input batches per wall second, per CPU second of the run; the latter in-process only:
    the one thread that runs the driver and the partition, so the host's load barely moves it)."""
    r = run_workload(w, one_partition(w), batches=batches, in_process=not args.multi_process,
                     client=ClientOptions(in_flight=args.in_flight))
    if r.history_check != "ok" or r.state_digest != r.serial_digest:
        raise SystemExit(f"error: {w.name}: {r.history_check}")
    cpu = batches / r.driver_cpu_s if not args.multi_process and r.driver_cpu_s > 0 else float("nan")
    return r.throughput_bps, cpu


def table(title: str, label: str, cases: list[tuple[int, int]], vary: int, args) -> list[dict]:
    """Native and naive runs alternate (the host's load drifts); best of `repeat` each."""
    print(title)
    print(f"   {label:>6} {'batches':>7} {'native':>9} {'naive':>9} {'ratio':>6}   "
          f"{'native':>9} {'naive':>9} {'ratio':>6}")
    print(f"   {'':>6} {'':>7} {'(wall: batches/s)':>26}   {'(CPU: batches per CPU second)':>26}")
    rows = []
    for size, slide in cases:
        batches = batches_for(size, args)
        a = b = ac = bc = 0.0
        for _ in range(args.repeat):
            wall, cpu = run_once(native(size, slide), batches, args)
            a, ac = max(a, wall), max(ac, cpu)
            wall, cpu = run_once(naive(size, slide), batches, args)
            b, bc = max(b, wall), max(bc, cpu)
        rows.append({"size": size, "slide": slide, "batches": batches, "native_bps": a, "naive_bps": b,
                     "ratio": a / b, "native_cpu_bps": ac, "naive_cpu_bps": bc, "cpu_ratio": ac / bc})
        print(f"   {(size, slide)[vary]:>6} {batches:>7} {a:>9,.0f} {b:>9,.0f} {a / b:>6.2f}   "
              f"{ac:>9,.0f} {bc:>9,.0f} {ac / bc:>6.2f}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=500,
                    help="batches per run (at least 4 windows' worth, so the window is full for 3/4 of it)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--multi-process", action="store_true")
    ap.add_argument("--in-flight", type=int, default=64,
                    help="batches the client keeps in flight (1: H-Store's serial client)")
    ap.add_argument("--quick", action="store_true", help="150 batches, once each")
    ap.add_argument("--sizes", default="10,100,1000,5000")
    ap.add_argument("--slides", default="1,10,50,100")
    ap.add_argument("--fixed-slide", type=int, default=10)
    ap.add_argument("--fixed-size", type=int, default=100)
    args = ap.parse_args(argv)
    if args.quick:
        args.batches, args.repeat = 150, 1
    sizes = [int(x) for x in args.sizes.split(",")]
    slides = [int(x) for x in args.slides.split(",")]
    mode = "multi-process" if args.multi_process else "in-process"
    load = os.getloadavg()[0]
    print(f"Native windows vs the naive H-Store-style window, {mode}, {BATCH} tuples per batch, "
          f"{args.batches}+ batches, best of {args.repeat}, {args.in_flight} batches in flight: "
          f"input batches/s (load average {load:.1f})")
    table(f"(a) window size varies, slide {args.fixed_slide}", "size",
          [(s, args.fixed_slide) for s in sizes if args.fixed_slide <= s], 0, args)
    table(f"(b) window slide varies, size {args.fixed_size}", "slide",
          [(args.fixed_size, s) for s in slides if s <= args.fixed_size], 1, args)
    print(f"(load average at the end {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
