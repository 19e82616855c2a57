"""`advisor demo`: the whole loop on the bundled TPC-DI workload, step by step.

1. run the engine under a naive design (everything on one partition, as a first deployment
   would) and trace it;
2. aggregate the trace with Spark (local mode) into workload statistics;
3. recommend a design from the statistics;
4. validate it: the engine runs it, the simulator predicts it (the naive design too);
5. compare it with every baseline in predicted (simulated) throughput;
6. write report.html, design.json, the statistics and demo.json into the output directory.

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
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from common.files import atomic_write_text, check_replaceable
from advisor.errors import AdvisorError

WORKLOAD = "tpcdi-trade"
NAIVE = "single-machine"
DEFAULT_BATCHES = 200
MARKER = "demo.json"
STEPS = 6


ENGINE_NOTE = ("engine: measured on this machine with every partition in one process, so it shows what "
               "MOVEs and 2PC cost but not the parallelism of separate machines (and short runs on a busy "
               "machine are noisy); simulator: predicted on the reference cluster, one machine per node")
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
    engine_tps: dict[str, float] = field(default_factory=dict)
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
        lines += ["", verdict, f"open {self.report_path}  ({self.seconds:.0f} s in all)"]
        return lines

    def to_dict(self) -> dict:
        return {"format": "advisor.demo/1", "workload": WORKLOAD, "naive_design": NAIVE,
                "predicted_tps": self.predicted_tps, "engine_tps": self.engine_tps,
                "same_as_recommended": self.same_as_recommended,
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


def run_demo(out: str | Path, batches: int = DEFAULT_BATCHES, seed: int = 0,
             progress: Callable[[str], None] | None = print, spark=None) -> DemoResult:
    """Run the demo into `out`; `spark`: an existing session to reuse (tests)."""
    from advisor.api import load_graph, recommend
    from advisor.baselines import baseline_design
    from advisor.priced_weights import default_weights
    from advisor.spec import load_workload
    from engine_sim.validation import ValidationResult, validation_document
    from engine_sim.engine import run_workload
    from reports.predict import PredictOptions, predict
    from reports.report import ReportOptions, build_report, write_report
    from reports.sensitivity import design_signature

    if not isinstance(batches, int) or batches < 10:
        raise AdvisorError(f"--batches must be an integer >= 10, got {batches!r}")
    out = Path(out)
    check_replaceable(out, MARKER, "a previous demo")
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _msg: None)
    step = _Steps(say)
    started = time.perf_counter()

    workload = load_workload(WORKLOAD)
    c = workload.cluster
    graph = load_graph(workload)
    naive = baseline_design(NAIVE, graph, default_weights(graph), seed)

    step(f"engine: {WORKLOAD} ({len(workload.procedures)} SPs, {len(workload.tables)} tables) on "
         f"{c.machines} machines x {c.partitions_per_machine} partitions, naive {NAIVE} design, "
         f"{batches} batches, tracing")
    trace_dir = out / "trace"
    naive_run = run_workload(workload, naive, batches=batches, seed=seed, trace_out=trace_dir, in_process=True)
    step.done(f"{naive_run.throughput_tps:,.0f} tuples/s measured, {naive_run.distributed_txns} distributed txns, "
              f"{naive_run.moves} MOVEs")

    step("Spark (local mode): aggregating the trace into workload statistics")
    from traces.aggregate import aggregate

    stats_dir = out / "statistics"
    aggregate(trace_dir, stats_dir, spark=spark, master="local[2]", conf=SPARK_CONF,
              progress=lambda line: say(f"      {line}") if _worth_showing(line) else None)
    step.done()

    step("advisor: recommending a design from the statistics")
    rec = recommend(stats_dir, seed=seed)
    design_path = rec.design.save(out / "design.json")
    for line in rec.bottleneck.describe():
        say(f"      {line}")
    step.done(f"cost {rec.design.cost.total:.4f}, wrote {design_path}")

    step("validating: the engine runs the recommended design, the simulator predicts both")
    options = PredictOptions(seed=seed)
    rec_run = run_workload(workload, rec.design, batches=batches, seed=seed, in_process=True)
    sim_rec, sim_naive = predict(workload, rec.design, options), predict(workload, naive, options)
    validation = validation_document(WORKLOAD, [
        ValidationResult(WORKLOAD, label, d.machines, d.partitions_per_machine, d.cost.to_dict(),
                         engine=ran.to_dict(), simulator=sim.to_dict())
        for label, d, ran, sim in ((f"naive ({NAIVE})", naive, naive_run, sim_naive),
                                   ("recommended", rec.design, rec_run, sim_rec))], notes=[ENGINE_NOTE])
    atomic_write_text(out / "validation.json", json.dumps(validation, indent=2) + "\n")
    step.done(f"engine (one process) {naive_run.throughput_tps:,.0f} -> {rec_run.throughput_tps:,.0f} tuples/s "
              f"measured; simulator (cluster) {sim_naive.throughput_tps:,.0f} -> {sim_rec.throughput_tps:,.0f} "
              "tuples/s predicted")

    step("simulator: the recommended design beside every baseline")
    result = DemoResult(out, design_path, out / "report.html", stats_dir,
                        engine_tps={NAIVE: naive_run.throughput_tps, "recommended": rec_run.throughput_tps})
    own = design_signature(rec.design)
    predictions = {"recommended": sim_rec}
    for name, d in rec.baselines.items():
        predictions[name] = predict(workload, d, options)
        if design_signature(d) == own:
            result.same_as_recommended.append(name)
    result.predicted_tps = {name: float(p.throughput_tps) for name, p in predictions.items()}
    step.done(f"{len(rec.baselines)} baselines")

    step("report: figures, sensitivity, scaling, suggestions")
    # the spec the statistics were traced from is what the report simulates
    html = build_report(replace(rec, workload=workload), predictions=predictions, validation=validation,
                        source=str(stats_dir), title=f"advisor demo: {WORKLOAD}",
                        options=ReportOptions(seed=seed, predict=options))
    write_report(result.report_path, html)
    result.seconds = time.perf_counter() - started
    atomic_write_text(out / MARKER, json.dumps(result.to_dict(), indent=2) + "\n")
    step.done(f"wrote {result.report_path}")
    return result
