"""Tabu local search on the exact design cost, for graphs cut into machines.

The search works on SPs (or nested groups contracted to one node) only: with processing
fixed, the state term is lowest when every state item sits where most of its access weight
is (state carries no load), so a design's cost here is its cost with state placed that way,
exactly as `placement.place_state` places it. Moving an SP therefore takes its private
state along, and moves the shared state it tips over. Its windows go with it: they are never
cut (their accesses weigh 0 here, as in the cost) and `place_state` pins them to it; a
window is never moved alone.

Each step evaluates the exact cost of moving every SP to every machine at once
(`advisor.move_totals.MoveTotals`: numpy, one matrix of SPs x machines); it takes the best move that is not tabu (moving an SP back to a
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

from advisor.move_totals import MoveTotals
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


def step_cells(graph: CostGraph) -> int:
    """Cells of the dense matrices one step of the tabu search works through."""
    edges = graph.ps_proc.size + 2 * graph.pp_src.size
    return max(edges, graph.n_proc, graph.n_state) * graph.machines


def fits(graph: CostGraph) -> bool:
    """Whether the tabu search's dense per-step matrices stay small on this graph."""
    return graph.machines > 1 and graph.n_proc > 1 and step_cells(graph) <= MAX_MATRIX


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
        ev = MoveTotals(graph, self.weights)
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

    def _one_run(self, ev: MoveTotals, start: np.ndarray, rng, deadline: float):
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

    def _best_swap(self, ev: MoveTotals):
        """The best improving swap of two SPs on different machines, among the pairs whose
        two single moves look best together; None when none improves."""
        n = ev.n
        if n < 2 or n > MAX_SWAP_SCAN or self.swap_candidates <= 0:
            return None
        part = ev.part
        # cut terms of the two moves added (exact unless u and v share state or a stream),
        # the balance of the swap exact
        cut_now = ev.total - ev.w.gamma * ev.balance(ev.loads)
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
