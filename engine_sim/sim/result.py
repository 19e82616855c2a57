"""What a simulation reports: the engine's RunResult fields where they overlap, plus what the
model can see and the engine cannot (utilisation of every resource, per-stream MOVE cost)."""
from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from costmodel.bottleneck import busy_text
from costmodel.text import first_of
from costmodel.workload import cluster_text

WARMUP = 0.1  # the first tenth of the batches is not measured
KEPT_UP = 0.98  # a run kept up with its offered rate when it measured at least this share of it


@dataclass
class SimResult:
    throughput_tps: float  # tuples per second
    throughput_bps: float  # batches per second
    latency_p50_ms: float
    latency_p99_ms: float
    distributed_txns: int  # distributed transactions (SPs touching several partitions, MOVE txns)
    moves: int  # stream batches handed to an SP on another partition
    partition_utilisation: list[float]  # share of time each partition was executing or held
    latency_mean_ms: float = 0.0
    partition_busy_s: list[float] = field(default_factory=list)  # executing only
    machine_utilisation: list[float] = field(default_factory=list)  # mean of its partitions
    coordinator_utilisation: list[float] = field(default_factory=list)
    link_utilisation: list[float] = field(default_factory=list)  # outgoing network, per machine
    client_utilisation: float = 0.0
    # seconds of work of the engine's driver process: the client's (submitting batches, taking
    # completions and history) and, under the central scheduler, the schedulers it hosts
    driver_busy_s: float = 0.0
    peak_utilisation: float = 0.0  # of the busiest resource
    bottleneck: str = ""  # the busiest resource, e.g. "partition 3" or "scheduler of SP5"
    txns: int = 0  # committed transactions of the SPs (a nested group's counts once)
    move_txns: int = 0
    completed_batches: int = 0  # batches every sink SP committed
    workload: str = ""
    machines: int = 1
    partitions_per_machine: int = 1
    scheduler: str = "dls"
    move: str = "rpc"
    batches: int = 0
    batch_size: int = 0
    input_rate: float | None = None  # offered batches per second (None: closed loop)
    in_flight: int | None = None  # closed loop: batches kept in flight
    kept_up: bool = True  # the engine kept up with the offered rate
    latency_bound_s: float = 1.0
    within_bound: bool = True  # kept up and mean latency within the bound
    sim_time_s: float = 0.0  # simulated seconds
    wall_s: float = 0.0
    events: int = 0
    procedures: dict[str, dict] = field(default_factory=dict)
    streams: dict[str, dict] = field(default_factory=dict)
    # per window: owner, partition, tuples inserted / expired / read, slides, and `busy_s`, the
    # owner's partition time its maintenance took over the batches the run committed
    windows: dict[str, dict] = field(default_factory=dict)
    search: list[dict] = field(default_factory=list)  # max_throughput's probes
    cpu_dilation: float = 1.0  # CPU costs stretched by host sharing (SimParams.host_cores)

    def to_dict(self) -> dict:
        def clean(v):
            if isinstance(v, float):
                return round(v, 6) if math.isfinite(v) else None
            if isinstance(v, list):
                return [clean(x) for x in v]
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            return v

        return {k: clean(v) for k, v in asdict(self).items()}

    @property
    def bottleneck_machine(self) -> int:
        """The most loaded machine (partitions or coordinator, whichever is busier)."""
        load = [max(p, c) for p, c in zip(self.machine_utilisation, self.coordinator_utilisation)]
        return int(np.argmax(load)) if load else 0

    def describe(self, calibration_label: str | None = None) -> list[str]:
        """The terminal summary (`advisor simulate`); `calibration_label` says what the
        parameters stand for (`Calibration.label`; a notebook's call may leave it out)."""
        rate = "max within the latency bound" if self.search else "as given"
        lines = [
            f"simulated {self.workload} on {cluster_text(self.machines, self.partitions_per_machine)} "
            f"({self.scheduler} scheduler, {self.move} MOVE" + (f", {calibration_label})" if calibration_label else ")"),
            f"  input rate          {self.input_rate:,.0f} batches/s ({rate}; batch of {self.batch_size} tuple{'' if self.batch_size == 1 else 's'})",
            f"  throughput          {self.throughput_tps:,.0f} tuples/s ({self.throughput_bps:,.0f} batches/s)",
            f"  latency p50 / p99   {self.latency_p50_ms:.2f} / {self.latency_p99_ms:.2f} ms "
            f"(mean {self.latency_mean_ms:.2f}, bound {self.latency_bound_s * 1e3:g} ms"
            f"{'' if self.within_bound else ', NOT MET'})",
            f"  distributed txns    {self.distributed_txns:,} ({self.distributed_txns / self.batches:.2f} per batch)",
            f"  MOVEs               {self.moves:,} ({self.moves / self.batches:.2f} per batch)",
            f"  busiest resource    {busy_text(self.bottleneck, self.peak_utilisation)}",
            "  machine utilisation " + first_of([f"m{m}:{u:.0%}" for m, u in enumerate(self.machine_utilisation)], " "),
        ]
        lines += [f"  window {name:<12} on partition {w['partition']} with {w['owner']}: {w['slides']:,} "
                  f"slides, {w['inserted']:,.0f} tuples in, {w['busy_s'] * 1e3:,.1f} ms of maintenance"
                  for name, w in self.windows.items()]
        return lines

    def __repr__(self) -> str:
        """One line (the dataclass's held every partition's, SP's and stream's figures and the
        rate search's probes: 34 KB at 100 SPs); `describe()` and `to_dict()` give them all."""
        busiest = f", busiest {self.bottleneck} ({self.peak_utilisation:.0%} busy)" if self.bottleneck else ""
        return (f"SimResult({self.workload!r:.80} on {cluster_text(self.machines, self.partitions_per_machine)}: "
                f"{self.throughput_tps:,.0f} tuples/s, latency p50 {self.latency_p50_ms:.2f} ms / p99 "
                f"{self.latency_p99_ms:.2f} ms, {self.distributed_txns:,} distributed txns, {self.moves:,} MOVEs"
                f"{busiest})")

    def _repr_html_(self) -> str:
        e = html.escape
        return (f"<b>Simulated {e(self.workload)}</b> on {cluster_text(self.machines, self.partitions_per_machine)}"
                f" ({e(self.scheduler)}, {e(self.move)} MOVE): {self.throughput_tps:,.0f} tuples/s, "
                f"latency p50 {self.latency_p50_ms:.2f} ms / p99 {self.latency_p99_ms:.2f} ms, "
                f"{self.distributed_txns} distributed txns, {self.moves} MOVEs")


def measured_rate(ends: np.ndarray, arrival: np.ndarray, warmup: int, *, closed_loop: bool) -> float:
    """Batches per second. Closed loop (the engine's driver keeping a number of batches
    in flight) is measured as the engine measures it: every completed batch over the time from
    the first injection to the last completion. Trimming a warm-up there breaks where the
    batches in flight are most of the run: a partition that runs each SP for every waiting batch in
    turn finishes them all in one burst at the end, and the burst alone has no length. At a
    fixed offered rate, the batches after the first tenth, over the time they took."""
    if closed_loop:
        return float(len(ends) / max(float(ends[-1] - arrival.min()), 1e-12))
    span = ends[-1] - ends[warmup]
    bps = float((len(ends) - 1 - warmup) / span) if span > 0 else float("inf")
    return bps if math.isfinite(bps) else len(ends) / max(float(ends[-1]), 1e-12)


def summarise(model, *, latency_bound_s: float, wall_s: float) -> SimResult:
    """The result of a finished run: every figure is read off what the run's handlers
    counted and timed (a run with an unfinished batch is refused by `check_finished`)."""
    model.check_finished()
    plan = model.plan
    B = model.completed
    commits = model.u_commits
    done = np.asarray(model.done_at)
    arrival = np.asarray(model.arrival)
    w = int(B * WARMUP)
    ends = np.sort(done)
    bps = measured_rate(ends, arrival, w, closed_loop=bool(model.in_flight))
    lat = (done[w:] - arrival[w:]) * 1e3
    makespan = max(float(ends[-1]), model.env.now, 1e-12)  # releases may follow the last commit
    # single-sited work: every (unit, batch) the run committed without a distributed txn
    busy, held_s = list(model.part_busy), list(model.part_held)
    for i, u in enumerate(plan.units):
        work = u.service if u.post is None else [a + b for a, b in zip(u.service, u.post)]
        done_mask = model.committed[i]
        if u.dist is None and len(done_mask) == len(work) and 0 not in done_mask:
            single = sum(work)  # every batch committed single-sited: the same terms, in order
        else:
            single = sum(s for s, ok, d in zip(work, done_mask, u.dist or [None] * len(work))
                         if ok and d is None)
        busy[u.base] += single
        held_s[u.base] += single
    held = [float(h / makespan) for h in held_s]
    busy = [float(x) for x in busy]
    ppm = plan.partitions_per_machine
    machine_util = [float(np.mean(held[m * ppm:(m + 1) * ppm])) for m in range(plan.machines)]
    offered = model.rate
    kept_up = offered is None or bps >= KEPT_UP * offered
    coord = [c / makespan for c in model.coord_busy]
    link = [c / makespan for c in model.nic_busy]
    def node_name(n: int) -> str:
        m = plan.node_machine[n] if n < len(plan.node_machine) - 1 else -1
        if m < 0:
            return "central scheduler node"
        return f"site of partition {n} (machine {m})" if plan.params.site_per_partition else f"machine {m}"

    candidates = [(u, f"partition {p}") for p, u in enumerate(held)]
    candidates += [(u, f"coordinator of {node_name(n)}") for n, u in enumerate(coord)]
    candidates += [(u, f"network link of {node_name(n)}") for n, u in enumerate(link)]
    candidates += [(s / makespan, f"scheduler of {plan.units[i].name}")
                   for i, s in enumerate(model.sched_busy)]
    candidates.append((model.client_busy / makespan, "client"))
    peak, bottleneck = max(candidates, key=lambda c: c[0])
    mean = float(lat.mean())
    procedures = {}
    for i, u in enumerate(plan.units):
        procedures[u.name] = {
            "partition": u.base, "machine": u.base // ppm,
            "txns": commits[i], "distributed": model.u_dist_count[i],
            "scheduler_utilisation": model.sched_busy[i] / makespan,
            "mean_service_ms": float(np.mean(u.service)) * 1e3,
        }
    windows = {}
    unit_of = {m: i for i, u in enumerate(plan.units) for m in u.members}
    for work in plan.windows:
        i = unit_of[work.owner]
        share = work.seconds.sum() / max(sum(w.seconds.sum() for w in plan.windows
                                             if unit_of[w.owner] == i), 1e-300)
        committed = sum(s for s, ok in zip(plan.units[i].window_s, model.committed[i]) if ok)
        windows[work.name] = {**work.to_dict(), "partition": plan.units[i].base,
                              "busy_s": float(committed * share)}
        procedures[plan.units[i].name]["window_busy_s"] = (
            procedures[plan.units[i].name].get("window_busy_s", 0.0) + float(committed * share))
    streams = {}
    for i, e in enumerate(plan.edges):
        n = model.e_moves[i]
        streams[e.name] = {
            "moves": n, "crosses_machine": e.crosses_machine, "bytes_per_batch": e.bytes,
            "mean_move_ms": (model.e_move_time[i] / (n / e.streams) * 1e3) if n else 0.0,
        }
    return SimResult(
        throughput_tps=bps * plan.batch_size, throughput_bps=bps,
        latency_p50_ms=float(np.percentile(lat, 50)), latency_p99_ms=float(np.percentile(lat, 99)),
        latency_mean_ms=mean, distributed_txns=model.dist_txns,
        moves=sum(model.e_moves),
        partition_utilisation=held, partition_busy_s=busy,
        machine_utilisation=machine_util,
        coordinator_utilisation=coord, link_utilisation=link, peak_utilisation=peak,
        client_utilisation=model.client_busy / makespan,
        driver_busy_s=float(model.client_busy + (model.coord_busy[model.client_node]
                                                 if model.client_node is not None else 0.0)),
        bottleneck=bottleneck,
        txns=sum(commits), move_txns=model.move_txns, completed_batches=model.completed,
        workload=plan.workload,
        machines=plan.machines, partitions_per_machine=ppm, scheduler=plan.scheduler,
        move=plan.move, batches=B, batch_size=plan.batch_size, input_rate=offered, in_flight=model.in_flight,
        kept_up=kept_up, latency_bound_s=latency_bound_s,
        within_bound=kept_up and mean <= latency_bound_s * 1e3,
        sim_time_s=makespan, wall_s=wall_s, events=model.env.events,
        procedures=procedures, streams=streams, windows=windows,
    )
