"""`advisor demo`: the whole loop on the bundled TPC-DI workload, step by step.

1. run the engine under a naive design (everything on one machine, as a first deployment
   would) and trace it: the user's running system;
2. aggregate the trace with Spark (local mode) into workload statistics;
3. recommend a design from the statistics alone (no spec: the workload rebuilt from them);
4. predict it beside every baseline on the traced cluster (the simulator);
5. validate on the engine on a cluster this host can run side by side (no more machines than
   cores, one process per partition): naive and recommended, measured and predicted;
6. write report.html, design.json, validation.json, the statistics and demo.json.

Why single-machine and not round-robin as the traced design: a trace measures each SP's cost
as the duration of its transactions, and under a design that spreads state (round-robin) the
SPs that run distributed transactions spend most of that time waiting for 2PC. Statistics
from such a trace make one SP look 50x heavier than it is, and the advisor then (correctly,
for those numbers) keeps everything on one machine. Tracing on one partition measures the
work itself.

Each output is written atomically by its own writer; a directory that holds something other
than a previous demo is refused rather than overwritten.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from costmodel.files import atomic_write_text, rebuilding_dir
from costmodel.workload import cluster_text
from advisor.errors import AdvisorError

WORKLOAD = "tpcdi-trade"
NAIVE = "single-machine"
DEFAULT_BATCHES = 200
MAX_BATCHES = 100_000  # the demo traces every batch of its engine runs: minutes and a big trace already
MARKER = "demo.json"
# written first, removed last: a demo that was interrupted (Ctrl-C, SIGTERM, SIGKILL, a full
# disk) leaves it behind, so the next demo knows the directory is its own and starts afresh
IN_PROGRESS = ".demo-in-progress"
STEPS = 6


ENGINE_NOTE = ("engine: measured on this host with {machines} machine(s), one process per partition, so no "
               "more machines than the host has cores; the larger cluster is predicted only. Simulator: the "
               "workload rebuilt from the statistics, on the reference cluster (one machine per node)")
ENGINE_NOTE_CALIBRATED = ("engine: measured on this host with {machines} machine(s), one process per partition; "
                          "the simulator beside it: {label}. The larger cluster is predicted only, with the "
                          "same calibration as a cluster")
FAVOURS_NAIVE_NOTE = ("the engine measured the naive design faster here: short runs on a busy host are noisy "
                      "(other processes and the engine's own driver share these cores with the partitions); "
                      "the prediction on a real cluster is the figure to trust")
REFERENCE_CLUSTER = "the reference cluster, not this host"
SPARK_CONF = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}


def _worth_showing(line: str) -> bool:
    """The aggregation's finished steps, not every Spark stage."""
    return "done in" in line or line.startswith(("aggregate: trace:", "wrote"))


@dataclass
class DemoResult:
    out: Path
    design_path: Path
    report_path: Path
    statistics_path: Path
    predicted_tps: dict[str, float] = field(default_factory=dict)  # design name -> tuples/s
    same_as_recommended: list[str] = field(default_factory=list)
    engine_tps: dict[str, float] = field(default_factory=dict)  # measured on `engine_machines`
    engine_predicted_tps: dict[str, float] = field(default_factory=dict)  # the same, predicted
    engine_machines: int = 0
    # what those predictions stand for: without a calibration of this host, a real cluster,
    # which measures differently from machines that are processes sharing this host's cores
    engine_predicted_for: str = REFERENCE_CLUSTER
    seconds: float = 0.0

    @property
    def recommended_tps(self) -> float:
        return self.predicted_tps["recommended"]

    @property
    def beaten(self) -> list[str]:
        return [n for n, t in self.predicted_tps.items()
                if n != "recommended" and n not in self.same_as_recommended and t < self.recommended_tps]

    @property
    def not_beaten(self) -> list[str]:
        return [n for n, t in self.predicted_tps.items()
                if n != "recommended" and n not in self.same_as_recommended and t >= self.recommended_tps]

    @property
    def beats_every_baseline(self) -> bool:
        return not self.not_beaten

    def summary(self) -> list[str]:
        lines = ["", f"{'design':<22} {'predicted tuples/s':>18}  {'recommended is':>15}"]
        for name, tps in sorted(self.predicted_tps.items(), key=lambda kv: -kv[1]):
            if name == "recommended":
                rel = ""
            elif name in self.same_as_recommended:
                rel = "the same design"
            else:
                rel = f"{self.recommended_tps / tps:.2f}x" if tps > 0 else "inf"
            lines.append(f"{name:<22} {tps:>18,.0f}  {rel:>15}")
        if self.beats_every_baseline:
            verdict = "the recommended design beats every baseline in predicted throughput"
            if self.same_as_recommended:
                verdict += f" ({', '.join(self.same_as_recommended)} found the same placement)"
        else:
            verdict = ("the recommended design does NOT beat: " + ", ".join(self.not_beaten)
                       + " (see the report's cost and suggestions sections for why)")
        lines += ["", verdict]
        if self.engine_tps:
            naive, rec = self.engine_tps.get(NAIVE, 0.0), self.engine_tps.get("recommended", 0.0)
            p_naive, p_rec = (self.engine_predicted_tps.get(k, 0.0) for k in (NAIVE, "recommended"))
            lines.append(f"engine on {self.engine_machines} machine(s) of this host: {NAIVE} {naive:,.0f} -> "
                         f"recommended {rec:,.0f} tuples/s measured ({rec / naive if naive else 0:.2f}x; "
                         f"predicted {p_rec / p_naive if p_naive else 0:.2f}x for {self.engine_predicted_for})"
                         + ("; see the note above" if rec < naive else ""))
        lines.append(f"open {self.report_path}  ({self.seconds:.0f} s in all)")
        return lines

    def to_dict(self) -> dict:
        return {"format": "advisor.demo/1", "workload": WORKLOAD, "naive_design": NAIVE,
                "predicted_tps": self.predicted_tps, "engine_machines": self.engine_machines,
                "engine_tps": self.engine_tps, "engine_predicted_tps": self.engine_predicted_tps,
                "engine_predicted_for": self.engine_predicted_for, "same_as_recommended": self.same_as_recommended,
                "beats_every_baseline": self.beats_every_baseline, "seconds": round(self.seconds, 1)}


class _Steps:
    def __init__(self, say: Callable[[str], None]):
        self.say, self.n, self.started = say, 0, time.perf_counter()

    def __call__(self, text: str) -> None:
        self.n += 1
        self.say(f"[{self.n}/{STEPS}] {text}")
        self.t0 = time.perf_counter()

    def done(self, text: str = "") -> None:
        self.say(f"      {text + ' ' if text else ''}({time.perf_counter() - self.t0:.1f} s)")


def _naive(system, machines: int | None, seed: int, calibration=None):
    """The naive design (everything on one machine) of the user's system on a cluster."""
    from advisor.sources import load_graph
    from advisor.baselines import baseline_design
    from advisor.priced_weights import default_weights

    graph = load_graph(system, machines)
    return baseline_design(NAIVE, graph, default_weights(graph, calibration), seed)


def run_demo(out: str | Path, batches: int = DEFAULT_BATCHES, seed: int = 0,
             progress: Callable[[str], None] | None = print, spark=None,
             host_cores: int | None = None, calibration=None) -> DemoResult:
    """Run the demo into `out`; `spark`: an existing session to reuse (tests); `host_cores`:
    how many machines the engine may run side by side here (default: this host's cores);
    `calibration` (a Calibration or its file, from `advisor calibrate`): what the pick and
    every prediction price with, and, for the engine step, what predicts the engine on this
    host (default: the shipped calibration, predictions on the reference cluster).
    A previous demo in `out` is kept until this one is complete, and put back if it fails or
    is interrupted."""
    if not isinstance(batches, int) or isinstance(batches, bool) or not 10 <= batches <= MAX_BATCHES:
        raise AdvisorError(f"--batches must be an integer from 10 to {MAX_BATCHES:,} (a longer run: trace, "
                           f"aggregate and recommend with their own commands), got {batches!r}")
    calibration = _calibration(calibration)  # a bad file fails before anything is written
    with rebuilding_dir(out, (MARKER, IN_PROGRESS), "a previous demo") as out:
        atomic_write_text(out / IN_PROGRESS, f"{os.getpid()}\n", fsync=False)
        result = _demo(out, batches, seed, progress, spark, host_cores, calibration)
        (out / IN_PROGRESS).unlink()
    return result


def _calibration(calibration):
    """A calibration file read before the demo writes anything (a bad one is one line)."""
    from advisor.priced_weights import as_calibration

    return None if calibration is None else as_calibration(calibration)


def _demo(out: Path, batches: int, seed: int, progress: Callable[[str], None] | None, spark,
          host_cores: int | None, calibration=None) -> DemoResult:
    from advisor.api import recommend
    from advisor.sources import load_workload
    from reports.validation import ValidationResult, validation_document
    from engine_sim.engine import run_workload
    from reports.predict import CachedSimulator, PredictOptions, predict
    from reports.report import ReportOptions, build_report, write_report
    from reports.sensitivity import placement_signature

    say = progress or (lambda _msg: None)
    step = _Steps(say)
    started = time.perf_counter()

    system = load_workload(WORKLOAD)  # the user's running system: the demo's engine runs it
    c = system.cluster
    naive = _naive(system, None, seed, calibration)

    step(f"engine: {WORKLOAD} ({len(system.procedures)} SPs, {len(system.tables)} tables) on "
         f"{cluster_text(c.machines, c.partitions_per_machine)}, naive {NAIVE} design, "
         f"{batches} batches, tracing")
    trace_dir = out / "trace"
    traced = run_workload(system, naive, batches=batches, seed=seed, trace_out=trace_dir, in_process=True)
    step.done(f"{traced.throughput_tps:,.0f} tuples/s measured, {traced.distributed_txns} distributed txns, "
              f"{traced.moves} MOVEs")

    step("Spark (local mode): aggregating the trace into workload statistics")
    from traces.aggregate import aggregate

    stats_dir = out / "statistics"
    aggregate(trace_dir, stats_dir, spark=spark, master="local[2]", conf=SPARK_CONF,
              progress=lambda line: say(f"      {line}") if _worth_showing(line) else None)
    step.done()

    step(f"advisor: recommending a design for {c.machines} machines from the statistics alone")
    rec = recommend(stats_dir, seed=seed, simulator=CachedSimulator(), calibration=calibration)
    workload = rec.workload  # rebuilt from the statistics: what the advisor knows of the system
    design_path = rec.design.save(out / "design.json")
    for line in rec.bottleneck.describe():
        say(f"      {line}")
    step.done(f"picked {rec.selection.chosen.label!r} ({rec.selection.objective}), wrote {design_path}")

    step(f"simulator: the recommendation beside every baseline on {c.machines} machines (predicted)")
    options = PredictOptions(seed=seed, calibration=calibration)
    result = DemoResult(out, design_path, out / "report.html", stats_dir)
    own = placement_signature(rec.design)
    predictions = {"recommended": predict(workload, rec.design, options)}
    for name, d in rec.baselines.items():
        predictions[name] = predict(workload, d, options)
        if placement_signature(d) == own:
            result.same_as_recommended.append(name)
    result.predicted_tps = {name: float(p.throughput_tps) for name, p in predictions.items()}
    step.done(f"{len(rec.baselines)} baselines; recommended {result.recommended_tps:,.0f} tuples/s predicted")

    local = max(1, min(host_cores or os.cpu_count() or 1, c.machines))
    step(f"engine: naive and recommended side by side on {local} machine(s), one process per "
         f"partition (this host has {host_cores or os.cpu_count()} cores); the simulator beside it")
    if local == c.machines:
        local_rec, local_naive = rec.design, naive
    else:
        local_rec = recommend(stats_dir, machines=local, seed=seed, baselines=False,
                              simulator=CachedSimulator(), calibration=calibration).design
        local_naive = _naive(system, local, seed, calibration)
    at_home = system.with_cluster(local)
    model = workload.with_cluster(local)
    runs = {label: run_workload(at_home, d, batches=batches, seed=seed, in_process=False)
            for label, d in ((NAIVE, local_naive), ("recommended", local_rec))}
    # with a calibration of this host, the engine step is predicted for this host (as `advisor
    # validate --calibration` does); without one, for the reference cluster
    here = options if calibration is None else replace(options, calibration=calibration.on_host())
    sims = {label: predict(model, d, here) for label, d in ((NAIVE, local_naive), ("recommended", local_rec))}
    result.engine_machines = local
    result.engine_tps = {label: float(r.throughput_tps) for label, r in runs.items()}
    result.engine_predicted_tps = {label: float(p.throughput_tps) for label, p in sims.items()}
    if calibration is not None:
        result.engine_predicted_for = f"this host, as calibrated on {here.calibration.machine.get('hostname', '?')}"
    notes = [ENGINE_NOTE.format(machines=local) if calibration is None
             else ENGINE_NOTE_CALIBRATED.format(machines=local, label=here.calibration.label())]
    if result.engine_tps["recommended"] < result.engine_tps[NAIVE]:
        notes.append(FAVOURS_NAIVE_NOTE)
    validation = validation_document(WORKLOAD, [
        ValidationResult(WORKLOAD, label, d.machines, d.partitions_per_machine, d.cost.to_dict(),
                         engine=runs[key].to_dict(), simulator=sims[key].to_dict())
        for label, key, d in ((f"naive ({NAIVE})", NAIVE, local_naive), ("recommended", "recommended", local_rec))],
        notes=notes)
    atomic_write_text(out / "validation.json", json.dumps(validation, indent=2) + "\n")
    measured = result.engine_tps["recommended"] / max(result.engine_tps[NAIVE], 1e-9)
    predicted = result.engine_predicted_tps["recommended"] / max(result.engine_predicted_tps[NAIVE], 1e-9)
    step.done(f"measured {result.engine_tps[NAIVE]:,.0f} -> {result.engine_tps['recommended']:,.0f} tuples/s "
              f"({measured:.2f}x); predicted {predicted:.2f}x for {result.engine_predicted_for}"
              + ("; `advisor calibrate` then `--calibration` predicts this host" if calibration is None else ""))
    if len(notes) > 1:
        say(f"      note: {notes[1]}")

    step("report: figures, sensitivity, scaling, suggestions")
    html = build_report(rec, predictions=predictions, validation=validation,
                        source=str(stats_dir), title=f"advisor demo: {WORKLOAD}",
                        options=ReportOptions(seed=seed, predict=options))
    write_report(result.report_path, html)
    result.seconds = time.perf_counter() - started
    atomic_write_text(out / MARKER, json.dumps(result.to_dict(), indent=2) + "\n")
    step.done(f"wrote {result.report_path}")
    return result
