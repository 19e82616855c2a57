"""After the pool: a local search judged by the simulator, from the pick.

The pool (the search's designs, the baselines, enumerated assignments on tiny graphs) can
miss the fastest design on a dataflow of realistic size. So, from the pool's pick, it first
climbs the busy-time estimate alone (no simulation; the moves below, the best each step) and
keeps where that ends if the simulator predicts it faster; it climbs from the pool's next
best designs too, then from its others (the estimate's best first, however far behind, until
those climbs have priced CLIMB_BUDGET designs: a design that starts low can climb highest) and
from RANDOM_STARTS random designs (likewise, within RANDOM_CLIMB_BUDGET), and simulates the
ends the estimate puts above the pick's own; where none is, the best end it ties with the
pick's own climb that is another design (`tied_end`), a rival the steps also run from, where
the budget covers it (`room_for_a_rival`).
Beside each end it simulates where the end leads across the estimate's plateau
(`across_plateau`: moves that keep the estimate and take load off the partitions behind the
busiest): designs the estimate ties can be 10 % apart in the simulator; where it leads
through a move made with a trade of places (`via_a_trade`); and where the climb leads on
through partitions tied at the top (`climb_through_plateau`: a move that leaves the busiest as
busy and relieves those behind it, then the moves that gain again; 100-SP dataflows stopped
15 % short without it).
Then each step
takes the busiest partition by the analytical busy-time estimate (`advisor.busy_estimate`:
where the simulator says remote accesses and MOVEs land), tries moving each of its SPs to
every other partition (with the state only it touches, or with all the state it touches),
each state item it holds to the partition of an SP that uses it, each SP elsewhere that
reaches it (state it holds, a stream to or from one of its SPs) onto it (its remote accesses
and MOVEs load the busiest: taking it in can relieve it), and the partition trading
places with another partition of its machine (its place in the lock order: tried only where
the estimate sees that gain), ranks those moves by the estimate (each design once: moves to
empty machines at one place in the lock order are one design, `empty_machine_stand_ins`),
simulates the best few and keeps the fastest if the simulator predicts it faster beyond the
tie tolerance. Where none is, it tries two of those that came within the tie together, then
a block of the busiest partition's SPs that share state moved with that state
(`block_moves`), then emptying the least busy partition that runs an SP onto another (the
climbs on the estimate alone try those two too, only where no small move gains), then a move made together with its target
trading places with another partition of its machine (`trade_moves`: a move that loses until
its partition takes another place in the lock order). It stops when no move pays or the budget
of simulated events is spent, so the same input gives the same design on any host. Where a
climb end came within the tie of the best, the steps also run from it (NEAR_STARTS of them):
the simulator could not tell the two apart, and the steps from one can end higher. Last, the
fastest design that came within the tie but above the best is simulated again beside the best
on TIE_BREAK_BATCHES batches, and taken where it is faster there by half the tie: the short
runs' 2 % tie hides gains of 2-3 % that longer runs (and the engine) show. Throughout, a
design that would beat the best but collapses when overloaded (`advisor.judge.overload_collapse`
below `advisor.search_budget.COLLAPSE_CONFIRMED`) beats it only on a longer run: the short
run's figure of such a design holds until a queue happens to form.

The search is in two parts: `advisor.search_budget.BudgetedJudge` asks the simulator, charges
each question to the budget (once, however often it is asked) and confirms a collapsing
winner; `_Search` here decides what to ask (the climbs' ends, the steps, the tie-break), and
`improve` runs its phases in order.

What it simulates is kept with the pick's own simulations (`advisor.simulation_runs.SimulationRuns`):
the pick it starts from, simulated again on the final round's batches, is often what the
pick's final round just ran. A move is only asked whether it beats the design by the tie
tolerance, so its rate search stops once the simulator shows it cannot (`stop_below_tps` of
the simulator's `max_throughput`, within the margin its rate search states). The simulator is
the one the pick was given (`advisor.judge`), never imported here. The budget still
charges each design asked about a whole search, so the search takes the same steps either way. Where the
pick has workers (`SimulationRuns.prefetch`), the designs one decision weighs (a step's
tries, every climb end's designs, the tie-break's pair) are simulated side by side before
they are asked for one by one, and the pick's own figure while the estimate climbs: the
decisions, and so the design, are those of one process.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from advisor.busy_estimate import BusyEstimate
from advisor.candidate_pool import relabelled_design_key
from advisor.design_moves import (block_moves, busiest_partition_moves, empty_machine_stand_ins, emptying_moves,
                                  joined_moves, lock_order_swaps, private_state, random_starts, touched_state,
                                  trade_moves)
from advisor.estimate_climb import (CLIMB_GAIN, across_plateau, best_by_estimate, by_estimate,
                                    climb_estimate, climb_through_plateau, via_a_trade)
from advisor.judge import Simulator
from advisor.search_budget import BATCHES, BudgetedJudge
from advisor.selection import PREDICTION_BATCHES, PREDICTION_TOLERANCE
from advisor.simulation_runs import SimulationRuns
from advisor.selection import TIE_TOLERANCE  # what a move must gain
from costmodel import Weights
from costmodel.graph import WorkloadGraph
from costmodel.model import REPLICATED, machine_memory
from costmodel.workload import Workload

EVENT_BUDGET = 3_000_000  # simulated events for the whole improvement: about 5 s here on a 20-SP dataflow
TRIED_PER_STEP = 3  # moves simulated per step, the estimate's best first
# ... or more where more moves tie at the top of the estimate (within CLIMB_GAIN): the estimate
# cannot order them (moves between partitions of one machine whose load bounds it), the
# simulator can, so up to this many of them are simulated while the budget lasts
TIED_PER_STEP = 8
MAX_STEPS = 20
CLIMB_STARTS = 4  # the climb runs from the pick and from the pool's next best designs, this many in all
# then from the pool's other designs, the estimate's best first, until the climbs from them have
# priced this many designs (deterministic; a fraction of a second here): poor starts climb
# longest (a 60-SP round-robin design, 3,700 designs for little) and come last
CLIMB_BUDGET = 2_000
CLIMB_ENDS = 2  # of those other climbs, the ends simulated at most (the estimate's best first)
RANDOM_STARTS = 8  # random designs (seeded) among those other starts: a climb from far away finds
# designs no pool design leads to (a smaller cluster's pick, missed on a larger one)
# ... climbed from after the pool's, the estimate's best first, within a budget of their own:
# with one budget for both, a larger pool left them less (a workload's statistics, whose pool
# held 17 designs against its spec's 14, picked 0.83x the spec's pick: generated-3102 on 4).
# Their climbs also reach a design that collapses when overloaded (generated-3102 on 2: 8,655
# tuples/s on 300 batches, 7,854 on 2,000), which `advisor.search_budget.COLLAPSE_CONFIRMED`
# keeps out (docs/measurements.md, Stop 62)
RANDOM_CLIMB_BUDGET = 1_000
NEAR_STARTS = 2  # designs within the tie of the best that the simulated steps also run from
# a design the simulator put above the best but within the tie is simulated again beside the
# best on this many batches (the short run's noise halves at 4x), and taken where it is faster
# there by half the tie (0: never)
TIE_BREAK_BATCHES = 4 * PREDICTION_BATCHES


@dataclass
class Improvement:
    """What the simulator-guided search did: the designs it simulated, the predicted
    throughput it started from (the pick, simulated again on its batches) and ended at."""

    proc_part: np.ndarray
    state_part: np.ndarray
    start_tps: float
    end_tps: float
    simulated: int
    moves: list[str]
    end_estimated_tps: float | None = None  # the busy-time estimate of where it ended
    skipped: str = ""  # why nothing was simulated, where it did not start
    climbed_from: tuple[str, ...] = ()  # the pool designs (labels) its estimate's climbs started from
    # designs that would have beaten the best but collapse when overloaded, judged again on
    # COLLAPSE_BATCHES, and those of them the longer run kept from beating it
    collapse_checked: int = 0
    collapse_kept_out: int = 0

    @property
    def improved(self) -> bool:
        return bool(self.moves)


def other_designs(tried: list[tuple], tied: int, here: tuple, stand: np.ndarray) -> tuple[list[tuple], int]:
    """`tried` (estimated tuples/s, label, proc, state) without the designs that are `here` or
    an earlier one under other names of empty machines (the same once each partition is named by
    its stand-in, `empty_machine_stand_ins`), and how many of the first `tied` are left.

    Why: the pick's runs know a design by its partitions, so such a design was simulated again
    (shared20#9307 on 4 machines: five of a step's six simulations, and the step that paid was
    never reached). A design given twice under the same names stays: the runs answer it
    without simulating, and `simulate` without charging the budget again. (Dropping those too changed which moves a step simulates where two
    moves make one design, and generated-1125 on 2 x 2 ended 3 % lower: docs/measurements.md,
    Stop 73.)"""
    def key(p: np.ndarray, s: np.ndarray) -> tuple[bytes, bytes]:
        return stand[p].tobytes(), np.where(s == REPLICATED, REPLICATED, stand[s]).tobytes()

    names = {key(*here): {(here[0].tobytes(), here[1].tobytes())}}  # each design's names seen
    kept, kept_tied = [], 0
    for k, t in enumerate(tried):
        seen, named = names.setdefault(key(t[2], t[3]), set()), (t[2].tobytes(), t[3].tobytes())
        if not seen or named in seen:
            seen.add(named)
            kept.append(t)
            kept_tied += k < tied
    return kept, kept_tied


def memory_check(graph: WorkloadGraph, start_state: np.ndarray):
    """`fits(state) -> bool` for the designs a search from `start_state` may take: within every
    machine's memory, where the start is (from a start already over it, anything: the pick's
    own memory repair is the cost search's). Why: the moves and the climbs from random designs
    price throughput only, and may pile state onto one machine."""
    c = graph.cost
    limit = c.memory_limit_bytes
    if limit is None or (machine_memory(c, start_state) > limit).any():
        return lambda state: True
    return lambda state: not (machine_memory(c, state) > limit).any()


def tied_end(graph: WorkloadGraph, ends: list[tuple], bar: float, known: list[tuple]) -> list[tuple]:
    """Of climb ends (estimate, label, proc, state, moves), the estimate's best one within
    CLIMB_GAIN of `bar` that is another design than those `known` (proc, state), up to
    naming machines; none if there is none.

    Why: where the pick's own climb reaches the estimate's best, the other climbs' ends are
    never above it, yet designs the estimate ties can run 8 % apart in the simulator
    (generated-3807 on 4 machines: the pick's climb parted two SPs by a block move, another
    start's climb parted them another way, 8 % faster), so the best of those is simulated too."""
    seen = {relabelled_design_key(SimpleNamespace(proc_part=p, state_part=s), graph) for p, s in known}
    for end in sorted(ends, key=lambda t: -t[0]):  # stable: ties keep the order they were climbed in
        if end[0] < bar * (1 - CLIMB_GAIN):
            break
        if relabelled_design_key(SimpleNamespace(proc_part=end[2], state_part=end[3]), graph) not in seen:
            return [end]
    return []


def room_for_a_rival(first_end_designs: int, per_run: float, event_budget: float) -> bool:
    """Whether the budget covers, besides the pick's own figure and its climb end's designs,
    a rival end's designs (three at most) and a step from each of the two. Why: where it does
    not, the rival takes the simulations of the steps (on shared40 the one step that paid)."""
    return (1 + first_end_designs + 3 + 2 * TRIED_PER_STEP) * per_run <= event_budget


@dataclass
class _Search:
    """What the search's phases share: the workload's graph, the estimate that ranks moves,
    the judge that simulates them, and the designs the simulator could not tell from the best
    (`tied`: the climb ends' and near starts' ends, run from; `near_steps`: the steps' own
    moves, for the tie-break alone), each (tps, proc, state, moves)."""

    graph: WorkloadGraph
    estimate: BusyEstimate
    judge: BudgetedJudge
    private: list
    touched: list
    central_machine: int | None
    tied: list[tuple] = field(default_factory=list)
    near_steps: list[tuple] = field(default_factory=list)

    def end_designs(self, proc: np.ndarray, state: np.ndarray, climbed: list[str],
                    end_too: bool = True) -> list[tuple]:
        """A climb's end (`end_too`), where it leads across the plateau (`across_plateau`),
        through a move joined with a trade of places (`via_a_trade`) and on through the
        partitions tied at the top (`climb_through_plateau`): (proc, state, moves)."""
        tried = [(proc, state, climbed)] if end_too else []
        for further in (across_plateau, via_a_trade, climb_through_plateau):
            p3, s3, went = further(self.graph, self.estimate, proc, state, self.private, self.touched)
            if went and not (further is climb_through_plateau and any(
                    np.array_equal(p3, t[0]) and np.array_equal(s3, t[1]) for t in tried)):
                tried.append((p3, s3, climbed + went))
        return tried

    def climb_from(self, label: str, proc, state, max_priced: int | None = None) -> tuple:
        """Where the estimate's climb from a design ends: (estimate, label, proc, state, moves)."""
        p2, s2, climbed = climb_estimate(self.graph, self.estimate, np.asarray(proc, dtype=np.int64),
                                         np.asarray(state, dtype=np.int64), self.private, self.touched,
                                         max_priced=max_priced)
        return self.estimate.throughput_tps(p2, s2), label, p2, s2, climbed

    def try_end(self, best: tuple, tried: list[tuple], first: list[str], take: bool = True) -> tuple:
        """The best (tps, proc, state, moves) after simulating an end's designs (`end_designs`):
        each taken where the simulator puts it faster than the best by the tie tolerance (and
        remembered in `tied` where it ties). With `take` false, remembered only, however fast:
        the steps then run from the best first, and from it after (NEAR_STARTS), the faster
        end kept."""
        judge = self.judge
        judge.ahead([(p4, s4) for p4, s4, _ in tried], best[0] * (1 + TIE_TOLERANCE))  # (a new best: asked again)
        for p4, s4, taken in tried:
            tps = judge.simulate(p4, s4, best[0] * (1 + TIE_TOLERANCE))
            these = first + [f"{m} (estimate)" for m in taken]
            if take and tps > best[0] * (1 + TIE_TOLERANCE):
                best = (tps, p4, s4, these)
            elif tps > best[0] * (1 - TIE_TOLERANCE):
                self.tied.append((tps, p4, s4, these))
        return best

    def steps_from(self, best: float, proc: np.ndarray, state: np.ndarray, moves: list[str]) -> tuple:
        """The simulated steps from one design, while one pays and the budget lasts:
        (tps, proc, state, moves) where they end."""
        moves = list(moves)
        for _ in range(MAX_STEPS):
            if not self.judge.affords(TRIED_PER_STEP * self.judge.per_run):
                break
            found = self.step(best, proc, state, moves)
            if found is None:
                break
            best, label, proc, state = found
            moves.append(label)
        return best, proc, state, moves

    def step(self, best: float, proc: np.ndarray, state: np.ndarray, moves: list[str]) -> tuple | None:
        """The step from a design: (tps, label, proc, state) of the move that pays, or None."""
        graph, estimate, judge = self.graph, self.estimate, self.judge
        here = estimate.estimate(proc, state)
        tried = by_estimate(estimate, busiest_partition_moves(graph, proc, state, self.private, self.touched, here))
        # a swap changes nothing but the lock order, which the estimate prices: simulated only
        # where the estimate sees it gain (else every step would spend simulations on no-ops)
        tried += [t for t in by_estimate(estimate, lock_order_swaps(graph, proc, state, here))
                  if t[0] > here.throughput_tps * (1 + CLIMB_GAIN)]
        if not tried:
            return None
        tried.sort(key=lambda t: -t[0])  # stable: ties keep the order the moves were made in
        tied = sum(1 for t in tried if t[0] >= tried[0][0] * (1 - CLIMB_GAIN))
        tried, tied = other_designs(tried, tied, (proc, state),
                                    empty_machine_stand_ins(graph, proc, state, self.central_machine))
        tried = tried[:max(TRIED_PER_STEP, min(tied, TIED_PER_STEP, judge.affordable()))]
        to_beat = best * (1 + TIE_TOLERANCE)
        found, near = None, []
        judge.ahead([(p2, s2) for _est, _label, p2, s2 in tried], to_beat)
        for _est, label, p2, s2 in tried:
            tps = judge.simulate(p2, s2, to_beat)
            if tps > to_beat and (found is None or tps > found[0]):
                found = (tps, label, p2, s2)
            elif tps > best * (1 - TIE_TOLERANCE):  # within the tie either way (a lower bound)
                near.append((tps, label, p2, s2))
                self.near_steps.append((tps, p2, s2, moves + [label]))
        if found is None:  # two moves that each tie can gain together: the best pairs first
            pairs = sorted(((a[0] + b[0], i, j) for i, a in enumerate(near) for j, b in enumerate(near) if i < j),
                           key=lambda t: -t[0])
            for _sum, i, j in pairs:
                joined = joined_moves(proc, state, near[i], near[j])
                if joined is None or not judge.affords(judge.per_run):
                    continue
                tps = judge.simulate(joined[2], joined[3], to_beat)
                if tps > to_beat:
                    found = (tps, *joined[1:])
                    break
        # no small move pays: move a block of SPs that share state, empty a partition, or make
        # a move with a trade of places?
        for bigger in (block_moves(graph, proc, state, self.private, self.touched, here),
                       emptying_moves(proc, state, here),
                       trade_moves(graph, proc, state, self.private, self.touched, here)):
            if found is not None or not judge.affords(judge.per_run):
                break
            move = best_by_estimate(estimate, bigger)
            if move is not None and move[0].throughput_tps > here.throughput_tps * (1 + CLIMB_GAIN):
                tps = judge.simulate(move[2], move[3], to_beat)
                found = (tps, *move[1:]) if tps > to_beat else None
        return found

    def tie_break(self, best: tuple) -> tuple:
        """The fastest design the short runs could not tell from the best, but put above it,
        simulated again beside the best on TIE_BREAK_BATCHES and taken where it is faster there
        by half the tie (within the budget): the best (tps, proc, state, moves) after."""
        tps0, proc, state, _ = best
        judge = self.judge
        above = [t for t in self.tied + self.near_steps
                 if t[0] > tps0 and not (np.array_equal(t[1], proc) and np.array_equal(t[2], state))]
        cost = 2 * judge.per_run * TIE_BREAK_BATCHES / BATCHES
        if not (above and TIE_BREAK_BATCHES and judge.spent + cost + judge.per_run <= judge.event_budget):  # and its own figure
            return best
        tps, p2, s2, m2 = max(above, key=lambda t: t[0])  # stable: the first found on a tie
        longer = judge.longer_runs([(proc, state), (p2, s2)], TIE_BREAK_BATCHES, TIE_TOLERANCE / 4, cost)
        if longer[1] > longer[0] * (1 + TIE_TOLERANCE / 2):
            # its short run may have stopped once it could not beat the best by the tie: its
            # own figure, searched to the end, is the recommendation's
            return (max(judge.simulate(p2, s2), tps), p2, s2,
                    list(m2) + [f"a tie broken on {TIE_BREAK_BATCHES:,} batches "
                                f"({longer[1]:,.0f} against {longer[0]:,.0f} tuples/s)"])
        return best


def improve(graph: WorkloadGraph, workload: Workload, proc_part: np.ndarray, state_part: np.ndarray,
            weights: Weights, calibration=None, seed: int = 0,
            event_budget: int = EVENT_BUDGET, runs: SimulationRuns | None = None, *,
            simulator: Simulator | None = None, starts: Sequence[tuple[str, np.ndarray, np.ndarray]] = (),
            more_starts: Sequence[tuple[str, np.ndarray, np.ndarray]] = ()) -> Improvement:
    """Local search from (proc_part, state_part), judged by the simulator (see the module).
    `runs`: the pick's simulations so far (of this workload, graph, calibration and seed),
    so a design already simulated the same way is not simulated again, by their simulator;
    without them, `simulator` judges. `starts`: the pool's next best designs (label, proc,
    state), best first; the estimate's climb also runs from the first CLIMB_STARTS - 1.
    `more_starts`: the pool's other designs, climbed from in the estimate's order until those
    climbs have priced CLIMB_BUDGET designs; of their ends, CLIMB_ENDS at most are simulated."""
    if runs is None:
        runs = SimulationRuns.of(workload, graph, weights, calibration, seed, simulator=simulator)
    cal = runs.calibration
    estimate = BusyEstimate.of(graph, workload, getattr(cal, "params", cal))
    central = getattr(getattr(cal, "params", cal), "central_machine", -1)
    proc, state = np.array(proc_part, dtype=np.int64), np.array(state_part, dtype=np.int64)

    try:
        pilot = runs.pilot(proc, state, 20, label="simulated search")
    except runs.simulator.error:
        return Improvement(proc, state, 0.0, 0.0, 0, [])
    per_run = max(pilot.events / 20, 1.0) * BATCHES * 8  # a maximum-throughput search: ~8 runs
    if per_run > event_budget:  # the pick's own search alone would overspend it
        return Improvement(proc, state, 0.0, 0.0, 0, [], skipped=(
            f"one maximum-throughput search of the pick is about {per_run:,.0f} simulated events, "
            f"over the search's budget of {event_budget:,}"))
    judge = BudgetedJudge(runs, memory_check(graph, state), per_run, event_budget)
    search = _Search(graph, estimate, judge, private_state(graph), touched_state(graph),
                     None if central < 0 else min(central, graph.cost.machines - 1))
    # the pick's own figure, simulated meanwhile where there are workers: the climbs below
    # price designs by the estimate alone
    runs.prefetch([runs.ask_max(proc, state, BATCHES, PREDICTION_TOLERANCE, label="simulated search")],
                  per_run, here_first=False)

    # first the estimate's own optimum from here (free); the simulator says whether it pays
    p2, s2, climbed = climb_estimate(graph, estimate, proc, state, search.private, search.touched)
    bar = estimate.throughput_tps(p2, s2)  # what another start's climb must beat, by the estimate
    first_end = search.end_designs(p2, s2, climbed, end_too=bool(climbed))
    # then from the pool's next best designs, and from its others within a budget: their
    # climbs' ends that the estimate puts above this one's, best first, simulated (a pool
    # design that starts lower can climb higher). Every climb is priced by the estimate alone,
    # in the same order whatever the simulator answers, so they all run before the first
    # answer is awaited: with workers, while the pick's own figure is simulated.
    pool_ends = [search.climb_from(*t) for t in starts[:CLIMB_STARTS - 1]]
    climbed_from = [t[0] for t in starts[:CLIMB_STARTS - 1]]
    more = []
    for group, budget, of_pool in ((list(more_starts), CLIMB_BUDGET, True),
                                   (random_starts(graph, RANDOM_STARTS, seed), RANDOM_CLIMB_BUDGET, False)):
        priced = estimate.priced
        start_tps = [e.throughput_tps for e in estimate.estimate_many([(t[1], t[2]) for t in group])]
        for _tps, k in sorted(zip(start_tps, range(len(group))), key=lambda x: -x[0]):  # stable
            left = budget - (estimate.priced - priced)
            if left <= 0:
                break
            more.append(search.climb_from(*group[k], max_priced=left))
            if of_pool:
                climbed_from.append(group[k][0])

    def above(end: tuple) -> bool:
        return end[0] > bar * (1 + CLIMB_GAIN)

    ends = [e for e in pool_ends if above(e)]
    ends += sorted((e for e in more if above(e)), key=lambda t: -t[0])[:CLIMB_ENDS]
    # the pick's own climb reached the estimate's best: another design there? A rival to the
    # steps from the best, not a new best on its short run (generated-3804 lost 2 % so)
    rival = not ends and room_for_a_rival(len(first_end), per_run, event_budget)
    twin = tied_end(graph, pool_ends + more, bar, [(proc, state), (p2, s2)]) if rival else []
    # every end's designs first (the estimate prices them in the same order), so the
    # workers, where there are some, simulate them all side by side
    tries = [(search.end_designs(p2, s2, climbed), [f"start from {label!r}"], True)
             for _e, label, p2, s2, climbed in sorted(ends, key=lambda t: -t[0])]  # stable: ties keep order
    tries += [(search.end_designs(p2, s2, climbed), [f"start from {label!r}"], False)
              for _e, label, p2, s2, climbed in twin]
    start = judge.simulate(proc, state)
    best = search.try_end((start, proc, state, []), first_end, [])
    judge.ahead([(p4, s4) for tried, _, _ in tries for p4, s4, _ in tried], best[0] * (1 + TIE_TOLERANCE))
    for tried, first, take in tries:
        best = search.try_end(best, tried, first, take)

    best = search.steps_from(*best)
    # a design the simulator could not tell from the best may lead further: the steps from the
    # fastest of those too (NEAR_STARTS), while the budget lasts, kept where they end faster
    # than the best by the tie
    others = sorted((t for t in search.tied if not (np.array_equal(t[1], best[1]) and np.array_equal(t[2], best[2]))),
                    key=lambda t: -t[0])
    for tps, p2, s2, m2 in others[:NEAR_STARTS]:
        if not judge.affords(TRIED_PER_STEP * per_run):
            break
        end = search.steps_from(tps, p2, s2, m2)
        if end[0] > best[0] * (1 + TIE_TOLERANCE):
            best = end
        elif end[0] > best[0] * (1 - TIE_TOLERANCE):
            search.tied.append(end)
    tps, proc, state, moves = search.tie_break(best)
    tps = judge.figure.get((proc.tobytes(), state.tobytes()), tps)
    return Improvement(proc, state, start, tps, judge.simulated, moves, estimate.throughput_tps(proc, state),
                       climbed_from=tuple(climbed_from), collapse_checked=judge.collapse_checked,
                       collapse_kept_out=judge.collapse_kept_out)
