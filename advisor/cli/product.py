"""`advisor report`, `advisor tune`, `advisor demo`: what a user meets first."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from advisor.cli.app import PPM_HELP, app
from advisor.cli.grammar import (DesignCommand, calibration_option, dir_path, design_option, file_out_option,
                                 jobs_option, json_option, load_calibration, not_applicable, print_result,
                                 design_seed_option, seed_option, weight_option, workload_argument, workload_for)
from advisor.cli.terminal import say
from costmodel.text import visible_line


@app.command(cls=DesignCommand)
@not_applicable(json="its result is the HTML file (--out); it prints only where it wrote it")
def report(
    design: Path = design_option("design JSON (from `advisor recommend --out`)"),
    workload: Optional[str] = workload_argument(),
    out: Path = file_out_option(..., "the HTML file to write"),
    validation: Optional[Path] = typer.Option(None, help="RESULT.json from `advisor validate --out`"),
    spec: Optional[str] = typer.Option(None, "--spec", help="workload spec to simulate when WORKLOAD is "
                                                            "statistics (default: the workload rebuilt "
                                                            "from them)"),
    sensitivity: bool = typer.Option(True, "--sensitivity/--no-sensitivity", help="the alpha/beta/gamma sweep"),
    scaling: bool = typer.Option(True, "--scaling/--no-scaling", help="throughput against machines"),
    suggestions: bool = typer.Option(True, "--suggestions/--no-suggestions", help="changes with predicted gain"),
    title: Optional[str] = typer.Option(None, help="report title"),
    current: Optional[Path] = typer.Option(None, "--current", help="the deployed design JSON: a section "
                                           "on what moving it to this design takes"),
    calibration: Optional[Path] = calibration_option("calibration.json for every prediction and pick in "
                                                     "the report (default: the reference-cluster "
                                                     "parameters)"),
    seed: Optional[int] = design_seed_option(),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress lines"),
    jobs: Optional[int] = jobs_option("the report's independent parts: the comparison, sensitivity, scaling and "
                                              "suggestions (at most 4)"),
) -> None:
    """Write one self-contained HTML report of a design (figures embedded, no network needed)."""
    from costmodel.design import Design
    from costmodel.files import check_writable
    from reports.predict import PredictOptions
    from reports.report import ReportOptions, report_design, write_report
    from reports.compared import report_subject
    from reports.validation_view import read_validation

    check_writable(out, inputs=(design, validation, current, calibration, workload, spec))  # said now, not after the work
    source = workload_for(design, workload)
    d = Design.load(design)
    seed = d.seed_or_recorded(seed)  # not given: the design's own, so its figure is recommend's
    result = read_validation(validation, d.workload) if validation is not None else None
    simulated = None  # the spec to simulate, when WORKLOAD is statistics
    if spec is not None:
        from advisor.sources import load_workload

        simulated = load_workload(spec)
    cal = load_calibration(calibration)
    # the spec read and checked against the design now: a bad one is refused before any progress line
    subject = report_subject(d, source, workload=simulated)
    options = ReportOptions(sensitivity=sensitivity, scaling=scaling, suggestions=suggestions, seed=seed,
                            predict=PredictOptions(calibration=cal, seed=seed))
    if jobs is not None:
        options.jobs = jobs
    progress = None if quiet else (lambda msg: say(f"report: {msg}", err=True))
    if progress:
        progress("scoring baselines")
    migration = None
    if current is not None:
        from advisor.api import diff

        if progress:
            progress("comparing with the deployed design")
        migration = diff(current, d, source, seed=seed)
    write_report(out, report_design(d, source, workload=simulated, seed=seed, calibration=cal, options=options,
                                    subject=subject, validation=result, title=title, progress=progress, migration=migration))
    say(f"wrote {visible_line(str(out))}")


@app.command()
def tune(
    source: str = workload_argument(optional=False),
    machines: Optional[int] = typer.Option(None, "--machines", "-m", min=1,
                                           help="machines of the cluster to tune for (default: the source's)"),
    rounds: int = typer.Option(5, "--rounds", "-r", help="most changes to make"),
    partitions_per_machine: Optional[int] = typer.Option(None, "--partitions-per-machine", "-p", min=1, help=PPM_HELP),
    out: Optional[Path] = typer.Option(None, "--out", "-o", parser=dir_path, help="directory for each round's spec and design"),
    alpha: Optional[float] = weight_option("alpha"),
    beta: Optional[float] = weight_option("beta"),
    gamma: Optional[float] = weight_option("gamma"),
    min_gain: float = typer.Option(0.01, help="smallest predicted throughput gain that counts (0.01 = 1%)"),
    calibration: Optional[Path] = calibration_option("calibration.json: the simulator's prices, and the "
                                                     "weights priced once for the starting workload "
                                                     "(default: the reference cluster; weights priced "
                                                     "for each round)"),
    seed: int = seed_option(),
    as_json: bool = json_option("print the rounds, why the loop stopped and the best round as JSON"),
    jobs: Optional[int] = jobs_option("trying each round's changes"),
) -> None:
    """Recommend, predict, find the bottleneck, change the dataflow, repeat while it helps."""
    from advisor.api import resolve_weights
    from advisor.errors import AdvisorError
    from reports.predict import PredictOptions
    from reports.tuning import TuningStudy, check_min_gain

    if rounds < 0:
        raise AdvisorError(f"--rounds must be >= 0, got {rounds}")
    check_min_gain(min_gain, "--min-gain")
    if out is not None:  # a directory it may not replace fails before the study runs
        from costmodel.files import check_writable
        from reports.tuning import SAVED_MARKER

        check_writable(out, SAVED_MARKER, "a previous `advisor tune` output", inputs=(source, calibration))
    weights = resolve_weights(alpha, beta, gamma, calibration=calibration,
                              source=source if calibration is not None else None,
                              machines=machines, partitions_per_machine=partitions_per_machine)
    study = TuningStudy(source, machines=machines, partitions_per_machine=partitions_per_machine,
                        weights=weights, seed=seed, min_gain=min_gain,
                        options=PredictOptions(calibration=load_calibration(calibration), seed=seed))
    if jobs is not None:
        study.jobs = jobs

    def show(r) -> None:
        say(f"round {r.index}: {r.predicted_tps:,.0f} tuples/s predicted, cost {r.cost:.4f}"
                   + (f" after: {r.change}" if r.change else " (starting dataflow)"), err=True)

    study.run(rounds=rounds, progress=show)
    written = study.save(out) if out is not None else []
    best = study.best
    if as_json:
        typer.echo(json.dumps({"rounds": [r.to_dict() for r in study.rounds], "stopped": study.stopped,
                               "best_round": best.index, "written": [str(p) for p in written]}, indent=2))
        return
    say(study.table())
    say(f"stopped: {study.stopped}")
    say(f"best: round {best.index}, {best.predicted_tps:,.0f} tuples/s predicted")
    if out is not None:
        say(f"wrote {len(written) + 1} files to {visible_line(str(out))} (round-NN.toml, round-NN.design.json, tuning.json)")


@app.command()
def demo(
    out: Path = typer.Option(Path("advisor-demo"), "--out", "-o", parser=dir_path, help="directory for report.html, design.json, statistics"),
    batches: int = typer.Option(None, help="engine batches per run (default: a quick demo)"),
    calibration: Optional[Path] = calibration_option("calibration.json (from `advisor calibrate`): what "
                                                     "the pick and every prediction price with; the "
                                                     "engine step is then predicted for this host "
                                                     "(default: the shipped calibration, predictions on "
                                                     "the reference cluster)"),
    seed: int = seed_option(),
    as_json: bool = json_option("print the figures as JSON (the progress lines go to stderr)"),
) -> None:
    """The whole loop on the bundled TPC-DI workload: trace the engine under a naive design,
    aggregate the trace with Spark, recommend, validate on engine and simulator, report."""
    from reports.demo import DEFAULT_BATCHES, run_demo

    result = run_demo(out, batches=DEFAULT_BATCHES if batches is None else batches, seed=seed,
                      progress=lambda msg: say(msg, err=as_json), calibration=load_calibration(calibration))
    print_result(result.to_dict(), result.summary, as_json)
    if not result.beats_every_baseline:
        raise typer.Exit(1)
