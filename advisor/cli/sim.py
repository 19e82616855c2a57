"""`advisor simulate`, `advisor calibrate`, `advisor validate`: the simulator's commands."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

import typer

from advisor.cli.app import app, say_error
from advisor.cli.choices import MoveMode, Scheduler
from advisor.cli.format import assumption_lines
from advisor.cli.grammar import (DesignCommand, calibration_option, design_option, file_out_option,
                                 json_option, load_calibration, not_applicable, print_result, design_seed_option,
                                 workload_argument, workload_for)
from advisor.cli.terminal import say, working
from costmodel.text import visible_line


def _scaled(design, workload, machines: Optional[int], rescale: Optional[str]):
    from engine_sim.sim import SimError
    from reports.scaling import scale_design

    if machines is None:
        if rescale is not None:  # (it was the design as it is, without a word)
            raise SimError(f"--rescale {rescale} applies to --machines N only (it would change nothing)")
        return design
    return scale_design(design, machines, workload=workload, method=rescale or "spread")


@app.command(cls=DesignCommand)
def simulate(
    design: Path = design_option("design JSON to simulate"),
    workload: Optional[str] = workload_argument(),
    machines: Optional[int] = typer.Option(None, "--machines", "-m", min=1,
                                           help="simulate the design scaled to N machines"),
    rescale: Optional[Literal["spread", "recommend"]] = typer.Option(
        None, help="how --machines rescales: spread (keep co-location; the default) or recommend "
                   "(a fresh advisor design)"),
    scheduler: Scheduler = typer.Option("dls", help="dls (one scheduler per SP, with it) or central"),
    move: MoveMode = typer.Option("rpc", help="rpc (asynchronous) or txn (distributed transaction)"),
    calibration: Optional[Path] = calibration_option("calibration.json from `advisor calibrate` "
                                                     "(default: the reference-cluster parameters)"),
    rate: Optional[float] = typer.Option(None, help="offered input batches/s (default: search the "
                                                   "maximum within the latency bound, as recommend "
                                                   "does; a rate the workload declares is compared "
                                                   "with it)"),
    latency_bound: float = typer.Option(1.0, help="latency bound in seconds (mean batch latency)"),
    batches: int = typer.Option(300, help="batches to simulate per run (300: as `recommend`'s figure for "
                                          "its pick, which this then repeats)"),
    batch_size: Optional[int] = typer.Option(None, help="tuples per batch (default: the spec's)"),
    seed: Optional[int] = design_seed_option(),
    this_host: bool = typer.Option(False, "--this-host", help="with --calibration: predict the "
                                   "engine on the measuring host (its cores shared by every "
                                   "emulated machine) instead of a real cluster"),
    as_json: bool = json_option(),
    out: Optional[Path] = file_out_option(None, "write the result JSON here"),
) -> None:
    """Predict what a design does on a cluster of any size."""
    from costmodel.design import Design
    from advisor.sources import check_workload_for, load_workload
    from engine_sim.sim import Calibration, simulate as run
    from engine_sim.sim.run import declared_rate_line, sustains_declared_rate

    if out is not None:
        from costmodel.files import check_writable

        check_writable(out, inputs=(design, calibration, workload))  # said now, not after the simulation
    spec = load_workload(workload_for(design, workload))
    d = Design.load(design)
    check_workload_for(d, workload_for(design, workload), spec)
    d = _scaled(d, spec, machines, rescale)
    cal = Calibration.reference() if calibration is None else load_calibration(calibration)
    if this_host:
        if cal.source == "reference":  # ran the reference cluster's prices, said to be this host's
            raise typer.BadParameter("--this-host needs --calibration with a calibration measured on the host "
                                     "(from `advisor calibrate`): the reference parameters are no host's")
        cal = cal.on_host()
    with working("simulating"):
        r = run(spec, d, scheduler=scheduler, move=move, calibration=cal, input_rate=rate,
                batches=batches, seed=seed, latency_bound_s=latency_bound, batch_size=batch_size)
    data = r.to_dict()
    data["calibration"] = {"source": cal.source, "machine": cal.machine.get("hostname"),
                           "target": cal.target}
    declared = declared_rate_line(spec, r.throughput_bps, r.batch_size) if r.search else None
    if declared:
        data["declared_rate"] = {"batches_per_s": spec.input.rate,
                                 "sustained": sustains_declared_rate(spec, r.throughput_bps)}
    other = d.calibration_note(cal.label())
    if other:
        data["calibration"]["note"] = other
    print_result(data, lambda: r.describe(cal.label()) + ([declared] if declared else []) + assumption_lines(spec)
                 + ([f"note: {other}"] if other else []), as_json, out)


@app.command()
@not_applicable(calibration="it makes a calibration (--refit names the one to fit again)")
def calibrate(
    out: Optional[Path] = file_out_option(None, "where to write it (default: the user's calibration, "
                                                    "which the advisor then prices with)"),
    quick: bool = typer.Option(False, "--quick", help="fewer batches per micro-benchmark"),
    in_process: bool = typer.Option(False, "--in-process", help="measure the in-process engine "
                                    "(one thread) instead of one process per partition"),
    refit: Optional[Path] = typer.Option(None, "--refit", help="fit the current simulator to this calibration "
                                         "file's stored measurements again, without running the engine"),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, help="seed of the micro-benchmarks' input "
                                       "(default 0; --refit runs none)"),
    as_json: bool = json_option(),
) -> None:
    """Measure the engine on this machine and fit the simulator and the cost-model weights."""
    from costmodel.files import check_writable
    from engine_sim.calibrate import calibrate as run, refit as run_refit
    from engine_sim.sim import Calibration

    if refit is not None and (quick or in_process or seed is not None):
        raise typer.BadParameter("--refit runs no engine: --quick, --in-process and --seed do not apply to it")
    progress = None if as_json else (lambda msg: typer.echo(msg, err=True))
    old = Calibration.load(refit) if refit is not None else None  # a bad file fails before anything runs
    if out is None:
        from advisor.priced_weights import user_calibration_path

        out = user_calibration_path()  # its directories are made by the write
    check_writable(out)  # a bad place to write: said now, not after the measurements
    cal = (run_refit(old, progress=progress) if old is not None
           else run(quick=quick, in_process=in_process, seed=seed or 0, progress=progress))
    cal.save(out)
    if as_json:
        typer.echo(json.dumps(cal.to_dict(), indent=2))
        return
    w = cal.weights
    say(f"calibrated on {cal.machine.get('hostname')} ({cal.machine.get('cpus')} cpus, "
               f"{cal.machine.get('engine_mode')} engine)")
    for key, value in cal.prices.items():
        say(f"  {key:<22} {value * 1e6:10.1f} us")
    say(f"  fit: median error {cal.fit['median_relative_error']:.1%} over "
               f"{len(cal.fit['probes'])} micro-benchmarks")
    for key, row in cal.fit["throughput_checks"].items():
        say(f"  check {key:<28} engine {row['engine_bps']:8,.0f} b/s  simulator "
                   f"{row['simulator_bps']:8,.0f} b/s")
    say(f"  weights                alpha={w.alpha:.3f} beta={w.beta:.3f} gamma={w.gamma:.3f}")
    say(f"wrote {visible_line(str(out))}")


@app.command(cls=DesignCommand)
def validate(
    design: Path = design_option(),
    workload: Optional[str] = workload_argument(),
    engine: bool = typer.Option(False, "--engine", help="run the engine (only; default: both)"),
    sim: bool = typer.Option(False, "--sim", help="run the simulator (only; default: both)"),
    calibration: Optional[Path] = calibration_option("calibration.json for the simulator"),
    batches: int = typer.Option(300, help="batches for the engine run (and the simulator's)"),
    seed: Optional[int] = design_seed_option(),
    as_json: bool = json_option(),
    out: Optional[Path] = file_out_option(None, "write the result JSON here"),
) -> None:
    """Run a design on the engine and the simulator; print both, the predicted cost and the
    bottleneck."""
    from costmodel.design import Design
    from advisor.sources import check_workload_for, load_workload
    from reports.validation import validate_design as run

    if out is not None:
        from costmodel.files import check_writable

        check_writable(out, inputs=(design, calibration, workload))  # said now, not after the engine's run
    spec = load_workload(workload_for(design, workload))
    loaded = Design.load(design)
    check_workload_for(loaded, workload_for(design, workload), spec)
    both = engine == sim
    with working("validating"):
        result = run(spec, loaded, engine=engine or both, sim=sim or both,
                     calibration=load_calibration(calibration), batches=batches, seed=seed)
    print_result(result.to_document(), lambda: result.describe() + assumption_lines(spec), as_json, out)
    failed = (result.engine or {}).get("history_check")
    if failed not in (None, "ok"):  # as `run` ends: a run that broke its history is no measurement
        say_error(f"error: the engine run failed its correctness check: {failed}")
        raise typer.Exit(1)
