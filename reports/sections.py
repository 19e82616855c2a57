"""A report's independent sections side by side: the suggestions, the scaling chart's
machine counts, the sensitivity sweep's points and the candidate table's missing simulations
are tasks for a `reports.parallel` pool (this process and its workers), each section handed
back as one future; the HTML is the same for any number of workers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from costmodel.design import Design
from reports.predict import PredictOptions

if TYPE_CHECKING:
    from reports.report import ReportOptions


def section_names(o: ReportOptions, predictions: bool) -> list[str]:
    """The report's parts that need none of each other's results (`predictions`: the candidate
    table's missing simulations, with the scaling chart when it is drawn: they share runs)."""
    return [name for name, on in (("suggestions", o.suggestions),
                                  ("scaling" if o.scaling else "predictions", predictions),
                                  ("sensitivity", o.sensitivity)) if on]


def section_jobs(o: ReportOptions, sections: int) -> int:
    """Worker processes for the sections: the option, no more than there are sections (1: here)."""
    return max(1, min(o.jobs, sections))


def start_sections(pool, o: ReportOptions, design: Design, graph, workload, own_sim,
                   scaling: bool, say: Callable[[str], None]) -> dict:
    """Submit every section to `pool` (the longest first, so two workers end together) and
    return their futures by name; with `InlinePool` they run here, one after the other."""
    from reports.sensitivity import DEFAULT_SHARES, TERMS, sweep_term
    from reports.suggestions import SuggestionsStart, try_change

    futures = {}
    if o.suggestions:  # each change its own task: the longest section, split to balance
        say("suggestions: applying each change to a copy of the spec")
        start = SuggestionsStart.of(workload, design, graph, design.weights, options=o.predict, sim=own_sim)
        tried = [pool.submit(try_change, workload, design, start.weights, change, o.seed, o.predict,
                             start.tps_before is not None) for change in start.changes]
        futures["suggestions"] = _Suggested(start, tried, by_cost=workload is None)
    if scaling:  # every machine count but the design's own a task of its own, the largest (slowest) first
        from reports.scaling import scaling_rows

        counts = chart_counts(o, design)
        say(f"throughput against machines {counts}")
        for m in sorted((c for c in counts if c != design.machines), reverse=True):
            futures[f"scaling {m}"] = pool.submit(scaling_rows, workload, m, **scaling_point(o, design))
        futures["scaling"] = _Curve(counts, design.machines, futures)
    if o.sensitivity:  # a task per point of the sweeps: the shortest tasks, last, even out the workers' ends
        say("sensitivity sweep over alpha, beta, gamma")
        for term in TERMS:
            for share in DEFAULT_SHARES:
                futures[f"sensitivity {term} {share}"] = pool.submit(sweep_term, graph, design.weights, term,
                                                                     (share,), seed=o.seed)
    return futures


def chart_counts(o: ReportOptions, design: Design) -> list[int]:
    """The scaling chart's machine counts: the option's, else 1, 2, 4, ... with the design's own."""
    from reports.scaling import default_machine_counts

    return o.scaling_machines or default_machine_counts(design.machines)


def scaling_point(o: ReportOptions, design: Design) -> dict:
    """`scaling_rows`' arguments for every machine count of the chart."""
    return {"weights": design.weights, "partitions_per_machine": design.partitions_per_machine,
            "seed": o.seed, "options": o.predict}


def start_predictions(pool, futures: dict, o: ReportOptions, design: Design, graph, workload, own_sim,
                      missing: dict[str, Design], scaling: bool) -> None:
    """Submit the candidate table's missing predictions, ahead of the sections not started yet
    (it waited for the comparison): the chart's rows at the design's own machine count in one
    task with the table's designs the chart also draws (its baselines there are the table's
    runs), every other design a task of its own, so both processes share the table. A design
    far below this one (`reports.predict.FarBelowScreen`, on `graph`) is screened."""
    from reports.scaling import DEFAULT_BASELINES

    own_point = None
    if scaling and design.machines in chart_counts(o, design):
        own_point = {**scaling_point(o, design), "machines": design.machines,
                     "fixed": (design, float(own_sim.throughput_tps))}
    if not (scaling or missing):
        return
    shared = DEFAULT_BASELINES if own_point is not None else ()
    with_chart = {n: d for n, d in missing.items() if n in shared}
    screen = (graph, None if own_sim is None else float(own_sim.throughput_tps))  # far below it: screened
    tasks = [] if own_point is None and not with_chart else [
        pool.submit_first(_predictions_section, workload, with_chart, o.predict, own_point, screen)]
    tasks += [pool.submit_first(_predictions_section, workload, {n: d}, o.predict, None, screen)
              for n, d in missing.items() if n not in shared]
    futures["predictions"] = _Predicted(tasks)


@dataclass
class _Predicted:
    """The candidate table's missing predictions as one future: `(simulations by name, the
    chart's rows at the design's own machine count)`, from its tasks."""

    tasks: list  # futures of `_predictions_section`, the chart's rows in the first

    def result(self) -> tuple[dict, list]:
        sims, rows = {}, []
        for task in self.tasks:
            more_sims, more_rows = task.result()
            sims.update(more_sims)
            rows += more_rows
        return sims, rows


@dataclass
class _Suggested:
    """The suggestions section as one future: its changes' tasks, ranked once all are done."""

    start: object  # reports.suggestions.SuggestionsStart
    tried: list  # one future per change, in the start's order
    by_cost: bool  # no workload to change: the design-level changes, by the cost model

    def result(self):
        if self.by_cost:
            return self.start.by_cost()
        return self.start.finish([f.result() for f in self.tried])


@dataclass
class _Curve:
    """The scaling chart as one future: the design's own machine count comes with the table's
    predictions, every other count from its own task; rows in the counts' order."""

    counts: list[int]
    own: int  # the design's machine count
    futures: dict

    def result(self):
        from reports.scaling import ScalingCurve

        rows = []
        for m in self.counts:
            rows += self.futures["predictions"].result()[1] if m == self.own else self.futures[f"scaling {m}"].result()
        return ScalingCurve(rows=rows)


def _predictions_section(workload, designs: dict[str, Design], options: PredictOptions,
                         own_point: dict | None, screen: tuple) -> tuple[dict, list]:
    """The candidate table's missing predictions (`screen`: the graph and the figure of the
    design they are compared with), then the scaling chart's rows at the design's own machine
    count (`own_point`: `scaling_rows`' arguments; none without it): in one process, so the
    chart's baselines there are the table's runs, from `reports.predict`'s cache."""
    from reports.predict import FarBelowScreen
    from reports.scaling import scaling_rows

    far_below = FarBelowScreen.of(workload, screen[0], screen[1], options)
    sims = {name: far_below.predict(d) for name, d in designs.items()}
    return sims, [] if own_point is None else scaling_rows(workload, **own_point)
