"""The calibration micro-benchmarks: tiny workloads and designs that each isolate one cost
of the engine (a single-sited transaction and its parts, window maintenance, a scheduler hop
inside a machine and across machines, bytes moved, 2PC over 2 and 4 partitions, a MOVE as a
transaction, the central scheduler). Measured on the engine, predicted by the simulator, fitted in `fit.py`.

A declared SP's `cost` is real CPU work in the engine (`cost x cost_unit_us`, 100 us per unit
by default), so `txn_cost` (cost 4) does four times the work of `txn` (cost 1) and `txn_nocost`
(cost 0) none: the differences of their busy times are the cost-driven parts, and
`cost_scaling` reads their ratio off a calibration's measurements (about 4).

Every probe runs one batch at a time (a closed loop with one batch in flight), so nothing queues
and what it measures is a plain sum of the step costs: the end-to-end latency, or the busy
time of one partition per transaction.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from costmodel.design import Design
from costmodel.workload import Access, InputSpec, Procedure, Stream, Table, Window, Workload


@dataclass(frozen=True)
class Probe:
    name: str
    workload: Workload
    design: Design
    observe: str  # "latency" (p50 end-to-end, s), "busy" (partition busy s per batch),
    # "driver" (the driver process's CPU s per batch; multi-process only),
    # "cycle" (s per batch, closed loop) or "throughput" (batches/s; checks only)
    partition: int = 0  # for "busy"
    scheduler: str = "dls"
    move: str = "rpc"
    in_flight: int = 1  # batches in flight

    @property
    def key(self) -> str:
        return (f"{self.name}:{self.observe}" + (f"@p{self.partition}" if self.observe == "busy" else "")
                + (f"/w{self.in_flight}" if self.in_flight != 1 else ""))  # "/w": the files' key format


def _workload(name: str, sps: list[tuple[float, tuple[Access, ...]]], tables: list[str],
              tuple_bytes: int = 64, batch_size: int = 10) -> Workload:
    procs = tuple(Procedure(f"SP{i + 1}", cost, acc) for i, (cost, acc) in enumerate(sps))
    streams = tuple(Stream(f"SP{i + 1}", f"SP{i + 2}", batch_size, tuple_bytes)
                    for i in range(len(sps) - 1))
    return Workload(f"calibration-{name}", tuple(Table(t, 100_000, 64, "k") for t in tables),
                    procs, streams, input=InputSpec(batch_size=batch_size, fields=("k", "v")))


def _design(w: Workload, machines: int, ppm: int, procs: dict, state: dict) -> Design:
    return Design(w.name, machines, ppm, procs, state, method="calibration")


def _reads(table: str, rows: float) -> tuple[Access, ...]:
    return (Access(table, "read", rows, "input:k"),)


def probes() -> list[Probe]:
    out: list[Probe] = []

    def single(name, cost, accesses, tables, batch_size=10):
        w = _workload(name, [(cost, accesses)], tables, batch_size=batch_size)
        d = _design(w, 1, 1, {"SP1": 0}, {t: 0 for t in tables})
        out.append(Probe(name, w, d, "busy"))
        out.append(Probe(name, w, d, "latency"))
        if name == "txn":
            out.append(Probe(name, w, d, "cycle"))

    # a single-sited transaction and what it is made of
    single("txn", 1.0, _reads("T1", 10), ["T1"])
    single("txn_cost", 4.0, _reads("T1", 10), ["T1"])
    single("txn_nocost", 0.0, _reads("T1", 10), ["T1"])
    single("txn_reads", 1.0, _reads("T1", 100), ["T1"])
    single("txn_writes", 1.0, (Access("T1", "write", 100, "input:k"),), ["T1"])
    single("txn_empty", 1.0, (), ["T1"])
    single("txn_tuples", 1.0, (), ["T1"], batch_size=100)

    # a window at its owner: staged only (never slides within a run), and tumbling (every batch
    # slides once: its tuples become active, the previous batch's expire, the aggregate is read)
    for name, size in (("window_stage", 10 ** 7), ("window_slide", 100)):
        w = _workload(name, [(1.0, ())], ["T1"], batch_size=100)
        w = replace(w, windows=(Window("W", "SP1", size, size),))
        d = _design(w, 1, 1, {"SP1": 0}, {"T1": 0})
        out.append(Probe(name, w, d, "busy"))

    # eight SPs in series on one partition: what every further transaction of a batch costs
    w = _workload("chain8", [(1.0, ())] * 8, ["T1"])
    d = _design(w, 1, 1, {f"SP{i + 1}": 0 for i in range(8)}, {"T1": 0})
    out += [Probe("chain8", w, d, "busy"), Probe("chain8", w, d, "latency")]

    # a two-SP pipeline: the scheduler hop and the MOVE, inside one machine and across two
    def pipeline(name, machines, ppm, tuple_bytes=64, scheduler="dls", move="rpc", observe=("latency",)):
        w = _workload(name, [(1.0, ()), (1.0, ())], ["T1"], tuple_bytes=tuple_bytes)
        d = _design(w, machines, ppm, {"SP1": 0, "SP2": 1}, {"T1": 0})
        for o in observe:
            out.append(Probe(name, w, d, o, 0, scheduler, move))

    pipeline("hop_local", 1, 2, observe=("latency", "busy", "cycle"))
    pipeline("hop_remote", 2, 1)
    pipeline("hop_remote_bytes", 2, 1, tuple_bytes=32_768)
    pipeline("hop_central", 2, 1, scheduler="central")
    pipeline("move_txn", 2, 1, move="txn")

    # distributed transactions: 2PC over 2 partitions (one machine, two), and over 4
    def two_pc(name, machines, ppm, n):
        tables = [f"T{i + 1}" for i in range(n)]
        acc = tuple(Access(t, "read" if i == 0 else "write", 10, "input:k") for i, t in enumerate(tables))
        w = _workload(name, [(1.0, acc)], tables)
        d = _design(w, machines, ppm, {"SP1": 0}, {t: i for i, t in enumerate(tables)})
        out.append(Probe(name, w, d, "latency"))

    two_pc("2pc_local", 1, 2, 2)
    two_pc("2pc_2", 2, 1, 2)
    two_pc("2pc_4", 4, 1, 4)

    # loaded: 16 batches in flight, seconds per batch. Latency alone cannot tell the CPU a
    # message costs from the time it travels; under load only the CPU limits throughput.
    for p in list(out):
        if p.observe == "latency" and p.name in LOADED:
            out.append(Probe(p.name, p.workload, p.design, "cycle", 0, p.scheduler, p.move, 16))
    # the driver's own CPU per batch, read off the same runs: without it the fit can explain
    # a latency by the client's work as well as by the partitions' or the messages'
    driver = {}
    for p in out:
        if p.observe in ("latency", "cycle") and p.name in DRIVER_OBSERVED:
            d = Probe(p.name, p.workload, p.design, "driver", 0, p.scheduler, p.move, p.in_flight)
            driver.setdefault(d.key, d)
    return out + list(driver.values())


# the central scheduler loaded too: its work splits between the driver's thread and the
# partitions, which only a loaded run tells when threads crowd the host's cores
LOADED = ("txn", "txn_reads", "chain8", "hop_local", "hop_remote", "hop_remote_bytes", "hop_central",
          "2pc_2", "2pc_4", "move_txn")
CHECKED = ("2pc_local", "txn_writes")
DRIVER_OBSERVED = ("txn", "txn_tuples", "chain8", "hop_remote", "hop_central")


def driver_probe(p: Probe) -> bool:
    """Whether a probe observes the driver process's CPU (multi-process engine only: in-process
    one thread runs the driver and every partition)."""
    return p.observe == "driver"


def cost_scaling(measured: dict[str, float]) -> dict[str, float] | None:
    """The cost-driven part of the 1x and the 4x-cost probe (busy seconds per batch above the
    cost-0 probe) and their ratio (None if the 1x probe measured no work), from measurements keyed like `Probe.key`; None when the
    three were not measured."""
    keys = ("txn:busy@p0", "txn_cost:busy@p0", "txn_nocost:busy@p0")
    if not all(k in measured for k in keys):
        return None
    one, four, zero = (measured[k] for k in keys)
    work1, work4 = one - zero, four - zero
    return {"work_1x_s": work1, "work_4x_s": work4,
            "ratio": work4 / work1 if work1 > 0 else None}


def throughput_checks() -> list[Probe]:
    """Loaded runs (16 batches in flight) the fit is checked against, not fitted to: two probe
    setups, and a four-SP pipeline over 2 machines x 2 partitions under the central scheduler
    (a shape no probe has)."""
    checks = [Probe(p.name, p.workload, p.design, "throughput", 0, p.scheduler, p.move, 16)
              for p in probes() if p.observe == "latency" and p.name in CHECKED]
    w = _workload("pipeline4_central", [(1.0, ())] * 4, ["T1"])
    d = _design(w, 2, 2, {f"SP{i + 1}": i for i in range(4)}, {"T1": 0})
    return checks + [Probe("pipeline4_central", w, d, "throughput", 0, "central", "rpc", 16)]
