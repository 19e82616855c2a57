"""Climbs on the busy-time estimate alone (no simulation): from a design, the best move of the
neighbourhood (`advisor.design_moves`) each step while it raises the estimate; from where a
climb ends, where it leads across the estimate's plateau or through a move made with a trade
of places.

Why a module of its own: pricing thousands of designs by the estimate (`BusyEstimate`,
vectorised) is how the simulated search (`advisor.sim_local_search`) decides what is worth
simulating; the climbs themselves never simulate.
"""
from __future__ import annotations

from itertools import chain, islice

import numpy as np

from advisor.busy_estimate import CHUNK_FLOATS, BusyEstimate
from advisor.design_moves import (block_moves, busiest_partition_moves, emptying_moves, lock_order_swaps,
                                  plateau_moves, trade_moves)
from costmodel.graph import WorkloadGraph

CLIMB_STEPS = 50  # steps of the hill climb on the estimate alone, before any simulation
CLIMB_GAIN = 0.005  # a step of that climb must raise the estimate by this fraction
PLATEAU_STEPS = 5  # steps of `across_plateau` from a climb's end
# moves priced together before they are reduced to the best: each keeps a busy time per
# partition, and the 20,475 trades of `recommend -m 24 -p 4096` (98,304 partitions) priced
# in one list held 16 GB
PRICE_AT_ONCE = 512


def climb_estimate(graph: WorkloadGraph, estimate: BusyEstimate, proc: np.ndarray, state: np.ndarray,
                   private: list[np.ndarray], touched: list[np.ndarray],
                   max_steps: int = CLIMB_STEPS, max_priced: int | None = None, plateau: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Hill climbing on the busy-time estimate alone (no simulation): each step takes the move
    off the busiest partition the estimate likes best, while it gains more than CLIMB_GAIN
    (and, with `max_priced`, until the climb has priced that many designs). Where no small
    move gains, a block of SPs that share state moved with it, else a partition emptied: big
    steps taken first would skip designs the simulated search weighs on the way (a block
    move taken at once cost generated-3807 on 4 machines 10 %). Where none of those gains
    either, with `plateau`, the small move that leaves the busiest no busier (within
    CLIMB_GAIN) and the partitions behind it least busy (`_least_loaded_of`).

    Why the plateau steps: where two partitions are nearly as busy, relieving one leaves the
    other, so no move gains and the climb stopped, though relieving both in turn gains much
    (gen100#4503: two partitions 0.3 % apart at the top, the pick 15 % below where the
    same climb with plateau steps ends; docs/measurements.md, Stop 64). Each plateau step
    lowers the busy times, busiest first (at CLIMB_GAIN's resolution), and `max_steps` bounds
    the climb."""
    current = estimate.estimate(proc, state)
    moves: list[str] = []
    priced = estimate.priced
    for _ in range(max_steps):
        if max_priced is not None and estimate.priced - priced >= max_priced:
            break
        bar = current.throughput_tps * (1 + CLIMB_GAIN)
        best, on_plateau = _best_and_least_loaded(current, _priced_in_chunks(estimate, chain(
            busiest_partition_moves(graph, proc, state, private, touched, current),
            lock_order_swaps(graph, proc, state, current))), plateau)
        for bigger in (block_moves(graph, proc, state, private, touched, current),
                       emptying_moves(proc, state, current)):
            if best is not None and best[0].throughput_tps > bar:
                break
            best = best_by_estimate(estimate, bigger)  # a local optimum of the small moves
        if (best is None or best[0].throughput_tps <= bar) and plateau:
            best = on_plateau
        if best is None or (best[0].throughput_tps <= bar and not plateau):
            break
        current, label, proc, state = best
        moves.append(label)
    return proc, state, moves


def across_plateau(graph: WorkloadGraph, estimate: BusyEstimate, proc: np.ndarray, state: np.ndarray,
                   private: list[np.ndarray], touched: list[np.ndarray], max_steps: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """From where a climb ends (no move raises the estimate), steps that keep it (the busiest
    part within CLIMB_GAIN) and take load off the partitions behind the busiest, busiest first
    (`_less_loaded`): moves off every partition but the busiest.

    Why: designs the estimate ties differ in what it does not see, the waits behind the
    bottleneck, and the simulator can put them 10 % apart (generated-1017 on 4 machines). The
    end across the plateau is simulated beside the climb's own, never instead of it."""
    current = estimate.estimate(proc, state)
    moves: list[str] = []
    for _ in range(PLATEAU_STEPS if max_steps is None else max_steps):
        best = _best_on_plateau(estimate, current, plateau_moves(graph, proc, state, private, touched, current))
        if best is None:
            break
        current, label, proc, state = best
        moves.append(label)
    return proc, state, moves


def climb_through_plateau(graph: WorkloadGraph, estimate: BusyEstimate, proc: np.ndarray, state: np.ndarray,
                          private: list[np.ndarray], touched: list[np.ndarray], max_priced: int | None = None
                          ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """From where a climb ends, the climb on with plateau steps (`climb_estimate`, `plateau`):
    the moves that keep the busiest partition as busy and relieve the ones behind it, each
    followed by the moves that gain again.

    Why beside the end, never instead of it: where partitions tie at the top, the climb stops
    15 % short of where plateau steps lead on 100 SPs (gen100#4503), but on small dataflows a
    climb taken through the ties ends at another design of the same estimate that the
    simulator puts 10 % slower (generated-3807 and generated-3902 on 4 machines); the
    simulator decides between the two (docs/measurements.md, Stop 64). `max_priced`: as
    `climb_estimate`'s."""
    return climb_estimate(graph, estimate, proc, state, private, touched, max_priced=max_priced, plateau=True)


def via_a_trade(graph: WorkloadGraph, estimate: BusyEstimate, proc: np.ndarray, state: np.ndarray,
                private: list[np.ndarray], touched: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """From where a climb ends, the best move off the busiest partitions made together with its
    target trading places with another partition of its machine (`trade_moves`), if that
    raises the estimate by CLIMB_GAIN, and the climb on from there; else no moves.

    Why: a move can lose by the estimate until the partition it goes to takes another place
    in the lock order (a distributed transaction holds each lock while it waits for the next),
    and a trade alone may not pay either: generated-1125's statistics path ended one such pair
    from the spec path's pick, 3 % faster by the estimate. Simulated beside the end, never
    instead of it."""
    current = estimate.estimate(proc, state)
    best = best_by_estimate(estimate, trade_moves(graph, proc, state, private, touched, current))
    if best is None or best[0].throughput_tps <= current.throughput_tps * (1 + CLIMB_GAIN):
        return proc, state, []
    p2, s2, more = climb_estimate(graph, estimate, best[2], best[3], private, touched)
    return p2, s2, [best[1], *more]


def _busiest_first(busy) -> np.ndarray:
    """Busy times of partitions and coordinators, busiest first."""
    return np.sort(np.concatenate([busy.partition, busy.coordinator,
                                   busy.link if busy.link is not None else []]))[::-1]


def _less_loaded(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether busy times `a` (busiest first) are below `b`: at the first place where the two
    differ by more than CLIMB_GAIN, `a` is lower. Two designs whose busiest part is as busy (to
    the climb's own resolution) compare by the next, and so on.

    Vectorised: on a big cluster most partitions are empty in both, so the first difference
    lies deep, and a loop over 8,192 partitions per comparison took most of a minute of
    `recommend -m 2 -p 4096` (the same comparisons, the same answer)."""
    n = min(len(a), len(b))
    x, y = np.asarray(a[:n], dtype=np.float64), np.asarray(b[:n], dtype=np.float64)
    differ = np.flatnonzero(np.abs(x - y) > CLIMB_GAIN * np.maximum(x, y))
    return bool(differ.size) and bool(x[differ[0]] < y[differ[0]])


def _best_on_plateau(estimate: BusyEstimate, current, moves) -> tuple | None:
    """Of the moves whose busy times are below the design's (`_less_loaded`) with its bottleneck
    no busier, the one below the others (the first of equals); None where none is."""
    return _least_loaded_of(current, _priced_in_chunks(estimate, moves))


def _least_loaded_of(current, priced) -> tuple | None:
    """`_best_on_plateau` of moves already priced (an iterable)."""
    return _best_and_least_loaded(current, priced, True)[1]


def _best_and_least_loaded(current, priced, plateau: bool) -> tuple[tuple | None, tuple | None]:
    """In one pass over moves priced (an iterable, so that a generator's chunks are let go):
    the move the estimate likes best (`_first_best`) and, with `plateau`, the one
    `_least_loaded_of` takes (else None)."""
    here = _busiest_first(current) if plateau else None
    best = least = None
    least_busy = here
    for e, label, p2, s2 in priced:
        if best is None or e.throughput_tps > best[0].throughput_tps:
            best = (e, label, p2, s2)
        if plateau and e.bottleneck_s <= current.bottleneck_s * (1 + CLIMB_GAIN):  # (busiest no busier)
            busy = _busiest_first(e)
            if _less_loaded(busy, here) and (least is None or _less_loaded(busy, least_busy)):
                least, least_busy = (e, label, p2, s2), busy
    return best, least


def priced_moves(estimate: BusyEstimate, moves) -> list[tuple]:
    """(BusyTime, label, proc, state) of each move (label, proc, state), in the order given,
    priced together (`BusyEstimate.estimate_many`)."""
    moves = list(moves)
    priced = estimate.estimate_many([(p2, s2) for _, p2, s2 in moves])
    return [(e, label, p2, s2) for e, (label, p2, s2) in zip(priced, moves)]


def _priced_in_chunks(estimate: BusyEstimate, moves):
    """`priced_moves`, PRICE_AT_ONCE moves at a time, yielded one by one: the same figures and
    the same count of designs priced (the estimate remembers what an earlier chunk priced, as
    one call does), with the busy times of one chunk held at a time (fewer moves a chunk on a
    big cluster: CHUNK_FLOATS busy times at most, 512 moves of 1,000,000 partitions held 4 GB)."""
    moves = iter(moves)
    at_once = max(1, min(PRICE_AT_ONCE, CHUNK_FLOATS // max(1, estimate.graph.cost.n_partitions)))
    while chunk := list(islice(moves, at_once)):
        yield from priced_moves(estimate, chunk)


def best_by_estimate(estimate: BusyEstimate, moves) -> tuple | None:
    """The (BusyTime, label, proc, state) of the move the estimate likes best (the first of
    equals), or None where there is none."""
    return _first_best(_priced_in_chunks(estimate, moves))


def _first_best(priced) -> tuple | None:
    return _best_and_least_loaded(None, priced, False)[0]


def by_estimate(estimate: BusyEstimate, moves) -> list[tuple]:
    """(estimated tuples/s, label, proc, state) of each move, in the order given."""
    return [(e.throughput_tps, label, p2, s2) for e, label, p2, s2 in _priced_in_chunks(estimate, moves)]
