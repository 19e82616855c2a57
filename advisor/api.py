"""The Python API the CLI and notebooks share: load a workload, recommend, evaluate."""
from __future__ import annotations

import numbers
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np

from costmodel import DEFAULT_WEIGHTS, CostBreakdown, Weights, machine_memory
from costmodel.weights import check_weights
from advisor import __version__
from advisor.baselines import BASELINE_FUNCTIONS
from advisor.priced_weights import CalibrationSource, as_calibration, default_weights, weights_from_calibration
from costmodel.design import Design, check_same_deployment
from advisor.errors import AdvisorError
from costmodel.errors import DesignError, as_python_int, check_seed, finite_number
from costmodel.granularity import with_hot_set, workload_at
from advisor.data_parallel import lanes_not_weighed
from advisor.granularity_pick import DataParallelChoice, weigh_data_parallel
from advisor.judge import Simulator
from advisor.parallel_runs import CallAhead, pick_processes
from costmodel.graph import WorkloadGraph
from advisor.pick_digest import pick_request, placement_digest
from advisor.profile import workload_profile
from advisor.candidate_pool import (enumerated_candidates, one_machine_candidate, scored_candidate,
                                    search_candidates)
from advisor.recommendation import Recommendation
from advisor.search import Candidate, DesignSearch
from advisor.selection import OBJECTIVES, select
from advisor.sim_limits import simulation_blocker, spec_blocker
from advisor.sources import Source, check_argument_order, check_cluster, load_graph, load_source, load_source_for, load_workload  # noqa: F401  (the API's way in)
from advisor.sources import OWN_GRANULARITY, check_same_granularity, is_statistics_source
from costmodel.sim_params import SimParams
from costmodel.workload import Workload, cluster_text

def _beside_the_search(graph: WorkloadGraph, weights: Weights, seed: int, together: bool = True,
                       baselines: bool = True) -> tuple[Candidate | None, dict[str, tuple | None]]:
    """What a pick weighs besides the search's designs, none of it depending on the search:
    everything on one machine (`one_machine_candidate`, where `together`) and each baseline's
    placement (where `baselines`; each None where it has no design)."""
    placed = {name: fn(graph, weights, seed) for name, fn in BASELINE_FUNCTIONS.items()} if baselines else {}
    return (one_machine_candidate(graph, weights, seed) if together else None), placed


def recommend(source: Source, machines: int | None = None,
              partitions_per_machine: int | None = None, weights: Weights | None = None,
              seed: int = 0, replicate: bool = False, baselines: bool = True,
              search: DesignSearch | None = None, objective: str = "throughput",
              workload: Workload | None = None, calibration: CalibrationSource | SimParams = None,
              data_parallel: bool = False, current: Design | str | Path | None = None,
              max_move_mb: float | None = None, simulator: Simulator | None = None,
              jobs: int | None = None) -> Recommendation:
    """The design for `source` on the cluster: the candidate (the search's good designs, the
    baselines, and on tiny graphs every assignment to machines) the simulator predicts fastest
    (`objective="throughput"`), or the search's cheapest by the cost model (`"cost"`).

    `workload` is a spec to simulate when the source is a graph or statistics whose state items
    are the spec's tables; `calibration` (a Calibration, the path of its file, or bare SimParams)
    prices the default weights and is what the simulator predicts with (default: the weights
    from the default calibration file, predictions on the reference cluster); `simulator` is what judges (default:
    engine_sim's, `default_simulator`). Where the dataflow is too large to simulate in time,
    the busy-time estimate picks (`advisor.estimate_pick`); with no dataflow to run, the pick
    falls back to cost; `selection.note` says why. With `data_parallel`, the pick's
    data-parallel variant (SPs that split by key, as lanes over fragments of their tables) is
    simulated beside it and recommended when faster (`Recommendation.data_parallel` says).

    With `current` (the deployed design, on its own cluster), the recommendation is the fastest
    design reachable from it moving at most `max_move_mb` megabytes of state (no limit: the
    fastest, renamed to move least), and `Recommendation.migration` holds every design weighed
    and the frontier of megabytes against predicted throughput (`advisor.migration_pick`).

    `jobs`: processes that simulate the pick's designs side by side (default: the usable
    cores where forking this process is safe, `advisor.parallel_runs`; with a `simulator` of
    the caller's own, 1, so that it runs, and keeps what it keeps, in this process); the
    recommendation is the same with any number.
    """
    max_move_mb = _checked_request(objective, weights, max_move_mb, current, data_parallel)
    _check_collaborators(search, simulator, workload)
    check_flags(replicate=replicate, baselines=baselines, data_parallel=data_parallel)
    own_search, own_simulator = search is not None, simulator is not None
    simulator = simulator if simulator is not None else default_simulator()
    loaded, graph = load_source(source)
    if current is not None:
        current = current if isinstance(current, Design) else Design.load(current)
        current.check_fields()  # one changed in Python: as its file would be read
        machines, partitions_per_machine = _deployed_cluster(current, graph, machines, partitions_per_machine)
        check_table_level(current)  # (after the workload: another workload's lanes design is that first)
    machines, partitions_per_machine = check_cluster(machines, partitions_per_machine)
    check_seed(seed, AdvisorError)
    jobs = check_jobs(jobs)
    graph = graph.with_cluster(machines, partitions_per_machine)
    gone: list[str] = []
    if current is not None:  # before the search: one that places other SPs or state, said now
        current, gone = _current_on(current, graph, source)
    spec = loaded or workload
    if spec is not None:
        spec = spec.with_cluster(graph.cost.machines, graph.cost.partitions_per_machine)
    if calibration is not None and not isinstance(calibration, SimParams):
        calibration = as_calibration(calibration)  # read once, for the weights and the simulator
    weights = weights or default_weights(graph, None if isinstance(calibration, SimParams) else calibration)
    if search is None:
        search = DesignSearch(weights=weights, seed=seed, replicate=replicate)
    else:
        _check_search_cluster(search, graph)
    # judged by throughput: simulated, or where the simulator cannot in time, estimated
    # (`advisor.estimate_pick`); either way from the whole pool
    judged = objective == "throughput" and spec_blocker(spec, graph) is None
    processes = pick_processes(1 if jobs is None and own_simulator else jobs)
    candidates, scored_baselines = _candidate_pool(graph, weights, seed, search, judged, baselines, processes)
    base_provenance = {"seed": seed, "input_sha256": graph.source_sha256, "version": __version__}
    selection = select(candidates, objective, spec, graph, weights, calibration, seed, simulator=simulator,
                       jobs=processes)
    chosen = selection.chosen
    provenance = {**base_provenance, "search": search.best_label_,
                  "candidates": len(search.candidates_), **selection.provenance()}
    profile = workload_profile(graph)
    if profile is not None:  # what a drift check compares a later workload with
        provenance["workload_profile"] = profile
    design = Design.from_arrays(graph, chosen.proc_part, chosen.state_part, weights,
                                method="advisor", provenance=provenance)
    choice, lanes_note = None, ""
    if data_parallel:
        design, choice, lanes_note = _weigh_lanes(design, selection, spec, weights, calibration, seed, simulator)
    out = Recommendation(design, graph, workload=loaded or workload,
                         search=search, selection=selection, data_parallel=choice, lanes_not_weighed=lanes_note)
    if current is not None:
        from advisor.migration_pick import plan_migration

        plan = plan_migration(out, current, max_move_mb, calibration, seed, simulator=simulator, jobs=processes)
        plan.gone = gone
        out.migration = plan
        out.design = replace(plan.chosen.design, method="advisor",
                             provenance=_migration_provenance(provenance, plan, current, max_move_mb))
    request = None if (own_search or own_simulator or current is not None) else pick_request(
        graph, spec, weights, seed, calibration, objective, replicate, data_parallel)
    # the placement it was made with (a design edited since keeps no figure of this one:
    # `costmodel.design_file.edited_since_made`); and with the request, a later report of it
    # need not search again (`advisor.pick_digest`)
    made = {"placement_sha256": placement_digest(out.design)} | ({"request_sha256": request} if request else {})
    out.design = replace(out.design, provenance={**out.design.provenance, **made})
    if baselines:
        for name, o in scored_baselines.items():
            out.baselines[name] = Design.from_arrays(graph, o.proc_part, o.state_part, weights,
                                                     method=name, provenance=dict(base_provenance))
    return out


def _checked_request(objective: str, weights: Weights | None, max_move_mb, current, data_parallel) -> float | None:
    """What `recommend` is asked, checked before any work: the objective, the weights, and a
    move budget (a float from here on; numpy's too) only with a deployed design to move from."""
    if objective not in OBJECTIVES:
        raise AdvisorError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    check_weights(weights, AdvisorError)
    if max_move_mb is not None and current is None:
        raise AdvisorError("a move budget (max_move_mb) needs the deployed design (current)")
    if isinstance(max_move_mb, numbers.Real) and not isinstance(max_move_mb, (bool, int, float)):
        max_move_mb = float(max_move_mb)  # numpy's
    if max_move_mb is not None and not (isinstance(max_move_mb, (int, float)) and not isinstance(max_move_mb, bool)
                                        and 0 <= max_move_mb <= MAX_MOVE_MB):
        raise AdvisorError(f"the move budget must be a number of megabytes from 0 to {MAX_MOVE_MB:g}, "
                           f"got {max_move_mb!r}")
    if current is not None and data_parallel:
        raise AdvisorError("a migration from a deployed design weighs table-level designs: "
                           "leave out data_parallel")
    return max_move_mb


def check_jobs(jobs) -> int | None:
    """`jobs` as a Python int (numpy's too, as the cluster's counts), at least 1; None: the
    default. Every `jobs=` of the API (recommend's, a tuning study's) is read by this."""
    jobs = as_python_int(jobs)
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise AdvisorError(f"jobs must be an integer >= 1, got {jobs!r}")
    return jobs


def _current_on(current: Design, graph: WorkloadGraph, source: Source) -> tuple[Design, list[str]]:
    """The deployed design as the pick weighs it on this workload's graph, and what the
    workload dropped since (judged without it): another trace's hot tuples carried over, a
    window it leaves out beside its owner, as everywhere; one that places SPs or state the
    workload does not have is refused, and one of another granularity is said to be (as
    `advisor check` says it: a table-level design against fragment statistics was "does not
    fit the workload as it is now", pointing to `advisor check` as if the workload had changed)."""
    current = on_hot_set(current, graph)
    check_same_granularity(current, graph, source, "the deployed design (--current)", OWN_GRANULARITY)
    current, gone = current.without_gone(graph)
    current = current.with_windows(graph)
    _places_the_workload(current, graph)
    return current, gone


def on_hot_set(design: Design, graph: WorkloadGraph) -> Design:
    """`design` carried over to the graph's hot tuples where only the hot set differs
    (`costmodel.granularity.with_hot_set`), else as it is: a design of an earlier trace's hot
    tuples is the same deployment, for `recommend --current` and `diff` alike."""
    hot = with_hot_set(design.state, graph.state_names)
    return design if hot is None else replace(design, state=hot)


def _candidate_pool(graph: WorkloadGraph, weights: Weights, seed: int, search: DesignSearch, judged: bool,
                    baselines: bool, processes: int) -> tuple[list[Candidate], dict[str, Candidate]]:
    """The pool the pick judges, and the baselines scored: the search's designs, the baselines
    (always where the pick is judged by throughput), and, judged, everything on one machine
    and on tiny graphs every assignment to machines. What does not depend on the search (one
    machine, a search of its own, where there is one; else the baselines) runs in a forked
    process while this one searches, where the pick has processes to spare."""
    together = judged and min(graph.cost.machines, graph.cost.partitions_per_machine) > 1
    with_baselines = baselines or judged
    fork_together = together and processes > 1
    fork_baselines = judged and processes > 1 and not together and with_baselines
    ahead = (CallAhead(_beside_the_search, graph, weights, seed, fork_together, fork_baselines)
             if fork_together or fork_baselines else None)
    with ahead or nullcontext():
        search.fit(graph)
        candidates = search_candidates(search, graph, weights)
        one_machine, placed = _beside_the_search(graph, weights, seed, together and not fork_together,
                                                 with_baselines and not fork_baselines)
        if ahead is not None:
            forked_one_machine, forked_placed = ahead.get()
            one_machine = forked_one_machine if fork_together else one_machine
            placed = forked_placed if fork_baselines else placed
    scored_baselines = {name: scored_candidate(graph, weights, name, "baseline", *result)
                        for name, result in placed.items() if result is not None}
    candidates += list(scored_baselines.values())
    if judged:
        candidates += ([one_machine] if one_machine is not None else []) + enumerated_candidates(graph, weights, seed)
    return candidates, scored_baselines


def _weigh_lanes(design: Design, selection, spec: Workload | None, weights: Weights, calibration, seed: int,
                 simulator: Simulator) -> tuple[Design, DataParallelChoice | None, str]:
    """The pick against its data-parallel variant (lanes over fragments of the tables of SPs
    that split by key), simulated side by side: (the design, the variant weighed, why none was
    weighed). Only where the pick was simulated: by cost or by the estimate, or with no
    dataflow to run, the lanes are not weighed and the note says why."""
    if selection.objective != "throughput" or spec is None:
        by = "the busy-time estimate" if selection.objective == "estimate" else "cost"
        return design, None, (f"the simulator judges them, and this pick is by {by}" if spec is not None
                              else "a bare graph holds no dataflow to run them on")
    choice = weigh_data_parallel(spec, design, calibration, seed, simulator=simulator)
    if choice is None:
        return design, None, lanes_not_weighed(spec, design)
    at = WorkloadGraph.from_workload(workload_at(spec, choice.variant.state))
    choice.variant.cost = choice.variant.score(at, weights)  # as the cost model sees it: the lanes' base partitions
    if choice.picked:
        provenance = design.provenance
        design = replace(choice.variant, method="advisor",
                         provenance={**provenance, "granularity": "data-parallel",
                                     "predicted_tuples_per_s": round(choice.variant_tps, 1),
                                     "table_level_predicted_tuples_per_s": round(choice.table_tps, 1)})
    return design, choice, ""


def _migration_provenance(provenance: dict, plan, current: Design, max_move_mb: float | None) -> dict:
    """The provenance of the design a migration pick writes: its own figures (the pick's,
    and its simulated search, describe the unconstrained design; they are kept under
    `migration.unconstrained`), and the frontier of budgets, so `--json` holds it too."""
    chosen = plan.chosen
    unconstrained = {k: provenance[k] for k in ("picked", "predicted_tuples_per_s", "simulated_search")
                     if k in provenance}
    own = {k: v for k, v in provenance.items() if k not in unconstrained}
    figures = {"predicted_tuples_per_s": None if chosen.predicted_tps is None else round(chosen.predicted_tps, 1)}
    if chosen.estimated_tps is not None:
        figures["estimated_tuples_per_s"] = round(chosen.estimated_tps, 1)
    return {**own, "picked": chosen.label, **figures,
            "migration": {"from": current.provenance.get("input_sha256"), "picked": chosen.label,
                          "megabytes_moved": round(chosen.megabytes, 6), "max_move_mb": max_move_mb,
                          "judged_by": plan.judged_by, "unconstrained": unconstrained,
                          **({"gone": list(plan.gone)} if plan.gone else {}),
                          "frontier": plan.to_dict()["frontier"]}}


def _check_search_cluster(search: DesignSearch, graph: WorkloadGraph) -> None:
    """A search of the caller's own set for another cluster than the recommendation's is one
    line: its designs were of its cluster, weighed as if of the recommendation's (a
    `DesignSearch(machines=2)` beside `machines=4` was 4, without a word)."""
    asked = (graph.cost.machines, graph.cost.partitions_per_machine)
    machines, ppm = getattr(search, "machines", None), getattr(search, "partitions_per_machine", None)
    own = (machines if machines is not None else asked[0],
           ppm if ppm is not None else asked[1])
    if own != asked:
        raise AdvisorError(f"search is set for {cluster_text(*own)} and the recommendation is for "
                           f"{cluster_text(*asked)}: leave the search's machines and partitions_per_machine "
                           "None (the recommendation's) or give the same")


def _check_collaborators(search, simulator, workload) -> None:
    """The objects `recommend` hands work to, checked by what it asks of them (a str given for
    one was an AttributeError from deep inside the pick)."""
    if search is not None and not (callable(getattr(search, "fit", None)) and hasattr(search, "pool_")):
        raise AdvisorError(f"search must be a DesignSearch (fit and pool_), got {search!r}")
    if simulator is not None and not all(callable(getattr(simulator, m, None))
                                         for m in ("reference_calibration", "max_throughput")):
        raise AdvisorError(f"simulator must be a Simulator (advisor.judge), got {simulator!r}")
    if workload is not None and not isinstance(workload, Workload):
        raise AdvisorError(f"workload must be a Workload (advisor.load_workload), got {workload!r}")


def check_flags(**flags) -> None:
    """Each flag is True or False (numpy's too): `replicate="false"` was taken as true."""
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise AdvisorError(f"{name} must be True or False, got {value!r}")


def default_simulator() -> Simulator:
    """What judges designs unless a caller gives its own: engine_sim's simulator (the API is
    above the simulator; the pick below it is handed one, `advisor.judge`)."""
    from engine_sim.sim.judge import ENGINE_SIMULATOR

    return ENGINE_SIMULATOR


def _deployed_cluster(current: Design, graph: WorkloadGraph, machines: int | None,
                      partitions_per_machine: int | None) -> tuple[int, int]:
    """The cluster of a migration: the deployed design's; one asked for must be the same."""
    if current.workload != graph.name:
        raise AdvisorError(f"the deployed design is of workload {current.workload!r}, not {graph.name!r}")
    asked = (machines or current.machines, partitions_per_machine or current.partitions_per_machine)
    if asked != (current.machines, current.partitions_per_machine):
        raise AdvisorError(f"the deployed design is for {cluster_text(current.machines, current.partitions_per_machine)}, "
                           f"not {cluster_text(*asked)} (a migration keeps the cluster)")
    return asked


MAX_MOVE_MB = 1e12  # an exabyte: a larger budget is a typo (1e300 printed as 300 digits)


def check_table_level(current: Design) -> None:
    """A migration weighs table-level designs: a deployed design with data-parallel lanes is
    refused in one line, by `recommend --current` and `check` alike."""
    if current.data_parallel:
        raise AdvisorError(f"the deployed design runs data-parallel lanes ({', '.join(current.data_parallel)}): "
                           "drift checks and migrations weigh table-level designs only")


def _places_the_workload(current: Design, graph: WorkloadGraph) -> None:
    """The deployed design places exactly the workload's SPs and state items; else one line
    naming the first that differs, in the user's terms (the pick's own check said "only the
    second design places ...", of a second design the user never gave)."""
    try:
        current.arrays(graph)
    except DesignError as exc:
        raise AdvisorError(f"the deployed design (--current) does not fit the workload as it is now: {exc} "
                           f"(`advisor check` says what changed; recommend without it for a new design)") from None


def evaluate(design: Design | str | Path, source: Source, weights: Weights | None = None
             ) -> CostBreakdown:
    """The cost breakdown of any design (hand-written ones included) on a workload: with
    `weights`, else the design's own, else (a file without weights) the weights `recommend`
    prices for this graph, so the two costs compare."""
    check_weights(weights, AdvisorError)
    check_argument_order("evaluate", design, source, "design, source")
    if not isinstance(design, Design):
        design = Design.load(design)
    _, graph = load_source_for(design, source)
    graph = graph.with_cluster(design.machines, design.partitions_per_machine)
    if weights is None and not design.weights_stated:
        weights = default_weights(graph)
    return design.score(graph, weights or design.weights)


def own_weights_note(design: Design, source: Source, cost: CostBreakdown) -> str:
    """A line where `cost` is priced at the design file's own weights and `recommend` prices
    this workload at others now ('' where they agree): the same placement read 0.3032 in
    `evaluate` and 0.3112 in `recommend --current`, and a design made for the new workload was
    costed at the new weights, so two `evaluate` totals compared across weights, unsaid."""
    if not design.weights_stated or cost.weights != design.weights:
        return ""
    priced = default_weights(load_graph(source, design.machines, design.partitions_per_machine))
    if np.allclose([priced.alpha, priced.beta, priced.gamma],
                   [design.weights.alpha, design.weights.beta, design.weights.gamma], rtol=1e-4, atol=1e-6):
        return ""
    at_priced = evaluate(design, source, priced)
    return (f"weights: the design file's own; recommend prices this workload at alpha={priced.alpha:g} "
            f"beta={priced.beta:g} gamma={priced.gamma:g} (total {at_priced.total:.4f} there; "
            "--alpha/--beta/--gamma or --calibration price it otherwise)")


def diff(current: Design | str | Path, new: Design | str | Path, source: Source, calibration=None,
         seed: int | None = None, relabel: bool = True, simulator: Simulator | None = None):
    """What moving a deployment from `current` to `new` takes (`advisor.migration.DesignDiff`):
    every SP and state item that moves, the bytes, the copy time at the simulator's (or the
    calibration's) prices, and both designs' predicted throughput (the busy-time estimate
    where the workload is too large to simulate; none for a bare graph). `simulator`: what
    predicts them (default: engine_sim's). `seed` None: the one each design was recommended
    with, so each figure is `recommend`'s and `check`'s (`Design.recorded_seed`); the current
    design read 11,748 tuples/s here at the new one's seed and 11,767 everywhere else."""
    from advisor.migration import diff as diff_of
    from advisor.migration_pick import predict_designs
    from costmodel.lanes import lane_routes

    check_argument_order("diff", new, source, "current, new, source")
    _check_collaborators(None, simulator, None)
    check_flags(relabel=relabel)
    current, new = (d if isinstance(d, Design) else Design.load(d) for d in (current, new))
    for design in (current, new):  # changed in Python: as a file would be read, before either is compared
        design.check_fields()
    check_same_deployment(current, new)  # before the workload is read: it is the new one's by default
    seeds = [current.seed_or_recorded(seed), new.seed_or_recorded(seed)]
    check_seed(seeds[1], AdvisorError)
    workload, graph = load_source_for(current, source, "the deployed design (--current)")  # (and its lanes)
    current, new = on_hot_set(current, graph), on_hot_set(new, graph)  # (another trace's hot tuples)
    if is_statistics_source(source):  # (a spec is seen at the current design's: what differs is named below)
        for design, who in ((current, "the deployed design (--current)"), (new, "the new design (--design)")):
            check_same_granularity(design, graph, source, who, OWN_GRANULARITY)
    if workload is not None:
        lane_routes(workload, new)  # and the new one's, as evaluate/simulate do: one line, not 0 tuples/s
    graph = graph.with_cluster(current.machines, current.partitions_per_machine)
    current, gone = current.without_gone(graph)  # what the workload dropped: judged without it, as recommend does
    current, new = current.with_windows(graph), new.with_windows(graph)  # one left out: beside its owner
    if workload is not None:
        workload = workload.with_cluster(current.machines, current.partitions_per_machine)
    simulator = simulator if simulator is not None else default_simulator()
    if calibration is None:
        calibration = simulator.reference_calibration()
    elif not isinstance(calibration, SimParams):
        calibration = as_calibration(calibration)  # a path or a Calibration, as recommend reads it
    params = getattr(calibration, "params", calibration)
    current.arrays(graph)  # the deployed design of another workload than the source: one line
    out = diff_of(current, new, graph, params, workload, relabel=relabel)  # (new: its own checks)
    out.gone = gone
    pair = [current, out.new]
    for d in pair:
        d.arrays(graph)  # a design that does not fit the source: one line, before any work
    if workload is not None and simulation_blocker(workload, graph) is None:
        figures = [predict_designs([d], workload, calibration, d_seed, simulator=simulator)[0]
                   for d, d_seed in zip(pair, seeds)]
        out.judged_by = "simulator"
    elif workload is not None:
        from advisor.busy_estimate import BusyEstimate

        estimate = BusyEstimate.of(graph, workload, params)
        figures, out.judged_by = [estimate.throughput_tps(*d.arrays(graph)) for d in pair], "estimate"
    else:
        figures, out.judged_by = [None, None], ""
    out.predicted_tps = dict(zip(("current", "new"), figures))
    return out


def memory_per_machine(design: Design, graph: WorkloadGraph) -> np.ndarray:
    graph = graph.with_cluster(design.machines, design.partitions_per_machine)
    _, state = design.arrays(graph)
    return machine_memory(graph.cost, state)


def resolve_weights(alpha: float | None = None, beta: float | None = None,
                    gamma: float | None = None, *, calibration: CalibrationSource = None,
                    source: Source | None = None, machines: int | None = None,
                    partitions_per_machine: int | None = None) -> Weights | None:
    """The weights a user asked for: each of alpha/beta/gamma given wins; the others come from
    the weights priced for `source`'s graph on the cluster (from `calibration`, else the
    default calibration), or from the calibration's own weights (no source), or the fixed
    defaults. None when nothing is given and there is no graph to price: `recommend` then
    prices the defaults itself. A bad value is one AdvisorError line."""
    given = (alpha, beta, gamma)
    base = DEFAULT_WEIGHTS
    if source is not None and (calibration is not None or given.count(None) in (1, 2)):
        base = default_weights(load_graph(source, machines, partitions_per_machine), calibration)
    elif given.count(None) == 3 and calibration is None:
        return None
    elif calibration is not None:
        base = weights_from_calibration(calibration)
    chosen = (base.alpha if alpha is None else alpha, base.beta if beta is None else beta,
              base.gamma if gamma is None else gamma)
    if all(finite_number(v) and v == 0 for v in chosen):  # Weights refuses it too, not in the CLI's words
        raise AdvisorError("at least one of --alpha, --beta, --gamma must be positive")
    try:
        return Weights(*chosen)
    except ValueError as exc:
        raise AdvisorError(str(exc)) from None
