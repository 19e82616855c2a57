"""The search against an independent simulated annealer on generated 20-SP dataflows, and
the tabu search's move evaluation against the cost model."""
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from costmodel import CostGraph, Weights, score
from advisor.priced_weights import default_weights
from advisor.local_search import TabuSearch
from advisor.move_totals import MoveTotals
from advisor.placement import place_state
from advisor.search import DesignSearch

pytestmark = pytest.mark.integration

METIS_ONLY = dict(exact_limit=0, extra_starts=False)


def generated_dataflow(seed: int, n_proc: int = 20, n_state: int = 28, machines: int = 6) -> CostGraph:
    """A seeded dataflow: a pipeline with branches, each SP reading or writing 1-3 tables
    (most tables shared by neighbouring SPs), uneven SP costs and stream rates."""
    rng = np.random.default_rng(seed)
    src, dst = [], []
    for v in range(1, n_proc):
        parents = rng.choice(v, size=min(v, 1 + int(rng.random() < 0.3)), replace=False)
        for u in parents:
            src.append(int(u))
            dst.append(v)
    ps_proc, ps_state, ps_weight, ps_write = [], [], [], []
    for v in range(n_proc):
        home = int(v * n_state / n_proc)
        tables = {home} | {int(t) for t in rng.integers(0, n_state, rng.integers(0, 3))}
        for t in sorted(tables):
            ps_proc.append(v)
            ps_state.append(t)
            ps_weight.append(float(rng.integers(1, 20)))
            ps_write.append(bool(rng.random() < 0.4))
    return CostGraph(
        proc_load=rng.uniform(1, 5, n_proc), state_bytes=rng.integers(1_000, 100_000, n_state),
        ps_proc=ps_proc, ps_state=ps_state, ps_weight=ps_weight, ps_write=ps_write,
        pp_src=src, pp_dst=dst, pp_weight=rng.integers(1, 50, len(src)).astype(float),
        machines=machines,
    )


def best_state(g: CostGraph, proc: np.ndarray) -> np.ndarray:
    """Each state item on the machine where most of its access weight is (written here
    again, on purpose: the annealer shares no code with the search)."""
    weight = np.zeros((g.n_state, g.machines))
    np.add.at(weight, (g.ps_state, proc[g.ps_proc]), g.ps_weight)
    return weight.argmax(axis=1)


def annealed_cost(g: CostGraph, weights: Weights, seed: int, steps: int = 6_000) -> float:
    """Simulated annealing over the SPs' machines (state placed where its weight is), on
    costmodel.score: move one SP or swap two, accept worse by Metropolis, geometric cooling
    from about the size of one move's change in cost."""
    rng = np.random.default_rng(seed)
    proc = rng.integers(0, g.machines, g.n_proc)

    def cost(p):
        return score(g, p, best_state(g, p), weights).total

    current = best = cost(proc)
    hot, cold = 0.02, 1e-5
    for step in range(steps):
        t = hot * (cold / hot) ** (step / steps)
        trial = proc.copy()
        if rng.random() < 0.7:
            trial[rng.integers(0, g.n_proc)] = rng.integers(0, g.machines)
        else:
            i, j = rng.choice(g.n_proc, 2, replace=False)
            trial[i], trial[j] = proc[j], proc[i]
        new = cost(trial)
        if new <= current or rng.random() < np.exp((current - new) / t):
            proc, current = trial, new
            best = min(best, current)
    return best


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow),
                                  pytest.param(2, marks=pytest.mark.slow)])
def test_search_reaches_an_annealers_quality_on_a_20_sp_dataflow(seed):
    g = generated_dataflow(seed)
    for weights in (default_weights(g), Weights(0.3, 0.1, 0.6)):
        found = DesignSearch(weights=weights, seed=seed, **METIS_ONLY).fit(g)
        annealer = min(annealed_cost(g, weights, seed=s) for s in (seed, seed + 100))
        assert found.cost_.total <= annealer + 1e-9, (weights, found.cost_.total, annealer)


@st.composite
def graphs_and_designs(draw):
    n_proc = draw(st.integers(2, 7))
    n_state = draw(st.integers(1, 6))
    machines = draw(st.integers(2, 4))
    n_ps = draw(st.integers(1, 12))
    n_pp = draw(st.integers(0, 8))
    ints = lambda hi, n: st.lists(st.integers(0, hi), min_size=n, max_size=n)  # noqa: E731
    floats = lambda n: st.lists(st.floats(0.1, 50), min_size=n, max_size=n)  # noqa: E731
    idle = draw(st.lists(st.floats(0.5, 2), max_size=2))
    g = CostGraph(
        proc_load=draw(floats(n_proc)), state_bytes=[1] * n_state,
        ps_proc=draw(ints(n_proc - 1, n_ps)), ps_state=draw(ints(n_state - 1, n_ps)),
        ps_weight=draw(floats(n_ps)), ps_write=[False] * n_ps,
        pp_src=draw(ints(n_proc - 1, n_pp)), pp_dst=draw(ints(n_proc - 1, n_pp)),
        pp_weight=draw(floats(n_pp)), machines=machines,
        capacity=draw(st.lists(st.floats(0.5, 2), min_size=machines, max_size=machines)),
        idle_capacity=idle,
    )
    return g, np.array(draw(ints(machines - 1, n_proc)))


@settings(max_examples=80, deadline=None)
@given(graphs_and_designs(), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_every_move_is_priced_as_the_cost_model_prices_it(case, a, b, c):
    g, part = case
    assume(a + b + c > 0)  # Weights refuses all zero
    weights = Weights(a, b, c)
    ev = MoveTotals(g, weights)
    ev.reset(part)
    totals = ev.move_totals()
    for v in range(g.n_proc):
        for m in range(g.machines):
            moved = part.copy()
            moved[v] = m
            state = place_state(g, moved, np.zeros(g.n_state, dtype=np.int64))
            assert totals[v, m] == pytest.approx(score(g, moved, state, weights).total, abs=1e-9)
    # applying a move keeps the running total exact
    ev.apply(0, (part[0] + 1) % g.machines)
    moved = ev.part
    state = place_state(g, moved, np.zeros(g.n_state, dtype=np.int64))
    assert ev.total == pytest.approx(score(g, moved, state, weights).total, abs=1e-9)


def test_tabu_search_is_deterministic_and_never_worse_than_its_start():
    g = generated_dataflow(5)
    w = default_weights(g)
    start = np.arange(g.n_proc) % g.machines
    a = TabuSearch(w, seed=3).run(g, [("dealt", start)])
    b = TabuSearch(w, seed=3).run(g, [("dealt", start)])
    assert [x[2] for x in a.results_] == [x[2] for x in b.results_]
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(a.results_, b.results_))
    ev = MoveTotals(g, w)
    ev.reset(start)
    assert a.results_[0][2] <= ev.total + 1e-12


def test_remembering_each_assignments_step_gives_the_designs_of_recomputing_every_step(monkeypatch):
    """The runs revisit assignments (on linear-road's 5 SPs, 7,447 steps visit 512); the step
    they read on a revisit is the one the first visit computed, and the designs, totals and
    step counts are those of a search that recomputes every step."""
    from advisor.sources import load_workload
    from costmodel.graph import WorkloadGraph

    rng = np.random.default_rng(5)
    cases = [(name, m) for name in ("linear-road", "tpcdi-trade", "bank-transfer") for m in (2, 4)]
    cases += [("generated", 6)]
    runs = []
    for name, m in cases:
        g = generated_dataflow(7) if name == "generated" else \
            WorkloadGraph.from_workload(load_workload(name).with_cluster(m, 1)).cost
        w = Weights(*rng.dirichlet([1, 1, 1]))
        starts = [(f"s{i}", rng.integers(0, g.machines, g.n_proc)) for i in range(3)]
        runs.append((g, w, starts))
    remembered = [TabuSearch(w, seed=1).run(g, starts) for g, w, starts in runs]
    real = MoveTotals.step_view
    visited, revisits, alive = set(), [], []

    def recompute(self):
        alive.append(self)  # (no id is reused while the test runs)
        key = (id(self), self.part.tobytes())
        revisits.append(key in visited)
        visited.add(key)
        self._seen.clear()
        return real(self)
    monkeypatch.setattr(MoveTotals, "step_view", recompute)
    fresh = [TabuSearch(w, seed=1).run(g, starts) for g, w, starts in runs]
    assert sum(revisits) > len(revisits) // 2  # most steps came back to an assignment seen before
    for a, b in zip(remembered, fresh):
        assert a.steps_ == b.steps_
        assert [(x[0], x[2]) for x in a.results_] == [(x[0], x[2]) for x in b.results_]
        assert all(np.array_equal(x[1], y[1]) for x, y in zip(a.results_, b.results_))


@pytest.mark.parametrize("machines", [1, 2, 5, 70])  # 70: past the dense table
@pytest.mark.parametrize("idle", [[], [1.0, 0.5]])
def test_greedy_moves_price_the_balance_as_the_cost_model(machines, idle):
    from advisor.processing_moves import BalanceForTargets

    rng = np.random.default_rng(machines)
    g = CostGraph(rng.uniform(0.1, 3, 12), [], [], [], [], [], [], [], [], machines=machines,
                  capacity=rng.uniform(0.5, 2, machines), idle_capacity=idle)
    part = rng.integers(0, machines, 12)
    loads = np.bincount(part, weights=g.proc_load, minlength=machines)
    balance = BalanceForTargets(g, g.proc_load.sum())
    for v in range(4):
        got = balance(loads.copy(), g.proc_load[v], part[v])
        for target in range(machines):
            moved = part.copy()
            moved[v] = target
            assert got[target] == pytest.approx(score(g, moved, np.zeros(0, int)).load_balance, abs=1e-9)
