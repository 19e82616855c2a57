"""The designs one step from a design that the searches on the busy-time estimate and the
simulator look at: moves off the busiest partitions (an SP, with the state only it touches or
all it touches; a state item to a partition of its users; an SP that reaches the busiest pulled
onto it), a block of SPs that share state on the busiest moved with that state, partitions trading places in the lock order, emptying a partition, a move made with a
trade of places, the moves off the partitions behind the busiest, and seeded random designs.

Why a module of its own: a neighbourhood is plain data (label, SP partitions, state partitions),
so the climbs on the estimate (`advisor.estimate_climb`), the simulated search
(`advisor.sim_local_search`) and the migration pick (`advisor.migration_pick`) take the same
moves and price or simulate them as each needs.
"""
from __future__ import annotations

import numpy as np

from costmodel import REPLICATED
from costmodel.arrays import sorted_unique
from costmodel.graph import WorkloadGraph
from advisor.placement import place_state

NEAR_BUSIEST = 0.10  # moves are also tried off the next busiest partition when this close
CROWDED_MOVES = 200  # SPs on a partition x other partitions above which each SP tries fewer places


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


def block_moves(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
                touched: list[np.ndarray], load):
    """Off the busiest partitions (as `busiest_partition_moves` takes them), each block of SPs
    that share state held there moved together with it (`_block_moves`). Yields (label, proc,
    state). A bigger step than those: the climbs and the simulated steps take one only where
    no small move gains, as they empty a partition."""
    n_parts = graph.cost.machines * graph.cost.partitions_per_machine
    for hot in _busiest_partitions(load.partition):
        yield from _block_moves(graph, proc, state, private, touched, hot, n_parts, load.partition)


def _block_moves(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
                 touched: list[np.ndarray], hot: int, n_parts: int, busy: np.ndarray):
    """Each SP on the busiest partition with the SPs there that share state held there (its
    block: two or more, not all of the partition's), moved together with that state and their
    private state to every other partition.

    Why: one SP moved off alone leaves its shared tables behind (or takes them and leaves its
    peers remote), so every single move of a group that shares tables can lose by the
    estimate, and a climb then stays where two groups are doubled up on one partition (on a
    100-SP dataflow on 24 machines the picks of three seeds ranged over 20 %;
    docs/measurements.md, Stop 63)."""
    on_hot = np.flatnonzero(proc == hot)
    held = np.flatnonzero(state == hot)
    if on_hot.size < 3 or held.size == 0:  # a block is two SPs at least, and not all of them
        return
    column = np.full(state.size, -1, dtype=np.int64)
    column[held] = np.arange(held.size)
    uses = np.zeros((on_hot.size, held.size), dtype=np.int64)  # SP on hot x state held there
    for r, i in enumerate(on_hot):
        cols = column[touched[i]]
        uses[r, cols[cols >= 0]] = 1
    shares = (uses @ uses.T) > 0
    stand_ins = _machine_stand_ins(graph, busy) if on_hot.size * (n_parts - 1) > CROWDED_MOVES else None
    seen: set[tuple[int, ...]] = set()
    for r, i in enumerate(on_hot):
        members = on_hot[shares[r]]
        if members.size < 2 or members.size == on_hot.size or tuple(members) in seen:
            continue
        seen.add(tuple(members))
        items = np.union1d(held[uses[shares[r]].any(axis=0)],
                           np.concatenate([private[k] for k in members]).astype(np.int64))
        names = [graph.proc_names[k] for k in members]
        label = "+".join(names) if len(names) <= 3 else f"{'+'.join(names[:2])}+{len(names) - 2} more"
        for q in (range(n_parts) if stand_ins is None else _crowded_targets(graph, proc, state, touched,
                                                                            stand_ins, int(i))):
            if q == hot:
                continue
            p2, s2 = proc.copy(), state.copy()
            p2[members] = q
            s2[items] = np.where(s2[items] == REPLICATED, REPLICATED, q)
            yield f"{label} with their state -> partition {q}", p2, s2


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
    order = [int(p) for p in np.lexsort((np.arange(busy.size), -busy))[:2]]  # numpy: 10^6 partitions
    return [p for k, p in enumerate(order) if k == 0 or busy[p] >= (1.0 - NEAR_BUSIEST) * busy[order[0]]]


def _moves_off(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
               touched: list[np.ndarray], hot: int, n_parts: int, busy: np.ndarray):
    """The moves off one partition (see `busiest_partition_moves`)."""
    c = graph.cost
    on_hot = np.flatnonzero(proc == hot)
    stand_ins = _machine_stand_ins(graph, busy) if on_hot.size * (n_parts - 1) > CROWDED_MOVES else None
    for i in on_hot:
        mine, name = private[i], graph.proc_names[i]
        # the state it touches that moves too (a replicated table stays), where that is more
        also = None if np.array_equal(touched[i], mine) else touched[i][state[touched[i]] != REPLICATED]
        for q in (range(n_parts) if stand_ins is None else _crowded_targets(graph, proc, state, touched,
                                                                            stand_ins, int(i))):
            if q == hot:
                continue
            p2, s2 = proc.copy(), state.copy()
            p2[i] = q
            s2[mine] = q  # its windows and private tables go with it
            yield f"{name} -> partition {q}", p2, s2
            if also is not None:
                p3, s3 = p2.copy(), s2.copy()
                s3[also] = q
                yield f"{name} with all its state -> partition {q}", p3, s3
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
    # the first machine of each load profile stands for all; found by numpy, not a loop over
    # the machines (a million of them took a minute of `recommend -m 1000000`); + 0.0 makes
    # -0.0 the 0.0 it equals, as the rows are compared byte by byte
    _, first = np.unique(np.sort(by_machine, axis=1) + 0.0, axis=0, return_index=True)
    least = np.argmin(by_machine, axis=1)
    return {int(m * ppm + least[m]) for m in first}


def _crowded_targets(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, touched: list[np.ndarray],
                     stand_ins: set[int], i: int) -> list[int]:
    """Where SP i may go off a crowded partition (a start with everything on one partition, on a
    big cluster, would otherwise price every SP on every partition, each step): the machines'
    stand-ins (`_machine_stand_ins`), and the partitions of what it works with (the SPs it
    streams to or from, or shares state with, and that state)."""
    c = graph.cost
    peers = [c.pp_dst[c.pp_src == i], c.pp_src[c.pp_dst == i]]
    mine = touched[i]
    if mine.size:  # (a mask, not np.isin: this runs for every SP of the partition, each step)
        shared = np.zeros(c.n_state, dtype=bool)
        shared[mine] = True
        peers.append(c.ps_proc[shared[c.ps_state]])
    held = state[mine]
    return sorted(set(stand_ins) | set(held[held != REPLICATED].tolist()) | set(proc[np.concatenate(peers)].tolist()))


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
    values = sorted_unique(changed)
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


def trade_moves(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray, private: list[np.ndarray],
                touched: list[np.ndarray], load):
    """Each move off the busiest partitions (`busiest_partition_moves`) followed by the partition
    it sends things to trading places with each other partition of its machine."""
    per_machine = graph.cost.partitions_per_machine
    if per_machine < 2:
        return
    for label, p2, s2 in busiest_partition_moves(graph, proc, state, private, touched, load):
        to = sorted_unique(np.concatenate([p2[p2 != proc], s2[(s2 != state) & (s2 != REPLICATED)]]))
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


def joined_moves(proc: np.ndarray, state: np.ndarray, first: tuple, second: tuple) -> tuple | None:
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


def empty_machine_stand_ins(graph: WorkloadGraph, proc: np.ndarray, state: np.ndarray,
                            special_machine: int | None = None) -> np.ndarray:
    """For each partition, the partition that stands for it in a design one move from (proc,
    state): on a machine that holds nothing, the same partition of the first such machine at
    the same place in the lock order (as many used partitions before it); elsewhere itself.

    Why: moved to either of two such machines, an SP or a state item makes two designs the
    simulator cannot tell apart (identical machines, the same lock order), and a search that
    simulates both spends its budget twice on one design. `special_machine` (the central
    scheduler's, where it has one) stands only for itself; machines of unequal capacity, each
    for itself."""
    c = graph.cost
    ppm = c.partitions_per_machine
    n_parts = c.machines * ppm
    stand = np.arange(n_parts)
    if not np.allclose(c.capacity, c.capacity[0]):
        return stand
    used = np.zeros(n_parts, dtype=bool)
    used[proc] = True
    used[state[state != REPLICATED]] = True
    empty = np.flatnonzero(~used.reshape(c.machines, ppm).any(axis=1))
    if special_machine is not None:
        empty = empty[empty != special_machine]
    before = np.concatenate([[0], np.cumsum(used)])[empty * ppm]  # used partitions before each
    _, first, which = np.unique(before, return_index=True, return_inverse=True)
    on_empty = (empty[:, None] * ppm + np.arange(ppm)).ravel()
    stand[on_empty] = (empty[first[which]][:, None] * ppm + np.arange(ppm)).ravel()
    return stand

