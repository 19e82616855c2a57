"""What a report puts beside a design: the design read and checked against its source
(`report_subject`), the current search's pick where it differs and every baseline
(`compared_designs`), and both as a `Recommendation` when only a design file is given
(`report_recommendation`).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from costmodel.design import Design
from costmodel.errors import UserError
from reports.sensitivity import placement_signature

CURRENT_SEARCH = "advisor (current search)"  # the search's own design, where it differs


def report_recommendation(design: Design | str | Path, source, *, workload=None, seed: int = 0,
                          baselines: bool = True, calibration=None):
    """What a report compares a design with, computed when only the design is given: the graph
    on the design's cluster, the spec to simulate (`workload`, when the source is statistics),
    the current search's design where it differs, and every baseline.

    `source` is what the design was made for (bundled name, spec path, Workload or statistics
    dir); `calibration` is what the comparison's pick predicts with, as `recommend` takes it
    (the report's own predictions should use the same). Returns a `Recommendation` whose
    `design` is the given one, scored on this source.
    """
    from advisor.recommendation import Recommendation

    design, graph, workload = report_subject(design, source, workload=workload)
    compared = compared_designs(design, graph, workload, seed, calibration, source) if baselines else {}
    return Recommendation(design, graph, compared, workload=workload)


def report_subject(design: Design | str | Path, source, *, workload=None) -> tuple:
    """(the design scored on `source`, its graph on the design's cluster, the spec to simulate or
    None): what a report of a design file is about, before anything is compared with it. A
    design without weights gets those `recommend` prices, as `evaluate` gives it."""
    from advisor.sources import is_statistics_source, load_source_for
    from costmodel.granularity import workload_at
    from costmodel.graph import WorkloadGraph
    from advisor.priced_weights import default_weights

    if not isinstance(design, Design):
        design = Design.load(design)
    spec, graph = load_source_for(design, source)
    if workload is not None and spec is not None and not is_statistics_source(source):
        # (the graph was priced from the source and the other spec simulated: two workloads)
        raise UserError("a spec to simulate (--spec) is for a source of statistics; this source is a "
                        "workload spec, simulated as it is: leave --spec out or give the statistics")
    graph = graph.with_cluster(design.machines, design.partitions_per_machine)
    workload = workload_at(workload, design.state) if workload is not None else spec
    if workload is not None:  # it will be simulated: a cluster the simulator cannot model is said now
        from engine_sim.sim.compiled import check_simulated_partitions

        check_simulated_partitions(design.n_partitions)
    if workload is not None:
        workload = workload.with_cluster(design.machines, design.partitions_per_machine)
    design.arrays(graph)  # fails with a one-line DesignError if the names do not match
    if workload is not None and workload is not spec:
        design.arrays(WorkloadGraph.from_workload(workload))  # the spec to simulate must match too
    if not design.weights_stated:  # a file without weights: those recommend prices, as evaluate does
        design = replace(design, weights=default_weights(graph), weights_stated=True)
    return replace(design, cost=design.score(graph)), graph, workload  # the caller's object stays


def compared_designs(design: Design, graph, workload, seed: int = 0, calibration=None,
                     source=None) -> dict[str, Design]:
    """The designs a report puts beside `design`: the current search's pick (`recommend` at the
    design's weights, with `calibration`) where it differs, then every baseline. A design with
    data-parallel lanes is compared as `recommend --data-parallel` compares it (with `source`,
    its table-level workload): that pick, the table-level pick and the table-level baselines,
    each at the design's items (`_at_items`)."""
    from advisor import __version__
    from advisor.api import recommend
    from advisor.baselines import BASELINES, baseline_design
    from advisor.pick_digest import is_the_pick, pick_request

    if design.data_parallel and workload is not None and source is not None:
        lanes = _compared_with_lanes(design, graph, source, seed, calibration)
        if lanes is not None:
            return lanes
    if workload is not None and is_the_pick(design, pick_request(graph, workload, design.weights, seed, calibration)):
        # the file is, unedited, what this search gives: only the baselines are new
        provenance = {"seed": seed, "input_sha256": graph.source_sha256, "version": __version__}
        placed = {name: baseline_design(name, graph, design.weights, seed, provenance) for name in BASELINES}
        return {name: d for name, d in placed.items() if d is not None}
    current = recommend(graph, weights=design.weights, seed=seed, workload=workload, calibration=calibration)
    compared = {}
    if placement_signature(current.design) != placement_signature(design):
        compared[CURRENT_SEARCH] = current.design
    compared.update(current.baselines)
    return compared


def _compared_with_lanes(design: Design, graph, source, seed: int, calibration) -> dict[str, Design] | None:
    """`compared_designs` of a design with lanes: on the fragment graph, searched again there,
    it met an "advisor (current search)" that never weighs lanes and baselines that split
    every table, none of which `recommend` showed; None where the source holds no spec."""
    from advisor.api import recommend
    from advisor.sources import load_source

    spec, _ = load_source(source)
    if spec is None:
        return None
    rec = recommend(spec.with_cluster(design.machines, design.partitions_per_machine), weights=design.weights,
                    seed=seed, calibration=calibration, data_parallel=True)
    chosen = rec.selection.chosen
    table_pick = Design.from_arrays(rec.graph, chosen.proc_part, chosen.state_part, design.weights,
                                    method="table-level pick")
    compared = {}
    for name, d in {CURRENT_SEARCH: rec.design, "table-level pick": table_pick, **rec.baselines}.items():
        at = _at_items(d, design, graph)
        if name == CURRENT_SEARCH and placement_signature(at) == placement_signature(design):
            continue
        compared[name] = replace(at, cost=at.score(graph, design.weights))
    return compared


def _at_items(d: Design, like: Design, graph) -> Design:
    """`d` placing `like`'s state items: a table's fragments where `d` places the table whole
    (the same placement at the finer grain; a design with its own fragments keeps them). An
    item's table is read among `like`'s items (`tables_among`): cut at the first '@', a spec's
    `Trade@Type@7` went with a table `Trade`, or was dropped where `d` had none."""
    from costmodel.granularity import tables_among

    if set(d.state) == set(like.state):
        return d
    table_of = tables_among(like.state)
    state = {n: d.state[n] if n in d.state else d.state.get(table_of[n]) for n in like.state
             if n in d.state or table_of[n] in d.state}
    return replace(d, state=state).with_windows(graph)
