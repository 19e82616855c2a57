"""After the pool: a local search judged by the simulator, from the pick.

The pool (the search's designs, the baselines, enumerated assignments on tiny graphs) can
miss the fastest design on a dataflow of realistic size. So, from the pool's pick, it first
climbs the busy-time estimate alone (no simulation; the moves below, the best each step) and
keeps where that ends if the simulator predicts it faster; it climbs from the pool's next
best designs too, and from its others and RANDOM_STARTS random designs (the estimate's best
first, however far behind, until those climbs have priced CLIMB_BUDGET designs: a design that
starts low can climb highest), and simulates the ends the estimate puts above the pick's own.
Beside each end it simulates where the end leads across the estimate's plateau
(`across_plateau`: moves that keep the estimate and take load off the partitions behind the
busiest): designs the estimate ties can be 10 % apart in the simulator; and where it leads
through a move made with a trade of places (`via_a_trade`).
Then each step
takes the busiest partition by the analytical busy-time estimate (`advisor.busy_estimate`:
where the simulator says remote accesses and MOVEs land), tries moving each of its SPs to
every other partition (with the state only it touches, or with all the state it touches),
each state item it holds to the partition of an SP that uses it, each SP elsewhere that
reaches it (state it holds, a stream to or from one of its SPs) onto it (its remote accesses
and MOVEs load the busiest: taking it in can relieve it), and the partition trading
places with another partition of its machine (its place in the lock order: tried only where
the estimate sees that gain), ranks those moves by the estimate, simulates the best few and keeps the fastest if the simulator predicts it faster beyond the
tie tolerance. Where none is, it tries two of those that came within the tie together, then
emptying the least busy partition that runs an SP onto another (the climbs on the estimate
alone try that too, only where no small move gains), then a move made together with its target
trading places with another partition of its machine (`trade_moves`: a move that loses until
its partition takes another place in the lock order). It stops when no move pays or the budget
of simulated events is spent, so the same input gives the same design on any host. Where a
climb end came within the tie of the best, the steps also run from it (NEAR_STARTS of them):
the simulator could not tell the two apart, and the steps from one can end higher.

What it simulates is kept with the pick's own simulations (`advisor.selection.SimulationRuns`):
the pick it starts from, simulated again on the final round's batches, is often what the
pick's final round just ran. A move is only asked whether it beats the design by the tie
tolerance, so its rate search stops once the simulator shows it cannot (`stop_below_tps` of
the simulator's `max_throughput`, within the margin its rate search states). The simulator is
the one the pick was given (`advisor.judge`), never imported here. The budget still
charges each move a whole search, so the search takes the same steps either way.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from costmodel import REPLICATED, Weights
from costmodel.model import machine_memory
from advisor.busy_estimate import BusyEstimate
from advisor.placement import place_state
from costmodel.graph import WorkloadGraph
from advisor.judge import Simulator
from advisor.selection import PREDICTION_BATCHES, PREDICTION_TOLERANCE, SimulationRuns
from advisor.selection import TIE_TOLERANCE  # what a move must gain
from costmodel.workload import Workload

EVENT_BUDGET = 3_000_000  # simulated events for the whole improvement: about 5 s here on a 20-SP dataflow
BATCHES = PREDICTION_BATCHES  # per simulation: the recommendation's figure is one of these
TRIED_PER_STEP = 3  # moves simulated per step, the estimate's best first
MAX_STEPS = 20
CLIMB_STEPS = 50  # steps of the hill climb on the estimate alone, before any simulation
CLIMB_GAIN = 0.005  # a step of that climb must raise the estimate by this fraction
CLIMB_STARTS = 4  # the climb runs from the pick and from the pool's next best designs, this many in all
# then from the pool's other designs, the estimate's best first, until the climbs from them have
# priced this many designs (deterministic; a fraction of a second here): poor starts climb
# longest (a 60-SP round-robin design, 3,700 designs for little) and come last
CLIMB_BUDGET = 2_000
CLIMB_ENDS = 2  # of those other climbs, the ends simulated at most (the estimate's best first)
RANDOM_STARTS = 8  # random designs (seeded) among those other starts: a climb from far away finds
# designs no pool design leads to (a smaller cluster's pick, missed on a larger one)
PLATEAU_STEPS = 5  # steps of `across_plateau` from a climb's end
NEAR_STARTS = 2  # designs within the tie of the best that the simulated steps also run from
NEAR_BUSIEST = 0.10  # moves are also tried off the next busiest partition when this close
CROWDED_MOVES = 200  # SPs on a partition x other partitions above which each SP tries fewer places


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

    @property
    def improved(self) -> bool:
        return bool(self.moves)


def private_state(graph: WorkloadGraph) -> list[np.ndarray]:
    """For each SP, the free state items no other SP touches (they move with it)."""
    c = graph.cost
    users = np.bincount(c.ps_state, minlength=c.n_state) if c.ps_state.size else np.zeros(c.n_state)
    pairs = np.unique(np.stack([c.ps_proc, c.ps_state]), axis=1) if c.ps_state.size else np.zeros((2, 0), int)
    distinct = np.bincount(pairs[1], minlength=c.n_state)
    out = [[] for _ in range(c.n_proc)]
    for p, s in pairs.T:
        if distinct[s] == 1 and users[s] > 0:
            out[int(p)].append(int(s))
    owned = c.owned_state  # windows always go with their owner
    for s in owned:
        out[int(c.state_owner[s])].append(int(s))
    return [np.array(sorted(set(x)), dtype=np.int64) for x in out]


def touched_state(graph: WorkloadGraph) -> list[np.ndarray]:
    """For each SP, the free state items it touches (windows excluded: they never move alone)."""
    c = graph.cost
    free = c.state_owner[c.ps_state] < 0
    out = [[] for _ in range(c.n_proc)]
    for p, s in zip(c.ps_proc[free], c.ps_state[free]):
        out[int(p)].append(int(s))
    return [np.array(sorted(set(x)), dtype=np.int64) for x in out]


def busiest_partition_moves(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
           touched: list[np.ndarray], load):
    """Moves off the busiest partitions (the busiest, then the next if within NEAR_BUSIEST): each
    of their SPs to every other partition with the state only it touches, or with all the
    state it touches; each state item they hold to the partition of an SP that touches it.
    Yields (label, proc, state).

    Why more than the busiest: a partition close behind it holds locks the busiest waits for
    (or waits for its locks), so work moved off it can relieve the busiest too."""
    c = graph.cost
    n_parts = c.machines * c.partitions_per_machine
    for hot in _busiest_partitions(load.partition):
        yield from _moves_off(graph, proc, state, private, touched, hot, n_parts, load.partition)
        yield from _pulls_onto(graph, proc, state, private, hot)


def _pulls_onto(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
                hot: int):
    """Each SP elsewhere that reaches the busiest partition (state held there, or a stream to or
    from an SP there) moved onto it, with its private state: its remote accesses and MOVEs load
    that partition (the participant's and the receiver's work), so taking it in can relieve the
    partition more than its own work adds (the moves off it never reach that design)."""
    c = graph.cost
    on_hot = proc == hot
    reaching = {int(p) for p, j in zip(c.ps_proc, c.ps_state) if state[j] == hot and not on_hot[p]}
    for a, b in zip(c.pp_src, c.pp_dst):
        if on_hot[a] != on_hot[b]:
            reaching.add(int(b if on_hot[a] else a))
    for i in sorted(reaching):
        p2, s2 = proc.copy(), state.copy()
        p2[i] = hot
        s2[private[i]] = hot  # its windows and private tables go with it
        yield f"{graph.proc_names[i]} -> partition {hot} (onto the busiest)", p2, s2


def _busiest_partitions(busy: np.ndarray) -> list[int]:
    """The busiest partition, then the next busiest if it is within NEAR_BUSIEST of it (ties
    by index)."""
    order = sorted(range(busy.size), key=lambda p: (-busy[p], p))[:2]
    return [p for k, p in enumerate(order) if k == 0 or busy[p] >= (1.0 - NEAR_BUSIEST) * busy[order[0]]]


def _moves_off(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
               touched: list[np.ndarray], hot: int, n_parts: int, busy: np.ndarray):
    """The moves off one partition (see `busiest_partition_moves`)."""
    c = graph.cost
    on_hot = np.flatnonzero(proc == hot)
    stand_ins = _machine_stand_ins(graph, busy) if on_hot.size * (n_parts - 1) > CROWDED_MOVES else None
    for i in on_hot:
        for q in (range(n_parts) if stand_ins is None else _crowded_targets(graph, proc, state, touched,
                                                                            stand_ins, int(i))):
            if q == hot:
                continue
            for kind, items in (("", private[i]), (" with all its state", touched[i])):
                if kind and np.array_equal(items, private[i]):
                    continue
                p2, s2 = proc.copy(), state.copy()
                p2[i] = q
                s2[private[i]] = q  # its windows and private tables go with it
                if items.size:
                    s2[items] = np.where(s2[items] == REPLICATED, REPLICATED, q)
                yield f"{graph.proc_names[i]}{kind} -> partition {q}", p2, s2
    users = {}
    for p, j in zip(c.ps_proc, c.ps_state):
        users.setdefault(int(j), set()).add(int(proc[p]))
    for j in np.flatnonzero((state == hot) & (c.state_owner < 0)):
        for q in sorted(users.get(int(j), set()) - {hot}):
            s2 = state.copy()
            s2[j] = q
            yield f"{graph.state_names[j]} -> partition {q}", proc, s2


def _machine_stand_ins(graph: WorkloadGraph, busy: np.ndarray) -> set[int]:
    """The least busy partition of every machine, one machine standing for the machines exactly
    as busy, partition by partition (empty ones, mostly): empty partitions differ only in their
    place in the lock order."""
    c = graph.cost
    ppm = c.partitions_per_machine
    by_machine = busy[: c.machines * ppm].reshape(c.machines, ppm)
    alike = {}  # the first machine of each load profile stands for all
    for m in range(c.machines):
        alike.setdefault(tuple(np.sort(by_machine[m])), m)
    return {int(m * ppm + np.argmin(by_machine[m])) for m in alike.values()}


def _crowded_targets(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, touched: list[np.ndarray],
                     stand_ins: set[int], i: int) -> list[int]:
    """Where SP i may go off a crowded partition (a start with everything on one partition, on a
    big cluster, would otherwise price every SP on every partition, each step): the machines'
    stand-ins (`_machine_stand_ins`), and the partitions of what it works with (the SPs it
    streams to or from, or shares state with, and that state)."""
    c = graph.cost
    places = set(stand_ins)
    peers = set(c.pp_dst[c.pp_src == i].tolist()) | set(c.pp_src[c.pp_dst == i].tolist())
    mine = touched[i]
    if mine.size:
        peers |= set(c.ps_proc[np.isin(c.ps_state, mine)].tolist())
        places |= {int(q) for q in state[mine] if q != REPLICATED}
    places |= {int(proc[j]) for j in peers}
    return sorted(places)


def lock_order_swaps(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, load):
    """The busiest partitions (as `busiest_partition_moves` takes them) trading places with
    each other partition of their machine. Yields (label, proc, state)."""
    for hot in _busiest_partitions(load.partition):
        yield from _lock_order_swaps(proc, state, hot, graph.cost.partitions_per_machine)


def _lock_order_swaps(proc: np.ndarray, state: np.ndarray, hot: int, per_machine: int):
    """`hot` trades places with each other partition of its machine: the same placement by
    machine, but a distributed transaction locks partitions in ascending order and holds each
    lock while it waits for the next, so which of them comes later in that order is a
    different design (the simulator and the busy-time estimate both see it)."""
    first = hot - hot % per_machine
    for q in range(first, first + per_machine):
        if q == hot:
            continue
        yield f"partitions {hot} and {q} trade places", *_traded(proc, state, hot, q)


def _traded(proc: np.ndarray, state: np.ndarray, x: int, y: int) -> tuple[np.ndarray, np.ndarray]:
    """(proc, state) with partitions x and y trading places (all each holds goes to the other)."""
    return (np.where(proc == x, y, np.where(proc == y, x, proc)),
            np.where(state == x, y, np.where(state == y, x, state)))


def _trade_of(proc: np.ndarray, state: np.ndarray, p2: np.ndarray, s2: np.ndarray) -> tuple[int, int] | None:
    """The two partitions whose trading places turns (proc, state) into (p2, s2), if that is
    what the move does."""
    changed = np.concatenate([proc[p2 != proc], state[s2 != state]])
    values = np.unique(changed)
    if values.size != 2:
        return None
    x, y = int(values[0]), int(values[1])
    p3, s3 = _traded(proc, state, x, y)
    return (x, y) if np.array_equal(p3, p2) and np.array_equal(s3, s2) else None


def emptying_moves(proc: np.ndarray, state: np.ndarray, load):
    """The least busy partition running an SP moving all it holds (SPs and state) onto each
    other partition running an SP. Yields (label, proc, state).

    Why: the other moves take one SP (and its state) at a time off the busiest partition, so
    a design spread over more partitions than pays (every batch a few distributed transactions
    among lightly loaded partitions) can only be consolidated through steps that each cost
    before the last one gains."""
    used = sorted(set(proc.tolist()))
    if len(used) < 2:
        return
    idle = min(used, key=lambda q: (load.partition[q], q))
    for q in used:
        if q != idle:
            yield (f"partition {idle} emptied onto partition {q}", np.where(proc == idle, q, proc),
                   np.where(state == idle, q, state))


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


def random_starts(graph: WorkloadGraph, count: int, seed: int = 0) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """`count` random designs (label, proc, state), seeded: each SP on a random partition, the
    state where the advisor's rule puts it, windows with their owners.

    Why: the pool's designs come from a few searches that agree with each other, so every
    climb from them can end near the same local optimum; on the held-out generated dataflows a
    design on 4 or 8 machines missed what the search on 2 found from its random baseline."""
    c = graph.cost
    rng = np.random.default_rng(seed)
    n_parts = c.machines * c.partitions_per_machine
    owned = c.state_owner >= 0
    out = []
    for i in range(count):
        proc = rng.integers(0, n_parts, c.n_proc)
        state = place_state(c, proc, np.zeros(c.n_state, dtype=np.int64))
        state[owned] = proc[c.state_owner[owned]]
        out.append((f"random start #{i}", proc, state))
    return out


def climb_estimate(graph: WorkloadGraph, estimate: BusyEstimate, proc: np.ndarray, state: np.ndarray,
                   private: list[np.ndarray], touched: list[np.ndarray],
                   max_steps: int = CLIMB_STEPS, max_priced: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Hill climbing on the busy-time estimate alone (no simulation): each step takes the move
    off the busiest partition the estimate likes best, while it gains more than CLIMB_GAIN
    (and, with `max_priced`, until the climb has priced that many designs)."""
    current = estimate.estimate(proc, state)
    moves: list[str] = []
    priced = estimate.priced
    for _ in range(max_steps):
        if max_priced is not None and estimate.priced - priced >= max_priced:
            break
        bar = current.throughput_tps * (1 + CLIMB_GAIN)
        best = _best_by_estimate(estimate, chain(
            busiest_partition_moves(graph, proc, state, private, touched, current),
            lock_order_swaps(graph, proc, state, current)))
        if best is None or best[0].throughput_tps <= bar:  # a local optimum of the small moves
            best = _best_by_estimate(estimate, emptying_moves(proc, state, current))
            if best is None or best[0].throughput_tps <= bar:
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
    best = _best_by_estimate(estimate, trade_moves(graph, proc, state, private, touched, current))
    if best is None or best[0].throughput_tps <= current.throughput_tps * (1 + CLIMB_GAIN):
        return proc, state, []
    p2, s2, more = climb_estimate(graph, estimate, best[2], best[3], private, touched)
    return p2, s2, [best[1], *more]


def trade_moves(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
                touched: list[np.ndarray], load):
    """Each move off the busiest partitions (`busiest_partition_moves`) followed by the partition
    it sends things to trading places with each other partition of its machine."""
    per_machine = graph.cost.partitions_per_machine
    if per_machine < 2:
        return
    for label, p2, s2 in busiest_partition_moves(graph, proc, state, private, touched, load):
        to = np.unique(np.concatenate([p2[p2 != proc], s2[(s2 != state) & (s2 != REPLICATED)]]))
        if to.size != 1:
            continue
        q = int(to[0])
        first = q - q % per_machine
        for r in range(first, first + per_machine):
            if r != q:
                yield f"{label}, then partitions {q} and {r} trade places", *_traded(p2, s2, q, r)


def plateau_moves(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
                  touched: list[np.ndarray], load):
    """The moves off every partition that runs an SP but the busiest, the busiest first."""
    c = graph.cost
    n_parts = c.machines * c.partitions_per_machine
    first = _busiest_partitions(load.partition)[0]
    for hot in sorted(set(proc.tolist()) - {first}, key=lambda q: (-load.partition[q], q)):
        yield from _moves_off(graph, proc, state, private, touched, hot, n_parts, load.partition)


def _busiest_first(busy) -> np.ndarray:
    """Busy times of partitions and coordinators, busiest first."""
    return np.sort(np.concatenate([busy.partition, busy.coordinator]))[::-1]


def _less_loaded(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether busy times `a` (busiest first) are below `b`: at the first place where the two
    differ by more than CLIMB_GAIN, `a` is lower. Two designs whose busiest part is as busy (to
    the climb's own resolution) compare by the next, and so on."""
    for x, y in zip(a, b):
        if abs(x - y) > CLIMB_GAIN * max(x, y):
            return bool(x < y)
    return False


def _best_on_plateau(estimate: BusyEstimate, current, moves) -> tuple | None:
    """Of the moves whose busy times are below the design's (`_less_loaded`) with its bottleneck
    no busier, the one below the others (the first of equals); None where none is."""
    here = _busiest_first(current)
    best, best_busy = None, here
    for e, label, p2, s2 in priced_moves(estimate, moves):
        busy = _busiest_first(e)
        if (e.bottleneck_s <= current.bottleneck_s * (1 + CLIMB_GAIN) and _less_loaded(busy, here)
                and (best is None or _less_loaded(busy, best_busy))):
            best, best_busy = (e, label, p2, s2), busy
    return best


def priced_moves(estimate: BusyEstimate, moves) -> list[tuple]:
    """(BusyTime, label, proc, state) of each move (label, proc, state), in the order given,
    priced together (`BusyEstimate.estimate_many`)."""
    moves = list(moves)
    priced = estimate.estimate_many([(p2, s2) for _, p2, s2 in moves])
    return [(e, label, p2, s2) for e, (label, p2, s2) in zip(priced, moves)]


def _best_by_estimate(estimate: BusyEstimate, moves) -> tuple | None:
    """The (BusyTime, label, proc, state) of the move the estimate likes best (the first of
    equals), or None where there is none."""
    best = None
    for e, label, p2, s2 in priced_moves(estimate, moves):
        if best is None or e.throughput_tps > best[0].throughput_tps:
            best = (e, label, p2, s2)
    return best


def _by_estimate(estimate: BusyEstimate, moves) -> list[tuple]:
    """(estimated tuples/s, label, proc, state) of each move, in the order given."""
    return [(e.throughput_tps, label, p2, s2) for e, label, p2, s2 in priced_moves(estimate, moves)]


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
    sim_error = runs.simulator.error
    cal = runs.calibration
    estimate = BusyEstimate.of(graph, workload, getattr(cal, "params", cal))
    private = private_state(graph)
    touched = touched_state(graph)
    proc, state = np.array(proc_part, dtype=np.int64), np.array(state_part, dtype=np.int64)

    try:
        pilot = runs.pilot(proc, state, 20, label="simulated search")
    except sim_error:
        return Improvement(proc, state, 0.0, 0.0, 0, [])
    per_run = max(pilot.events / 20, 1.0) * BATCHES * 8  # a maximum-throughput search: ~8 runs
    if per_run > event_budget:  # the pick's own search alone would overspend it
        return Improvement(proc, state, 0.0, 0.0, 0, [], skipped=(
            f"one maximum-throughput search of the pick is about {per_run:,.0f} simulated events, "
            f"over the search's budget of {event_budget:,}"))
    spent, simulated = 0.0, 0
    fits = memory_check(graph, state)

    def simulate(p, s, to_beat: float | None = None) -> float:
        """Predicted tuples/s. With `to_beat`, a design that cannot beat it is not searched to
        the end: the figure is then below `to_beat` but not its own maximum. A design over the
        machines' memory from a start within it is 0 (never taken), not simulated."""
        nonlocal spent, simulated
        if not fits(s):
            return 0.0
        spent += per_run
        simulated += 1
        try:
            return float(runs.max_throughput(p, s, BATCHES, PREDICTION_TOLERANCE, label="simulated search",
                                             stop_below_tps=to_beat).throughput_tps)
        except sim_error:
            return 0.0

    start = best = simulate(proc, state)
    moves: list[str] = []
    tied: list[tuple] = []  # designs the simulator put within the tie of the best: (tps, proc, state, moves)

    def try_end(p2, s2, climbed: list[str], first: list[str], end_too: bool = True) -> None:
        """Simulate a climb's end (`end_too`), then where it leads across the plateau
        (`across_plateau`) and through a move joined with a trade of places (`via_a_trade`),
        each kept where the simulator puts it faster than the best by the tie tolerance (and
        remembered where it ties)."""
        nonlocal best, proc, state, moves
        tried = [(p2, s2, climbed)] if end_too else []
        for further in (across_plateau, via_a_trade):
            p3, s3, went = further(graph, estimate, p2, s2, private, touched)
            if went:
                tried.append((p3, s3, climbed + went))
        for p4, s4, taken in tried:
            tps = simulate(p4, s4, best * (1 + TIE_TOLERANCE))
            these = first + [f"{m} (estimate)" for m in taken]
            if tps > best * (1 + TIE_TOLERANCE):
                if best > tps * (1 - TIE_TOLERANCE):  # the one it replaces ties with it
                    tied.append((best, proc, state, moves))
                best, proc, state, moves = tps, p4, s4, these
            elif tps > best * (1 - TIE_TOLERANCE):
                tied.append((tps, p4, s4, these))

    # first the estimate's own optimum from here (free); the simulator says whether it pays
    p2, s2, climbed = climb_estimate(graph, estimate, proc, state, private, touched)
    bar = estimate.throughput_tps(p2, s2)  # what another start's climb must beat, by the estimate
    try_end(p2, s2, climbed, [], end_too=bool(climbed))
    # then from the pool's next best designs, and from its others within a budget: their
    # climbs' ends that the estimate puts above this one's, best first, simulated (a pool
    # design that starts lower can climb higher)
    def climb_from(label, p0, s0, max_priced: int | None = None) -> tuple | None:
        p2, s2, climbed = climb_estimate(graph, estimate, np.asarray(p0, dtype=np.int64),
                                         np.asarray(s0, dtype=np.int64), private, touched,
                                         max_priced=max_priced)
        e = estimate.throughput_tps(p2, s2)
        return (e, label, p2, s2, climbed) if e > bar * (1 + CLIMB_GAIN) else None

    ends = [climb_from(*t) for t in starts[:CLIMB_STARTS - 1]]
    more_starts = list(more_starts) + random_starts(graph, RANDOM_STARTS, seed)
    more, priced = [], estimate.priced
    start_tps = [e.throughput_tps for e in estimate.estimate_many([(t[1], t[2]) for t in more_starts])]
    for _tps, t in sorted(zip(start_tps, more_starts), key=lambda x: -x[0]):  # stable
        left = CLIMB_BUDGET - (estimate.priced - priced)
        if left <= 0:
            break
        more.append(climb_from(*t, max_priced=left))
    ends = [e for e in ends if e is not None]
    ends += sorted((e for e in more if e is not None), key=lambda t: -t[0])[:CLIMB_ENDS]
    for _e, label, p2, s2, climbed in sorted(ends, key=lambda t: -t[0]):  # stable: ties keep order
        try_end(p2, s2, climbed, [f"start from {label!r}"])

    def steps_from(best: float, proc: np.ndarray, state: np.ndarray, moves: list[str]) -> tuple:
        """The simulated steps from one design, while one pays and the budget lasts."""
        moves = list(moves)
        for _ in range(MAX_STEPS):
            if spent + TRIED_PER_STEP * per_run > event_budget:
                break
            found = step(best, proc, state)
            if found is None:
                break
            best, label, proc, state = found
            moves.append(label)
        return best, proc, state, moves

    def step(best: float, proc: np.ndarray, state: np.ndarray) -> tuple | None:
        """The step from a design: (tps, label, proc, state) of the move that pays, or None."""
        here = estimate.estimate(proc, state)
        tried = _by_estimate(estimate, busiest_partition_moves(graph, proc, state, private, touched, here))
        # a swap changes nothing but the lock order, which the estimate prices: simulated only
        # where the estimate sees it gain (else every step would spend simulations on no-ops)
        tried += [t for t in _by_estimate(estimate, lock_order_swaps(graph, proc, state, here))
                  if t[0] > here.throughput_tps * (1 + CLIMB_GAIN)]
        if not tried:
            return None
        tried.sort(key=lambda t: -t[0])  # stable: ties keep the order the moves were made in
        found, near = None, []
        for _est, label, p2, s2 in tried[:TRIED_PER_STEP]:
            tps = simulate(p2, s2, best * (1 + TIE_TOLERANCE))
            if tps > best * (1 + TIE_TOLERANCE) and (found is None or tps > found[0]):
                found = (tps, label, p2, s2)
            elif tps > best * (1 - TIE_TOLERANCE):  # within the tie either way (a lower bound)
                near.append((tps, label, p2, s2))
        if found is None:  # two moves that each tie can gain together: the best pairs first
            pairs = sorted(((a[0] + b[0], i, j) for i, a in enumerate(near) for j, b in enumerate(near) if i < j),
                           key=lambda t: -t[0])
            for _sum, i, j in pairs:
                joined = _joined(proc, state, near[i], near[j])
                if joined is None or spent + per_run > event_budget:
                    continue
                tps = simulate(joined[2], joined[3], best * (1 + TIE_TOLERANCE))
                if tps > best * (1 + TIE_TOLERANCE):
                    found = (tps, *joined[1:])
                    break
        # no small move pays: empty a partition, or make a move with a trade of places?
        for bigger in (emptying_moves(proc, state, here),
                       trade_moves(graph, proc, state, private, touched, here)):
            if found is not None or spent + per_run > event_budget:
                break
            move = _best_by_estimate(estimate, bigger)
            if move is not None and move[0].throughput_tps > here.throughput_tps * (1 + CLIMB_GAIN):
                tps = simulate(move[2], move[3], best * (1 + TIE_TOLERANCE))
                found = (tps, *move[1:]) if tps > best * (1 + TIE_TOLERANCE) else None
        return found

    best, proc, state, moves = steps_from(best, proc, state, moves)
    # a design the simulator could not tell from the best may lead further: the steps from the
    # fastest of those too (NEAR_STARTS), while the budget lasts, kept where they end faster
    # than the best by the tie
    others = sorted((t for t in tied if not (np.array_equal(t[1], proc) and np.array_equal(t[2], state))),
                    key=lambda t: -t[0])
    for tps, p2, s2, m2 in others[:NEAR_STARTS]:
        if spent + TRIED_PER_STEP * per_run > event_budget:
            break
        end = steps_from(tps, p2, s2, m2)
        if end[0] > best * (1 + TIE_TOLERANCE):
            best, proc, state, moves = end
    return Improvement(proc, state, start, best, simulated, moves, estimate.throughput_tps(proc, state))


def _joined(proc: np.ndarray, state: np.ndarray, first: tuple, second: tuple) -> tuple | None:
    """Two moves from (proc, state) made together, as (0.0, label, proc, state), or None where
    they place one SP or state item in two places.

    Why: two moves that each gain less than the tie tolerance can gain more together (two SPs
    that share a table, moved one at a time, each leave the other remote). Where one of them
    is two partitions trading places, the other move is made first and the two then trade
    (an SP sent to a partition goes where that partition's contents go)."""
    (_t1, label1, p1, s1), (_t2, label2, p2, s2) = first, second
    for trade, other in ((first, second), (second, first)):
        pair = _trade_of(proc, state, trade[2], trade[3])
        if pair is not None and _trade_of(proc, state, other[2], other[3]) is None:
            return (0.0, f"{label1} and {label2}", *_traded(other[2], other[3], *pair))
    moved_p1, moved_p2 = p1 != proc, p2 != proc
    moved_s1, moved_s2 = s1 != state, s2 != state
    both_p, both_s = moved_p1 & moved_p2, moved_s1 & moved_s2
    if (p1[both_p] != p2[both_p]).any() or (s1[both_s] != s2[both_s]).any():
        return None
    return (0.0, f"{label1} and {label2}", np.where(moved_p2, p2, p1), np.where(moved_s2, s2, s1))
