"""Tabu local search on the exact design cost, for graphs cut into machines.

The search works on SPs (or nested groups contracted to one node) only: with processing
fixed, the state term is lowest when every state item sits where most of its access weight
is (state carries no load), so a design's cost here is its cost with state placed that way,
exactly as `placement.place_state` places it. Moving an SP therefore takes its private
state along, and moves the shared state it tips over. Its windows go with it: they are never
cut (their accesses weigh 0 here, as in the cost) and `place_state` pins them to it; a
window is never moved alone.

Each step evaluates the exact cost of moving every SP to every machine at once (numpy, one
matrix of SPs x machines); it takes the best move that is not tabu (moving an SP back to a
machine it just left), or the best swap of two SPs when that improves and no single move
does. Runs start from each given design, then restart from the best one seen with a random
kick (multi-start). What a step reads of an assignment (every move's total, the
tie-breaker, the best swap) is kept by assignment: on a small graph the runs come back to the
same few hundred assignments thousands of times, and a revisit reads it back. Budgets are
counted in steps, never in seconds, so the same seed gives
the same designs on a loaded machine too: the step budget shrinks with the size of the
move matrix (`STEP_WORK`), which bounds the time as a clock would, deterministically.
`time_budget_s` (off by default) is an optional cap for interactive use (`timed_out_` says
when it cut a run short; a run it cuts is not reproducible).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from costmodel import CostGraph, Weights

# Graphs whose SP-edges x machines matrix is larger than this are left to the greedy moves.
MAX_MATRIX = 4_000_000
# a restart moves 1/KICK_DIV of the SPs at random; a run stops after PATIENCE(n) steps
# without a new best
KICK_DIV = 4


def PATIENCE(n: int) -> int:
    return 4 * n + 20


# SPs at most for the scan of every swap (an n x n matrix per step)
MAX_SWAP_SCAN = 1500
# weight of the tie-breaking terms in the choice of a move (far below any real cost change)
TIE_SCALE = 1e-7
# matrix cells (edges or items, x machines) one search evaluates at most over all its steps:
# small graphs get `total_steps`, large ones proportionally fewer steps
STEP_WORK = 100_000_000  # about 3-4 s of numpy work here at most
# memory for the step views kept by assignment (`_Evaluator.step_view`), per search
SEEN_BYTES = 16_000_000


def step_cells(graph: CostGraph) -> int:
    """Cells of the dense matrices one step of the tabu search works through."""
    edges = graph.ps_proc.size + 2 * graph.pp_src.size
    return max(edges, graph.n_proc, graph.n_state) * graph.machines


def fits(graph: CostGraph) -> bool:
    """Whether the tabu search's dense per-step matrices stay small on this graph."""
    return graph.machines > 1 and graph.n_proc > 1 and step_cells(graph) <= MAX_MATRIX


class _Evaluator:
    """Exact costs of a processing assignment and of every single move from it."""

    def __init__(self, g: CostGraph, weights: Weights):
        self.g, self.w = g, weights
        n, m = g.n_proc, g.machines
        self.n, self.m = n, m
        # processing-to-state edges merged per (SP, state), sorted by SP
        key = g.ps_proc * max(g.n_state, 1) + g.ps_state
        uniq, inv = np.unique(key, return_inverse=True)
        # (accesses to windows weigh 0: never cut, not in the state term's total)
        self.e_w = np.bincount(inv, weights=g.ps_cost_weight) if uniq.size else np.zeros(0)
        self.e_v = uniq // max(g.n_state, 1)
        states, self.e_s = np.unique(uniq % max(g.n_state, 1), return_inverse=True)
        self.n_s = states.size
        self.ps_total = float(self.e_w.sum())
        # stream edges in both directions, loops left out (never cut, but in the total)
        loop = g.pp_src == g.pp_dst
        src, dst, w = g.pp_src[~loop], g.pp_dst[~loop], g.pp_weight[~loop]
        self.p_v = np.concatenate([src, dst])
        self.p_u = np.concatenate([dst, src])
        self.p_w = np.concatenate([w, w])
        order = np.argsort(self.p_v, kind="stable")
        self.p_v, self.p_u, self.p_w = self.p_v[order], self.p_u[order], self.p_w[order]
        self.e_start = np.searchsorted(self.e_v, np.arange(n + 1))
        self.p_start = np.searchsorted(self.p_v, np.arange(n + 1))
        self.pp_total = float(g.pp_weight.sum())
        self.load = g.proc_load
        self.total_load = float(g.proc_load.sum())
        idle = g.idle_capacity
        mean = (g.capacity.sum() + idle.sum()) / (m + idle.size)
        self.rc = g.capacity / mean
        self.lowest = min(self.rc.min(), idle.min() / mean if idle.size else np.inf)
        self.idle = idle.size > 0
        self.rows = np.arange(self.e_v.size)
        # what every step reuses: which SPs have edges and where their rows start, the columns
        self.e_has = self.e_start[1:] > self.e_start[:-1]
        self.e_from = self.e_start[:-1][self.e_has]
        self.p_has = self.p_start[1:] > self.p_start[:-1]
        self.p_from = self.p_start[:-1][self.p_has]
        self.cols = np.arange(m)
        self.procs = np.arange(n)
        self.e_w_col = self.e_w[:, None]
        self.p_w_col = self.p_w[:, None]
        self.e_w_sum = self.e_w.sum()
        self.load_over_rc = self.load[:, None] / self.rc[None, :]  # what a move adds to a machine
        self._moved = None  # `_loads_after_moves` of the current assignment
        self._pairs = None  # every (u, v) with u < v, built at the first swap scan
        self._seen: dict[bytes, dict] = {}  # `step_view` by assignment
        self._seen_limit = max(64, SEEN_BYTES // (24 * n * m))

    # -- state of one assignment ------------------------------------------------------------
    def reset(self, part: np.ndarray) -> None:
        self.part = part.astype(np.int64).copy()
        self._moved = None
        self.W = np.zeros((self.n_s, self.m))
        np.add.at(self.W, (self.e_s, self.part[self.e_v]), self.e_w)
        self.loads = np.bincount(self.part, weights=self.load, minlength=self.m)
        self.cut_pp = float((self.p_w * (self.part[self.p_v] != self.part[self.p_u])).sum()) / 2
        self.loop_pp = 0.0
        self._tops()
        self.total = self._total(self.state_cut(), self.cut_pp, self._balance(self.loads))

    def _tops(self, rows: np.ndarray | None = None) -> None:
        """Largest and second largest weight of each state item over machines (of `rows`
        only, after a move)."""
        if rows is None:
            rows = np.arange(self.n_s)
            self.t1i = np.zeros(self.n_s, dtype=np.int64)
            self.t1v = np.zeros(self.n_s)
            self.t2v = np.full(self.n_s, -np.inf)
        if rows.size == 0:
            return
        W = self.W[rows]
        if self.m >= 2:
            # (which machine holds the largest on a tie does not matter: `move_totals` reads
            # the largest weight other than a machine's, the same value either way)
            top2 = np.partition(W, self.m - 2, axis=1)[:, self.m - 2:]  # second, largest
            self.t1i[rows], self.t1v[rows], self.t2v[rows] = W.argmax(axis=1), top2[:, 1], top2[:, 0]
        else:
            self.t1i[rows], self.t1v[rows] = 0, W[:, 0]

    def state_cut(self) -> float:
        return float(self.e_w_sum - self.t1v.sum())

    def _balance(self, loads: np.ndarray) -> float:
        if self.m + int(self.idle) <= 1 or self.total_load <= 0:
            return 0.0
        rel = loads / self.rc
        high, low = float(rel.max()), float(rel.min())
        if self.idle:
            low = min(low, 0.0)
        return min(max((high - low) * self.lowest / self.total_load, 0.0), 1.0)

    def _total(self, cut_ps: float, cut_pp: float, balance: float) -> float:
        s = min(cut_ps / self.ps_total, 1.0) if self.ps_total > 0 else 0.0
        p = min(cut_pp / self.pp_total, 1.0) if self.pp_total > 0 else 0.0
        return self.w.alpha * s + self.w.beta * p + self.w.gamma * balance

    def _balances(self, loads: np.ndarray) -> np.ndarray:
        """`_balance` of each row of `loads` (k, m), the same operations element by element."""
        if self.m + int(self.idle) <= 1 or self.total_load <= 0:
            return np.zeros(loads.shape[0])
        rel = loads / self.rc
        high, low = rel.max(axis=1), rel.min(axis=1)
        if self.idle:
            low = np.minimum(low, 0.0)
        return np.minimum(np.maximum((high - low) * self.lowest / self.total_load, 0.0), 1.0)

    def _totals(self, cut_ps: np.ndarray, cut_pp: np.ndarray, balance: np.ndarray) -> np.ndarray:
        """`_total` of each element, the same operations."""
        s = np.minimum(cut_ps / self.ps_total, 1.0) if self.ps_total > 0 else 0.0
        p = np.minimum(cut_pp / self.pp_total, 1.0) if self.pp_total > 0 else 0.0
        return self.w.alpha * s + self.w.beta * p + self.w.gamma * balance

    # -- every move at once ---------------------------------------------------------------
    def step_view(self) -> dict:
        """What a step reads of the current assignment: "totals" (`move_totals`, staying put
        excluded: inf), "spread" (`spread_after`) and, once a step has asked, "swap" (the
        `TabuSearch._best_swap` answer). Kept by assignment: on a small graph the runs come
        back to the same few hundred assignments thousands of times. (A revisit reads what
        the first visit computed; the running state's last bits may differ by the path taken,
        far below the tie-breakers.) Never written to by the caller."""
        key = self.part.tobytes()
        seen = self._seen.get(key)
        if seen is None:
            if len(self._seen) >= self._seen_limit:
                self._seen.clear()
            totals = self.move_totals()
            totals[self.procs, self.part] = np.inf
            seen = self._seen[key] = {"totals": totals, "cut_totals": self.cut_totals,
                                      "spread": self.spread_after()}
        else:
            self.cut_totals = seen["cut_totals"]
        return seen

    def move_totals(self) -> np.ndarray:
        """(n, m): the exact total after moving SP v to machine b (column part[v]: now)."""
        n, m, part = self.n, self.m, self.part
        d_ps = np.zeros((n, m))
        if self.e_v.size:
            a = part[self.e_v]
            s, w = self.e_s, self.e_w
            t1v = self.t1v[s]
            best_other = np.where(self.t1i[s] == a, self.t2v[s], t1v)
            Ws = self.W[s]
            Wa = Ws[self.rows, a]
            new_max = np.maximum(np.maximum(best_other, Wa - w)[:, None], Ws + self.e_w_col)
            gain = t1v[:, None] - new_max  # increase of the state cut
            gain[self.rows, a] = 0.0
            if self.e_from.size == n:  # every SP has state edges
                d_ps = np.add.reduceat(gain, self.e_from, axis=0)
            else:
                d_ps[self.e_has] = np.add.reduceat(gain, self.e_from, axis=0)
        d_pp = np.zeros((n, m))
        if self.p_v.size:
            pu = part[self.p_u]
            now = (pu != part[self.p_v]) * self.p_w
            after = self.p_w_col * (pu[:, None] != self.cols)
            if self.p_from.size == n:
                d_pp = np.add.reduceat(after - now[:, None], self.p_from, axis=0)
            else:
                d_pp[self.p_has] = np.add.reduceat(after - now[:, None], self.p_from, axis=0)
        s_term = np.minimum((self.state_cut() + d_ps) / self.ps_total, 1.0) if self.ps_total > 0 else 0.0
        p_term = np.minimum((self.cut_pp + d_pp) / self.pp_total, 1.0) if self.pp_total > 0 else 0.0
        self.cut_totals = self.w.alpha * s_term + self.w.beta * p_term + np.zeros((n, m))
        return self.cut_totals + self.w.gamma * self._balance_all()

    def swap_balance(self) -> np.ndarray:
        """(n, n) load-balancing term after swapping the machines of SPs u and v (exact)."""
        n, m, part = self.n, self.m, self.part
        if m + int(self.idle) <= 1 or self.total_load <= 0:
            return np.zeros((n, n))
        rel = self.loads / self.rc
        # extremes over machines other than a and b, for every pair of machines
        order = np.argsort(rel, kind="stable")
        cols = np.arange(m)
        excl_max = np.full((m, m), -np.inf)
        excl_min = np.full((m, m), np.inf)
        for idx, out, pick in ((order[::-1][:3], excl_max, np.maximum),
                               (order[:3], excl_min, np.minimum)):
            done = np.zeros((m, m), dtype=bool)
            for i in idx:
                ok = ~done & (i != cols)[:, None] & (i != cols)[None, :]
                out[ok] = rel[i]
                done |= ok
        a, b = part[:, None], part[None, :]
        diff = self.load[None, :] - self.load[:, None]  # lv - lu
        rel_a = rel[a] + diff / self.rc[a]
        rel_b = rel[b] - diff / self.rc[b]
        hi = np.maximum(np.maximum(excl_max[a, b], rel_a), rel_b)
        lo = np.minimum(np.minimum(excl_min[a, b], rel_a), rel_b)
        if self.idle:
            lo = np.minimum(lo, 0.0)
        return np.clip((hi - lo) / (self.total_load / self.lowest), 0.0, 1.0)

    def _balance_all(self) -> np.ndarray:
        """(n, m) load-balancing term after each move, in O(n m) (top-3 / bottom-3 trick)."""
        n, m, part = self.n, self.m, self.part
        if m + int(self.idle) <= 1 or self.total_load <= 0:
            return np.zeros((n, m))
        rel = self.loads / self.rc
        k = min(3, m)
        order = np.argsort(rel, kind="stable")
        lo_i, hi_i = order[:k], order[::-1][:k]
        a = part

        def extreme_excluding(idx, fill):
            # value at the first of idx (in order) not equal to a[v] nor b: the first of idx
            # other than a[v] (its index first, its value v1), unless b is that one, then the
            # next one other than a[v] (v2)
            val = [float(rel[i]) for i in idx] + [fill] * (3 - k)
            ids = [int(i) for i in idx] + [-1] * (3 - k)
            at0, at1 = a == ids[0], a == ids[1]
            first = np.where(at0, ids[1], ids[0])
            v1 = np.where(at0, val[1], val[0])
            v2 = np.where(at0 | at1, val[2], val[1])
            return np.where(self.cols == first[:, None], v2[:, None], v1[:, None])

        mx_other = extreme_excluding(hi_i, -np.inf)
        mn_other = extreme_excluding(lo_i, np.inf)
        _, rel_a_after, rel_b_after = self._loads_after_moves()
        mx = np.maximum(np.maximum(mx_other, rel_a_after[:, None]), rel_b_after)
        mn = np.minimum(np.minimum(mn_other, rel_a_after[:, None]), rel_b_after)
        if self.idle:
            mn = np.minimum(mn, 0.0)
        out = np.minimum(np.maximum((mx - mn) / (self.total_load / self.lowest), 0.0), 1.0)
        out[self.procs, a] = self._balance(self.loads)
        return out

    def spread_after(self) -> np.ndarray:
        """(n, m) sum of squared relative machine loads after each move, in [0, 1]: a
        tie-breaker towards evener loads."""
        rel = self.loads / self.rc
        a = self.part
        base = float((rel ** 2).sum())
        ra, ra_after, rb_after = self._loads_after_moves()
        out = (base - ra ** 2 + ra_after ** 2)[:, None] - rel[None, :] ** 2 + rb_after ** 2
        out[self.procs, a] = base
        scale = (self.total_load / self.lowest) ** 2
        return out / scale if scale > 0 else np.zeros_like(out)

    def _loads_after_moves(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Relative loads for every move: of each SP's machine now and after it leaves (n),
        of every machine after it arrives (n, m). Kept until the next move: the balance
        term and the tie-breaker of one step both read them."""
        if self._moved is None:
            rel = self.loads / self.rc
            a = self.part
            ra = rel[a]
            self._moved = (ra, ra - self.load_over_rc[self.procs, a], rel[None, :] + self.load_over_rc)
        return self._moved

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every pair of SPs (u < v), as `np.triu_indices`: the swap scan reads them each step."""
        if self._pairs is None:
            self._pairs = np.triu_indices(self.n, 1)
        return self._pairs

    def swap_totals(self, us: np.ndarray, vs: np.ndarray) -> np.ndarray:
        """The exact total after swapping the machines of SPs us[i] and vs[i], for every pair
        at once, computed as `apply` computes it (u moved first, then v) on copies: the swap
        scan tries several pairs, and applying and undoing each cost four updates."""
        k = us.size
        a, b = self.part[us], self.part[vs]
        W = np.repeat(self.W[None], k, axis=0)  # (pair, state, machine)
        for who, frm, to in ((us, a, b), (vs, b, a)):  # u's rows first, then v's, as `apply` does
            lo, hi = self.e_start[who], self.e_start[who + 1]
            length = hi - lo
            pair = np.repeat(np.arange(k), length)
            edge = np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length) + np.repeat(lo, length)
            s, w = self.e_s[edge], self.e_w[edge]
            W[pair, s, np.repeat(frm, length)] -= w  # (SP, state) pairs are merged: no repeats
            W[pair, s, np.repeat(to, length)] += w
        state_cut = self.e_w_sum - W.max(axis=2).sum(axis=1)
        cut_pp = np.full(k, self.cut_pp)
        for i in range(k):  # each SP's few stream edges, summed as `apply` sums them
            u, v = int(us[i]), int(vs[i])
            lo, hi = self.p_start[u], self.p_start[u + 1]
            if hi > lo:
                pu = self.part[self.p_u[lo:hi]]
                cut_pp[i] += float((self.p_w[lo:hi] * ((pu != b[i]).astype(float) - (pu != a[i]))).sum())
            lo, hi = self.p_start[v], self.p_start[v + 1]
            if hi > lo:
                pv = self.part[self.p_u[lo:hi]]
                pv[self.p_u[lo:hi] == u] = b[i]  # u has moved by then
                cut_pp[i] += float((self.p_w[lo:hi] * ((pv != a[i]).astype(float) - (pv != b[i]))).sum())
        loads = np.repeat(self.loads[None], k, axis=0)
        rows = np.arange(k)
        for who, frm, to in ((us, a, b), (vs, b, a)):
            loads[rows, frm] -= self.load[who]
            loads[rows, to] += self.load[who]
        return self._totals(state_cut, cut_pp, self._balances(loads))

    # -- applying a move ------------------------------------------------------------------
    def apply(self, v: int, b: int) -> None:
        a = int(self.part[v])
        if a == b:
            return
        self._moved = None
        lo, hi = self.e_start[v], self.e_start[v + 1]
        s, w = self.e_s[lo:hi], self.e_w[lo:hi]
        self.W[s, a] -= w  # (SP, state) pairs are merged: no repeated s here
        self.W[s, b] += w
        lo, hi = self.p_start[v], self.p_start[v + 1]
        if hi > lo:
            pu = self.part[self.p_u[lo:hi]]
            self.cut_pp += float((self.p_w[lo:hi] * ((pu != b).astype(float) - (pu != a))).sum())
        self.loads[a] -= self.load[v]
        self.loads[b] += self.load[v]
        self.part[v] = b
        self._tops(s)
        self.total = self._total(self.state_cut(), self.cut_pp, self._balance(self.loads))


@dataclass
class TabuSearch:
    """Tabu search with moves and swaps from several starts. Results after `run`: `results_`
    (label, proc assignment, cost as this search counts it), best first; `steps_`,
    `timed_out_`."""

    weights: Weights
    seed: int = 0
    restarts: int = 4  # random kicks from the best design after the given starts
    max_starts: int = 4  # given starts used (the first ones)
    patience: int = 0  # steps without a new best before a run stops (0: 2n + 20)
    max_steps: int = 0  # steps of one run at most (0: 20n + 200)
    time_budget_s: float | None = None
    total_steps: int = 1200  # steps of all runs together at most
    swap_candidates: int = 6
    results_: list = field(default_factory=list, init=False)
    steps_: int = field(default=0, init=False)
    timed_out_: bool = field(default=False, init=False)
    step_limit_: int = field(default=0, init=False)

    def run(self, graph: CostGraph, starts: list[tuple[str, np.ndarray]]) -> "TabuSearch":
        self.results_, self.steps_, self.timed_out_ = [], 0, False
        if not fits(graph) or not starts:
            return self
        deadline = np.inf if self.time_budget_s is None else time.perf_counter() + self.time_budget_s
        ev = _Evaluator(graph, self.weights)
        self.step_limit_ = max(20, min(self.total_steps, STEP_WORK // max(1, step_cells(graph))))
        rng = np.random.default_rng(self.seed)
        best_part, best_total = None, np.inf
        for label, part in starts[:self.max_starts]:
            p, t = self._one_run(ev, part, rng, deadline)
            self.results_.append((f"tabu from {label}", p, t))
            if t < best_total - 1e-12:
                best_part, best_total = p, t
        for r in range(self.restarts):
            if self.timed_out_ or self.steps_ >= self.step_limit_:
                break
            kicked = best_part.copy()
            k = max(2, graph.n_proc // KICK_DIV)
            who = rng.choice(graph.n_proc, size=min(k, graph.n_proc), replace=False)
            kicked[who] = rng.integers(0, graph.machines, who.size)
            p, t = self._one_run(ev, kicked, rng, deadline)
            self.results_.append((f"tabu restart #{r + 1}", p, t))
            if t < best_total - 1e-12:
                best_part, best_total = p, t
        self.results_.sort(key=lambda x: x[2])
        return self

    def _one_run(self, ev: _Evaluator, start: np.ndarray, rng, deadline: float):
        n, m = ev.n, ev.m
        ev.reset(start)
        patience = self.patience or PATIENCE(n)
        max_steps = self.max_steps or 20 * n + 200
        tenure = max(3, min(n // 3, 12))
        tabu_until = np.zeros((n, m), dtype=np.int64)
        best_part, best_total = ev.part.copy(), ev.total
        since_best = 0
        for step in range(1, max_steps + 1):
            if self.steps_ >= self.step_limit_:
                break
            if deadline < np.inf and time.perf_counter() > deadline:
                self.timed_out_ = True
                break
            self.steps_ += 1
            view = ev.step_view()
            totals = view["totals"]
            allowed = (tabu_until <= step) | (totals < best_total - 1e-12)
            masked = np.where(allowed, totals, np.inf)
            # among moves of (nearly) equal cost, prefer evener loads, then chance: the
            # max - min balance term is flat for most moves and ties would cycle
            key = masked + TIE_SCALE * (view["spread"] + 0.01 * rng.random((n, m)))
            flat = int(np.argmin(key))
            v, b = divmod(flat, m)
            move_total = masked[v, b]
            if not move_total < ev.total - 1e-12 and ev.total <= best_total + 1e-12:
                # at the best local optimum so far: a swap may improve where no move does
                if "swap" not in view:
                    view["swap"] = self._best_swap(ev)
                swapped = view["swap"]
                if swapped is not None:
                    u, w_ = swapped
                    for x in (u, w_):
                        tabu_until[x, ev.part[x]] = step + tenure
                    pu, pw = ev.part[u], ev.part[w_]
                    ev.apply(u, pw)
                    ev.apply(w_, pu)
                    v = -1
            if v >= 0:
                if not np.isfinite(move_total):
                    break
                tabu_until[v, ev.part[v]] = step + tenure
                ev.apply(v, b)
            if ev.total < best_total - 1e-12:
                best_part, best_total, since_best = ev.part.copy(), ev.total, 0
            else:
                since_best += 1
                if since_best >= patience:
                    break
        return best_part, best_total

    def _best_swap(self, ev: _Evaluator):
        """The best improving swap of two SPs on different machines, among the pairs whose
        two single moves look best together; None when none improves."""
        n = ev.n
        if n < 2 or n > MAX_SWAP_SCAN or self.swap_candidates <= 0:
            return None
        part = ev.part
        # cut terms of the two moves added (exact unless u and v share state or a stream),
        # the balance of the swap exact
        cut_now = ev.total - ev.w.gamma * ev._balance(ev.loads)
        to_other = ev.cut_totals[:, part] - cut_now  # (u, v): u moves to v's machine
        approx = cut_now + to_other + to_other.T + ev.w.gamma * ev.swap_balance()
        approx[part[:, None] == part[None, :]] = np.inf
        iu = ev.pairs()
        flat = approx[iu]
        k = min(self.swap_candidates, int(np.isfinite(flat).sum()))
        if k == 0:
            return None
        pick = np.argsort(flat, kind="stable")[:k]
        us, vs = iu[0][pick], iu[1][pick]
        totals = ev.swap_totals(us, vs)
        i = int(np.argmin(totals))  # the first of the lowest, as a scan in `pick` order keeps it
        return (int(us[i]), int(vs[i])) if totals[i] < ev.total - 1e-12 else None
