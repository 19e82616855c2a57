"""What a run measured, as the JSON the issue asks for."""
from __future__ import annotations

import math
from array import array
from dataclasses import asdict, dataclass, field

from costmodel.text import first_of
from costmodel.workload import cluster_text


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
    # time each partition was locked by a transaction, executing or waiting for the other
    # partitions of a distributed one: what limits a design whose partitions wait on each other
    partition_held_s: list[float] = field(default_factory=list)
    latency_mean_ms: float = 0.0
    latency_bound_s: float = 1.0
    within_latency_bound: bool = True
    in_flight: int = 0  # batches in flight at the end (halved while over the latency bound)
    batches: int = 0
    batch_size: int = 0
    workload: str = ""
    machines: int = 1
    partitions_per_machine: int = 1
    mode: str = "multi-process"
    scheduler: str = "dls"
    move: str = "rpc"
    recovery: str = "weak"
    data_parallel: bool = False  # whether any SP ran as lanes (the design's or --data-parallel's)
    lanes: list[str] = field(default_factory=list)  # the SPs that ran as lanes
    seed: int = 0
    crashed: bool = False
    recovery_s: float = 0.0
    replayed: int = 0
    move_txns: int = 0
    log_records: int = 0
    log_flushes: int = 0
    messages: int = 0
    refused_frames: int = 0  # frames an engine process refused: not sealed with the run's secret
    # bytes of padding the run's frames carried between processes: the spec's tuple_bytes of
    # every stream batch that crossed one (multi-process; 0 in-process, where nothing is sent)
    payload_bytes: int = 0
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
            ("workload", f"{self.workload} ({cluster_text(self.machines, self.partitions_per_machine)}, "
                         f"{self.mode}, {self.scheduler}, MOVE {self.move}, recovery {self.recovery})"),
            ("batches", f"{self.batches} of {self.batch_size} tuples in {self.wall_s:.2f} s"),
            ("throughput", f"{self.throughput_tps:,.0f} tuples/s  ({self.throughput_bps:,.1f} batches/s)"),
            ("latency", f"p50 {self.latency_p50_ms:.2f} ms  p99 {self.latency_p99_ms:.2f} ms  "
                        f"mean {self.latency_mean_ms:.2f} ms (bound {self.latency_bound_s:g} s: "
                        f"{'met' if self.within_latency_bound else 'NOT met'})"),
            ("transactions", f"{self.committed} committed, {self.aborts} aborts, {self.restarts} restarts, "
                             f"{self.distributed_txns} distributed"),
            ("MOVEs", f"{self.moves}" + (f" ({self.move_txns} as transactions)" if self.move_txns else "")),
            ("partition busy", first_of([f"p{i} {b:.2f}s" for i, b in enumerate(self.partition_busy_s)])),
        ]
        if self.lanes:
            rows.insert(1, ("lanes", ", ".join(self.lanes) + " (data-parallel: one transaction a partition a batch)"))
        if any(self.partition_held_s):
            rows.append(("partition held", first_of([f"p{i} {h:.2f}s ({h / self.wall_s:.0%})"
                                                      for i, h in enumerate(self.partition_held_s)])))
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


class LatencyHistogram:
    """Batch latencies in bounded memory, however long the run: each one is counted in a
    logarithmic bucket (a few hundred buckets cover a microsecond to hours), so a percentile is
    within `relative_error` of numpy's (`np.percentile`, linear interpolation) on the same
    values; the count, the mean, the smallest and the largest are exact."""

    def __init__(self, relative_error: float = 0.01):
        if not 0.0 < relative_error < 1.0:
            raise ValueError(f"relative error must be in (0, 1), got {relative_error!r}")
        self.relative_error = relative_error
        self._gamma = (1.0 + relative_error) / (1.0 - relative_error)
        self._log_gamma = math.log(self._gamma)
        self.buckets: dict[int, int] = {}  # bucket i counts values in (gamma^(i-1), gamma^i]
        self.zeros = 0  # values <= 0, counted as 0 (a batch done within the clock's microsecond)
        self.count = 0
        self.total = 0.0
        self.smallest = math.inf
        self.largest = -math.inf

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.smallest = min(self.smallest, value)
        self.largest = max(self.largest, value)
        if value <= 0:
            self.zeros += 1
            return
        i = math.ceil(math.log(value) / self._log_gamma)
        self.buckets[i] = self.buckets.get(i, 0) + 1

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def _ranked(self, rank: int) -> float:
        """The value of rank `rank` (0: the smallest), within the relative error: its bucket's
        midpoint in relative terms, kept inside the exact smallest and largest values."""
        if rank <= 0:
            return self.smallest
        if rank >= self.count - 1:
            return self.largest
        seen = self.zeros
        if rank < seen:
            return 0.0
        for i in sorted(self.buckets):
            seen += self.buckets[i]
            if rank < seen:
                mid = 2.0 * self._gamma ** i / (self._gamma + 1.0)
                return min(max(mid, self.smallest), self.largest)
        return self.largest

    def percentile(self, q: float) -> float:
        """The q-th percentile (0..100), as np.percentile interpolates between two ranks."""
        if not self.count:
            return 0.0
        h = (self.count - 1) * q / 100.0
        below = math.floor(h)
        fraction = h - below
        value = self._ranked(below)
        if fraction > 0:
            value += fraction * (self._ranked(below + 1) - value)
        return value


def latency_stats(latencies_us: LatencyHistogram) -> tuple[float, float, float]:
    """(p50, p99, mean) of the batch latencies, in milliseconds."""
    if not latencies_us.count:
        return 0.0, 0.0, 0.0
    return (latencies_us.percentile(50) / 1000.0, latencies_us.percentile(99) / 1000.0,
            latencies_us.mean / 1000.0)


class CompletedBatches:
    """The batches a run finished, in bounded memory: every batch below `low` finished, and
    the few finished above it (no more than the batches in flight) are held in a set. With
    `times` it also keeps each batch's finish time (8 bytes a batch, in an array): what a
    migrating run's figures count batches by (migration.py reads it as a mapping)."""

    def __init__(self, batches: int = 0, times: bool = False):
        self.low = 0
        self.above: set[int] = set()
        self.count = 0
        self._times = array("q", [-1]) * batches if times else None

    def add(self, b: int, done_us: int) -> bool:
        """Batch b finished at `done_us`; False when it had finished before."""
        if b in self:
            return False
        self.count += 1
        if b == self.low:
            self.low += 1
            while self.low in self.above:
                self.above.discard(self.low)
                self.low += 1
        else:
            self.above.add(b)
        if self._times is not None and 0 <= b < len(self._times):
            self._times[b] = done_us
        return True

    def __contains__(self, b: int) -> bool:
        return 0 <= b < self.low or b in self.above

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, b: int) -> int:
        """When batch b finished (a run that keeps the times)."""
        if self._times is None or not 0 <= b < len(self._times) or self._times[b] < 0:
            raise KeyError(b)
        return self._times[b]

    def values(self) -> list[int]:
        """The finish times (a run that keeps them), in batch order."""
        return [t for t in (self._times or ()) if t >= 0]
