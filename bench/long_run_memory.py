"""The driver's memory in checked long runs (issue 23 item 5): runs of growing length (tpcdi-trade
unless --workload names another bundled one), each checked (history check and serial replay)
from the history the driver spools to disk, and with --trace also written as a Parquet trace
streamed from that spool. Printed per length: the driver's peak RSS, how much it grew over the
shortest run, seconds per 100,000 batches (the run, the check with the replay, the trace), the
p99 batch latency, and whether the streamed check decided alone ("fell back": the in-memory
checker did); and, for the lengths given to --in-memory, the same run checked the old way - the
whole history read into memory, the in-memory checker and replay (checker.py, serial.py) - as
the baseline in the same script. The target: a 1,000,000-batch run checked in under 2 GB of
driver memory.

Measured (multi-process, nice -n 10, other jobs running; docs/measurements.md): tpcdi-trade
172 MB at 100,000 batches and 176 MB at 200,000 (1.02x; before the driver's latencies,
finished batches and trace stopped growing: 298 MB at 100,000, 524 MB at 1,000,000), run 370 and
305 s / 100k, check 253 and 73 s / 100k; linear-road with its trace 219 MB at 10,000 and 234 MB
at 50,000 (1.07x). The driver stays at about 52 MB during a run; the peak is the check's sort
buffer.

Each run is its own child process (a fresh peak RSS). Multi-process by default: the driver's
process holds the history, the partitions are processes of their own; --in-process puts the
partitions (and their state) in the driver's process too.

    nice -n 10 python bench/long_run_memory.py                      # 100k, 200k, 400k
    nice -n 10 python bench/long_run_memory.py --batches 20000,50000 --in-memory 20000,50000
    nice -n 10 python bench/long_run_memory.py --batches 10000,50000 --workload linear-road --trace
    nice -n 10 python bench/long_run_memory.py --batches 1000000 --progress 300
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _report_progress(every_s: float, started: float, stop) -> None:
    """Every `every_s` seconds until `stop` is set: this process's peak and current RSS and the
    size of its history spool (how far a long run got, if it never finishes)."""
    import os
    import tempfile

    from engine_sim.engine.spool import SPOOL_PREFIX

    while not stop.wait(every_s):
        status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
                      if ":" in line)
        spooled = 0
        for folder in Path(tempfile.gettempdir()).glob(SPOOL_PREFIX + "*"):
            try:
                if int((folder / ".owner-pid").read_text()) == os.getpid():
                    spooled += sum(f.stat().st_size for f in folder.iterdir())
            except (OSError, ValueError):
                continue
        print(f"  ... {time.perf_counter() - started:7.0f} s: peak RSS {int(status['VmHWM'].split()[0]) / 1024:.0f} MB, "
              f"RSS {int(status['VmRSS'].split()[0]) / 1024:.0f} MB, spool {spooled / 2**20:.0f} MB",
              file=sys.stderr, flush=True)


@dataclass(frozen=True)
class LongRun:
    """What one measured run is: its length, where the partitions run, how it is checked, the
    workload and whether it writes a trace."""

    batches: int
    in_process: bool = False
    in_memory: bool = False  # checked the old way (the whole history in memory)
    workload: str = "tpcdi-trade"
    trace: bool = False  # also write the run's Parquet trace (to a temporary directory)


def _measured_run(run: LongRun, out, progress_s: float = 0.0) -> None:
    """One checked run in this (child) process; what it measured goes to `out`."""
    import shutil
    import tempfile
    import threading
    from advisor.sources import load_workload
    from engine_sim.engine import runner
    from costmodel.simple_designs import round_robin_design
    from engine_sim.engine.history import check_records, executions
    from engine_sim.engine.serial import SerialError, serial_digest
    from engine_sim.engine.stream_check import HistoryCounts, StreamVerdict

    marks: dict[str, float] = {}
    verify = runner.verify_history

    def timed_verify(plan, driver, n, next_plan=None):
        marks["run_end"] = time.perf_counter()
        if not run.in_memory:
            verdict = verify(plan, driver, n, next_plan)
        else:  # the old way: the whole history in memory, the in-memory checker and replay
            records = driver.records
            counts = HistoryCounts()
            for r in records:
                counts.add(r)
            tes = executions(records)
            check = check_records(records, plan, n, tes)
            verdict = StreamVerdict(check, counts, streamed=False, executions=len(tes))
            if check.ok:
                try:
                    verdict.serial_digest = serial_digest(plan, tes, check.order)
                except SerialError as exc:
                    verdict.serial_error = str(exc)
        marks["check_end"] = time.perf_counter()
        marks["streamed"] = verdict.streamed
        return verdict

    runner.verify_history = timed_verify
    w = load_workload(run.workload)
    trace_dir = Path(tempfile.mkdtemp(prefix="long-run-trace-")) if run.trace else None
    started = time.perf_counter()
    stop = threading.Event()
    if progress_s > 0:
        threading.Thread(target=_report_progress, args=(progress_s, started, stop), daemon=True).start()
    try:
        r = runner.run_workload(w, round_robin_design(w), batches=run.batches, in_process=run.in_process,
                                trace_out=None if trace_dir is None else trace_dir / "trace")
        ended = time.perf_counter()
    finally:
        stop.set()
        if trace_dir is not None:
            shutil.rmtree(trace_dir, ignore_errors=True)
    out.put({"batches": run.batches, "check": r.history_check,
             "digests_equal": r.serial_digest == r.state_digest,
             "committed": r.committed, "streamed": marks.get("streamed"),
             "latency_p50_ms": r.latency_p50_ms, "latency_p99_ms": r.latency_p99_ms,
             "run_s": marks["run_end"] - started, "check_s": marks["check_end"] - marks["run_end"],
             "trace_s": ended - marks["check_end"] if run.trace else 0.0,
             "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def measure(run: LongRun, progress_s: float = 0.0) -> dict:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_measured_run, args=(run, out, progress_s))
    child.start()
    child.join()
    if child.exitcode != 0:
        return {"batches": run.batches, "failed": f"exit status {child.exitcode}"}
    return out.get()


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="100000,200000,400000", help="run lengths, comma-separated")
    ap.add_argument("--in-memory", default="", help="lengths also checked the old way (in memory)")
    ap.add_argument("--in-process", action="store_true", help="partitions in the driver's process")
    ap.add_argument("--workload", default="tpcdi-trade", help="a bundled workload (default tpcdi-trade)")
    ap.add_argument("--trace", action="store_true",
                    help="each run also writes its Parquet trace (--trace-out), to a temporary directory")
    ap.add_argument("--json", help="append each row as a JSON line to this file")
    ap.add_argument("--progress", type=float, default=0.0,
                    help="every this many seconds, print the run's RSS and spool size (stderr)")
    args = ap.parse_args()
    mode = "in-process" if args.in_process else "multi-process"
    print(f"{args.workload}, round-robin design, {mode}{', with its trace' if args.trace else ''}; "
          f"peak RSS of the driver's process")
    print(f"{'batches':>9} {'check':<10} {'peak MB':>8} {'growth':>8} {'run s/100k':>11} "
          f"{'check s/100k':>13} {'trace s/100k':>13} {'p99 ms':>8} {'result':<8}")
    base = None
    jobs = [(n, False) for n in _sizes(args.batches)] + [(n, True) for n in _sizes(args.in_memory)]
    for n, in_memory in jobs:
        row = measure(LongRun(n, args.in_process, in_memory, args.workload, args.trace), args.progress)
        row.update(mode=mode, workload=args.workload, trace=args.trace,
                   checker="in-memory" if in_memory else "streamed" if row.get("streamed", True) else "fell back")
        if args.json:
            with open(args.json, "a") as fh:
                fh.write(json.dumps(row) + "\n")
        if "failed" in row:
            print(f"{n:>9,} {row['checker']:<10} {row['failed']}")
            continue
        if base is None and not in_memory:
            base = row["peak_rss_mb"]
        growth = f"{row['peak_rss_mb'] / base:.2f}x" if base else "-"
        ok = "ok" if row["check"] == "ok" and row["digests_equal"] else row["check"][:40]
        trace_rate = f"{row['trace_s'] * 1e5 / n:.1f}" if args.trace else "-"
        print(f"{n:>9,} {row['checker']:<10} {row['peak_rss_mb']:>8.0f} {growth:>8} "
              f"{row['run_s'] * 1e5 / n:>11.1f} {row['check_s'] * 1e5 / n:>13.1f} "
              f"{trace_rate:>13} {row['latency_p99_ms']:>8.1f} "
              f"{ok:<8}", flush=True)


if __name__ == "__main__":
    main()
