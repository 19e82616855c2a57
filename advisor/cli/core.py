"""`advisor workloads`, `advisor recommend`, `advisor evaluate`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

import typer

from advisor.cli.app import PPM_HELP, app
from advisor.cli.format import assumption_lines, candidate_table, design_table, name_width
from advisor.recommendation_text import migration_lines, screening_note
from advisor.cli.grammar import (DesignCommand, calibration_option, design_option, file_out_option,
                                 jobs_option, json_option, load_calibration, not_applicable, seed_option,
                                 weight_option, workload_argument, workload_for)
from advisor.cli.terminal import output_width, say, shorten, working
from costmodel.errors import UserError
from costmodel.model import COST_TERMS
from costmodel.text import visible_line
from costmodel.workload import cluster_text


@app.command()
@not_applicable(calibration="lists names; nothing is priced", seed="lists names; nothing is random")
def workloads(as_json: bool = json_option('print {"workloads": {name: description}} as JSON')) -> None:
    """List the bundled workloads with a one-line description each."""
    from costmodel.spec_reader import bundled_workloads

    items = bundled_workloads()
    if as_json:
        typer.echo(json.dumps({"workloads": items}, indent=2))
        return
    width = max(len(n) for n in items)
    columns = output_width()
    for name, description in items.items():  # one line each: a description is cut to fit
        say(shorten(f"{name:<{width}}  {description}", columns))


@app.command()
def recommend(
    source: str = workload_argument(optional=False),
    machines: Optional[int] = typer.Option(None, "--machines", "-m", min=1, help="machines (default: the spec's)"),
    partitions_per_machine: Optional[int] = typer.Option(None, "--partitions-per-machine", "-p", min=1, help=PPM_HELP),
    alpha: Optional[float] = weight_option("alpha"),
    beta: Optional[float] = weight_option("beta"),
    gamma: Optional[float] = weight_option("gamma"),
    calibration: Optional[Path] = calibration_option("calibration.json from `advisor calibrate`: the weights "
                                                     "and the simulator's prices (default: the user's, else "
                                                     "the shipped one)"),
    seed: int = seed_option(),
    replicate: bool = typer.Option(False, "--replicate", help="replicate read-mostly state where it pays"),
    objective: Literal["throughput", "cost"] = typer.Option("throughput", "--objective",
                                  help="throughput: of the candidates, the one the simulator predicts "
                                       "fastest; cost: the cheapest by the cost model (no simulation)"),
    data_parallel: bool = typer.Option(False, "--data-parallel",
                                       help="also weigh running SPs that split by an input key as "
                                            "data-parallel lanes over fragments; keep the faster"),
    current: Optional[Path] = typer.Option(None, "--current", help="the deployed design JSON: recommend "
                                           "from it, with the frontier of megabytes moved against speed"),
    max_move_mb: Optional[float] = typer.Option(None, "--max-move-mb", help="with --current: move at "
                                                "most this many megabytes of state"),
    out: Optional[Path] = file_out_option(None, "write the design JSON here"),
    as_json: bool = json_option("print the design JSON instead of a summary"),
    jobs: Optional[int] = jobs_option("the pick's simulations"),
) -> None:
    """Recommend where every procedure and state item lives."""
    from advisor.api import recommend as run, resolve_weights
    from costmodel.files import check_writable

    if max_move_mb is not None and current is None:  # (the API's line names its parameters)
        raise UserError("--max-move-mb needs --current DEPLOYED.json: a move budget is counted from the "
                        "deployed design")
    if out is not None:
        check_writable(out, inputs=(current, calibration, source))  # said now, not after the search
    weights = resolve_weights(alpha, beta, gamma, calibration=calibration, source=source,
                              machines=machines, partitions_per_machine=partitions_per_machine)
    with working("recommending"):
        rec = run(source, machines=machines, partitions_per_machine=partitions_per_machine,
                  weights=weights, seed=seed, replicate=replicate, objective=objective,
                  calibration=load_calibration(calibration), data_parallel=data_parallel,
                  current=current, max_move_mb=max_move_mb, jobs=jobs)
    if out is not None:
        rec.design.save(out)
    if as_json:
        typer.echo(rec.design.to_json(), nl=False)
        return
    d = rec.design
    weights = d.weights
    say(f"workload {rec.graph.name}: {cluster_text(d.machines, d.partitions_per_machine)}, "
        f"weights alpha={weights.alpha:g} beta={weights.beta:g} gamma={weights.gamma:g}")
    rows = candidate_rows(rec)
    for line in rec.pick_lines(shortened_to=name_width(rows)) + assumption_lines(rec.workload):
        say(line)  # (the pick named as its row in the table below is)
    say("")
    say(design_table(d, rec.design_graph))
    say("")
    say(candidate_table(rows, show_predicted=rec.selection.objective == "throughput",
                        show_estimated=rec.selection.objective in ("throughput", "estimate")))
    note = screening_note(rec.selection)
    if note:
        say(note)
    say("")
    if rec.migration is not None:
        for line in migration_lines(rec.migration):
            say(line)
        say("")
    for line in rec.bottleneck.describe():
        say(line)
    if not d.cost.feasible:
        say(memory_warning(d, rec.migration))
    if out is not None:
        say(f"\nwrote {visible_line(str(out))}")












def candidate_rows(rec) -> list[tuple[str, object, float | None, float | None]]:
    """The recommendation, the search's distinct candidates, the baselines, and the best of
    the enumerated designs (one row for all of them): (name, cost, estimated, predicted)."""
    sel = rec.selection
    predicted, estimated = rec.predicted_tps(), rec.estimated_tps()
    rows = [("recommended", rec.design.cost, estimated["recommended"], predicted["recommended"])]
    other = rec.granularity_row()  # the other side of the granularity comparison
    if other is not None:
        rows.append(other)
    seen = set()
    for o in sel.candidates:
        if o.source == "search" and o.label not in seen:
            seen.add(o.label)
            rows.append((o.label, o.cost, o.estimated_tps, o.predicted_tps))
    rows += [(name, d.cost, estimated[name], predicted[name]) for name, d in rec.baselines.items()]
    enumerated = [o for o in sel.candidates if o.source == "enumeration" and o.predicted_tps is not None]
    if enumerated:
        best = max(enumerated, key=lambda o: o.predicted_tps)
        rows.append((f"enumerated: best of {len(enumerated)}", best.cost, best.estimated_tps,
                     best.predicted_tps))
    return rows


@app.command(cls=DesignCommand)
@not_applicable(seed="the cost model is computed exactly; nothing is random")
def evaluate(
    design: Path = design_option(),
    workload: Optional[str] = workload_argument(),
    alpha: Optional[float] = weight_option("alpha"),
    beta: Optional[float] = weight_option("beta"),
    gamma: Optional[float] = weight_option("gamma"),
    calibration: Optional[Path] = calibration_option("calibration.json: price the weights from it, as "
                                                     "`recommend --calibration` does (instead of the "
                                                     "design file's own)"),
    as_json: bool = json_option(),
) -> None:
    """Print the cost breakdown of a design on a workload."""
    from advisor.api import evaluate as run, own_weights_note, resolve_weights
    from costmodel.design import Design

    source = workload_for(design, workload)
    d = Design.load(design)
    if calibration is not None:  # priced as recommend prices them; a weight given still wins
        weights = resolve_weights(alpha, beta, gamma, calibration=calibration, source=source,
                                  machines=d.machines, partitions_per_machine=d.partitions_per_machine)
    elif (alpha, beta, gamma) == (None, None, None):
        weights = None  # the design's own, or those recommend prices when its file has none
    elif d.weights_stated:
        weights = resolve_weights(alpha if alpha is not None else d.weights.alpha,
                                  beta if beta is not None else d.weights.beta,
                                  gamma if gamma is not None else d.weights.gamma)
    else:
        weights = resolve_weights(alpha, beta, gamma, source=source, machines=d.machines,
                                  partitions_per_machine=d.partitions_per_machine)
    cost = run(d, source, weights)
    note = own_weights_note(d, source, cost) if weights is None else ""
    if as_json:
        typer.echo(json.dumps({**cost.to_dict(), "weights": cost.weights.to_dict(),
                               **({"note": note} if note else {})}, indent=2))
        return
    weights = cost.weights
    say(f"{visible_line(str(design))}: {cluster_text(d.machines, d.partitions_per_machine)}")
    for label, key, weight in COST_TERMS:  # (the labels every output names the terms by)
        say(f"  {label:<24}{getattr(cost, key):.4f}  x {weight:<5} {getattr(weights, weight):g}")
    say(f"  total                   {cost.total:.4f}")
    if not cost.feasible:
        over = ", ".join(f"machine {m}: {x:.1f} MB" for m, x in enumerate(cost.memory_overflow_mb) if x > 0)
        say(f"  INFEASIBLE: over memory by {over}")
    if note:
        say(note)


def memory_warning(design, plan) -> str:
    """The line for a pick over memory: none fits, or (from a deployed design) none within
    the budget does, and what reaching one that fits moves."""
    over = f"worst machine is {design.cost.worst_overflow_mb:.1f} MB over"
    if plan is None or not plan.best.design.cost.feasible:
        return f"warning: no design fits memory; {over}"
    return (f"warning: no design within the budget fits memory ({over}); the fastest that fits moves "
            f"{plan.best.megabytes:,.3f} MB")
