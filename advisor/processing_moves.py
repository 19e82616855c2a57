"""The SPs' local moves after METIS: `refine_processing` moves one SP at a time (taking the
state only it touches along, windows included) to the partition where the exact design cost
falls most, and places the state again (`advisor.placement.place_state`), until neither
changes anything. Every SP's moves are priced at once and screened (`_ProcessingMoves`); the
exact evaluation decides each move taken.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from advisor.placement import edges_by_key, place_state, single_accessor
from costmodel import REPLICATED, CostGraph, Weights


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
        order, self.ps_starts = edges_by_key(graph.ps_proc, n_proc)
        # edges sorted by SP once, so each SP's edges are one contiguous slice
        self.ps_s, self.ps_w = graph.ps_state[order], graph.ps_cost_weight[order]
        self.ps_sp = graph.ps_proc[order]
        src = np.concatenate([graph.pp_src, graph.pp_dst])
        dst = np.concatenate([graph.pp_dst, graph.pp_src])
        pw = np.concatenate([graph.pp_weight, graph.pp_weight])
        self.pp_order, self.pp_starts = edges_by_key(src, n_proc)
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
