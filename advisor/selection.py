"""The final pick: of a bounded set of good candidate designs, the one the simulator predicts
fastest (ties, within 2 %, go to the lower cost).

Why: the cost model is what METIS optimises at scale, but it is not the verdict. A cheap
design by the weights can still be slow (a nested group split across machines commits with
2PC on every batch). So the candidates the search keeps, the baselines and, on graphs small
enough, every assignment to machines are simulated, and the fastest one is recommended.

The simulation is budgeted in simulated events, not in seconds, so the same input gives the
same design on any host: a cheap pilot run measures each candidate's events per batch, a
screening round simulates every candidate with few batches, and a final round re-simulates
the contenders (within 25 % of the best) with more. Where the graph is too large, there is no
spec to simulate, or the budget cannot cover two candidates, the pick falls back to cost and
the selection says why (`note`).

The candidates themselves (the pool, and telling duplicates apart) are built in
`advisor.candidate_pool`; this module judges them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from costmodel import Weights
from costmodel.graph import WorkloadGraph
from costmodel.workload import Workload
from advisor.candidate_pool import distinct, relabelled_design_key, scored_candidate
from advisor.judge import Simulator
from advisor.search import Candidate
from advisor.simulation_runs import SimulationRuns
from advisor.sim_limits import size_blocker, spec_blocker

OBJECTIVES = ("throughput", "cost")
TIE_TOLERANCE = 0.02  # predicted throughputs this close are a tie: the lower cost wins
EVENT_BUDGET = 300_000  # simulated events (and run overheads) for the whole pick: ~1 s here, quiet
RUN_OVERHEAD_EVENTS = 600  # what setting up and summarising one simulation run costs, in events
PILOT_BATCHES, PILOT_SHARE = 20, 0.25  # pilots stop once they have spent this share
SCREEN_BATCHES, SCREEN_PROBES, SCREEN_TOLERANCE, SCREEN_SHARE = 100, 5, 0.08, 0.5
FINAL_BATCHES, FINAL_PROBES = 300, 7
MIN_BATCHES = 40
# the recommendation's own figure (`Selection.prediction`): every output shows it for the pick,
# a report's simulation of the design (`reports.predict`) included; the simulated search's
# runs are on the same settings, so its figures are this one
PREDICTION_BATCHES, PREDICTION_TOLERANCE = FINAL_BATCHES, TIE_TOLERANCE / 2  # = engine_sim.sim.simulate's defaults
CONTENDER_MARGIN = 0.25  # screened within this of the best: simulated again, longer
UNSIMULATED = "did not fit the simulation budget"  # how the note on candidates left unsimulated ends
WALL_CAP_S = 120.0  # safety net only, far above a normal pick (the event budget decides): a pick that hits it says so


@dataclass
class Selection:
    """The pick and everything it weighed (`candidates`: every candidate, with the figures the
    pick gave it). `objective` is the one actually used (a throughput request that fell back
    says "cost", or "estimate" where the busy-time estimate picked because the simulator
    cannot judge in time, and `note` says why)."""

    requested: str
    objective: str
    chosen: Candidate
    candidates: list[Candidate]  # every candidate weighed, the chosen one among them
    note: str = ""
    simulated: int = 0
    sim_s: float = 0.0
    calibration_label: str = ""  # what the predictions stand for (`Calibration.label`)
    enumerated: int = 0  # distinct designs from enumerating every assignment to machines
    distinct: int = 0  # distinct designs among the candidates (up to relabelling)
    # the search after the pool: advisor.sim_local_search.Improvement, or where the estimate
    # picked (objective "estimate"), advisor.estimate_pick.EstimatePick
    improvement: object = None
    simulator_runs: int = 0  # simulations run for the pick (pilots and rate searches)
    simulations_reused: int = 0  # asked for again with the same settings: answered, not run
    simulator_probes: int = 0  # simulated runs in those (a rate search runs several), the work
    # the pick's predicted tuples/s on `prediction_batches` (PREDICTION_BATCHES unless the
    # simulated search was skipped as too costly): the figure shown for the recommendation.
    # The candidates' own `predicted_tps` come from the pick's side-by-side runs, shorter
    # where the budget is tight (so their figures differ from it); they rank the candidates.
    prediction: float | None = None
    prediction_batches: int = 0

    def __repr__(self) -> str:
        """One line (`advisor.selection_view`); `to_frame()` and the notebook list every candidate."""
        from advisor.selection_view import selection_line

        return selection_line(self)

    def to_frame(self):
        """Every candidate weighed, one row each: source, cost, estimated and predicted tuples/s."""
        from advisor.selection_view import selection_frame

        return selection_frame(self)

    def _repr_html_(self) -> str:
        from advisor.selection_view import selection_html

        return selection_html(self)

    def candidate_table(self) -> list[dict]:
        """The candidates as `recommend`'s table lists them (each distinct search design, each
        baseline, the best of those enumerated), for its `--json` and the design's provenance,
        which held only the pick's figures."""
        def row(name: str, o: Candidate) -> dict:
            c = o.cost
            return {"design": name, "cost": float(c.total), "state_colocation": float(c.state_colocation),
                    "processing_colocation": float(c.processing_colocation),
                    "load_balance": float(c.load_balance), "feasible": bool(c.feasible),
                    "estimated_tuples_per_s": None if o.estimated_tps is None else float(o.estimated_tps),
                    "predicted_tuples_per_s": None if o.predicted_tps is None else float(o.predicted_tps),
                    "batches": o.batches if o.predicted_tps is not None else 0}

        rows, seen = [], set()
        for o in self.candidates:
            if o.source in ("search", "baseline") and o.label not in seen:
                seen.add(o.label)
                rows.append(row(o.label, o))
        enumerated = [o for o in self.candidates if o.source == "enumeration" and o.predicted_tps is not None]
        if enumerated:
            rows.append(row(f"enumerated: best of {len(enumerated)}", max(enumerated, key=lambda o: o.predicted_tps)))
        return rows

    def provenance(self) -> dict:
        shown = self.prediction if self.prediction is not None else self.chosen.predicted_tps
        out = {"objective": self.objective, "picked": self.chosen.label,
               "predicted_tuples_per_s": None if shown is None else round(shown, 1)}
        if self.requested != self.objective:
            out["objective_requested"] = self.requested
        if self.note:
            out["selection_note"] = self.note
        out["candidate_table"] = self.candidate_table()
        if self.objective == "estimate":
            pick = self.improvement
            out["estimate"] = {"calibration": self.calibration_label,
                               "estimated_tuples_per_s": round(self.chosen.estimated_tps, 1),
                               "best_estimated_tuples_per_s": round(pick.estimated_tps, 1),
                               "kept_cheapest": pick.kept_cheapest,
                               "pool_pick": pick.pool_pick.label,
                               "pool_pick_estimated_tuples_per_s": round(pick.pool_pick.estimated_tps, 1),
                               "climbed_from": pick.start_label if pick.climbed else None,
                               "moves": list(pick.moves), "designs_priced": pick.priced}
        if self.objective == "throughput":
            out["simulator"] = {"calibration": self.calibration_label, "batches": self.prediction_batches,
                                "screened_batches": self.chosen.batches, "candidates_simulated": self.simulated}
            imp = self.improvement
            if imp is not None and imp.simulated:
                out["simulated_search"] = {"designs_simulated": imp.simulated, "moves": list(imp.moves),
                                           "from_tuples_per_s": round(imp.start_tps, 1),
                                           "to_tuples_per_s": round(imp.end_tps, 1),
                                           "collapsing_judged_again": imp.collapse_checked,
                                           "collapsing_kept_out": imp.collapse_kept_out}
        return out


def pick_by_cost(candidates: list[Candidate]) -> Candidate:
    """Feasible first, then the lowest total cost; the earliest on a tie."""
    return min(candidates, key=lambda o: (not o.cost.feasible,
                                          o.cost.worst_overflow_mb if not o.cost.feasible else 0.0,
                                          o.cost.total))


def pick_by_throughput(candidates: list[Candidate], tolerance: float = TIE_TOLERANCE) -> Candidate:
    """The fastest predicted (feasible ones first); within `tolerance` of it, one that keeps
    every nested group on one machine, then the cheapest.

    Why the nested groups: the simulator runs a group's control code where its first SP is, so
    it cannot see where the group's other SPs were put; on a tie, the design that does not rely
    on that is the safer answer."""
    judged = [o for o in candidates if o.predicted_tps is not None]
    feasible = [o for o in judged if o.cost.feasible] or judged
    best = max(o.predicted_tps for o in feasible)
    near = [o for o in feasible if o.predicted_tps >= best * (1 - tolerance)]
    fewest = min(o.split_groups for o in near)
    return pick_by_cost([o for o in near if o.split_groups == fewest])


@dataclass
class ThroughputJudge:
    """Predicts each candidate's maximum throughput with the simulator, within a budget of
    simulated events (deterministic, unlike seconds); `wall_cap_s` is only a safety net. The
    simulator is `runs`'s, or `simulator` when it keeps its own runs."""

    workload: Workload
    graph: WorkloadGraph
    weights: Weights
    calibration: object = None  # the simulator's calibration or parameters; None: its reference
    seed: int = 0
    event_budget: int = EVENT_BUDGET
    wall_cap_s: float = WALL_CAP_S
    runs: SimulationRuns | None = None  # shared with what simulates after it (None: its own)
    simulator: Simulator | None = None  # for its own runs (None: the shared runs' simulator)
    simulated_: int = field(default=0, init=False)
    note_: str = field(default="", init=False)

    def __post_init__(self) -> None:
        if self.runs is None:
            self.runs = SimulationRuns.of(self.workload, self.graph, self.weights, self.calibration,
                                          self.seed, simulator=self.simulator)
        self.simulator = self.runs.simulator

    def _calibration(self):
        return self.runs.calibration

    def _pilot(self, candidates: list[Candidate]) -> tuple[dict[int, float], float]:
        """Events per simulated batch of each candidate, from a short closed-loop run. The
        enumerated designs (many, tiny) share the worst figure of the others instead."""
        per_batch: dict[int, float] = {}
        spent = 0.0
        for o in candidates:  # (short runs: simulated here, not ahead in workers)
            if o.source == "enumeration" or (len(per_batch) >= 2 and spent > PILOT_SHARE * self.event_budget):
                continue  # (two at least: the pick screens two whatever they cost)
            try:
                r = self.runs.pilot(o.proc_part, o.state_part, PILOT_BATCHES, label=o.label)
            except self.simulator.error as exc:
                self.note_ = f"the simulator could not run {o.label}: {exc}"
                continue
            per_batch[id(o)] = max(r.events / PILOT_BATCHES, 1.0)
            spent += r.events + RUN_OVERHEAD_EVENTS
        worst = max(per_batch.values(), default=1.0)
        stopped = spent > PILOT_SHARE * self.event_budget
        for o in candidates:
            if o.source == "enumeration" and not stopped:
                per_batch[id(o)] = worst
        return per_batch, spent

    def _estimates(self, candidates: list[Candidate], cal) -> dict[int, float]:
        """Each candidate's throughput by the analytical busy-time estimate (no simulation)."""
        from advisor.busy_estimate import BusyEstimate

        estimate = BusyEstimate.of(self.graph, self.workload, getattr(cal, "params", cal))
        priced = estimate.estimate_many([(o.proc_part, o.state_part) for o in candidates])
        return {id(o): e.throughput_tps for o, e in zip(candidates, priced)}

    def judge(self, candidates: list[Candidate]) -> list[Candidate]:
        """Fill `predicted_tps` of the candidates it can afford; returns those (in order)."""
        cal = self._calibration()
        started = time.perf_counter()
        estimate = self._estimates(candidates, cal)
        for o in candidates:
            o.estimated_tps = estimate[id(o)]
        # piloted in the pool's order (feasible first, cheapest by the cost model first): where
        # the pilots' share of the budget runs out, the last of the pool go unsimulated. Tried:
        # the estimate's best first instead; on 20 held-out generated dataflows and the bench's
        # 21 cases it picked the same or slower (shared60 -4 %, docs/measurements.md, Stop 58)
        per_batch, spent = self._pilot(candidates)
        budget = self.event_budget - spent

        def batches_for(group: list[Candidate], cap: int, probes: int, share: float) -> int:
            per_run = sum(per_batch[id(o)] for o in group)
            left = share * budget / probes - RUN_OVERHEAD_EVENTS * len(group)
            return int(min(cap, left / max(per_run, 1.0)))

        affordable = [o for o in candidates if id(o) in per_batch]
        while len(affordable) > 2 and batches_for(affordable, SCREEN_BATCHES, SCREEN_PROBES,
                                                  SCREEN_SHARE) < MIN_BATCHES:
            # every candidate is screened by the busy-time estimate: the slowest by it go first
            drop = min(range(len(affordable)), key=lambda k: (estimate[id(affordable[k])], -k))
            del affordable[drop]
        if len(affordable) < len(candidates):
            self.note_ = _unsimulated_note(candidates, affordable, estimate)
        # two are screened even where the budget cannot cover them (a big dataflow's distributed
        # transactions are many events a batch), the estimate's best of those piloted: over
        # budget rather than by the cost model
        b1 = max(batches_for(affordable, SCREEN_BATCHES, SCREEN_PROBES, SCREEN_SHARE), MIN_BATCHES)
        if len(affordable) < 2:
            return []

        def run(group: list[Candidate], batches: int, tolerance: float) -> list[Candidate]:
            done = []
            ahead = 2 * self.runs.jobs  # asked at a time (the safety net below still acts between)
            for k, o in enumerate(group):
                if k % ahead == 0:
                    chunk = group[k:k + ahead]
                    events = min(per_batch[id(x)] for x in chunk) * batches * SCREEN_PROBES
                    self.runs.prefetch([self.runs.ask_max(x.proc_part, x.state_part, batches, tolerance,
                                                          label=x.label) for x in chunk], events)
                if done and time.perf_counter() - started > self.wall_cap_s:
                    self.note_ = (f"simulation stopped after {self.wall_cap_s:g} s (safety net); "
                                  f"{len(group) - len(done)} candidates not simulated")
                    break
                try:
                    r = self.runs.max_throughput(o.proc_part, o.state_part, batches, tolerance,
                                                 label=o.label)
                except self.simulator.error as exc:
                    self.note_ = f"the simulator could not run {o.label}: {exc}"
                    continue
                o.predicted_tps, o.batches = float(r.throughput_tps), batches
                done.append(o)
            return done

        screened = run(affordable, b1, SCREEN_TOLERANCE)
        self.simulated_ = len(screened)
        if not screened:
            return []
        feasible = [o for o in screened if o.cost.feasible] or screened
        top = max(o.predicted_tps for o in feasible)
        contenders = [o for o in feasible if o.predicted_tps >= (1 - CONTENDER_MARGIN) * top]
        b2 = batches_for(contenders, FINAL_BATCHES, FINAL_PROBES, 1.0 - SCREEN_SHARE)
        if len(contenders) > 1 and b2 > b1 and not self.note_.startswith("simulation stopped"):
            run(contenders, b2, PREDICTION_TOLERANCE)
        return screened


def select(candidates: list[Candidate], objective: str, workload: Workload | None,
           graph: WorkloadGraph, weights: Weights, calibration=None, seed: int = 0, *,
           simulator: Simulator | None = None, jobs: int = 1) -> Selection:
    """The recommendation among `candidates` (the search's best first, then by priority),
    judged by `simulator` (needed for the throughput objective where it can simulate).
    `jobs`: processes that simulate a round's designs side by side, this one and jobs - 1
    forked workers (the answer is the same with any number; `advisor.parallel_runs.pick_processes`
    says how many are safe)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    by_cost = dict(chosen=candidates[0], candidates=candidates, objective="cost")
    if objective == "cost":
        return Selection(objective, **by_cost)
    blocker = spec_blocker(workload, graph)
    if blocker is not None:
        return Selection(objective, **by_cost, note=f"picked by cost: {blocker}")
    too_large = size_blocker(graph)
    if too_large is not None:  # the busy-time estimate picks instead (no simulation)
        from advisor.estimate_pick import select_by_estimate

        return select_by_estimate(candidates, workload, graph, weights, calibration, seed, too_large,
                                  simulator=simulator)
    unique = distinct(candidates, graph)
    counts = dict(enumerated=sum(o.source == "enumeration" for o in unique), distinct=len(unique))
    runs = SimulationRuns.of(workload, graph, weights, calibration, seed, simulator=simulator, jobs=jobs)
    if len(unique) < 2:  # nothing to pick between; its prediction is simulated all the same, so
        # `Recommendation.prediction` is the figure a report and `simulate` give it (it was None)
        try:
            prediction, batches = _prediction(runs, candidates[0], None)
        finally:
            runs.close()
        return Selection(objective, **by_cost, **counts, prediction=prediction, prediction_batches=batches,
                         note="picked by cost: only one candidate design", simulator_runs=runs.runs,
                         calibration_label=calibration_label(runs.calibration))
    try:
        return _select_by_throughput(candidates, unique, counts, runs, objective, by_cost)
    finally:
        runs.close()


def _select_by_throughput(candidates: list[Candidate], unique: list[Candidate], counts: dict,
                          runs: SimulationRuns, objective: str, by_cost: dict) -> Selection:
    """`select`'s throughput pick, by `runs` (which the caller closes)."""
    workload, graph, weights, seed = runs.workload, runs.graph, runs.weights, runs.seed
    calibration = runs.calibration
    judge = ThroughputJudge(workload, graph, weights, calibration, seed, runs=runs)
    started = time.perf_counter()
    judged = judge.judge(unique)
    sim_s = time.perf_counter() - started
    _share_predictions(candidates, unique, graph)
    label = calibration_label(judge._calibration())
    if not judged:
        note = judge.note_ or "the simulation budget cannot cover two candidates"
        return Selection(objective, **by_cost, **counts, sim_s=sim_s, calibration_label=label,
                         note=f"picked by cost: {note}", simulator_runs=runs.runs,
                         simulations_reused=runs.reused, simulator_probes=runs.probes)
    chosen = pick_by_throughput(judged)
    improvement = None
    if counts["enumerated"] == 0:  # the pool did not try every assignment: search from the pick
        from advisor.sim_local_search import improve

        contenders = _next_best(judged, chosen)
        started = time.perf_counter()
        improvement = improve(graph, workload, chosen.proc_part, chosen.state_part, weights,
                              calibration, seed, runs=runs, starts=contenders,
                              more_starts=_the_others(unique, chosen, contenders))
        sim_s += time.perf_counter() - started
        if improvement.improved:
            chosen = scored_candidate(graph, weights, "simulated search", "simulated search",
                                      improvement.proc_part, improvement.state_part)
            # (its figure is the simulated search's, on the prediction's batches)
            chosen.predicted_tps, chosen.batches = improvement.end_tps, PREDICTION_BATCHES
            chosen.estimated_tps = improvement.end_estimated_tps
            candidates = candidates + [chosen]
    prediction, prediction_batches = _prediction(runs, chosen, improvement)
    return Selection(objective, objective="throughput", chosen=chosen, prediction=prediction,
                     prediction_batches=prediction_batches,
                     candidates=candidates, note=_climbed_note(judge.note_, unique, improvement),
                     simulated=judge.simulated_, sim_s=sim_s,
                     calibration_label=label, improvement=improvement, simulator_runs=runs.runs,
                     simulations_reused=runs.reused, simulator_probes=runs.probes, **counts)


def _unsimulated_note(candidates: list[Candidate], simulated: list[Candidate], estimate: dict[int, float]) -> str:
    """Why some candidates have no prediction, and how far behind the estimate puts them: a
    reader should not have to wonder whether the pick missed a fast one."""
    kept = {id(o) for o in simulated}
    unsimulated = [o for o in candidates if id(o) not in kept]
    over = sum(1 for o in unsimulated if not o.cost.feasible)
    left = [estimate[id(o)] for o in unsimulated if o.cost.feasible]
    best = max((estimate[id(o)] for o in simulated), default=0.0)  # of those simulated
    share = (f", estimated at {max(left) / best:.0%} of the best simulated candidate's estimate or less"
             if best > 0 and left else "")
    return (f"simulated {len(simulated)} of {len(candidates)} distinct candidates; the other {len(unsimulated)}"
            f"{f' ({over} over memory)' if over else ''}{share}, {UNSIMULATED}")


def _climbed_note(note: str, unique: list[Candidate], improvement) -> str:
    """The unsimulated candidates' note, with how many of them the simulated search climbed
    from by the estimate (its ends simulated where they beat the pick's): they were not simply
    passed over."""
    if improvement is None or not note.endswith(UNSIMULATED):
        return note
    unsimulated = {o.label for o in unique if o.predicted_tps is None}
    climbed = len(unsimulated & set(improvement.climbed_from))
    return (f"{note}; the simulated search climbed from the {climbed} of them the estimate puts highest"
            if climbed else note)


def _prediction(runs: SimulationRuns, chosen: Candidate, improvement) -> tuple[float | None, int]:
    """(tuples/s, batches) of the pick on the prediction's settings: the simulated search's own
    figure where it ran (on those settings; a move that won was searched to the end), else one
    more run, which the final round often just made. Where the search was skipped as too
    costly, the pick's own figure stands (a longer run would cost more than the search)."""
    if improvement is not None and improvement.simulated and improvement.end_tps > 0:
        return improvement.end_tps, PREDICTION_BATCHES
    if improvement is not None and improvement.skipped:
        return chosen.predicted_tps, chosen.batches
    try:
        r = runs.max_throughput(chosen.proc_part, chosen.state_part, PREDICTION_BATCHES, PREDICTION_TOLERANCE,
                                label=chosen.label)
    except runs.simulator.error:
        return chosen.predicted_tps, chosen.batches
    return float(r.throughput_tps), PREDICTION_BATCHES


def _next_best(judged: list[Candidate], chosen: Candidate) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The simulated candidates after the pick that were contenders (within CONTENDER_MARGIN
    of it), fastest first (feasible ones only, as the pick prefers them; ties keep the pool's
    order): where else the search climbs from first."""
    floor = (1 - CONTENDER_MARGIN) * (chosen.predicted_tps or 0.0)
    rest = [o for o in judged if o is not chosen and o.predicted_tps is not None
            and o.predicted_tps >= floor and (o.cost.feasible or not chosen.cost.feasible)]
    rest.sort(key=lambda o: -o.predicted_tps)
    return [(o.label, o.proc_part, o.state_part) for o in rest]


def _the_others(unique: list[Candidate], chosen: Candidate, first: list[tuple]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Every other distinct candidate, simulated or not (feasible ones only, as the pick prefers
    them): where the search climbs from next, within a budget. A design far behind can climb
    highest (generated-1017 on 8 machines: hash-by-table, left unsimulated, climbs to 1.09x
    the pick the contenders' climbs reach; from a trace of it, 1.27x). The contenders (`first`)
    are left out: the search climbs from the first few of them, and the rest are so alike
    (boundaries-32sp's many METIS cuts) that their climbs and simulated ends cost 0.5-1 s for
    nothing."""
    taken = {o[0] for o in first}
    return [(o.label, o.proc_part, o.state_part) for o in unique
            if o is not chosen and o.label not in taken and (o.cost.feasible or not chosen.cost.feasible)]


def _share_predictions(candidates: list[Candidate], unique: list[Candidate], graph: WorkloadGraph) -> None:
    """A duplicate design gets the prediction of the one that was simulated in its place."""
    judged = {relabelled_design_key(o, graph): o for o in unique}
    for o in candidates:
        rep = judged[relabelled_design_key(o, graph)]
        o.predicted_tps, o.batches, o.estimated_tps = rep.predicted_tps, rep.batches, rep.estimated_tps


def calibration_label(cal) -> str:
    """What the pick's predictions stand for: the calibration's own label (its target said),
    or plain simulator parameters."""
    label = getattr(cal, "label", None)
    return label() if callable(label) else "given simulator parameters"
