"""Benchmarks of the bundled engine, measured in one run on this machine (ratios against a
baseline measured in the same run; absolute numbers depend on the machine and its load).

1. Voter leaderboard on one partition with every guarantee on - ACID, batch and dataflow
   order, exactly-once with weak-recovery command logging (fsync'ed, group commit) - in input
   batches per second, in-process and one process per partition (S-Store published 2200).
2. MOVE as an RPC vs MOVE as a distributed transaction (move-micro: SP1 on partition 0, SP2 on
   partition 1 of another machine) at batch sizes 1, 10, 100, multi-process: tuples/s.
3. Strong vs weak recovery logging (no group commit, as in the dissertation's Figure 3.12) on
   1-, 4- and 16-SP chains on one partition: batches/s; and the time to recover a crash
   from the command log (no snapshot), in the multi-process engine.
4. Distributed localized scheduling vs a central scheduler on the 32-SP chain.
5. Partitions, not the driver, set the pace: a chain of four CPU-heavy SPs (1.5 ms of work
   each) on 2 machines (2 SPs and their tables on each) against 1 machine, multi-process:
   the throughput ratio (target: at least 1.6x on 2 cores).
6. The dissertation's scheduling figure on the real engine: chain-32 (declared work 100 us per
   SP) under DLS and under the central scheduler on 1, 2, 4 and 8 machines of one partition
   each, multi-process, repeats interleaved (target: DLS grows at least 5x from 1 to 8
   machines where the host has a free core for every partition and the driver; central
   levels off). On fewer cores the machines share them, and the section says what the CPU
   the processes spent would allow on free cores.

    python bench/engine.py            # all of it, best of 3 runs each (a few minutes)
    python bench/engine.py --quick    # smaller runs, once each
    python bench/engine.py --only 5   # one section
    python bench/engine.py --only 6 --calibration cal.json [--simulate-only]
                                      # section 6 with the simulator's prediction beside (or alone)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from costmodel.design import Design  # noqa: E402
from advisor.sources import load_workload  # noqa: E402
from costmodel.workload import Access, Cluster, InputSpec, Procedure, Stream, Table, Workload  # noqa: E402
from engine_sim.engine import run_workload  # noqa: E402
from engine_sim.engine.run_options import CommandLogOptions, RecoveryOptions  # noqa: E402
from costmodel.simple_designs import round_robin_design, single_partition_design  # noqa: E402
from engine_sim.sim.scenario_designs import chain_design  # noqa: E402


def chain(n: int) -> Workload:
    """The PE-trigger micro-benchmark's shape: n SPs in series, each updating one row of its
    own table per batch and passing the batch on (dissertation 3.4.2/3.4.4). It measures the
    engine's own costs, so its SPs do no declared CPU work (cost_unit_us 0)."""
    tables = tuple(Table(f"T{i}", 1000, 64, "id") for i in range(1, n + 1))
    procs = tuple(Procedure(f"SP{i}", 1.0, (Access(f"T{i}", "write", 1, "input:id"),))
                  for i in range(1, n + 1))
    streams = tuple(Stream(f"SP{i}", f"SP{i + 1}", 1, 16) for i in range(1, n))
    return Workload(f"chain-{n}sp", tables, procs, streams, input=InputSpec(1, None, ("id",), 0.0),
                    cluster=Cluster(1, 1))


def move_micro(size: int) -> Workload:
    """The MOVE micro-benchmark as the dissertation describes it (4.6.3): SP1 and SP2 each do
    a write to their own partition, on two machines; the batch of `size` tuples moves between.
    No declared CPU work (cost_unit_us 0): the MOVE is what is measured."""
    tables = (Table("T1", 10000, 64, "tuple_id"), Table("T2", 10000, 64, "tuple_id"))
    procs = (Procedure("SP1", 1.0, (Access("T1", "write", 1, "uniform"),)),
             Procedure("SP2", 1.0, (Access("T2", "write", 1, "uniform"),)))
    return Workload(f"move-micro-{size}", tables, procs, (Stream("SP1", "SP2", size, 64),),
                    input=InputSpec(size, None, ("tuple_id", "value"), 0.0), cluster=Cluster(2, 1))


def best(repeat: int, **kwargs):
    """The fastest of `repeat` runs (the machine is shared: the best run is the least disturbed)."""
    runs = [run_workload(**kwargs) for _ in range(repeat)]
    for r in runs:
        assert r.history_check == "ok", r.history_check
    return max(runs, key=lambda r: r.throughput_tps)


def voter(batches: int, repeat: int) -> list[str]:
    w = load_workload("voter-leaderboard")
    d = single_partition_design(w)
    lines = ["1. Voter leaderboard, 1 partition, ACID + order + exactly-once (weak recovery log, "
             "fsync, group commit)"]
    for in_process in (True, False):
        r = best(repeat, workload=w, design=d, batches=batches, in_process=in_process,
                 recovery=RecoveryOptions(mode="weak"), command_log=CommandLogOptions(to_disk=True, fsync=True))
        lines.append(f"   {r.mode:<14} {r.throughput_bps:8,.0f} input batches/s  "
                     f"({r.throughput_bps / 2200:.2f}x S-Store's 2200; p50 {r.latency_p50_ms:.1f} ms, "
                     f"{r.log_flushes} log writes, history {r.history_check})")
    return lines


def moves(tuples: int, repeat: int) -> list[str]:
    lines = ["2. MOVE: RPC vs distributed transaction (SP1 and SP2 on two machines, one write "
             "each per batch, weak recovery): tuples/s",
             f"   {'batch':>5}  {'mode':<14} {'RPC':>9}  {'txn':>9}  {'RPC/txn':>7}"]
    for in_process in (False, True):
        for size in (1, 10, 100):
            w = move_micro(size)
            d = Design(w.name, 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
            batches = max(400, tuples // size) if not in_process else max(2000, 5 * tuples // size)
            rpc, txn = (best(repeat, workload=w, design=d, batches=batches, move=mv,
                             in_process=in_process, recovery=RecoveryOptions(snapshot_every=0))
                        for mv in ("rpc", "txn"))
            assert txn.move_txns == batches and rpc.move_txns == 0
            lines.append(f"   {size:>5}  {rpc.mode:<14} {rpc.throughput_tps:9,.0f}  "
                         f"{txn.throughput_tps:9,.0f}  {rpc.throughput_tps / txn.throughput_tps:7.2f}")
    return lines


def logging(batches: int, recover_batches: int, repeat: int) -> list[str]:
    lines = ["3. Command logging on an n-SP chain, 1 partition, no group commit, fsync: batches/s",
             f"   {'SPs':>4}  {'strong':>9}  {'weak':>9}  {'weak/strong':>11}   "
             f"recovery after {recover_batches} batches: {'strong':>8}  {'weak':>8}"]
    for n in (1, 4, 16):
        w = chain(n)
        d = Design(w.name, 1, 1, {p.name: 0 for p in w.procedures}, {t.name: 0 for t in w.tables})
        run = {mode: best(repeat, workload=w, design=d, batches=batches, in_process=True,
                          recovery=RecoveryOptions(mode=mode),
                          command_log=CommandLogOptions(group_commit=False, to_disk=True, fsync=True))
               for mode in ("strong", "weak")}
        crash = {mode: run_workload(w, d, batches=recover_batches,
                                    recovery=RecoveryOptions(mode=mode, snapshot_every=0,
                                                             crash_after=int(recover_batches * n * 0.95)))
                 for mode in ("strong", "weak")}
        for r in (*run.values(), *crash.values()):
            assert r.history_check == "ok", r.history_check
        s, wk = run["strong"].throughput_bps, run["weak"].throughput_bps
        lines.append(f"   {n:>4}  {s:9,.0f}  {wk:9,.0f}  {wk / s:11.2f}   "
                     f"{'':>31}{crash['strong'].recovery_s:7.2f}s  {crash['weak'].recovery_s:7.2f}s"
                     f"  ({crash['strong'].replayed} / {crash['weak'].replayed} replayed)")
    return lines


def schedulers(batches: int, repeat: int) -> list[str]:
    w = load_workload("chain-32")
    lines = ["4. DLS vs central scheduler, 32-SP chain, multi-process: batches/s",
             f"   {'machines x partitions':>22}  {'DLS':>7}  {'central':>7}  {'DLS/central':>11}"]
    for machines in (1, 2):
        d = round_robin_design(w, machines, 2)
        dls, central = (best(repeat, workload=w, design=d, batches=batches, scheduler=s)
                        for s in ("dls", "central"))
        lines.append(f"   {f'{machines} x 2':>22}  {dls.throughput_bps:7,.0f}  {central.throughput_bps:7,.0f}"
                     f"  {dls.throughput_bps / central.throughput_bps:11.2f}   "
                     f"({dls.messages:,} vs {central.messages:,} messages)")
    return lines


HEAVY_COST = 15.0  # x the default cost unit (100 us): 1.5 ms of CPU per SP and batch


def heavy_chain(cost: float = HEAVY_COST) -> Workload:
    """Four SPs in series, each doing `cost` units of CPU work per batch and one write to its
    own table. 1.5 ms per SP is about ten times what the engine itself spends on a transaction
    (scheduling, locking, logging, messages), so the SPs' work - what a design spreads over
    machines - is what sets the pace when nothing else does."""
    tables = tuple(Table(f"T{i}", 1000, 64, "id") for i in range(1, 5))
    procs = tuple(Procedure(f"SP{i}", cost, (Access(f"T{i}", "write", 1, "input:id"),))
                  for i in range(1, 5))
    streams = tuple(Stream(f"SP{i}", f"SP{i + 1}", 1, 16) for i in range(1, 4))
    return Workload("heavy-chain-4", tables, procs, streams, input=InputSpec(1, None, ("id",)),
                    cluster=Cluster(2, 1))


def scaling(batches: int, repeat: int) -> list[str]:
    """1 machine vs 2 (one partition each), best of `repeat` runs each, interleaved so that a
    change in the host's load hits both alike. The command log is kept (weak recovery) but not
    forced to disk, as in calibration: the disk is the host's, not a partition's."""
    w = heavy_chain()
    one = Design(w.name, 1, 1, {p.name: 0 for p in w.procedures}, {t.name: 0 for t in w.tables})
    two = Design(w.name, 2, 1, {"SP1": 0, "SP2": 0, "SP3": 1, "SP4": 1},
                 {"T1": 0, "T2": 0, "T3": 1, "T4": 1})
    runs: dict[str, list] = {"1": [], "2": []}
    for _ in range(repeat):
        for key, d in (("1", one), ("2", two)):
            r = run_workload(w, d, batches=batches, recovery=RecoveryOptions(mode="weak"),
                             command_log=CommandLogOptions(fsync=False))
            assert r.history_check == "ok", r.history_check
            runs[key].append(r)
    b1, b2 = (max(runs[k], key=lambda r: r.throughput_bps) for k in ("1", "2"))
    ratio = b2.throughput_bps / b1.throughput_bps
    lines = [f"5. Four CPU-heavy SPs ({HEAVY_COST:g} cost units = {HEAVY_COST * 0.1:g} ms each) in a chain, "
             f"multi-process, weak recovery log without fsync: batches/s (best of {repeat})"]
    for label, r in (("1 machine  (SP1-SP4)", b1), ("2 machines (SP1-2 | SP3-4)", b2)):
        share = ", ".join(f"{b / r.wall_s:.0%}" for b in r.partition_busy_s)
        cpu = ", ".join(f"{c / batches * 1e3:.2f}" for c in r.partition_cpu_s)
        lines.append(f"   {label:<27} {r.throughput_bps:7,.1f}   partitions busy {share}; CPU ms per batch: "
                     f"partitions {cpu}, driver {r.driver_cpu_s / batches * 1e3:.2f}")
    lines.append(f"   2 machines / 1 machine: {ratio:.2f}x  (target 1.6x on 2 cores; "
                 f"{'met' if ratio >= 1.6 else 'MISSED'})")
    lines.append(f"   (what the CPU the processes spent allows on {min(2, os.cpu_count() or 1)} free cores: "
                 f"{cpu_pace(b1, batches) / cpu_pace(b2, batches):.2f}x)")
    return lines


SCALING_MACHINES = (1, 2, 4, 8)


def chain_scaling(batches_per_machine: int, repeat: int, machines: tuple[int, ...] = SCALING_MACHINES,
                  calibration: Path | None = None, engine: bool = True) -> list[str]:
    """chain-32 with contiguous runs of SPs (and their tables) per machine, one partition per
    machine, so N machines are N processes beside the driver. N machines run N x
    `batches_per_machine` batches, so every run lasts about as long and start-up weighs alike.
    The best of `repeat` runs, every configuration once per round; the weak recovery log
    without fsync, as in section 5. With a `calibration`, the simulator's prediction for the
    same runs (the calibration's host cores shared by the machines) is printed beside."""
    w = load_workload("chain-32")
    cores = os.cpu_count() or 1
    keys = [(scheduler, m) for m in machines for scheduler in ("dls", "central")]
    lines = [f"6. chain-32 (100 us of declared work per SP), one partition per machine, multi-process: tuples/s"]
    if engine:
        top = _best_interleaved(w, keys, batches_per_machine, repeat)
        lines += [f"   engine on {cores} cores, best of {repeat}, {batches_per_machine} batches per machine",
                  *_scaling_rows(machines, {k: r.throughput_tps for k, r in top.items()}, [
                      "; ".join(f"{max(top[(s, m)].partition_cpu_s) / (batches_per_machine * m) * 1e3:.2f} / "
                                f"{top[(s, m)].driver_cpu_s / (batches_per_machine * m) * 1e3:.2f}"
                                for s in ("dls", "central")) for m in machines],
                      "busiest partition / driver CPU ms per batch (DLS; central)")]
        last, first = machines[-1], machines[0]
        growth = top[("dls", last)].throughput_tps / top[("dls", first)].throughput_tps
        free = cores >= last + 1
        verdict = (("met" if growth >= 5 else "MISSED") if free
                   else f"not judged: {last} machines and the driver need {last + 1} cores")
        lines.append(f"   DLS {last} machines / {first}: {growth:.2f}x (target 5x; {verdict})")
        pace = {k: cpu_pace(r, batches_per_machine * k[1], cores=min(cores, last + 1)) for k, r in top.items()}
        lines.append(f"   (what the CPU the processes spent allows on {min(cores, last + 1)} free cores, "
                     f"{last} machines / {first}: DLS {pace[('dls', first)] / pace[('dls', last)]:.2f}x, "
                     f"central {pace[('central', first)] / pace[('central', last)]:.2f}x)")
    if calibration is not None:
        from engine_sim.sim import Calibration, run_once

        params = Calibration.load(calibration).on_host().sim_params()
        predicted = {(s, m): run_once(w, chain_design(w, m, 1), in_flight=64, calibration=params,
                                      batches=batches_per_machine * m, scheduler=s).throughput_tps
                     for s, m in keys}
        lines += [f"   simulator, calibration {calibration} ({params.host_cores} host cores)",
                  *_scaling_rows(machines, predicted)]
    return lines


def _best_interleaved(w: Workload, keys: list[tuple[str, int]], batches_per_machine: int, repeat: int) -> dict:
    runs: dict[tuple[str, int], list] = {}
    for _ in range(repeat):
        for scheduler, m in keys:
            r = run_workload(w, chain_design(w, m, 1), batches=batches_per_machine * m, scheduler=scheduler,
                             recovery=RecoveryOptions(mode="weak"),
                             command_log=CommandLogOptions(fsync=False))
            assert r.history_check == "ok", r.history_check
            runs.setdefault((scheduler, m), []).append(r)
    return {k: max(v, key=lambda r: r.throughput_tps) for k, v in runs.items()}


def _scaling_rows(machines: tuple[int, ...], tps: dict[tuple[str, int], float],
                  notes: list[str] | None = None, notes_title: str = "") -> list[str]:
    """DLS and central throughput per machine count, each against its own 1-machine figure,
    and the last step's growth (the dissertation's central curve flattens there)."""
    rows = [f"   {'machines':>8}  {'DLS':>7} {'vs 1':>5} {'central':>8} {'vs 1':>5}  {notes_title}".rstrip()]
    for i, m in enumerate(machines):
        d, c = tps[("dls", m)], tps[("central", m)]
        rows.append(f"   {m:>8}  {d:7,.0f} {d / tps[('dls', machines[0])]:4.2f}x "
                    f"{c:8,.0f} {c / tps[('central', machines[0])]:4.2f}x  {notes[i] if notes else ''}".rstrip())
    if len(machines) > 1:
        a, b = machines[-2], machines[-1]
        rows.append(f"   {b} / {a} machines: DLS {tps[('dls', b)] / tps[('dls', a)]:.2f}x, "
                    f"central {tps[('central', b)] / tps[('central', a)]:.2f}x")
    return rows


def cpu_pace(r, batches: int, cores: int = 2) -> float:
    """Seconds per batch that the run's CPU use allows on `cores` free cores: the busiest
    process, or all processes' CPU spread over the cores, whichever is slower."""
    procs = list(r.partition_cpu_s) + [r.driver_cpu_s]
    return max(max(procs), sum(procs) / min(cores, len(procs))) / batches


SECTIONS = {"1": "voter", "2": "moves", "3": "logging", "4": "schedulers", "5": "scaling",
            "6": "chain scaling"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller runs, no repetition")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (the best counts)")
    ap.add_argument("--only", action="append", choices=sorted(SECTIONS), help="run only this section")
    ap.add_argument("--calibration", type=Path, default=None,
                    help="section 6 also prints the simulator's prediction with this calibration")
    ap.add_argument("--simulate-only", action="store_true",
                    help="section 6 without the engine: the simulator's prediction alone (needs --calibration)")
    args = ap.parse_args(argv)
    if args.simulate_only and args.calibration is None:
        ap.error("--simulate-only needs --calibration")
    if args.simulate_only and not args.only:
        args.only = ["6"]  # the only section with a simulator side
    if args.calibration is not None:
        from costmodel.errors import UserError
        from engine_sim.sim import Calibration

        try:
            Calibration.load(args.calibration)
        except UserError as exc:
            ap.exit(2, f"error: {exc}\n")
    q = args.quick
    rep = 1 if q else max(1, args.repeat)
    started = time.perf_counter()
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start)", flush=True)
    sections = {
        "1": lambda: voter(2000 if q else 6000, rep),
        "2": lambda: moves(1000 if q else 4000, rep),
        "3": lambda: logging(300 if q else 1000, 200 if q else 600, rep),
        "4": lambda: schedulers(150 if q else 400, rep),
        "5": lambda: scaling(200 if q else 500, rep),
        "6": lambda: chain_scaling(60 if q else 300, rep, calibration=args.calibration,
                                   engine=not args.simulate_only),
    }
    for key in sorted(args.only or sections):
        print("\n".join(sections[key]()), flush=True)
    print(f"(load average {os.getloadavg()[0]:.1f} at the end)", flush=True)
    print(f"(measured in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
