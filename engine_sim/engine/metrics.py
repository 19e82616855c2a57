"""What a run measured, as the JSON the issue asks for."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class RunResult:
    throughput_tps: float  # input tuples per second
    throughput_bps: float  # input batches per second
    latency_p50_ms: float  # end-to-end batch latency: submitted -> every sink SP committed
    latency_p99_ms: float
    distributed_txns: int  # committed transactions that held more than one partition
    moves: int  # stream batches handed to an SP on another partition (RPC or MOVE txn)
    history_check: str  # "ok" or the first violation found
    state_digest: str  # final state of every table, independent of where rows live
    committed: int  # committed SP executions (a nested group counts each SP)
    aborts: int  # aborted executions (lock refusals, purges, injected, procedure aborts)
    restarts: int  # restarts it took the committed executions
    partition_busy_s: list[float]  # time each partition spent executing
    wall_s: float
    latency_mean_ms: float = 0.0
    latency_bound_s: float = 1.0
    within_latency_bound: bool = True
    window: int = 0  # batches in flight at the end (halved while over the latency bound)
    batches: int = 0
    batch_size: int = 0
    workload: str = ""
    machines: int = 1
    partitions_per_machine: int = 1
    mode: str = "multi-process"
    scheduler: str = "dls"
    move: str = "rpc"
    recovery: str = "weak"
    data_parallel: bool = False
    crashed: bool = False
    recovery_s: float = 0.0
    replayed: int = 0
    move_txns: int = 0
    log_records: int = 0
    log_flushes: int = 0
    messages: int = 0
    refused_frames: int = 0  # frames an engine process refused: not sealed with the run's secret
    pids: list[int] = field(default_factory=list)  # partition processes started (multi-process)
    partition_cpu_s: list[float] = field(default_factory=list)  # CPU time of each partition's
    # process from its first message to the end of the run (multi-process; after a crash, of
    # the process that finished the run)
    driver_cpu_s: float = 0.0  # CPU time of the driver's process during the run (multi-process);
    # in-process: of the one thread running the driver and every partition
    violations: list[str] = field(default_factory=list)
    trace_dir: str | None = None
    state: dict | None = None  # final rows per table (return_state=True)
    # the state a serial re-execution of the committed transactions reaches, in the checker's
    # serialization order ("" when the history check failed before it could run)
    serial_digest: str = ""
    migration: object = None  # engine_sim.engine.migration.MigrationResult (a run that migrated)

    def to_dict(self) -> dict:
        def clean(v):
            if isinstance(v, float):
                return round(v, 6) if math.isfinite(v) else None
            if isinstance(v, list):
                return [clean(x) for x in v]
            return v

        d = {k: clean(v) for k, v in asdict(self).items() if k != "state"}
        return d

    def describe(self) -> list[str]:
        """The short human table `advisor run` prints."""
        rows = [
            ("workload", f"{self.workload} ({self.machines} machines x {self.partitions_per_machine} "
                         f"partitions, {self.mode}, {self.scheduler}, MOVE {self.move}, recovery {self.recovery})"),
            ("batches", f"{self.batches} of {self.batch_size} tuples in {self.wall_s:.2f} s"),
            ("throughput", f"{self.throughput_tps:,.0f} tuples/s  ({self.throughput_bps:,.1f} batches/s)"),
            ("latency", f"p50 {self.latency_p50_ms:.2f} ms  p99 {self.latency_p99_ms:.2f} ms  "
                        f"mean {self.latency_mean_ms:.2f} ms (bound {self.latency_bound_s:g} s: "
                        f"{'met' if self.within_latency_bound else 'NOT met'})"),
            ("transactions", f"{self.committed} committed, {self.aborts} aborts, {self.restarts} restarts, "
                             f"{self.distributed_txns} distributed"),
            ("MOVEs", f"{self.moves}" + (f" ({self.move_txns} as transactions)" if self.move_txns else "")),
            ("partition busy", ", ".join(f"p{i} {b:.2f}s" for i, b in enumerate(self.partition_busy_s))),
        ]
        if self.crashed:
            rows.append(("recovery", f"crashed, recovered in {self.recovery_s:.3f} s "
                                     f"({self.replayed} replayed)"))
        if self.migration is not None:
            rows += self.migration.describe()
        rows += [("history check", self.history_check), ("state digest", self.state_digest),
                 ("serial digest", (self.serial_digest or "not computed") +
                  ("  (equal)" if self.serial_digest == self.state_digest else "  (DIFFERS)"
                   if self.serial_digest else ""))]
        if self.trace_dir:
            rows.append(("trace", self.trace_dir))
        width = max(len(k) for k, _ in rows)
        return [f"{k:<{width}}  {v}" for k, v in rows]


def latency_stats(submit_us: dict, done_us: dict) -> tuple[float, float, float]:
    lat = np.array([done_us[b] - submit_us[b] for b in done_us if b in submit_us], dtype=float) / 1000.0
    if lat.size == 0:
        return 0.0, 0.0, 0.0
    return float(np.percentile(lat, 50)), float(np.percentile(lat, 99)), float(lat.mean())
