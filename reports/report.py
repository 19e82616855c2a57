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


from costmodel.files import atomic_write_text
from costmodel.text import html_visible
from costmodel.design import Design
from advisor.parallel_runs import serial_picks
from reports.compared import compared_designs, report_subject
from reports.parallel import InlinePool, section_pool, usable_cores
from reports.predict import PredictOptions, predict
from reports.sections import section_jobs, section_names, start_predictions, start_sections
from reports.report_context import (THIS_DESIGN, assignment_context, machine_rows, draw_png, sensitivity_section,
                                    candidates_context, header_context, scaling_context, suggestions_context,
                                    validation_context)

TEMPLATE = "report.html.j2"


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


def _prediction_key(name: str) -> str:
    """Predictions are keyed as `Recommendation.all_designs()`: the design is "recommended"."""
    return "recommended" if name == THIS_DESIGN else name


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
    lanes = bool(recommendation.design.data_parallel)  # the sweep and the chart's picks weigh no lanes
    o = _without_lane_blind_sections(options or ReportOptions(), lanes)
    say = progress or (lambda _msg: None)
    design, graph, workload = _on_its_cluster(recommendation)
    designs = {THIS_DESIGN: design, **(recommendation.baselines if o.baselines else {})}
    computed = _compute(o, design, graph, workload, designs, dict(predictions or {}), compare, say)
    context = _context(o, design, graph, workload, computed, lanes=lanes, title=title, source=source,
                       validation=validation, migration=migration)
    return html_visible(_environment().get_template(TEMPLATE).render(**context))


def _without_lane_blind_sections(o: ReportOptions, lanes: bool) -> ReportOptions:
    """The options, with the sensitivity sweep and the scaling chart off for a design with
    data-parallel lanes: their picks weigh no lanes."""
    if lanes and (o.sensitivity or o.scaling):
        return replace(o, sensitivity=False, scaling=False)
    return o


def _on_its_cluster(recommendation) -> tuple[Design, object, object]:
    """The design, its graph and its spec (None: the cost model only) on the design's cluster,
    the design's cost worked out where it came without (the caller's object stays)."""
    design, graph, workload = recommendation.design, recommendation.graph, recommendation.workload
    graph = graph.with_cluster(design.machines, design.partitions_per_machine)
    if workload is not None:
        workload = workload.with_cluster(design.machines, design.partitions_per_machine)
    if design.cost is None:
        design = replace(design, cost=design.score(graph, design.weights))
    return design, graph, workload


@dataclass
class _Computed:
    """What the report shows that was worked out for it, once every section is done."""

    designs: dict[str, Design]  # this design, the baselines and the compared designs, by name
    sims: dict  # name -> the simulator's prediction (empty without a workload)
    simulated_here: dict[str, Design]  # the designs no prediction was given for
    own_sim: object  # this design's prediction (None without a workload)
    figures: dict[str, str]  # the design's graph, load, memory and cost figures (base64 PNG)
    sensitivity: dict  # the sensitivity part of the context
    sections: dict  # section name -> its result (`reports.sections`)


def _compute(o: ReportOptions, design: Design, graph, workload, designs: dict[str, Design], known: dict,
             compare: tuple | None, say: Callable[[str], None]) -> _Computed:
    """Simulate this design first (the scaling chart and the suggestions start from it), then
    run the sections, the comparison and the other designs' simulations side by side, drawing
    the figures meanwhile. `known`: the predictions given, by `_prediction_key`."""
    from reports import figures as F

    designs = dict(designs)
    scaling = o.scaling and workload is not None  # (with a workload, this design is simulated)
    comparing = compare is not None and o.baselines
    sections = section_names(o, scaling or comparing or len(designs) > 1)
    jobs = section_jobs(o, len(sections) + comparing)
    with section_pool(jobs) as pool:  # the workers start while this design is simulated
        compared = pool.submit_first(compare[0], *compare[1]) if comparing else None  # a worker takes it at once
        own_sim = _own_prediction(workload, design, known, o.predict, say)
        if not isinstance(pool, InlinePool):
            say(f"{', '.join(sections)}: side by side in this process and {jobs - 1} "
                f"worker{'s' if jobs > 2 else ''}")
        sections_done = start_sections(pool, o, design, graph, workload, own_sim, scaling, say)
        say("drawing figures")
        figures = _design_figures(design, graph)
        if compared is not None:
            designs.update(compared.result())
        sims = {} if workload is None else {n: known.get(_prediction_key(n)) for n in designs}
        missing = {n: designs[n] for n, sim in sims.items() if sim is None}
        if missing:
            say(f"simulating {len(missing)} designs")
        start_predictions(pool, sections_done, o, design, graph, workload, own_sim, missing, scaling)
        figures["cost"] = draw_png(lambda ax: F.plot_cost_breakdown(designs, ax=ax), (7.5, 0.38 * len(designs) + 1.6))
        pool.work_here()  # the sections no worker has started yet
        # the sweep's figure first (its tasks went in last: this process has usually run them),
        # drawn while a worker may still be busy with the rest
        sensitivity = sensitivity_section(o, graph, design, sections_done)
        done = {name: future.result() for name, future in sections_done.items()}
    sims.update(done.get("predictions", ({}, []))[0])
    return _Computed(designs, sims, missing, own_sim, figures, sensitivity, done)


def _own_prediction(workload, design: Design, known: dict, predict_options: PredictOptions,
                    say: Callable[[str], None]):
    """This design's prediction: the one given, else simulated now (None without a workload)."""
    if workload is None:
        return None
    if known.get(_prediction_key(THIS_DESIGN)) is None:
        say("simulating this design")
        known[_prediction_key(THIS_DESIGN)] = predict(workload, design, predict_options)
    return known[_prediction_key(THIS_DESIGN)]


def _design_figures(design: Design, graph) -> dict[str, str]:
    """The design on its graph, and its load and memory per machine."""
    from reports import figures as F
    from reports.figures._graph import graph_figsize

    return {
        "graph": draw_png(lambda ax: F.plot_graph(design, graph, ax=ax), graph_figsize(design, graph)),
        "load": draw_png(lambda ax: F.plot_machine_load(design, graph, ax=ax), (5.6, 3.4)),
        "memory": draw_png(lambda ax: F.plot_machine_memory(design, graph, ax=ax), (5.6, 3.4)),
    }


def _context(o: ReportOptions, design: Design, graph, workload, computed: _Computed, *, lanes: bool,
             title: str | None, source, validation, migration) -> dict:
    """The template's context, part by part in the order the page shows them
    (`reports.report_context`)."""
    from reports.bottleneck import simulated_bottleneck
    from reports.migration_view import migration_context

    context = header_context(design, graph, workload, o.predict, computed.figures, title=title, source=source)
    context.update(candidates_context(computed.designs, computed.sims, computed.simulated_here, o.predict,
                                      design, lanes))
    context.update(machine_rows(design, graph, computed.own_sim))
    context.update(computed.sensitivity)
    context.update(scaling_context(computed.sections.get("scaling"), lanes))
    context["validation"] = validation_context(validation, design)
    context["bottleneck"] = simulated_bottleneck(design, graph, computed.own_sim).describe()
    context.update(suggestions_context(o.suggestions, computed.sections))
    context.update(assignment_context(design, o.max_assignment_rows, graph))
    context["migration"] = migration_context(migration)
    return context


def write_report(path: str | Path, html: str) -> Path:
    """Write a built report atomically (a reader never sees half a file); readable by everyone
    the umask allows, as a document to share (the temporary file was private)."""
    out = atomic_write_text(path, html_visible(html))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(out, 0o666 & ~mask)
    return out
