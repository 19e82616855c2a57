"""The pick where the simulator cannot judge in time: by the busy-time estimate, no simulation.

Past the sizes the simulator judges quickly (`advisor.sim_limits.simulation_blocker`), the pick
fell back to the cost model's cheapest design, which the estimate and the simulator both put
far behind (a generated dataflow of 300 SPs on 64 machines: 1,052 tuples/s simulated, against
5,832 for the simulated search's pick, had it been let run 40 s). The estimate prices a design
in milliseconds, so it can pick where the simulator cannot: the pool's designs ranked by it,
and its own climbs (`advisor.estimate_climb`, the ones the simulated search runs before
simulating anything) from the pool's best few, from its others and from seeded random designs
within a budget of priced designs; the best design any of them reaches within the machines'
memory is the pick, where the estimate puts it ESTIMATE_MARGIN above the cost model's
cheapest design (else the cheapest is kept). Deterministic: the same input gives the same
design.

What it cannot do is what the simulator adds: queues and the waits it does not price (the
estimate ranks designs at a Spearman of 0.66-1.00 against the simulator, README), so the pick
says it was not simulated.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from advisor.busy_estimate import BusyEstimate
from advisor.candidate_pool import distinct, relabelled_design_key, scored_candidate
from advisor.design_moves import private_state, random_starts, touched_state
from advisor.estimate_climb import CLIMB_GAIN, climb_estimate, climb_through_plateau, via_a_trade
from advisor.judge import Simulator, need_simulator
from advisor.search import Candidate
from advisor.selection import Selection, calibration_label
from advisor.sim_local_search import (CLIMB_BUDGET, CLIMB_STARTS, RANDOM_CLIMB_BUDGET, RANDOM_STARTS,
                                      memory_check)
from costmodel import Weights
from costmodel.graph import WorkloadGraph
from costmodel.workload import Workload

LABEL = "estimate search"  # the pick's label where the climbs moved it from the pool's design
# designs each climb from the best starts, and each climb through the plateau from their ends,
# may price: on 100 partitions a plateau step prices ~2,500 designs and a climb of 50 steps
# 13-17 s (gen500 on 100 machines), where the winning one took 6 steps (18,000 designs); a
# climb from the best starts prices 3,000-16,000 on 300-500 SPs, one 75,000 (40 s) on 300 SPs
# that share tables anywhere
CLIMB_PRICED = 20_000
STARTS_PRICED = 60_000  # ... and all of those together (shared300: 184,000 designs, 62 s, unbounded)
# The estimate's best replaces the cost model's cheapest design only where it is estimated this
# much faster: the estimate is near an upper bound of the simulator, further above it the more
# distributed transactions a design runs (the cheapest runs few), by a median 1.12-1.16 on the
# estimate's climb ends on dataflows that share tables anywhere (`bench/busy_time_rank.py
# --searched`, shared20 and shared40). Measured (bench/estimate_pick.py): shared300's best by
# the estimate, 1.10x the cheapest's estimate, simulates at 0.97x it; gen300's, 5.2x, at 5.5x
ESTIMATE_MARGIN = 0.15


@dataclass
class EstimatePick:
    """Where the estimate's search ended: the design and its estimate; the pool's best design
    by the estimate (`pool_pick`), and where the climbs beat it, the design they climbed from
    (a pool design's label, or a random start's) and their moves; how many designs the estimate
    priced and how many climbs ran."""

    proc_part: np.ndarray
    state_part: np.ndarray
    estimated_tps: float
    pool_pick: Candidate
    start_label: str
    moves: list[str] = field(default_factory=list)
    priced: int = 0
    climbs: int = 0
    kept_cheapest: bool = False  # the pick kept the cost model's cheapest design (ESTIMATE_MARGIN)

    @property
    def climbed(self) -> bool:
        """Whether a climb's end beat the pool's best design (an end is taken only after a move)."""
        return bool(self.moves)


def pick_by_estimate(graph: WorkloadGraph, workload: Workload, candidates: list[Candidate], params,
                     seed: int = 0) -> EstimatePick:
    """The fastest design by the busy-time estimate (`params`: the simulator parameters it
    prices with) among `candidates` (distinct designs; feasible ones first, as the pick
    prefers them) and where its climbs from them lead (see the module). Each candidate's
    `estimated_tps` is set on the way."""
    estimate = BusyEstimate.of(graph, workload, params)
    private, touched = private_state(graph), touched_state(graph)
    for o, e in zip(candidates, estimate.estimate_many([(o.proc_part, o.state_part) for o in candidates])):
        o.estimated_tps = e.throughput_tps
    pool = sorted([o for o in candidates if o.cost.feasible] or candidates,
                  key=lambda o: -o.estimated_tps)  # stable: ties keep the pool's order
    first = pool[0]
    fits = memory_check(graph, first.state_part)
    best = (first.estimated_tps, first.label, first.proc_part, first.state_part, [])
    climbs = 0
    at_start = estimate.priced

    def starts_left() -> int:
        """Designs the best starts' climbs may still price, each at most CLIMB_PRICED."""
        return min(CLIMB_PRICED, STARTS_PRICED - (estimate.priced - at_start))

    def climb(label: str, p0, s0, max_priced: int, best_start: bool = False) -> None:
        """Climb from (p0, s0) and, from the best starts, where its end leads further (as the
        simulated search tries, but across the plateau: those designs keep the estimate, the
        simulator alone tells them apart); keep an end the estimate puts above the best that fits."""
        nonlocal best, climbs
        climbs += 1
        p2, s2, moves = climb_estimate(graph, estimate, np.asarray(p0, dtype=np.int64),
                                       np.asarray(s0, dtype=np.int64), private, touched, max_priced=max_priced)
        ends = [(p2, s2, moves)]
        if best_start:
            further = [via_a_trade(graph, estimate, p2, s2, private, touched)]
            if starts_left() > 0:
                further.append(climb_through_plateau(graph, estimate, p2, s2, private, touched,
                                                     max_priced=starts_left()))
            ends += [(p3, s3, moves + went) for p3, s3, went in further if went]
        for p3, s3, went in ends:
            tps = estimate.throughput_tps(p3, s3)
            if went and tps > best[0] * (1 + CLIMB_GAIN / 10) and fits(s3):
                best = (tps, label, p3, s3, went)

    for o in pool[:CLIMB_STARTS]:
        if starts_left() <= 0:
            break
        climb(o.label, o.proc_part, o.state_part, starts_left(), best_start=True)
    others = [(o.label, o.proc_part, o.state_part) for o in pool[CLIMB_STARTS:]]
    for group, budget in ((others, CLIMB_BUDGET), (random_starts(graph, RANDOM_STARTS, seed), RANDOM_CLIMB_BUDGET)):
        priced = estimate.priced
        start_tps = [e.throughput_tps for e in estimate.estimate_many([(t[1], t[2]) for t in group])]
        for k in sorted(range(len(group)), key=lambda k: -start_tps[k]):  # stable
            left = budget - (estimate.priced - priced)
            if left <= 0:
                break
            climb(*group[k], max_priced=left)
    tps, label, proc, state, moves = best
    return EstimatePick(proc, state, tps, first, label, list(moves), estimate.priced, climbs)


def select_by_estimate(candidates: list[Candidate], workload: Workload, graph: WorkloadGraph, weights: Weights,
                       calibration, seed: int, too_large: str, *, simulator: Simulator | None) -> Selection:
    """`advisor.selection.select`'s pick where the simulator cannot judge in time (`too_large`
    says why): `pick_by_estimate`, priced at the simulator's calibration (its reference cluster
    where none is given), as the simulated search's climbs are."""
    if calibration is None:
        calibration = need_simulator(simulator, "the busy-time estimate's prices").reference_calibration()
    unique = distinct(candidates, graph)
    pick = pick_by_estimate(graph, workload, unique, getattr(calibration, "params", calibration), seed)
    by_key = {relabelled_design_key(o, graph): o for o in unique}
    for o in candidates:  # a duplicate design gets its twin's estimate
        o.estimated_tps = by_key[relabelled_design_key(o, graph)].estimated_tps
    cheapest = candidates[0]  # the search's best by cost: what the pick was before
    if pick.estimated_tps <= cheapest.estimated_tps * (1 + ESTIMATE_MARGIN):
        pick.kept_cheapest = True
        return Selection("throughput", "estimate", cheapest, candidates, distinct=len(unique),
                         calibration_label=calibration_label(calibration), improvement=pick, note=(
                             f"picked by the busy-time estimate, not simulated: {too_large}; the cheapest design "
                             f"kept: the estimate's best ({pick.estimated_tps:,.0f} tuples/s) is not "
                             f"{ESTIMATE_MARGIN:.0%} above it, within what the estimate over-prices designs "
                             "with more distributed transactions"))
    chosen = pick.pool_pick
    if pick.climbed:
        chosen = scored_candidate(graph, weights, LABEL, LABEL, pick.proc_part, pick.state_part)
        chosen.estimated_tps = pick.estimated_tps
        candidates = candidates + [chosen]
    return Selection("throughput", "estimate", chosen, candidates, distinct=len(unique),
                     calibration_label=calibration_label(calibration), improvement=pick,
                     note=f"picked by the busy-time estimate, not simulated: {too_large}")
