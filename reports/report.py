"""One self-contained HTML report of a design: what a team reads to decide a deployment.

`build_report` takes what was already computed (a `Recommendation`: the design, its graph,
the spec, the baselines; the simulator's predictions; a validation), computes only the
report's own analyses (sensitivity, scaling, suggestions), draws the figures as embedded PNGs
and fills the Jinja2 template with autoescaping on, so a name from a spec is always shown as
text. Nothing in the file refers to the network. `reports.compared.report_recommendation`
computes the inputs when only a design file is given; `report_design` (what `advisor report`
runs) writes the same report with that comparison worked out beside the report's own sections
(`reports.sections`: what runs side by side).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable


from costmodel import machine_loads, machine_memory
from costmodel.model import cost_terms_text
from costmodel.workload import cluster_text
from costmodel.files import atomic_write_text
from costmodel.text import html_visible
from costmodel.design import Design
from advisor.parallel_runs import serial_picks
from reports.compared import compared_designs, report_subject
from reports.parallel import InlinePool, section_pool, usable_cores
from reports.predict import PredictOptions, predict
from reports.sections import section_jobs, section_names, start_predictions, start_sections
from reports.sensitivity import design_signature, machine_changes, placement_signature

TEMPLATE = "report.html.j2"
THIS_DESIGN = "this design"  # how the report names the design it is about


@dataclass
class ReportOptions:
    sensitivity: bool = True
    scaling: bool = True
    suggestions: bool = True
    baselines: bool = True
    predict: PredictOptions = field(default_factory=PredictOptions)
    scaling_machines: list[int] | None = None  # default: 1, 2, 4, ... twice the design's
    seed: int = 0
    max_assignment_rows: int = 2000
    # worker processes for the independent sections (sensitivity, scaling, suggestions); at
    # most one per section; 1: all in this process. The HTML is the same for any value.
    jobs: int = field(default_factory=usable_cores)


def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined)


def _png(draw, figsize=(6.4, 3.6)) -> str:
    """Draw on a detached figure (no pyplot state, nothing shown in a notebook) -> base64 PNG."""
    from reports.figures._common import detached_figure, figure_png_base64

    fig = detached_figure(figsize)
    draw(fig.add_subplot())
    return figure_png_base64(fig)


def _prediction_key(name: str) -> str:
    """Predictions are keyed as `Recommendation.all_designs()`: the design is "recommended"."""
    return "recommended" if name == THIS_DESIGN else name


def _fmt(x, digits: int = 4) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _tps(x) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def _provenance_line(provenance: dict) -> str:
    """The header's seed, pick and version: the candidate `recommend` picked (`picked`), not the
    cost search's best (`search`), which the header named though the pick was another."""
    shown = ("seed", "picked" if "picked" in provenance else "search", "version")
    return ", ".join(f"{k}={provenance[k]}" for k in shown if k in provenance)


def _predicted_for(calibration) -> str:
    """What the report's predictions stand for, as `recommend` words it (None: the reference)."""
    from advisor.selection import calibration_label
    from engine_sim.sim import Calibration

    return calibration_label(Calibration.reference() if calibration is None else calibration)


def report_design(design: Design | str | Path, source, *, workload=None, seed: int | None = None,
                  calibration=None, options: ReportOptions | None = None, subject: tuple | None = None,
                  **build) -> str:
    """`build_report(report_recommendation(...))` with the comparison (a full `recommend`)
    worked out side by side with the report's sections rather than before them: the report
    of a design file (`advisor report`), the same HTML. `build`: `build_report`'s other
    keywords (validation, title, progress, migration; `source` is passed on). `seed` None: the
    one the design was recommended with (`Design.recorded_seed`), for the options too where
    none are given. `subject`: `report_subject(design, source, workload=workload)` already
    worked out (`advisor report` reads and checks the spec before its first progress line)."""
    from advisor.recommendation import Recommendation

    design, graph, workload = subject or report_subject(design, source, workload=workload)
    seed = design.seed_or_recorded(seed)
    o = options or ReportOptions(seed=seed, predict=PredictOptions(seed=seed))
    compare = (compared_designs, (design, graph, workload, seed, calibration, source)) if o.baselines else None
    return build_report(Recommendation(design, graph, {}, workload=workload), source=source, options=o,
                        compare=compare, **build)


def _source_label(source) -> str:
    from costmodel.workload import Workload

    if isinstance(source, Workload):
        return source.source or f"workload {source.name}"
    return str(getattr(source, "name", source)) if not isinstance(source, (str, Path)) else str(source)


@serial_picks()  # the sections are what runs side by side (`ReportOptions.jobs`), not a pick's simulations
def build_report(recommendation, *, predictions: dict | None = None, validation=None,
                 source=None, title: str | None = None,
                 options: ReportOptions | None = None,
                 progress: Callable[[str], None] | None = None, migration=None,
                 compare: tuple | None = None) -> str:
    """The report of `recommendation.design` as an HTML string, from results already computed.

    The recommendation carries the graph (on the design's cluster), the spec to simulate (its
    `workload`, None: the cost model only) and the designs to compare (`baselines`).
    `predictions` maps "recommended" and baseline names to simulator results (`reports.predict`)
    already made; only the missing ones are simulated. `validation` is a validation file, its
    JSON or a `ValidationResult` (shown when given); `source` names what the design was made for
    (a path, a name or a Workload; default: the spec or the graph). `migration` is a
    `DesignDiff` from the deployed design to this one (`advisor.api.diff`): a section of its own.
    `compare` is `(function, args)` giving more designs to compare by name (`compared_designs`,
    added to the baselines), worked out side by side with the sections (`report_design`).
    """
    from advisor import __version__
    from reports import figures as F
    from reports.figures._graph import graph_figsize

    o = options or ReportOptions()
    say = progress or (lambda _msg: None)
    design, graph, workload = recommendation.design, recommendation.graph, recommendation.workload
    lanes = bool(design.data_parallel)  # the sweep and the chart's picks weigh no lanes (see their notes)
    if lanes and (o.sensitivity or o.scaling):
        o = replace(o, sensitivity=False, scaling=False)
    graph = graph.with_cluster(design.machines, design.partitions_per_machine)
    if workload is not None:
        workload = workload.with_cluster(design.machines, design.partitions_per_machine)
    weights = design.weights
    if design.cost is None:
        design = replace(design, cost=design.score(graph, weights))  # the caller's object stays
    cost = design.cost
    designs = {THIS_DESIGN: design, **(recommendation.baselines if o.baselines else {})}
    known = dict(predictions or {})
    scaling = o.scaling and workload is not None  # (with a workload, this design is simulated)
    comparing = compare is not None and o.baselines
    sections = section_names(o, scaling or comparing or len(designs) > 1)
    jobs = section_jobs(o, len(sections) + comparing)
    with section_pool(jobs) as pool:  # the workers start while this design is simulated
        compared = pool.submit_first(compare[0], *compare[1]) if comparing else None  # a worker takes it at once
        if workload is not None and known.get(_prediction_key(THIS_DESIGN)) is None:
            say("simulating this design")  # first, here: the scaling chart and the suggestions start from it
            known[_prediction_key(THIS_DESIGN)] = predict(workload, design, o.predict)
        own_sim = None if workload is None else known[_prediction_key(THIS_DESIGN)]
        if not isinstance(pool, InlinePool):
            say(f"{', '.join(sections)}: side by side in this process and {jobs - 1} "
                f"worker{'s' if jobs > 2 else ''}")
        sections_done = start_sections(pool, o, design, graph, workload, own_sim, scaling, say)
        say("drawing figures")
        figures = {
            "graph": _png(lambda ax: F.plot_graph(design, graph, ax=ax), graph_figsize(design, graph)),
            "load": _png(lambda ax: F.plot_machine_load(design, graph, ax=ax), (5.6, 3.4)),
            "memory": _png(lambda ax: F.plot_machine_memory(design, graph, ax=ax), (5.6, 3.4)),
        }
        if compared is not None:
            designs.update(compared.result())
        sims = {} if workload is None else {n: known.get(_prediction_key(n)) for n in designs}
        missing = {n: designs[n] for n, sim in sims.items() if sim is None}
        if missing:
            say(f"simulating {len(missing)} designs")
        start_predictions(pool, sections_done, o, design, graph, workload, own_sim, missing, scaling)
        figures["cost"] = _png(lambda ax: F.plot_cost_breakdown(designs, ax=ax), (7.5, 0.38 * len(designs) + 1.6))
        pool.work_here()  # the sections no worker has started yet
        # the sweep's figure first (its tasks went in last: this process has usually run them),
        # drawn while a worker may still be busy with the rest
        sensitivity_context = _sensitivity_section(o, graph, design, sections_done)
        done = {name: future.result() for name, future in sections_done.items()}
    sims.update(done.get("predictions", ({}, []))[0])
    curve = done.get("scaling")

    context = {
        "title": title or f"Design report: {graph.name}",
        "workload_name": graph.name, "cluster": cluster_text(design.machines, design.partitions_per_machine),
        "weights": {k: f"{v:g}" for k, v in weights.to_dict().items()},
        "method": design.method or "unknown",
        "source_label": _source_label(source if source is not None else workload or graph),
        "provenance": _provenance_line(design.provenance),
        "version": __version__, "figures": figures,
        "cost": {"total": _fmt(cost.total), "terms": cost_terms_text(cost), "feasible": cost.feasible, "overflow": f"{cost.worst_overflow_mb:.1f}"},
        "latency_bound": f"{o.predict.latency_bound_s:g}", "sim_batches": o.predict.batches,
        "assumed": list(getattr(workload, "assumed", ()) or ()),
    }
    screened = {n for n in missing if sims.get(n) is not None and sims[n].batches < o.predict.batches}
    context.update(_cost_rows(designs, sims, screened))
    context["screened_note"] = screened_note(screened)
    context["predicted_for"] = _predicted_for(o.predict.calibration)
    context["calibration_note"] = design.calibration_note(context["predicted_for"])
    context["items_note"] = (
        "The table-level designs beside it are placed at this design's fragments (each table's fragments "
        "where the table is) and simulated so, on the same workload as this design; recommend --data-parallel "
        "simulates them at table level, so its figures for them read a few percent apart."
        if lanes and len(designs) > 1 else "")
    context["verdict"] = _verdict(designs, sims)
    context.update(_machine_rows(design, graph, own_sim))

    from reports.bottleneck import simulated_bottleneck

    context.update(sensitivity_context)
    context["scaling_figure"], context["scaling_notes"], context["scaling_screened"] = None, [], ""
    context["scaling_note"] = ("Not computed: the picks at other cluster sizes weigh no data-parallel lanes, "
                               "so the chart would set this design beside designs of another kind.") if lanes else ""
    if curve is not None:
        context["scaling_figure"] = _png(lambda ax: F.plot_throughput_vs_machines(curve, ax=ax), (6.4, 3.4))
        context["scaling_notes"] = [dip.describe() for dip in curve.dips()]
        context["scaling_screened"] = curve.screened_note()

    context["validation"] = None
    if validation is not None:
        from reports.validation_view import ValidationView

        view = ValidationView.from_any(validation)
        context["validation"] = {
            "figure": _png(lambda ax: F.plot_engine_vs_simulator(view, ax=ax), (6.0, 3.2)) if view.has_both else None,
            "header": view.header, "rows": view.rows,
            "notes": view.cluster_notes(design.machines, design.partitions_per_machine) + view.notes,
        }

    bottleneck = simulated_bottleneck(design, graph, own_sim)
    context["bottleneck"] = bottleneck.describe()
    context["suggestions"], context["suggestions_note"] = [], "Not computed."
    if o.suggestions:
        result = done["suggestions"]
        context["suggestions"] = [{"text": s.text, "reason": s.reason, "effect": s.gain_text} for s in result]
        context["suggestions_note"] = result.note
    context.update(_assignment(design, o.max_assignment_rows, graph))
    from reports.migration_view import migration_context

    context["migration"] = migration_context(migration)
    return html_visible(_environment().get_template(TEMPLATE).render(**context))


def write_report(path: str | Path, html: str) -> Path:
    """Write a built report atomically (a reader never sees half a file); readable by everyone
    the umask allows, as a document to share (the temporary file was private)."""
    out = atomic_write_text(path, html_visible(html))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(out, 0o666 & ~mask)
    return out


# -- context pieces --------------------------------------------------------------------------

def _cost_rows(designs: dict[str, Design], sims: dict, screened: set[str] = frozenset()) -> dict:
    own = designs[THIS_DESIGN]
    own_sig = placement_signature(own)
    own_tps = sims[THIS_DESIGN].throughput_tps if sims.get(THIS_DESIGN) is not None else None
    rows = []
    for name, d in designs.items():
        c = d.cost
        sim = sims.get(name)
        tps = None if sim is None else float(sim.throughput_tps)
        rows.append({
            "name": name, "chosen": name == THIS_DESIGN,
            "same": name != THIS_DESIGN and placement_signature(d) == own_sig,
            "state": _fmt(c.state_colocation), "processing": _fmt(c.processing_colocation),
            "balance": _fmt(c.load_balance), "total": _fmt(c.total), "feasible": "yes" if c.feasible else "NO",
            "tps": _tps(tps), "screened": name in screened,
            "ratio": "" if tps is None or not own_tps or name == THIS_DESIGN else f"{own_tps / tps:.2f}x" if tps > 0 else "inf",
        })
    return {"cost_rows": rows, "has_throughput": bool(sims) and own_tps is not None}


def screened_note(screened: set[str]) -> str:
    """What "(screened)" in the candidate table means ('' where no row is)."""
    if not screened:
        return ""
    from reports.predict import SCREEN_BELOW, screening_text

    return (f"(screened): below {SCREEN_BELOW:.0%} of this design's figure by the busy-time estimate and by a "
            f"screening run ({screening_text()}), so not simulated in full, as recommend's table screens its "
            f"candidates.")


def _verdict(designs: dict[str, Design], sims: dict) -> dict | None:
    """Does this design beat every baseline in predicted throughput (ties only with baselines
    that place everything exactly as it does)?"""
    own = sims.get(THIS_DESIGN)
    if own is None:
        return None
    from advisor.selection import TIE_TOLERANCE

    own_sig = placement_signature(designs[THIS_DESIGN])
    beaten, same, tied, losing = [], [], [], []
    for name, d in designs.items():
        if name == THIS_DESIGN or sims.get(name) is None:
            continue
        other = sims[name].throughput_tps
        if placement_signature(d) == own_sig:
            same.append(name)
        elif abs(own.throughput_tps - other) <= TIE_TOLERANCE * max(own.throughput_tps, other):
            tied.append(f"{name} ({other:,.0f} tuples/s)")  # as the pick counts a tie: within 2 %
        elif own.throughput_tps > other:
            beaten.append(name)
        else:
            losing.append(f"{name} ({other:,.0f} tuples/s)")
    head = f"This design ({own.throughput_tps:,.0f} tuples/s predicted)"
    if losing:
        return {"ok": False, "text": f"{head} does NOT beat: " + ", ".join(losing)
                + (f"; it ties {', '.join(tied)}" if tied else "") + "."}
    text = (f"{head} ties {', '.join(tied)} (within {TIE_TOLERANCE:.0%}) and beats every other baseline"
            if tied else f"{head} beats every baseline") + " in predicted throughput"
    if same:
        text += f"; {', '.join(same)} found the same placement"
    return {"ok": True, "text": text + "."}


def _machine_rows(design: Design, graph, sim) -> dict:
    from reports.figures._common import node_partitions

    _, state = node_partitions(design, graph)  # a window counts on its owner's machine
    c = graph.cost
    lanes_graph, proc, _ = design.cost_view(graph)  # each data-parallel lane on its machine
    loads = machine_loads(lanes_graph.cost, proc)
    mem = machine_memory(c, state) / 2**20
    total = loads.sum() or 1.0
    limit = "" if c.memory_limit_bytes is None else f"{c.memory_limit_bytes / 2**20:,.0f}"
    util = list(sim.machine_utilisation) if sim is not None and sim.machine_utilisation else []
    rows = [{"machine": m, "load": f"{loads[m]:g}", "share": f"{loads[m] / total:.0%}", "memory": f"{mem[m]:,.1f}",
             "limit": limit, "utilisation": f"{util[m]:.0%}" if m < len(util) else ""} for m in range(design.machines)]
    return {"machine_rows": rows, "has_utilisation": bool(util)}


def _sensitivity_section(o: ReportOptions, graph, design: Design, futures: dict) -> dict:
    """The sensitivity part of the report's context, once its sweeps are done (empty when off)."""
    if not o.sensitivity:
        note = ("Not computed: the sweep picks by the cost model at table level and never weighs "
                "data-parallel lanes, so it would find this design's choice changed at every point."
                if design.data_parallel else "Not computed.")
        return {"sensitivity_figure": None, "sensitivity_text": "", "sensitivity_designs": [],
                "sensitivity_note": note}
    from reports.sensitivity import DEFAULT_SHARES, TERMS, sensitivity_of

    swept = {term: [d for share in DEFAULT_SHARES for d in futures[f"sensitivity {term} {share}"].result()]
             for term in TERMS}
    return _sensitivity_context(sensitivity_of(graph, design.weights, design, DEFAULT_SHARES, swept), design, graph)


GROUPS_IN_FULL = 40  # SPs + state items up to which the sweep's designs are listed in full, machine by machine
CHANGES_SHOWN = 12  # past that, of each design's differences from A, the first this many are named


def _sensitivity_context(sens, design: Design, graph) -> dict:
    """The sweep (`reports.sensitivity.Sensitivity`, computed by its section) as the report
    shows it: each design's machines in full on a small dataflow; on a larger one, what each
    places elsewhere than A (A's places are the full assignment's)."""
    from reports.figures import plot_sensitivity

    rows = sens.rows  # plain rows: pandas is not imported for a report
    in_full = len(design.procedures) + len(design.state) <= GROUPS_IN_FULL
    designs = []
    for letter, d in sens.designs.items():
        points = ", ".join(f"{r['term']} {r['share']:.0%}" for r in rows if r["design"] == letter)
        if in_full:
            groups = "; ".join("{" + ", ".join(x.split(":", 1)[1] for x in g) + "}" for g in design_signature(d)[0])
        elif letter == "A":
            groups = "the design of this report (its places: the full assignment below)"
        else:
            changes = machine_changes(sens.designs["A"], d, graph)
            more = f" and {len(changes) - CHANGES_SHOWN:,} more" if len(changes) > CHANGES_SHOWN else ""
            groups = (f"{len(changes):,} of {len(d.procedures) + len(d.state):,} items: "
                      f"{', '.join(changes[:CHANGES_SHOWN])}{more}"
                      if changes else "A's machine grouping; its partitions within machines differ")
        designs.append({"letter": letter, "where": points or "the given weights only", "groups": groups})
    changed = [r for r in rows if r["design"] != "A"]
    if not changed:
        text = "The same design (A) is chosen at every point of the sweep: the choice does not hinge on the weights."
    else:
        text = (f"The choice changes at {len(changed)} of {len(rows)} sweep points; the largest extra cost of keeping "
                f"design A there is {max(r['regret'] for r in changed):.3f}.")
    return {"sensitivity_figure": _png(lambda ax: plot_sensitivity(sens, ax=ax), (6.8, 3.8)),
            "sensitivity_text": text, "sensitivity_designs": designs, "sensitivity_in_full": in_full}


def _assignment(design: Design, limit: int, graph=None) -> dict:

    rows = [{**r, "machine": "all (replicated)" if r["replicated"] else r["machine"],
             "partition": "" if r["partition"] is None else r["partition"],
             "owner": r["owner"] or ""} for r in design.assignment_rows(graph)]
    return {"assignment": rows[:limit], "assignment_more": max(0, len(rows) - limit),
            "assignment_windows": any(r["kind"] == "window" for r in rows)}

