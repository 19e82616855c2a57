"""The exact design cost of a processing assignment and of every single move and swap from
it, all at once (numpy: one matrix of SPs x machines): what each step of the tabu search
(`advisor.local_search`) reads.

It works on SPs only, with state placed where most of its access weight is (see
`advisor.local_search`). What a step reads of an assignment is kept by assignment
(`step_view`): on a small graph the runs come back to the same few hundred assignments
thousands of times, and a revisit reads it back.
"""
from __future__ import annotations

import numpy as np

from costmodel import CostGraph, Weights

# memory for the step views kept by assignment (`MoveTotals.step_view`), per search
SEEN_BYTES = 16_000_000


class MoveTotals:
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
        self.total = self._total(self.state_cut(), self.cut_pp, self.balance(self.loads))

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

    def balance(self, loads: np.ndarray) -> float:
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
        out[self.procs, a] = self.balance(self.loads)
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
        self.total = self._total(self.state_cut(), self.cut_pp, self.balance(self.loads))
