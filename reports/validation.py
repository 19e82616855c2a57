"""Validate a design: run it on the engine (where it fits this machine) and on the simulator,
side by side with the advisor's predicted cost, and name the bottleneck (the most loaded
machine, the most expensive MOVE, the most frequent distributed transaction) so the user
knows what to change next (dissertation 6.3, "evaluate and iterate").
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from costmodel import Bottleneck, cost_model_bottleneck, find_bottleneck
from costmodel.design import Design
from costmodel.errors import UserError, as_python_int, check_seed
from costmodel.model import cost_terms_text
from costmodel.workload import Workload, cluster_text
from reports.bottleneck import NEAR_PEAK_UTILISATION

FORMAT = "advisor.validation/1"
ENGINE_KEYS = ("throughput_tps", "throughput_bps", "latency_p50_ms", "latency_p99_ms",
               "distributed_txns", "moves", "history_check", "wall_s")


class ValidationError(UserError):
    """A validation that cannot run as asked."""


def engine_partition_limit() -> int:
    """The largest design (in partitions) validated on the engine here: every partition is a
    process of its own, and more than a few per core measure the OS scheduler, not the design."""
    return max(8, 4 * (os.cpu_count() or 1))


def partitions_in_use(design: Design) -> int:
    """The partitions that hold an SP or state: an empty one is a process that idles, so it
    does not count towards `engine_partition_limit` (a design of 16 machines using 2 ran here)."""
    return len(set(design.procedures.values()) | {p for p in design.state.values() if p is not None})


@dataclass
class ValidationResult:
    workload: str
    design: str
    machines: int
    partitions_per_machine: int
    predicted_cost: dict
    engine: dict | None = None
    simulator: dict | None = None
    bottleneck: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        """One line (the dataclass's held both sides' every figure: 30 KB at 100 SPs);
        `describe()` and `to_dict()` give them all."""
        sides = []
        for label, side in (("engine", self.engine), ("simulator", self.simulator)):
            tps = side.get("throughput_tps") if isinstance(side, dict) else None
            sides.append(f"{label} {tps:,.0f} tuples/s" if isinstance(tps, (int, float)) else f"{label} -")
        cost = self.predicted_cost.get("total") if isinstance(self.predicted_cost, dict) else None
        cost_text = f", cost {cost:.4f}" if isinstance(cost, (int, float)) else ""
        return (f"ValidationResult({self.design!r:.60} for {self.workload!r:.80} on "
                f"{cluster_text(self.machines, self.partitions_per_machine)}: {', '.join(sides)}{cost_text})")

    def to_dict(self) -> dict:
        """One design's entry of a validation file (`validation_document`)."""
        return {"design": self.design, "machines": self.machines,
                "partitions_per_machine": self.partitions_per_machine,
                "predicted_cost": self.predicted_cost, "engine": self.engine,
                "simulator": self.simulator, "bottleneck": self.bottleneck, "notes": self.notes}

    def to_document(self) -> dict:
        """This result as a validation file of one design."""
        return validation_document(self.workload, [self])

    def describe(self) -> list[str]:
        lines = [f"validation of {self.design} for {self.workload} on "
                 f"{cluster_text(self.machines, self.partitions_per_machine)}"]
        c = self.predicted_cost
        lines.append(f"  predicted cost      {c['total']:.4f} ({cost_terms_text(c)})")
        from reports.validation_view import METRICS, side_value

        lines.append(f"  {'':<26}{'engine':>14}{'simulator':>14}")
        for key, title, fmt in METRICS:
            cells = []
            for side in (self.engine, self.simulator):
                v = side_value(side, key)
                cells.append("-" if v is None else fmt.format(v))
            lines.append(f"  {title:<26}{cells[0]:>14}{cells[1]:>14}")
        if self.engine and self.engine.get("history_check") is not None:
            lines.append(f"  engine history check: {self.engine['history_check']}")
        b = self.bottleneck
        lines.append("bottleneck:")
        for key in ("machine", "move", "distributed_txn"):
            if b.get(key):
                lines.append(f"  {b[key]['text']}")
        lines += [f"note: {n}" for n in self.notes]
        return lines

    def view(self):
        """This result as a `ValidationView`: the table, figure and notes a report shows."""
        from reports.validation_view import ValidationView

        return ValidationView.from_any(self)

    def to_frame(self):
        """Engine and simulator side by side, one row (as `ValidationView.to_frame`)."""
        return self.view().to_frame()

    def plot(self, ax=None, metric: str = "throughput_tps"):
        """Engine against simulator for `metric` (as `ValidationView.plot`): the result of
        `advisor.validate` draws itself as the other notebook results do."""
        return self.view().plot(ax=ax, metric=metric)

    def _repr_html_(self) -> str:
        """A notebook shows the result as its validation view does (`reports.validation_view`)."""
        return self.view()._repr_html_()


def validation_document(workload: str, results: list[ValidationResult], notes: list[str] = ()
                        ) -> dict:
    """The validation file (`advisor.validation/1`, docs/formats.md): the workload, one entry
    per design validated, and notes about the whole comparison."""
    return {"format": FORMAT, "workload": workload, "designs": [r.to_dict() for r in results],
            "notes": list(notes)}


def static_hotspots(workload: Workload, design: Design) -> tuple[list[dict], list[dict]]:
    """Distributed SPs and cross-partition streams a design implies, from the spec alone:
    (SP, chance a batch runs distributed) and (stream, bytes per batch, crosses machine)."""
    dist = []
    for p in workload.procedures:
        base = design.procedures[p.name]
        never_remote = 1.0
        for a in p.accesses:
            where = design.state[a.table]
            remote = (where is not None and where != base) or (where is None and a.mode == "write"
                                                              and design.n_partitions > 1)
            if remote:
                never_remote *= 1.0 - a.probability
        if never_remote < 1.0:
            dist.append({"procedure": p.name, "per_batch": 1.0 - never_remote})
    moves = []
    ppm = design.partitions_per_machine
    for s in workload.streams:
        a, b = design.procedures[s.source], design.procedures[s.target]
        if a != b:
            moves.append({"stream": f"{s.source}->{s.target}", "bytes_per_batch": s.tuples * s.tuple_bytes,
                          "crosses_machine": a // ppm != b // ppm})
    return dist, moves


def measured_bottleneck(workload: Workload, design: Design, sim: dict | None,
                        engine: dict | None) -> Bottleneck:
    """The bottleneck a validation saw: the engine's busiest machine where it ran, else the
    simulator's, else the cost model's (`source` says which). Its `evidence` is what the
    validation file carries: the simulator's busiest machine, costliest MOVE and most
    distributed SP, the engine's busiest machine, and the cost model's where neither ran."""
    from costmodel.graph import WorkloadGraph

    graph = WorkloadGraph.from_workload(workload).with_cluster(design.machines, design.partitions_per_machine)
    base = cost_model_bottleneck(design, graph)
    evidence: dict = {}
    engine_busy = None
    ppm = design.partitions_per_machine
    if sim is not None:
        util = sim["machine_utilisation"]  # share of time its partitions are held
        busy = [sum(sim["partition_busy_s"][i * ppm:(i + 1) * ppm]) for i in range(len(util))]
        # partitions held together by a distributed transaction tie: the one working wins
        m = max(range(len(util)), key=lambda i: (round(util[i], 2), busy[i]))
        evidence["machine"] = {"machine": m, "utilisation": util[m], "busiest_resource": sim["bottleneck"],
                               "text": f"most loaded machine: {m} (its partitions {util[m]:.0%} busy in the "
                                       f"simulator; busiest resource overall: {sim['bottleneck']})"}
    if engine is not None and engine.get("partition_busy_s") and engine.get("wall_s"):
        m, per_machine, load = _engine_busiest(engine, design.machines, ppm)
        engine_busy = (m, per_machine)
        text = f"engine: machine {m} the busiest (its partitions {load})"
        if "machine" in evidence:
            evidence["machine"]["engine"] = {"machine": m, "utilisation": per_machine[m]}
            evidence["machine"]["text"] += f"; {text}"
        else:
            evidence["machine"] = {"machine": m, "utilisation": per_machine[m],
                                   "text": f"most loaded machine: {m} ({load} on the engine)"}
    if "machine" not in evidence:
        evidence["machine"] = {"machine": base.machine, "load_share": base.machine_load_share,
                               "text": f"most loaded machine: {base.machine} ({base.machine_load_share:.0%} "
                                       "of all load, cost model)"}
    if sim is not None:
        streams = [(name, s) for name, s in sim["streams"].items() if s["moves"]]
        if streams:
            name, s = max(streams, key=lambda kv: (kv[1]["crosses_machine"], kv[1]["mean_move_ms"],
                                                   kv[1]["bytes_per_batch"]))
            evidence["move"] = {"stream": name, **s, "text": (
                f"most expensive MOVE in the simulator: {name} ({s['bytes_per_batch']:.0f} bytes per batch"
                f"{', across machines' if s['crosses_machine'] else ', inside one machine'}"
                + (f", {s['mean_move_ms']:.3f} ms each" if s["mean_move_ms"] else "") + ")")}
        procs = [(name, p) for name, p in sim["procedures"].items() if p["distributed"]]
        if procs:
            name, p = max(procs, key=lambda kv: kv[1]["distributed"])
            evidence["distributed_txn"] = {"procedure": name, "count": p["distributed"], "text": (
                f"most frequent distributed transaction in the simulator: {name} ({p['distributed']} of "
                f"{p['txns']} transactions)")}
        return _with_evidence(graph, design, base, evidence, sim, engine_busy)
    if base.move is not None:
        a, b, tuples = base.move
        crosses = design.procedure_machine(a) != design.procedure_machine(b)
        evidence["move"] = {"stream": f"{a}->{b}", "tuples_per_batch": tuples, "crosses_machine": crosses,
                            "text": f"most expensive MOVE: {a}->{b} ({tuples:g} tuples per batch"
                                    f"{', across machines' if crosses else ', inside one machine'}, cost model)"}
    if base.distributed_access is not None:
        proc, item, rows = base.distributed_access
        evidence["distributed_txn"] = {"procedure": proc, "state": item, "rows_per_batch": rows,
                                       "text": f"most frequent distributed transaction: {proc} "
                                               f"({rows:g} rows per batch of {item} elsewhere, cost model)"}
    return _with_evidence(graph, design, base, evidence, sim, engine_busy)


def _engine_busiest(engine: dict, machines: int, ppm: int) -> tuple[int, list[float], str]:
    """The engine's busiest machine, its partitions' share of the run per machine, and how
    loaded they were, in words. Busiest by the time its partitions were held (locked by a
    transaction, executing or waiting), as the simulator's utilisation counts, execution
    breaking ties; in a validation file from before the engine measured holds (no
    `partition_held_s`), by execution alone."""
    wall = engine["wall_s"]

    def share(values: list[float]) -> list[float]:
        return [sum(values[i * ppm:(i + 1) * ppm]) / ppm / wall for i in range(machines)]

    busy = share(engine["partition_busy_s"])
    if not any(engine.get("partition_held_s") or ()):
        m = max(range(machines), key=busy.__getitem__)
        return m, busy, f"{busy[m]:.0%} busy"
    held = share(engine["partition_held_s"])
    m = max(range(machines), key=lambda i: (round(held[i], 2), busy[i]))
    return m, held, f"{held[m]:.0%} held, {busy[m]:.0%} executing"


def _with_evidence(graph, design: Design, base: Bottleneck, evidence: dict, sim: dict | None,
                   engine_busy: tuple[int, list[float]] | None) -> Bottleneck:
    """The bottleneck at the machine the validation found busiest (the engine's, else the
    simulator's, else the cost model's `base`), carrying `evidence`."""
    if engine_busy is not None:
        machine, busy = engine_busy
        source = "measured"
        resource = sim["bottleneck"] if sim is not None else f"machine {machine} (engine: busiest partitions)"
    elif sim is not None:
        machine, busy = evidence["machine"]["machine"], sim["machine_utilisation"]
        source, resource = "simulated", sim["bottleneck"]
    else:
        return replace(base, evidence=evidence)
    b = find_bottleneck(*design.cost_view(graph), busy=busy, machine=machine,
                        near_peak=NEAR_PEAK_UTILISATION, source=source, resource=resource,
                        utilisation=float(busy[machine]))
    return replace(b, evidence=evidence)


def _engine_dict(run) -> dict:
    d = run.to_dict() if hasattr(run, "to_dict") else dict(vars(run))
    return {k: v for k, v in d.items() if not k.startswith("_")}


def _api_inputs(workload, design, calibration):
    """What `simulate` takes (`engine_sim.sim.run.api_inputs`), a statistics directory as the
    workload too, and a calibration file read as the CLI reads it."""
    from advisor.priced_weights import as_calibration
    from advisor.sources import load_workload
    from engine_sim.sim.run import api_inputs

    if isinstance(workload, (str, os.PathLike)):
        workload = load_workload(workload)
    if isinstance(calibration, (str, os.PathLike)):
        calibration = as_calibration(calibration)
    return api_inputs(workload, design, calibration)


def validate_design(workload: Workload, design: Design, *, engine: bool = True, sim: bool = True,
             calibration=None, batches: int = 300, seed: int | None = None, scheduler: str = "dls",
             move: str = "rpc", latency_bound_s: float = 1.0, in_flight: int = 64) -> ValidationResult:
    """Engine and simulator side by side.

    With a calibration of this machine the simulator predicts the engine *here*: the same
    closed loop (`in_flight` batches in flight), the emulated machines sharing this host's cores.
    Without one it predicts the reference cluster at its maximum throughput, which the
    engine on this machine cannot be compared with number for number (a note says so).
    """
    from advisor.api import evaluate
    from engine_sim.sim import SimError
    from engine_sim.sim.compiled import MAX_BATCHES, MIN_BATCHES

    for flag, value in (("engine", engine), ("sim", sim)):
        if not isinstance(value, bool):  # engine="no" ran the engine
            raise SimError(f"{flag} must be True or False, got {value!r}")
    if not (engine or sim):
        raise SimError("nothing to validate: engine and sim are both off")
    from advisor.sources import check_argument_order

    check_argument_order("validate", design, workload, "workload, design")
    workload, design, calibration = _api_inputs(workload, design, calibration)
    seed = design.seed_or_recorded(seed)  # None: the design's own, as `simulate` takes it
    check_seed(seed, SimError)
    batches, in_flight = as_python_int(batches), as_python_int(in_flight)  # numpy's too, as the simulator takes them
    if sim and not (isinstance(batches, int) and MIN_BATCHES <= batches <= MAX_BATCHES):  # before any engine run
        raise SimError(f"--batches must be {MIN_BATCHES} to {MAX_BATCHES:,} for the simulator, got {batches!r}")
    cost = evaluate(design, workload).to_dict()
    result = ValidationResult(workload.name, design.method or "design", design.machines,
                              design.partitions_per_machine, cost)
    if engine:
        from engine_sim.engine.runner import MAX_PROCESSES

        limit, busy = engine_partition_limit(), partitions_in_use(design)
        if busy > limit or design.n_partitions > MAX_PROCESSES:
            result.notes.append(f"engine skipped: the design has {design.n_partitions} partitions"
                                f"{f' ({busy} in use)' if busy < design.n_partitions else ''}, more than "
                                f"this machine runs ({limit}); the simulator predicts it")
        else:
            from engine_sim.calibrate import ENGINE_COMMAND_LOG
            from engine_sim.engine import ClientOptions, run_workload

            run = run_workload(workload, design, batches=batches, scheduler=scheduler, move=move,
                               seed=seed, command_log=ENGINE_COMMAND_LOG,
                               client=ClientOptions(in_flight=in_flight, latency_bound_s=latency_bound_s))
            result.engine = _engine_dict(run)
    if sim:
        from engine_sim.sim import run_once, simulate

        kw = dict(scheduler=scheduler, move=move, batches=batches, seed=seed,
                  latency_bound_s=latency_bound_s)
        if calibration is not None:
            r = run_once(workload, design, in_flight=in_flight, calibration=calibration.on_host(), **kw)
            result.notes.append(f"simulator calibrated on {calibration.machine.get('hostname', '?')} "
                                f"({calibration.source}): predicts the engine on this host, "
                                f"{in_flight} batches in flight")
        else:
            r = simulate(workload, design, **kw)
            result.notes.append("simulator uncalibrated: it predicts the reference cluster at its "
                                "maximum throughput; run `advisor calibrate` and pass --calibration "
                                "to predict this machine's engine")
        result.simulator = r.to_dict()
    from costmodel.granularity import workload_at

    result.bottleneck = measured_bottleneck(workload_at(workload, design.state), design, result.simulator,
                                            result.engine).evidence
    return result
