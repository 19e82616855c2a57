"""`advisor simulate`, `advisor calibrate`, `advisor validate`: the simulator's commands."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

import typer

from advisor.cli.app import SEED_HELP, JSON_HELP, app
from advisor.cli.choices import MoveMode, Scheduler
from advisor.cli.format import assumption_lines
from advisor.cli.terminal import say, working


def _calibration(path: Optional[Path]):
    from engine_sim.sim import Calibration

    return Calibration.reference() if path is None else Calibration.load(path)


def _scaled(design, workload, machines: Optional[int], rescale: str):
    from engine_sim.sim import SimError
    from reports.scaling import scale_design

    if machines is None:
        return design
    if machines < 1:
        raise SimError(f"--machines must be >= 1, got {machines}")
    return scale_design(design, machines, workload=workload, method=rescale)


@app.command()
def simulate(
    source: str = typer.Argument(..., help="bundled workload name, spec .toml, or statistics directory"),
    design: Path = typer.Option(..., "--design", "-d", help="design JSON to simulate"),
    machines: Optional[int] = typer.Option(None, "--machines", "-m",
                                           help="simulate the design scaled to N machines"),
    rescale: Literal["spread", "recommend"] = typer.Option(
        "spread", help="how --machines rescales: spread (keep co-location) or recommend (a fresh advisor design)"),
    scheduler: Scheduler = typer.Option("dls", help="dls (one scheduler per SP, with it) or central"),
    move: MoveMode = typer.Option("rpc", help="rpc (asynchronous) or txn (distributed transaction)"),
    calibration: Optional[Path] = typer.Option(None, help="calibration.json from `advisor calibrate` "
                                                         "(default: the reference-cluster parameters)"),
    rate: Optional[float] = typer.Option(None, help="offered input batches/s (default: search the "
                                                   "maximum within the latency bound)"),
    latency_bound: float = typer.Option(1.0, help="latency bound in seconds (mean batch latency)"),
    batches: int = typer.Option(2000, help="batches to simulate per run"),
    batch_size: Optional[int] = typer.Option(None, help="tuples per batch (default: the spec's)"),
    seed: int = typer.Option(0, help=SEED_HELP),
    this_host: bool = typer.Option(False, "--this-host", help="with --calibration: predict the "
                                   "engine on the measuring host (its cores shared by every "
                                   "emulated machine) instead of a real cluster"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="write the result JSON here"),
) -> None:
    """Predict what a design does on a cluster of any size."""
    from costmodel.files import atomic_write_text
    from costmodel.design import Design
    from advisor.sources import load_workload
    from engine_sim.sim import simulate as run

    workload = load_workload(source)
    d = _scaled(Design.load(design), workload, machines, rescale)
    cal = _calibration(calibration)
    with working("simulating"):
        r = run(workload, d, scheduler=scheduler, move=move,
                calibration=cal.params if this_host else cal, input_rate=rate,
                batches=batches, seed=seed, latency_bound_s=latency_bound, batch_size=batch_size)
    data = r.to_dict()
    data["calibration"] = {"source": cal.source, "machine": cal.machine.get("hostname")}
    if out is not None:
        atomic_write_text(out, json.dumps(data, indent=2) + "\n")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for line in r.describe(cal.label(this_host)) + assumption_lines(workload):
        say(line)
    if out is not None:
        say(f"wrote {out}")


@app.command()
def calibrate(
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="where to write it (default: "
                                       "the user's calibration, which the advisor then prices with)"),
    quick: bool = typer.Option(False, "--quick", help="fewer batches per micro-benchmark"),
    in_process: bool = typer.Option(False, "--in-process", help="measure the in-process engine "
                                    "(one thread) instead of one process per partition"),
    refit: Optional[Path] = typer.Option(None, "--refit", help="fit the current simulator to this calibration "
                                         "file's stored measurements again, without running the engine"),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Measure the engine on this machine and fit the simulator and the cost-model weights."""
    from engine_sim.calibrate import calibrate as run, refit as run_refit
    from engine_sim.sim import Calibration

    if refit is not None and (quick or in_process):
        raise typer.BadParameter("--refit runs no engine: --quick and --in-process do not apply to it")
    progress = None if as_json else (lambda msg: typer.echo(msg, err=True))
    old = Calibration.load(refit) if refit is not None else None  # a bad file fails before anything runs
    if out is None:
        from advisor.priced_weights import user_calibration_path

        out = user_calibration_path()
        out.parent.mkdir(parents=True, exist_ok=True)
    cal = (run_refit(old, progress=progress) if old is not None
           else run(quick=quick, in_process=in_process, progress=progress))
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
    say(f"wrote {out}")


@app.command()
def validate(
    design: Path = typer.Argument(..., help="design JSON"),
    source: str = typer.Argument(..., help="bundled workload name, spec .toml, or statistics directory"),
    engine: bool = typer.Option(False, "--engine", help="run the engine (only; default: both)"),
    sim: bool = typer.Option(False, "--sim", help="run the simulator (only; default: both)"),
    calibration: Optional[Path] = typer.Option(None, help="calibration.json for the simulator"),
    batches: int = typer.Option(300, help="batches for the engine run (and the simulator's)"),
    seed: int = typer.Option(0, help=SEED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="write the result JSON here"),
) -> None:
    """Run a design on the engine and the simulator; print both, the predicted cost and the
    bottleneck."""
    from costmodel.files import atomic_write_text
    from costmodel.design import Design
    from advisor.sources import load_workload
    from reports.validation import validate_design as run

    workload = load_workload(source)
    both = engine == sim
    with working("validating"):
        result = run(workload, Design.load(design), engine=engine or both, sim=sim or both,
                     calibration=None if calibration is None else _calibration(calibration),
                     batches=batches, seed=seed)
    data = result.to_document()
    if out is not None:
        atomic_write_text(out, json.dumps(data, indent=2) + "\n")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for line in result.describe() + assumption_lines(workload):
        say(line)
    if out is not None:
        say(f"wrote {out}")
