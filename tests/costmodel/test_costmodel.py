"""The cost model of section 6.3: formulas, edge cases and invariants."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from costmodel import REPLICATED, CostGraph, Weights, score, score_many
from costmodel.errors import UserError


def tiny_graph(**cluster):
    # two SPs in a stream, each with its own table; SP0 also reads table 1
    return CostGraph(proc_load=[2.0, 1.0], state_bytes=[100, 200],
                     ps_proc=[0, 1, 0], ps_state=[0, 1, 1], ps_weight=[4.0, 2.0, 1.0],
                     ps_write=[True, True, False], pp_src=[0], pp_dst=[1], pp_weight=[10.0],
                     **({"machines": 2} | cluster))


def test_terms_match_the_formulas_by_hand():
    g = tiny_graph()
    c = score(g, [0, 1], [0, 1], Weights(0.3, 0.1, 0.6))
    assert c.state_colocation == pytest.approx(1.0 / 7.0)  # SP0 -> table 1 cut
    assert c.processing_colocation == pytest.approx(1.0)
    assert c.load_balance == pytest.approx((2 - 1) / 3)
    assert c.total == pytest.approx(0.3 / 7 + 0.1 + 0.6 / 3)


def test_replicated_state_is_never_cut_for_reads_and_writes_cut_every_other_copy():
    g = tiny_graph(machines=3)
    reads_only = score(g, [0, 1], [0, REPLICATED])  # table 1 written by SP1, read by SP0
    # the write of SP1 (weight 2) is cut to the 2 other copies; the read is free
    assert reads_only.state_colocation == pytest.approx(4.0 / (4 + 4 + 1))
    g2 = CostGraph([1.0], [10], [0], [0], [5.0], [False], [], [], [], machines=4)
    assert score(g2, [3], [REPLICATED]).state_colocation == 0.0


def test_memory_overflow_is_reported_per_machine():
    g = tiny_graph(memory_limit_bytes=150)
    c = score(g, [0, 0], [0, 0])
    assert not c.feasible
    assert c.memory_overflow_mb[0] == pytest.approx(150 / 2**20)
    assert c.memory_overflow_mb[1] == 0.0
    assert score(g, [0, 1], [0, 1]).feasible is False  # 200 bytes > 150 on machine 1
    assert score(tiny_graph(memory_limit_bytes=200), [0, 1], [0, 1]).feasible


def test_capacity_makes_load_relative():
    g = tiny_graph(capacity=[2.0, 1.0])
    # load 2 on a machine twice as fast as the one with load 1: perfectly balanced
    assert score(g, [0, 1], [0, 1]).load_balance == pytest.approx(0.0)
    assert score(g, [1, 0], [1, 0]).load_balance > 0.3


@pytest.mark.parametrize("graph", [
    CostGraph([], [], [], [], [], [], [], [], [], machines=3),  # nothing at all
    CostGraph([1.0, 1.0], [], [], [], [], [], [], [], [], machines=2),  # no state, no streams
    CostGraph([0.0], [5], [0], [0], [1.0], [True], [], [], [], machines=2),  # zero load
    CostGraph([3.0], [5], [0], [0], [1.0], [True], [], [], [], machines=1),  # one machine
])
def test_edge_cases_are_defined(graph):
    proc = np.zeros(graph.n_proc, dtype=int)
    state = np.zeros(graph.n_state, dtype=int)
    c = score(graph, proc, state)
    assert np.isfinite(c.total) and 0.0 <= c.total <= 1.0


def test_bad_assignment_is_refused():
    with pytest.raises(ValueError):
        score(tiny_graph(), [0, 5], [0, 1])
    with pytest.raises(ValueError):
        score(tiny_graph(), [0], [0, 1])
    with pytest.raises(ValueError):
        Weights(alpha=-1)


@pytest.mark.parametrize("weights", [(0, 0, 0), (0.0, -0.0, 0.0)])
def test_all_zero_weights_are_refused_as_the_cli_refuses_them(weights):
    # Weights(0, 0, 0) was taken by the Python API (every design then costs 0, so any is "best")
    # where `--alpha 0 --beta 0 --gamma 0` is refused
    with pytest.raises(UserError, match="^at least one of the weights alpha, beta, gamma must be positive$"):
        Weights(*weights)
    assert Weights(0, 0, 1e-300).gamma > 0  # one positive weight is enough: only the ratios matter


@st.composite
def graphs_and_designs(draw):
    n_proc = draw(st.integers(1, 6))
    n_state = draw(st.integers(0, 6))
    machines = draw(st.integers(1, 4))
    ppm = draw(st.integers(1, 2))
    n_parts = machines * ppm
    n_ps = draw(st.integers(0, 10)) if n_state else 0
    n_pp = draw(st.integers(0, 6)) if n_proc > 1 else 0
    pos = st.floats(0.01, 1000)
    g = CostGraph(
        proc_load=draw(st.lists(st.floats(0, 100), min_size=n_proc, max_size=n_proc)),
        state_bytes=draw(st.lists(st.integers(0, 10**6), min_size=n_state, max_size=n_state)),
        ps_proc=draw(st.lists(st.integers(0, n_proc - 1), min_size=n_ps, max_size=n_ps)),
        ps_state=draw(st.lists(st.integers(0, max(n_state - 1, 0)), min_size=n_ps, max_size=n_ps)),
        ps_weight=draw(st.lists(pos, min_size=n_ps, max_size=n_ps)),
        ps_write=draw(st.lists(st.booleans(), min_size=n_ps, max_size=n_ps)),
        pp_src=draw(st.lists(st.integers(0, n_proc - 1), min_size=n_pp, max_size=n_pp)),
        pp_dst=draw(st.lists(st.integers(0, n_proc - 1), min_size=n_pp, max_size=n_pp)),
        pp_weight=draw(st.lists(pos, min_size=n_pp, max_size=n_pp)),
        machines=machines, partitions_per_machine=ppm,
    )
    proc = draw(st.lists(st.integers(0, n_parts - 1), min_size=n_proc, max_size=n_proc))
    state = draw(st.lists(st.integers(-1, n_parts - 1), min_size=n_state, max_size=n_state))
    return g, np.array(proc, dtype=int), np.array(state, dtype=int)


@settings(max_examples=200, deadline=None)
@given(graphs_and_designs(), st.floats(0, 1), st.floats(0, 1), st.floats(0.01, 1))
def test_each_term_is_in_unit_interval(case, a, b, c):
    g, proc, state = case
    cost = score(g, proc, state, Weights(a, b, c))
    for term in (cost.state_colocation, cost.processing_colocation, cost.load_balance):
        assert 0.0 <= term <= 1.0
    assert cost.total == pytest.approx(a * cost.state_colocation + b * cost.processing_colocation
                                       + c * cost.load_balance)
    # the vectorised scorer agrees with the single one
    assert score_many(g, proc[None], state[None], Weights(a, b, c))[0] == pytest.approx(cost.total)


@settings(max_examples=150, deadline=None)
@given(graphs_and_designs(), st.randoms(use_true_random=False))
def test_relabelling_machines_does_not_change_cost(case, rnd):
    g, proc, state = case
    perm = list(range(g.machines))
    rnd.shuffle(perm)
    perm = np.array(perm)
    ppm = g.partitions_per_machine

    def relabel(parts):
        out = parts.copy()
        placed = parts >= 0
        out[placed] = perm[parts[placed] // ppm] * ppm + parts[placed] % ppm
        return out

    before, after = score(g, proc, state), score(g, relabel(proc), relabel(state))
    assert after.total == pytest.approx(before.total)
    assert after.memory_overflow_mb == () or sorted(after.memory_overflow_mb) == pytest.approx(sorted(before.memory_overflow_mb))


@settings(max_examples=150, deadline=None)
@given(graphs_and_designs())
def test_nothing_cut_means_zero_colocation_cost(case):
    g, proc, _ = case
    everything_on = 0
    c = score(g, np.full(g.n_proc, everything_on), np.full(g.n_state, everything_on))
    assert c.state_colocation == 0.0 and c.processing_colocation == 0.0


def test_idle_machines_count_in_the_load_balance_and_machines_used():
    g = tiny_graph()
    busy = score(g, [0, 1], [0, 1])
    with_idle = score(tiny_graph(idle_capacity=[1.0, 1.0]), [0, 1], [0, 1])
    # loads 2 and 1 of 3 on two machines: (2 - 1) / 3; with idle machines the least is 0
    assert busy.load_balance == pytest.approx(1 / 3)
    assert with_idle.load_balance == pytest.approx(2 / 3)
    assert busy.machines_used == with_idle.machines_used == 2
    assert score(g, [0, 0], [0, 0]).machines_used == 1
    assert score(g, [0, 0], [0, REPLICATED]).machines_used == 2  # a copy on every machine


def test_a_nested_group_split_across_machines_cuts_all_its_accesses():
    grouped = tiny_graph(proc_group=[0, 0])
    # the two SPs apart, each beside its own table: only the read of table 1 is cut, unless grouped
    assert score(tiny_graph(), [0, 1], [0, 1]).state_colocation == pytest.approx(1 / 7)
    assert score(grouped, [0, 1], [0, 1]).state_colocation == pytest.approx(1.0)
    assert score(grouped, [1, 1], [0, 1]).state_colocation == pytest.approx(4 / 7)
    with pytest.raises(ValueError, match="proc_group has 1 entries"):
        tiny_graph(proc_group=[0])


def test_score_many_of_a_graph_with_state_but_no_procedures():
    """A machine's inner graph can hold state only (the search places partitions machine by
    machine); scoring many assignments of it must not fail on the empty SP axis."""
    g = CostGraph([], [10, 20], [], [], [], [], [], [], [], machines=2)
    states = np.array([[0, 1], [1, 1], [0, 0]])
    procs = np.zeros((3, 0), dtype=np.int64)
    costs = score_many(g, procs, states, Weights(0.3, 0.1, 0.6))
    assert costs.shape == (3,) and np.isfinite(costs).all()


def test_is_a_also_knows_a_reloaded_copy_of_a_class():
    # %autoreload makes a new class of the same module and name; the figures' checks used
    # isinstance and refused the project's own objects made after a reload
    from costmodel.design import Design
    from costmodel.errors import is_a

    reloaded = type("Design", (), {"__module__": "costmodel.design"})
    elsewhere = type("Design", (), {"__module__": "somewhere.else"})
    assert is_a(reloaded(), Design) and not isinstance(reloaded(), Design)
    assert not is_a(elsewhere(), Design) and not is_a("Design", Design)
    subclass = type("Sub", (reloaded,), {})
    assert is_a(subclass(), Design)  # a subclass of the reloaded copy too, as isinstance would


def test_weights_take_numpy_scalars_as_the_python_numbers_they_are():
    # a notebook's arithmetic gives numpy scalars: Weights(np.float32(.3), ...) was refused
    w = Weights(np.float32(0.25), np.int64(1), np.float64(0.5))
    assert (type(w.alpha), type(w.beta), type(w.gamma)) == (float, int, float)
    assert w.to_dict() == {"alpha": 0.25, "beta": 1.0, "gamma": 0.5}
    for bad, message in ((np.bool_(True), "must be a number"), (np.float32("nan"), "finite number >= 0"),
                         (np.int64(-3), "finite number >= 0"), ("0.3", "must be a number")):
        with pytest.raises(UserError, match=message):
            Weights(bad, 1, 1)


def test_a_huge_integer_weight_is_one_line_not_an_overflow():
    # 10**400 reached math.isfinite (OverflowError: int too large to convert to float)
    with pytest.raises(UserError, match=r"^weight alpha must be at most 1e\+09 .*got over 1e308$"):
        Weights(10**400, 1, 1)
    with pytest.raises(UserError, match=r"got 1e\+12$"):
        Weights(10**12, 1, 1)


def test_a_cluster_is_named_in_the_singular_where_a_count_is_one():
    from costmodel.workload import cluster_text

    assert cluster_text(4, 1) == "4 machines x 1 partition"
    assert cluster_text(1, 2) == "1 machine x 2 partitions"
    assert cluster_text(1000, 4) == "1,000 machines x 4 partitions"


def test_a_design_placed_on_what_is_no_graph_of_it_is_one_design_error_line():
    # `design.to_frame(workload)`, `design.score("tpcdi-trade")`: AttributeErrors from inside
    # ('Workload' object has no attribute 'window_owners'); another workload's graph a KeyError
    from costmodel.design import Design
    from costmodel.errors import DesignError
    from costmodel.graph import WorkloadGraph
    from costmodel.spec_reader import read_spec

    workload = read_spec("tpcdi-trade")
    design = Design("tpcdi-trade", 2, 1, {p.name: i % 2 for i, p in enumerate(workload.procedures)},
                    {t.name: 0 for t in workload.tables})
    graph = WorkloadGraph.from_workload(workload)
    # a Workload is its graph
    assert design.to_frame(workload).equals(design.to_frame(graph))
    assert design.score(workload) == design.score(graph)
    for wrong in ("tpcdi-trade", None, 5):
        with pytest.raises(DesignError, match="^graph must be a WorkloadGraph or a Workload, got"):
            design.score(wrong)
    with pytest.raises(DesignError, match="^graph must be a WorkloadGraph or a Workload, got 'x'"):
        design.to_frame("x")
    other = WorkloadGraph.from_workload(read_spec("window-micro"))
    with pytest.raises(DesignError, match="^this is a design of workload 'tpcdi-trade': design does not place"):
        design.to_frame(other)
    with pytest.raises(DesignError, match=r"^weights must be costmodel.Weights\(alpha, beta, gamma\) or None"):
        design.score(graph, (1, 1, 1))
