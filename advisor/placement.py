"""Local moves that lower the exact design cost: plain functions over a CostGraph and an
assignment (arrays of partition indices), used by the search after METIS.

- `place_state`: with processing fixed, each state item goes where the most weight of its
  accessors is (state carries no load, so this is optimal for the co-location term).
All of them work on a graph cut into machines (one partition per machine): the search places
partitions inside machines as a second stage, on each machine's subgraph.

- `refine_processing`: move one SP at a time (taking the state only it touches along) while
  the exact cost falls.
- `repair_memory`: move the cheapest state off machines over their memory limit.
- `fit_memory`: `repair_memory`, or, where windows (which cannot leave their owner) overflow
  a machine, moving their owner with them, whichever costs least.
- `replicate_read_mostly`: copy read-mostly items to every partition where that lowers cost.

Owned state (windows, `CostGraph.state_owner`) never moves alone: `pin_owned_state` puts it
on its owner's partition, `place_state` does so on every call, moving an SP takes its windows
along, and memory repair moves the owner rather than the window.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from costmodel import REPLICATED, CostGraph, Weights, machine_memory, score


def _grouped(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable order of edges grouped by key, and the start offset of every key (CSR)."""
    order = np.argsort(keys, kind="stable")
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=starts[1:])
    return order, starts


def single_accessor(graph: CostGraph) -> np.ndarray:
    """True for state items touched by exactly one SP (they can follow it anywhere)."""
    if graph.ps_proc.size == 0:
        return np.zeros(graph.n_state, dtype=bool)
    lowest = np.full(graph.n_state, np.iinfo(np.int64).max)
    highest = np.full(graph.n_state, -1)
    np.minimum.at(lowest, graph.ps_state, graph.ps_proc)
    np.maximum.at(highest, graph.ps_state, graph.ps_proc)
    return (highest >= 0) & (lowest == highest)


def pin_owned_state(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> np.ndarray:
    """The state assignment with every owned item (window) on its owner's partition."""
    owned = graph.owned_state
    if owned.size == 0:
        return state_part
    out = np.array(state_part, dtype=np.int64, copy=True)
    out[owned] = np.asarray(proc_part)[graph.state_owner[owned]]
    return out


def place_state(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> np.ndarray:
    """Each non-replicated state item moves to the machine holding most of its edge weight;
    ties keep the current one. Items with no edges stay put; owned items (windows) go to
    their owner's partition whatever their edges."""
    return pin_owned_state(graph, proc_part, _place_free_state(graph, proc_part, state_part))


def _place_free_state(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> np.ndarray:
    out = state_part.copy()
    if graph.ps_state.size == 0:
        return out
    n = graph.n_partitions
    if graph.n_state * n > 50_000_000:
        return _place_state_sparse(graph, proc_part, out)
    sums = np.bincount(graph.ps_state * n + proc_part[graph.ps_proc], weights=graph.ps_weight,
                       minlength=graph.n_state * n).reshape(graph.n_state, n)
    movable = sums.any(axis=1) & (out != REPLICATED)
    rows = np.arange(graph.n_state)
    current = np.where(out == REPLICATED, 0, out)
    sums[rows, current] += 1e-9 * (1 + sums[rows, current])  # keep the current one on ties
    out[movable] = sums.argmax(axis=1)[movable]
    return out


def _place_state_sparse(graph: CostGraph, proc_part: np.ndarray, out: np.ndarray) -> np.ndarray:
    """place_state for very many state items x partitions: sorts instead of a dense table."""
    n = graph.n_partitions
    keys = graph.ps_state * n + proc_part[graph.ps_proc]
    uniq, inv = np.unique(keys, return_inverse=True)
    sums = np.bincount(inv, weights=graph.ps_weight)
    u_state, u_part = uniq // n, uniq % n
    bonus = np.where(u_part == out[u_state], 1e-9 * (1 + sums), 0.0)
    order = np.lexsort((-(sums + bonus), u_state))
    first = np.ones(order.size, dtype=bool)
    first[1:] = u_state[order][1:] != u_state[order][:-1]
    best = order[first]
    target_state, target_part = u_state[best], u_part[best]
    movable = out[target_state] != REPLICATED
    out[target_state[movable]] = target_part[movable]
    return out


# the rounding of a double (unit roundoff): the screen of `_ProcessingMoves` bounds how far
# its own sums can be from the exact evaluation's by multiples of it
UNIT_ROUNDOFF = 2.0 ** -53
MOVE_TOLERANCE = 1e-12  # a move is taken where it lowers the cost by more than this
# SPs screened at once: a move taken makes the screen of the SPs after it stale, so screening
# a block at a time wastes less where SPs move often (a pass on 150 SPs moved up to 20;
# 64 took 0.40 of the time of the earlier loop on shared150, 12 0.50, all at once 0.46)
SCREEN_ROWS = 64


@dataclass
class _RunningCost:
    """What `_ProcessingMoves.improve` keeps up to date as it moves SPs: the load of each
    machine, the cut state and stream weight, and the state term's denominator (fixed)."""

    loads: np.ndarray
    cut_ps: float
    cut_pp: float
    ps_total: float


class _SpCosts(NamedTuple):
    """`_ProcessingMoves._exact_costs` of one SP: the cost after moving it to each partition,
    the state that follows it, and its state and stream cuts now and after each move."""

    total: np.ndarray
    following: np.ndarray
    now_ps: float
    after_ps: np.ndarray
    now_pp: float
    after_pp: np.ndarray


class _ProcessingMoves:
    """Exact cost deltas for moving one SP (with the state only it touches) to any partition."""

    def __init__(self, graph: CostGraph, weights: Weights):
        self.g = graph
        self.w = weights
        n_proc = graph.n_proc
        order, self.ps_starts = _grouped(graph.ps_proc, n_proc)
        # edges sorted by SP once, so each SP's edges are one contiguous slice
        self.ps_s, self.ps_w = graph.ps_state[order], graph.ps_cost_weight[order]
        self.ps_sp = graph.ps_proc[order]
        src = np.concatenate([graph.pp_src, graph.pp_dst])
        dst = np.concatenate([graph.pp_dst, graph.pp_src])
        pw = np.concatenate([graph.pp_weight, graph.pp_weight])
        self.pp_order, self.pp_starts = _grouped(src, n_proc)
        self.pp_nbr, self.pp_w = dst[self.pp_order], pw[self.pp_order]
        self.pp_sp = src[self.pp_order]
        # state only this SP touches, and the windows it owns, follow it when it moves
        self.ps_private = (single_accessor(graph) | (graph.state_owner >= 0))[self.ps_s]
        self.pp_total = graph.pp_weight.sum()
        self.load_total = graph.proc_load.sum()
        n = graph.n_partitions
        self.part_machine = np.arange(n) // graph.partitions_per_machine
        self.balance = BalanceForTargets(graph, self.load_total)
        self.rounding = _RoundingScale.of(self)

    def improve(self, proc_part: np.ndarray, state_part: np.ndarray, max_passes: int = 20,
                screen: bool = True) -> int:
        """Greedy passes over all SPs, each moved where the exact cost is lowest if that
        lowers it; returns the number of moves made (in place).

        With `screen`, the SPs whose moves cannot lower the cost are found SCREEN_ROWS at a
        time (`_may_move`, again after each move taken) and only the others are evaluated one
        by one: the same moves in the same order as evaluating every SP (`screen=False`), as
        the screen leaves out only SPs the exact evaluation would leave where they are. Why:
        a Python loop over every SP of every pass was 5-17 % of `recommend` on 150 SPs, and
        at most a few SPs of a pass move."""
        g = self.g
        if g.n_partitions == 1 or g.n_proc == 0:
            return 0
        run = _RunningCost(
            loads=np.bincount(proc_part // g.partitions_per_machine, weights=g.proc_load, minlength=g.machines),
            cut_ps=_state_cut(g, proc_part, state_part), ps_total=_state_total(g, state_part),
            cut_pp=float((g.pp_weight * (proc_part[g.pp_src] != proc_part[g.pp_dst])).sum()))
        moves = 0
        for _ in range(max_passes):
            moved = self._one_pass(proc_part, state_part, run, screen)
            moves += moved
            if not moved:
                break
        return moves

    def _one_pass(self, proc_part: np.ndarray, state_part: np.ndarray, run: _RunningCost, screen: bool) -> int:
        """One pass over the SPs in order (`improve`); returns the moves made."""
        n_proc, moved, first = self.g.n_proc, 0, 0
        while first < n_proc:
            last = min(n_proc, first + SCREEN_ROWS) if screen else n_proc
            candidates = self._may_move(first, last, proc_part, state_part, run) if screen else range(first, last)
            first = last
            for v in candidates:
                if self._move_if_better(int(v), proc_part, state_part, run):
                    moved += 1
                    first = int(v) + 1  # what the screen found is stale from here on
                    break
        return moved

    def _move_if_better(self, v: int, proc_part: np.ndarray, state_part: np.ndarray, run: _RunningCost) -> bool:
        """SP v evaluated exactly on every partition and moved (with the state that follows
        it) to the best if that lowers the cost by more than MOVE_TOLERANCE."""
        g = self.g
        cur = proc_part[v]
        priced = self._exact_costs(v, proc_part, state_part, run)
        total = priced.total
        q = int(np.argmin(total))
        if not (q != cur and total[q] < total[cur] - MOVE_TOLERANCE):
            return False
        proc_part[v] = q
        state_part[priced.following] = q
        run.loads[cur // g.partitions_per_machine] -= g.proc_load[v]
        run.loads[q // g.partitions_per_machine] += g.proc_load[v]
        run.cut_ps = run.cut_ps - priced.now_ps + priced.after_ps[q]
        run.cut_pp = run.cut_pp - priced.now_pp + priced.after_pp[q]
        return True

    def _exact_costs(self, v: int, proc_part: np.ndarray, state_part: np.ndarray, run: _RunningCost
                     ) -> "_SpCosts":
        """The exact cost after moving SP v to each partition, and the cuts it is made of."""
        g, w = self.g, self.w
        n = g.n_partitions
        cur = proc_part[v]
        lo, hi = self.ps_starts[v], self.ps_starts[v + 1]
        s, ew = self.ps_s[lo:hi], self.ps_w[lo:hi]
        sp = state_part[s]
        repl = sp == REPLICATED
        follow = self.ps_private[lo:hi] & ~repl
        shared = ~follow & ~repl
        # state cut of v's edges now, and for every target partition
        now_ps = float((ew * (shared & (sp != cur))).sum() + (ew * (follow & (sp != cur))).sum())
        after_ps = (ew[shared].sum() - np.bincount(sp[shared], weights=ew[shared], minlength=n))
        # processing cut of v's stream edges
        a, b = self.pp_starts[v], self.pp_starts[v + 1]
        nb_part = proc_part[self.pp_nbr[a:b]]
        nb_w = self.pp_w[a:b]
        now_pp = float((nb_w * (nb_part != cur)).sum())
        after_pp = nb_w.sum() - np.bincount(nb_part, weights=nb_w, minlength=n)
        # load balance for every target, in O(machines)
        bal = self.balance(run.loads, g.proc_load[v], cur // g.partitions_per_machine)[self.part_machine]
        st = _ratio(run.cut_ps - now_ps + after_ps, run.ps_total)
        pp = _ratio(run.cut_pp - now_pp + after_pp, self.pp_total)
        total = w.alpha * st + w.beta * pp + w.gamma * bal
        return _SpCosts(total, s[follow], now_ps, after_ps, now_pp, after_pp)

    def _may_move(self, first: int, last: int, proc_part: np.ndarray, state_part: np.ndarray, run: _RunningCost
                  ) -> np.ndarray:
        """The SPs `first` to `last` (excluded) that `_move_if_better` might move now: every
        SP's cost on every partition computed at once (`_totals_from`) and an SP left out only
        where no other partition is below its own by MOVE_TOLERANCE plus twice the most its
        sums, added in another order, can differ from the exact evaluation's
        (`_RoundingScale`). NaN anywhere keeps an SP in."""
        total = self._totals_from(first, last, proc_part, state_part, run)
        rows = np.arange(total.shape[0])
        cur = proc_part[first:last]
        stay = total[rows, cur].copy()
        total[rows, cur] = np.inf
        margin = 2 * self.rounding.bound_from(first, last, run) - MOVE_TOLERANCE
        kept = ~(total.min(axis=1) - stay >= margin)
        return np.flatnonzero(kept) + first

    def _totals_from(self, first: int, last: int, proc_part: np.ndarray, state_part: np.ndarray,
                     run: _RunningCost) -> np.ndarray:
        """(SPs `first` to `last` excluded, partitions): the cost after moving each SP to each
        partition, as `_move_if_better` prices it, for all of them at once (its sums in
        another order)."""
        g, w = self.g, self.w
        n, k = g.n_partitions, last - first
        cur = proc_part[first:last]
        lo, hi = self.ps_starts[first], self.ps_starts[last]
        sp_of, ew = self.ps_sp[lo:hi] - first, self.ps_w[lo:hi]
        sp = state_part[self.ps_s[lo:hi]]
        repl = sp == REPLICATED
        shared = ~self.ps_private[lo:hi] & ~repl
        now_ps = np.bincount(sp_of, weights=ew * (~repl & (sp != cur[sp_of])), minlength=k)
        after_ps = _sums_to_each(sp_of[shared], sp[shared], ew[shared], k, n)
        a, b = self.pp_starts[first], self.pp_starts[last]
        pp_of, nb_w = self.pp_sp[a:b] - first, self.pp_w[a:b]
        nb_part = proc_part[self.pp_nbr[a:b]]
        now_pp = np.bincount(pp_of, weights=nb_w * (nb_part != cur[pp_of]), minlength=k)
        after_pp = _sums_to_each(pp_of, nb_part, nb_w, k, n)
        ppm = g.partitions_per_machine
        bal = self.balance.for_each(run.loads, g.proc_load[first:last], cur // ppm)[:, self.part_machine]
        st = _ratio(run.cut_ps - now_ps[:, None] + after_ps, run.ps_total)
        pp = _ratio(run.cut_pp - now_pp[:, None] + after_pp, self.pp_total)
        return w.alpha * st + w.beta * pp + w.gamma * bal


def _sums_to_each(owner: np.ndarray, part: np.ndarray, weight: np.ndarray, k: int, n: int) -> np.ndarray:
    """(k, n): for each owner, the weight of its edges minus the weight of those on each
    partition (what stays cut after it moves there)."""
    if owner.size == 0:
        return np.zeros((k, n))
    own = np.bincount(owner, weights=weight, minlength=k)
    on_each = np.bincount(owner * n + part, weights=weight, minlength=k * n).reshape(k, n)
    return own[:, None] - on_each


@dataclass
class _RoundingScale:
    """How far `_ProcessingMoves._totals_from` can be from `_move_if_better`'s exact figures,
    per SP: the two add the same terms in another order, each of the k terms of a sum s off
    by at most k units of roundoff of the sum of their magnitudes, and every further step
    (subtracting from the running cut, dividing by the total, weighting, adding the terms,
    the balance) by one unit of its magnitude. The bound below is 8x that, at least."""

    ps_scale: np.ndarray  # per SP: (state edges + 4) x the magnitude of its state weight
    ps_count: np.ndarray  # per SP: state edges + 4
    pp_scale: np.ndarray
    pp_count: np.ndarray
    alpha: float
    beta: float
    pp_total: float
    floor: float  # the figures' own magnitude: |alpha| + |beta| + |gamma|

    @classmethod
    def of(cls, moves: "_ProcessingMoves") -> "_RoundingScale":
        n_proc = moves.g.n_proc
        ps_count = np.diff(moves.ps_starts).astype(float) + 4
        pp_count = np.diff(moves.pp_starts).astype(float) + 4
        ps_abs = np.bincount(moves.ps_sp, weights=np.abs(moves.ps_w), minlength=n_proc)
        pp_abs = np.bincount(moves.pp_sp, weights=np.abs(moves.pp_w), minlength=n_proc)
        w = moves.w
        alpha, beta, gamma = (abs(float(x)) for x in (w.alpha, w.beta, w.gamma))
        return cls(ps_count * 2 * ps_abs, ps_count, pp_count * 2 * pp_abs, pp_count, alpha, beta,
                   float(moves.pp_total), alpha + beta + gamma)

    def bound_from(self, first: int, last: int, run: _RunningCost) -> np.ndarray:
        """The bound for each SP `first` to `last` (excluded), with the running cuts as they are."""
        bound = np.full(last - first, self.floor)
        sps = slice(first, last)
        if run.ps_total > 0:
            bound += self.alpha * (self.ps_count[sps] * abs(run.cut_ps) + self.ps_scale[sps]) / run.ps_total
        if self.pp_total > 0:
            bound += self.beta * (self.pp_count[sps] * abs(run.cut_pp) + self.pp_scale[sps]) / self.pp_total
        return 8 * UNIT_ROUNDOFF * bound


class BalanceForTargets:
    """The load-balancing term after moving some load from its machine to each machine
    (its own: unchanged). Few machines: a small dense table; many: O(machines) per call,
    since only the two highest and lowest other machines matter."""

    DENSE_UP_TO = 64

    def __init__(self, graph: CostGraph, total: float):
        m, idle = graph.machines, graph.idle_capacity
        self.m, self.total, self.idle = m, total, idle.size > 0
        self.off = m + idle.size <= 1 or total <= 0
        mean = (graph.capacity.sum() + idle.sum()) / (m + idle.size)
        self.rc = graph.capacity / mean
        self.lowest = min(self.rc.min(), idle.min() / mean if idle.size else np.inf)
        self.diag = np.arange(m)

    def __call__(self, loads: np.ndarray, load: float, current: int) -> np.ndarray:
        m, rc = self.m, self.rc
        if self.off:
            return np.zeros(m)
        rel = loads / rc
        rel[current] -= load / rc[current]  # the load leaves its machine
        target = rel + load / rc  # ... and arrives on the target
        if m <= self.DENSE_UP_TO:
            table = np.repeat(rel[None, :], m, axis=0)
            table[self.diag, self.diag] = target
            high, low = table.max(axis=1), table.min(axis=1)
        else:
            hi = np.argpartition(-rel, 1)[:2]
            hi = hi[np.argsort(-rel[hi], kind="stable")]
            lo = np.argpartition(rel, 1)[:2]
            lo = lo[np.argsort(rel[lo], kind="stable")]
            high = np.maximum(np.where(self.diag == hi[0], rel[hi[1]], rel[hi[0]]), target)
            low = np.minimum(np.where(self.diag == lo[0], rel[lo[1]], rel[lo[0]]), target)
        if self.idle:
            low = np.minimum(low, 0.0)
        return _unit_interval((high - low) * (self.lowest / self.total))

    def for_each(self, loads: np.ndarray, load: np.ndarray, current: np.ndarray) -> np.ndarray:
        """(len(load), machines): `self(loads, load[i], current[i])` for every i at once, the
        same arithmetic element by element (the highest and lowest of the other machines are
        exact whichever way they are found)."""
        k, m, rc = load.size, self.m, self.rc
        if self.off:
            return np.zeros((k, m))
        rows = np.arange(k)
        rel = np.repeat((loads / rc)[None, :], k, axis=0)
        rel[rows, current] -= load / rc[current]
        target = rel + load[:, None] / rc[None, :]
        high = np.maximum(_extreme_of_others(rel, np.argmax, m - 2, m - 1, -np.inf), target)
        low = np.minimum(_extreme_of_others(rel, np.argmin, 1, 0, np.inf), target)
        if self.idle:
            low = np.minimum(low, 0.0)
        return _unit_interval((high - low) * (self.lowest / self.total))


def _extreme_of_others(rel: np.ndarray, arg_extreme, second: int, first: int, none: float) -> np.ndarray:
    """(k, m): for each row and column q, the extreme (by `arg_extreme`) of the row's other
    columns; `first` and `second` are where the extreme and the runner-up fall in a row
    sorted ascending; `none` where a row has one column."""
    k, m = rel.shape
    if m < 2:
        return np.full((k, m), none)
    ordered = np.partition(rel, [min(first, second), max(first, second)], axis=1)
    at = arg_extreme(rel, axis=1)
    return np.where(np.arange(m)[None, :] == at[:, None], ordered[:, second, None], ordered[:, first, None])


def _unit_interval(x):
    """np.clip(x, 0, 1) without its Python wrapper (called per SP and pass)."""
    return np.minimum(np.maximum(x, 0.0), 1.0)


def _ratio(cut, total):
    return _unit_interval(cut / total) if total > 0 else np.zeros_like(np.asarray(cut, dtype=float))


def _state_total(graph: CostGraph, state_part: np.ndarray) -> float:
    """The state term's denominator, as costmodel defines it (replicated writes count once
    per other copy)."""
    if graph.ps_weight.size == 0:
        return 0.0
    repl_write = (state_part[graph.ps_state] == REPLICATED) & graph.ps_write
    factor = np.where(repl_write, max(graph.cluster_machines - 1, 1), 1.0)
    return float((graph.ps_cost_weight * factor).sum())


def _state_cut(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> float:
    """Cut state weight, replicated writes included (they do not depend on where SPs are)."""
    if graph.ps_weight.size == 0:
        return 0.0
    sp = state_part[graph.ps_state]
    repl = sp == REPLICATED
    cut = ~repl & (proc_part[graph.ps_proc] != sp)
    repl_cut = (repl & graph.ps_write) * max(graph.cluster_machines - 1, 0)
    return float((graph.ps_cost_weight * (cut + repl_cut)).sum())


def refine_processing(graph: CostGraph, weights: Weights, proc_part: np.ndarray,
                      state_part: np.ndarray, max_rounds: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Alternate SP moves and optimal state placement until neither changes anything."""
    proc_part, state_part = proc_part.copy(), state_part.copy()
    moves = _ProcessingMoves(graph, weights)
    for _ in range(max_rounds):
        before = state_part.copy()
        state_part = place_state(graph, proc_part, state_part)
        moved = moves.improve(proc_part, state_part)
        if moved == 0 and np.array_equal(before, state_part):
            break
    return proc_part, state_part


def repair_memory(graph: CostGraph, proc_part: np.ndarray, state_part: np.ndarray) -> np.ndarray:
    """Move state off machines over their memory limit, cheapest cut first, to the machine
    with room where the item has most weight. Returns the new state assignment; the result
    can still be infeasible when the state does not fit the cluster at all."""
    limit = graph.memory_limit_bytes
    if limit is None:
        return state_part
    state_part = state_part.copy()
    ppm = graph.partitions_per_machine
    # replicated items first: un-replicate when copies overflow
    mem = machine_memory(graph, state_part)
    if (mem > limit).any():
        for j in np.flatnonzero(state_part == REPLICATED)[np.argsort(-graph.state_bytes[state_part == REPLICATED], kind="stable")]:
            state_part[j] = 0
            mem = machine_memory(graph, state_part)
            if not (mem > limit).any():
                break
        state_part = place_state(graph, proc_part, state_part)
        mem = machine_memory(graph, state_part)
    if not (mem > limit).any():
        return state_part
    # weight of each state item towards each machine
    n_m = graph.machines
    affinity = np.zeros((graph.n_state, n_m))
    if graph.ps_state.size:
        np.add.at(affinity, (graph.ps_state, proc_part[graph.ps_proc] // ppm), graph.ps_weight)
    for m in np.flatnonzero(mem > limit):
        # owned items (windows) stay with their owner: `move_owners_for_memory` moves those
        on_m = np.flatnonzero((state_part != REPLICATED) & (state_part // ppm == m)
                              & (graph.state_owner < 0))
        # least affinity to its machine per byte moves first
        order = on_m[np.argsort(affinity[on_m, m] / np.maximum(graph.state_bytes[on_m], 1), kind="stable")]
        for j in order:
            if mem[m] <= limit:
                break
            room = limit - mem - graph.state_bytes[j]
            room[m] = -np.inf
            ok = np.flatnonzero(room >= 0)
            if ok.size == 0:
                continue
            target = ok[np.argmax(affinity[j, ok] + 1e-12 * room[ok])]
            # the partition of that machine where its accessors are, else the first one
            state_part[j] = target * ppm + _best_partition_in_machine(graph, proc_part, j, target)
            mem[m] -= graph.state_bytes[j]
            mem[target] += graph.state_bytes[j]
    return state_part


# owners tried per machine over its limit (the ones carrying the most window bytes)
OWNERS_TRIED = 8


def fit_memory(graph: CostGraph, weights: Weights, proc_part: np.ndarray,
               state_part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`repair_memory`, and where a machine over its limit holds windows (which cannot leave
    their owner), also each way of moving one of their owners, windows along, to a machine
    with room for them, its free state then placed and repaired again: the option with the
    lowest exact cost among those that fit (else the smallest overflow) wins, round after
    round, until every machine fits or moving an owner no longer helps. What still does not
    fit is reported infeasible, as for tables. Works on a graph cut into machines."""
    limit = graph.memory_limit_bytes
    if limit is None or not graph.has_owned_state or graph.machines < 2:
        return proc_part, repair_memory(graph, proc_part, state_part)
    owned = graph.owned_state
    ppm = graph.partitions_per_machine
    carried = np.bincount(graph.state_owner[owned], weights=graph.state_bytes[owned],
                          minlength=graph.n_proc)

    def rank(p, s):
        c = score(graph, p, s, weights)
        return (not c.feasible, c.worst_overflow_mb, c.total)

    for _ in range(graph.n_proc):
        mem = machine_memory(graph, state_part)
        repaired = repair_memory(graph, proc_part, state_part)
        best = (rank(proc_part, repaired), proc_part, repaired)
        if not best[0][0] and not (mem > limit).any():
            break
        for m in np.flatnonzero(mem > limit):
            owners = np.flatnonzero((proc_part // ppm == m) & (carried > 0))
            owners = owners[np.argsort(-carried[owners], kind="stable")][:OWNERS_TRIED]
            for v in owners:
                for t in np.flatnonzero(mem + carried[v] <= limit):
                    trial_p = proc_part.copy()
                    trial_p[v] = t * ppm
                    trial_s = repair_memory(graph, trial_p, place_state(graph, trial_p, state_part))
                    key = rank(trial_p, trial_s)
                    if key < best[0]:
                        best = (key, trial_p, trial_s)
        if best[1] is proc_part:  # no owner move beats repairing the free state alone
            return proc_part, best[2]
        proc_part, state_part = best[1], best[2]
    return proc_part, state_part


def _best_partition_in_machine(graph: CostGraph, proc_part: np.ndarray, j: int, machine: int) -> int:
    ppm = graph.partitions_per_machine
    mask = graph.ps_state == j
    parts = proc_part[graph.ps_proc[mask]]
    inside = parts // ppm == machine
    if not inside.any():
        return 0
    return int(np.bincount(parts[inside] % ppm, weights=graph.ps_weight[mask][inside], minlength=ppm).argmax())


def replicate_read_mostly(graph: CostGraph, weights: Weights, proc_part: np.ndarray,
                          state_part: np.ndarray, read_mostly: np.ndarray) -> np.ndarray:
    """Replicate each read-mostly item when that lowers the exact cost and fits memory."""
    best = state_part.copy()
    best_cost = score(graph, proc_part, best, weights)
    for j in np.flatnonzero(read_mostly & (graph.state_owner < 0)):  # a window has one copy
        trial = best.copy()
        trial[j] = REPLICATED
        cost = score(graph, proc_part, trial, weights)
        if cost.feasible and cost.total < best_cost.total - 1e-12:
            best, best_cost = trial, cost
    return best
