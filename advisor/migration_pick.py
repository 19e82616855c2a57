"""The fastest design reachable from a deployed one within a budget of megabytes moved.

Why: a deployed design is not redone from scratch because a better one exists; moving state
costs a copy and a pause. So the designs weighed are the deployed one, every distinct
candidate of the unconstrained pick (renamed to move least, `advisor.migration.align`) and
the designs on a path from the deployed one to the best: moves applied one unit at a time (an
SP with the windows it owns, or one state item), the unit that buys the most estimated
throughput per megabyte first. Each is priced in megabytes moved and screened by the
busy-time estimate; those on the estimate's frontier (no design both cheaper to reach and
estimated faster) are simulated. The frontier of megabytes against predicted throughput is
then monotone by construction: a larger budget keeps every design a smaller one could reach.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from costmodel.model import REPLICATED
from advisor.judge import Simulator, need_simulator
from advisor.migration import DesignDiff, align, diff, moves_between
from advisor.moved_bytes import MovedBytes
from advisor.candidate_pool import distinct
from advisor.selection import TIE_TOLERANCE
from advisor.sim_limits import simulation_blocker

MAX_SIMULATED = 16  # frontier designs simulated (each a maximum-throughput search)
SIM_BATCHES = 300  # per simulation: the pick's final round, so the figures compare
BUDGET_FRACTIONS = (0.1, 0.25, 0.5)  # of the unconstrained best's megabytes: the frontier rows
FULL_GREEDY_UNITS = 40  # above this many differing units, the path orders them in one pass
CLIMB_STEPS = 20  # steps of the budget-aware hill climb from the deployed design


@dataclass
class Reachable:
    """One design reachable from the deployed one: its megabytes moved and its speed."""

    label: str
    design: Design  # renamed to move least from the deployed design
    megabytes: float
    estimated_tps: float | None = None
    predicted_tps: float | None = None
    cost: float | None = None  # the cost model's total, with the recommendation's weights

    def speed(self, judged_by: str) -> float | None:
        """What the pick compares: the prediction, the estimate, or the cost (lower is faster);
        None where this design was not judged that way."""
        if judged_by == "simulator":
            return self.predicted_tps
        if judged_by == "estimate":
            return self.estimated_tps
        return None if self.cost is None else -self.cost

    def __repr__(self) -> str:
        """One line (the dataclass's held the design whole, with its provenance: `frontier()`
        printed 28 KB for tpcdi-trade)."""
        figures = "".join(f", {name} {value:,.0f} tuples/s" for name, value in
                          (("predicted", self.predicted_tps), ("estimated", self.estimated_tps)) if value is not None)
        cost = "" if self.cost is None else f", cost {self.cost:.4f}"
        return f"Reachable({self.label!r}: {self.megabytes:,.3f} MB{figures}{cost})"


@dataclass
class MigrationPlan:
    """The designs weighed from `current`, the pick within `max_move_mb` and the frontier."""

    current: Design
    reachable: list[Reachable]
    chosen: Reachable
    best: Reachable  # the fastest without a budget
    max_move_mb: float | None = None
    judged_by: str = "simulator"  # "simulator", "estimate" or "cost"
    diff_: DesignDiff | None = field(default=None, repr=False)
    gone: list[str] = field(default_factory=list)  # what the deployed design placed that the workload dropped

    def best_within(self, megabytes: float) -> Reachable:
        """The fastest design that moves at most `megabytes` (ties within 2 %: fewer megabytes)."""
        return _fastest([r for r in self.reachable if r.megabytes <= megabytes + 1e-9], self.judged_by)

    def frontier(self) -> list[tuple[str, Reachable]]:
        """(budget, the best within it), budgets ascending: no move, a few fractions of what the
        unconstrained best moves (and the budget asked for), then the unconstrained best."""
        top = self.best.megabytes
        # (nothing to move: the fractions would all be "<= 0.000 MB", each the deployed design)
        budgets = [(f * top, f"<= {f * top:,.3f} MB") for f in BUDGET_FRACTIONS] if top > 0 else []
        if self.max_move_mb is not None and self.max_move_mb < top:
            asked = f"<= {self.max_move_mb:,.3f} MB"  # one row where it is a fraction's (it was listed twice)
            budgets = [(mb, label) for mb, label in budgets if label != asked]
            budgets.append((self.max_move_mb, f"{asked} (asked)"))
        return ([("no move", self.reachable[0])]
                + [(label, self.best_within(mb)) for mb, label in sorted(budgets)]
                + [("unconstrained", self.best)])

    def __repr__(self) -> str:
        """One line (the dataclass's held every weighed design whole: 33 KB)."""
        return (f"MigrationPlan({self.current.workload!r}: picked {self.chosen.label!r} moving "
                f"{self.chosen.megabytes:,.3f} MB, {len(self.reachable)} designs weighed by {self.judged_by})")

    def _repr_html_(self) -> str:
        """The lines `recommend --current` prints about the migration, in a notebook."""
        import html

        from advisor.recommendation_text import migration_lines

        return f"<pre>{html.escape(chr(10).join(migration_lines(self)))}</pre>"

    def to_dict(self) -> dict:
        return {"max_move_mb": self.max_move_mb, "judged_by": self.judged_by, "gone": list(self.gone),
                "chosen": self.chosen.label, "chosen_megabytes": self.chosen.megabytes,
                "frontier": [{"budget": b, "design": r.label, "megabytes": r.megabytes,
                              "estimated_tuples_per_s": r.estimated_tps,
                              "predicted_tuples_per_s": r.predicted_tps, "fits_memory": fits_memory(r)}
                             for b, r in self.frontier()]}


def fits_memory(r: Reachable) -> bool:
    """Whether the design fits the machines' memory (one not scored yet is taken to)."""
    return r.design.cost is None or r.design.cost.feasible


def _fastest(points: list[Reachable], judged_by: str) -> Reachable:
    """The fastest of `points` that fit memory, where any does (the simulator does not model
    memory: a deployed design its tables outgrew was kept as fastest); ties within
    TIE_TOLERANCE go to fewer megabytes. Costs tie only when equal. (The deployed design is
    always judged, so never empty.)"""
    judged = [r for r in points if r.speed(judged_by) is not None]
    judged = [r for r in judged if fits_memory(r)] or judged  # as the unconstrained pick: memory first
    top = max(r.speed(judged_by) for r in judged)
    slack = abs(top) * TIE_TOLERANCE if judged_by != "cost" else 1e-12
    near = [r for r in judged if r.speed(judged_by) >= top - slack]
    return min(near, key=lambda r: r.megabytes)


def plan_migration(rec, current: Design, max_move_mb: float | None = None, calibration=None,
                   seed: int = 0, *, simulator: Simulator, jobs: int = 1) -> MigrationPlan:
    """Weigh the designs reachable from `current` for a recommendation `rec` of the same
    workload and cluster (module docstring), judged by `simulator`; by cost alone when `rec`
    was picked by cost. `jobs`: processes that simulate the designs side by side (as the
    pick's, `advisor.parallel_runs.pick_processes`); the plan is the same with any number."""
    simulator = need_simulator(simulator, "a migration plan")
    graph = rec.graph
    workload = rec.workload
    weights = rec.design.weights
    cal = calibration if calibration is not None else simulator.reference_calibration()
    params = getattr(cal, "params", cal)
    estimate = _estimator(graph, workload, params)
    points = [Reachable("deployed design", current, 0.0)]

    def megabytes(d: Design) -> float:
        return sum(m.bytes for m in moves_between(current, d, graph)) / 1e6

    candidates = distinct(list(rec.selection.candidates), graph) if rec.selection else []
    targets = [("recommended", rec.design)] + [(c.label, Design.from_arrays(graph, c.proc_part, c.state_part, weights,
                                                                             method=c.label)) for c in candidates]
    seen = {_key(current)}
    for label, d in targets:
        aligned = align(current, d, graph)
        key = _key(aligned)
        if key in seen:
            continue
        seen.add(key)
        points.append(Reachable(label, aligned, megabytes(aligned)))
    goal = align(current, rec.design, graph)
    if _key(goal) != _key(current):  # (the deployed design may already be the recommendation)
        points += _path(current, goal, graph, estimate, weights)
    if estimate is not None:
        points += _climb(current, graph, estimate, weights)
    for r in points:
        cost = r.design.score(graph, weights)
        r.design = replace(r.design, weights=weights, cost=cost)
        r.cost = cost.total
    if estimate is not None:  # priced together: the same figures as one by one
        for r, e in zip(points, estimate.estimate_many([r.design.arrays(graph) for r in points])):
            r.estimated_tps = e.throughput_tps
    by_cost = rec.selection is None or rec.selection.objective == "cost"
    judged_by = "cost" if by_cost else _judge(points, graph, workload, cal, seed, simulator, jobs)
    plan = MigrationPlan(current, points, points[0], points[0], max_move_mb, judged_by)
    plan.best = plan.best_within(float("inf"))
    plan.chosen = plan.best if max_move_mb is None else plan.best_within(max_move_mb)
    plan.diff_ = diff(current, plan.chosen.design, graph, params, workload, relabel=False)
    return plan


def _key(d: Design) -> tuple:
    return tuple(sorted(d.procedures.items())), tuple(sorted(d.state.items(), key=str))


def _estimator(graph: WorkloadGraph, workload, params):
    """The busy-time estimate of this workload's designs, or None without a workload."""
    if workload is None:
        return None
    from advisor.busy_estimate import BusyEstimate

    return BusyEstimate.of(graph, workload, params)


def _units(current: Design, goal: Design, graph: WorkloadGraph) -> list[tuple[str, dict, dict]]:
    """The moves from `current` to `goal` in units that must go together: an SP with the
    windows it owns, or one free state item. (label, SP changes, state changes)."""
    units = []
    owned: dict[str, list[str]] = {}
    for name in graph.state_names:
        owner = graph.owner_of(name)
        if owner is not None:
            owned.setdefault(owner, []).append(name)
    for name in graph.proc_names:
        windows = owned.get(name, [])
        if goal.procedures[name] != current.procedures[name] or any(
                goal.state[w] != current.state[w] for w in windows):
            units.append((f"{name} -> partition {goal.procedures[name]}", {name: goal.procedures[name]},
                          {w: goal.state[w] for w in windows}))
    for name in graph.state_names:
        if graph.owner_of(name) is None and goal.state[name] != current.state[name]:
            where = "replicated" if goal.state[name] is None else f"partition {goal.state[name]}"
            units.append((f"{name} -> {where}", {}, {name: goal.state[name]}))
    return units


def _apply(d: Design, unit) -> Design:
    _, procs, state = unit
    return replace(d, procedures={**d.procedures, **procs}, state={**d.state, **state})


def _apply_arrays(graph: WorkloadGraph, arrays: tuple[np.ndarray, np.ndarray], unit) -> tuple[np.ndarray, np.ndarray]:
    """`Design.arrays` of `_apply(d, unit)` from `d`'s arrays, without building the Design (a
    unit names every window of an SP it moves, so none is left where its owner was)."""
    _, procs, state = unit
    proc, places = arrays[0].copy(), arrays[1].copy()
    for name, p in procs.items():
        proc[graph.proc_index(name)] = p
    for name, p in state.items():
        places[graph.state_index(name)] = REPLICATED if p is None else p
    return proc, places


_NO_MOVE = ("", {}, {})


def _path(current: Design, goal: Design, graph: WorkloadGraph, estimate, weights) -> list[Reachable]:
    """Designs between `current` and `goal`: one more unit each, the unit with the best
    estimated gain per megabyte first (by cost where nothing estimates)."""
    units = _units(current, goal, graph)
    if len(units) < 2:
        return []
    start = current.arrays(graph)
    moved = MovedBytes.of(current, graph)

    def mb(unit) -> float:  # what the unit alone moves, priced as every diff prices it
        return moved.megabytes(_apply_arrays(graph, start, unit)[1])

    def speeds(d: Design, arrays, each: list) -> list[float]:
        """The speed of `d` (`arrays`: its arrays) with each unit of `each` applied: by the
        estimate, priced together (the same figures as one by one), else by cost."""
        if estimate is None:
            return [-_apply(d, u).score(graph, weights).total for u in each]
        return [e.throughput_tps for e in estimate.estimate_many([_apply_arrays(graph, arrays, u) for u in each])]

    out: list[Reachable] = []
    here, at = current, start
    here_speed = speeds(current, start, [_NO_MOVE])[0]
    remaining = list(units)
    one_pass = len(units) > FULL_GREEDY_UNITS
    if one_pass:  # order once, by each unit's gain per megabyte from the deployed design
        keys = [-_ratio(s - here_speed, mb(u)) for u, s in zip(remaining, speeds(current, start, remaining))]
        remaining = [remaining[k] for k in sorted(range(len(remaining)), key=keys.__getitem__)]
    while len(remaining) > 1:
        if one_pass:  # (the order is set: the designs on the way are estimated with the others)
            unit = remaining.pop(0)
        else:
            each = speeds(here, at, remaining)
            k = int(np.argmax([_ratio(s - here_speed, mb(u)) for u, s in zip(remaining, each)]))
            unit, here_speed = remaining.pop(k), each[k]
        here, at = _apply(here, unit), _apply_arrays(graph, at, unit)
        out.append(Reachable(f"path: {len(units) - len(remaining)} of {len(units)} moves ({unit[0]})",
                             here, moved.megabytes(at[1])))
    return out


def _climb(current: Design, graph: WorkloadGraph, estimate, weights) -> list[Reachable]:
    """Designs a hill climb from the deployed one reaches, whatever the unconstrained best is:
    each step takes the move off the busiest partitions (`busiest_partition_moves`) with the
    best estimated gain per megabyte it adds, while one gains at least CLIMB_GAIN. A move is
    priced from its arrays (`MovedBytes`); only the one taken becomes a Design."""
    from advisor.design_moves import busiest_partition_moves, private_state, touched_state
    from advisor.estimate_climb import CLIMB_GAIN, priced_moves

    private, touched = private_state(graph), touched_state(graph)
    moved_bytes = MovedBytes.of(current, graph)
    proc, state = current.arrays(graph)
    here = estimate.estimate(proc, state)
    moved, out = 0.0, []
    for step in range(CLIMB_STEPS):
        best = None
        for e, label, p2, s2 in priced_moves(estimate, busiest_partition_moves(graph, proc, state, private,
                                                                            touched, here)):
            if e.throughput_tps <= here.throughput_tps * (1 + CLIMB_GAIN):
                continue
            mb = moved_bytes.megabytes(s2)
            score = _ratio(e.throughput_tps - here.throughput_tps, max(mb - moved, 0.0))
            if best is None or score > best[0]:
                best = (score, label, p2, s2, e, mb)
        if best is None:
            break
        _, label, proc, state, here, moved = best
        out.append(Reachable(f"climb: {step + 1} moves ({label})",
                             Design.from_arrays(graph, proc, state, weights, method="migration climb"), moved))
    return out


def _ratio(gain: float, megabytes: float) -> float:
    """Gain per megabyte; a free move (no bytes) ranks by its gain alone, above any paid one."""
    return gain * 1e9 if megabytes <= 0 else gain / megabytes


def _judge(points: list[Reachable], graph: WorkloadGraph, workload, cal, seed: int,
           simulator: Simulator, jobs: int = 1) -> str:
    """Simulate the estimate's frontier (at most MAX_SIMULATED designs), in `jobs` processes;
    say what judged."""
    if workload is None:
        return "cost"
    if simulation_blocker(workload, graph) is not None:
        return "estimate"

    fits = [r for r in points if fits_memory(r)]
    cheapest_fit = min((r.megabytes for r in fits), default=float("inf"))
    # the picks weigh designs that fit memory first: one over memory competes only below the
    # megabytes of the cheapest that fits (its estimate, blind to memory, hid those that fit)
    over = [r for r in _estimate_frontier([r for r in points if not fits_memory(r)]) if r.megabytes < cheapest_fit]
    frontier = sorted(_estimate_frontier(fits) + over, key=lambda r: r.megabytes)
    if len(frontier) > MAX_SIMULATED:  # keep the ends and an even spread between them
        keep = np.unique(np.linspace(0, len(frontier) - 1, MAX_SIMULATED).round().astype(int))
        frontier = [frontier[k] for k in keep]
    chosen = {id(r) for r in frontier}
    always = [points[0]] + [r for r in points if r.label == "recommended"]  # deployed, unconstrained pick
    judged = frontier + [p for p in always if id(p) not in chosen]
    predicted = predict_designs([r.design for r in judged], workload, cal, seed, simulator=simulator,
                                processes=jobs, first=_slowest_first(judged))
    for r, tps in zip(judged, predicted):
        r.predicted_tps = tps
    return "simulator"  # only simulated designs compete: an estimate is not a prediction


def _estimate_frontier(points: list[Reachable]) -> list[Reachable]:
    """The designs no other is both cheaper to reach than and estimated faster than."""
    order = sorted(points, key=lambda r: (r.megabytes, -(r.estimated_tps or 0.0)))
    frontier, top = [], -1.0
    for r in order:
        if (r.estimated_tps or 0.0) > top * (1 + 1e-9):
            frontier.append(r)
            top = r.estimated_tps or 0.0
    return frontier


def _slowest_first(judged: list[Reachable]) -> list[int]:
    """The order to hand the designs to the workers in: the slowest by the busy-time estimate
    first. Why: a slow design is slow because its transactions span partitions, and each
    distributed transaction is many simulated events (its two-phase commit), so these are the
    longest simulations (a round-robin deployment's take 4-5 times a good design's); started
    last, one would run alone at the end. Only the order of work: not what is answered."""
    return sorted(range(len(judged)), key=lambda k: (judged[k].estimated_tps or 0.0, k))


def predict_designs(designs: list[Design], workload, calibration, seed: int = 0, *,
                    simulator: Simulator, processes: int = 1, first: list[int] | None = None) -> list[float]:
    """Each design's maximum throughput by `simulator` (0 where it cannot run it), with the
    batches and tolerance of the pick's final round, so the figures compare with its own.
    `calibration` goes to the simulator as it is (None: the simulator's own default).
    `processes` > 1: simulated side by side in forked workers, handed out in the order
    `first` (`advisor.parallel_runs.each_side_by_side`); each simulation is deterministic
    and independent of the others, so the figures are those of one process."""
    from advisor.parallel_runs import each_side_by_side

    simulator = need_simulator(simulator, "predicting designs")

    def predicted(d: Design) -> float:
        return float(simulator.max_throughput(workload, d, calibration=calibration, batches=SIM_BATCHES,
                                              seed=seed, tolerance=TIE_TOLERANCE / 2).throughput_tps)

    out = []
    for ok, value in each_side_by_side(predicted, designs, processes, first):
        if not ok and not isinstance(value, simulator.error):
            raise value  # a bug, not a design the simulator refuses: as it would be raised here
        out.append(value if ok else 0.0)
    return out
