"""The migration plan prices designs from arrays (`advisor.moved_bytes`, `_apply_arrays`) to the
last bit of what a Design and its diff give, so the plan is the one those would make."""
from __future__ import annotations

import numpy as np
import pytest

import advisor.migration_pick as migration_pick
from advisor.api import recommend
from advisor.busy_estimate import BusyEstimate
from advisor.migration import moves_between
from advisor.moved_bytes import MovedBytes
from advisor.priced_weights import default_weights
from advisor.sources import load_graph
from costmodel.design import Design
from costmodel.model import REPLICATED


def _random_design(graph, weights, rng) -> Design:
    """A design of `graph` with some items replicated, its windows on their owners' partitions."""
    c = graph.cost
    n_parts = c.machines * c.partitions_per_machine
    proc = rng.integers(0, n_parts, c.n_proc)
    state = np.where(rng.random(c.n_state) < 0.3, REPLICATED, rng.integers(0, n_parts, c.n_state))
    owned = c.state_owner >= 0
    state[owned] = proc[c.state_owner[owned]]
    return Design.from_arrays(graph, proc, state, weights)


def test_megabytes_from_arrays_are_the_diffs_to_the_last_bit():
    graph = load_graph("linear-road", 4)
    rng = np.random.default_rng(7)
    # sizes no sum rounds the same in every order: a sum in another order than the diff's shows
    graph.cost.state_bytes = rng.random(graph.n_state) * 10.0 ** rng.integers(2, 9, graph.n_state)
    weights = default_weights(graph)
    for _ in range(200):
        current, new = _random_design(graph, weights, rng), _random_design(graph, weights, rng)
        expected = sum(m.bytes for m in moves_between(current, new, graph)) / 1e6
        assert MovedBytes.of(current, graph).megabytes(new.arrays(graph)[1]) == expected


def test_a_unit_applied_to_arrays_is_the_arrays_of_the_design_it_makes():
    graph = load_graph("linear-road", 4)
    rng = np.random.default_rng(11)
    weights = default_weights(graph)
    for _ in range(50):
        current, goal = _random_design(graph, weights, rng), _random_design(graph, weights, rng)
        arrays = current.arrays(graph)
        for unit in migration_pick._units(current, goal, graph):
            got = migration_pick._apply_arrays(graph, arrays, unit)
            want = migration_pick._apply(current, unit).arrays(graph)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert arrays[0].tolist() == current.arrays(graph)[0].tolist()  # (the deployed arrays left as they were)


@pytest.mark.parametrize("one_pass", [False, True], ids=["greedy path", "one-pass path"])
def test_every_design_the_plan_weighs_is_priced_as_its_diff_and_the_estimate_alone(one_pass, monkeypatch):
    if one_pass:  # the path's order set once, as on a design of thousands of items
        monkeypatch.setattr(migration_pick, "FULL_GREEDY_UNITS", 1)
    made = []
    estimator = migration_pick._estimator
    monkeypatch.setattr(migration_pick, "_estimator", lambda *a: made.append(estimator(*a)) or made[-1])
    current = recommend("linear-road", machines=4, objective="cost").baselines["round-robin"]
    plan, graph = recommend("linear-road", current=current, objective="cost").migration, made[0].graph
    assert any(r.label.startswith("path:") for r in plan.reachable)
    # the plan's estimate priced the designs together; a fresh one prices each alone
    alone = BusyEstimate(graph, made[0].prices, made[0].traits, made[0].batch_size)
    for r in plan.reachable:
        assert r.megabytes == sum(m.bytes for m in moves_between(current, r.design, graph)) / 1e6, r.label
        assert r.estimated_tps == alone.throughput_tps(*r.design.arrays(graph)), r.label
    # the path is the one Designs and diffs priced one by one lead along
    rec = recommend("linear-road", current=current, objective="cost")
    goal = migration_pick.align(current, rec.design, graph)
    fresh = BusyEstimate(graph, made[0].prices, made[0].traits, made[0].batch_size)
    got = migration_pick._path(current, goal, graph, fresh, rec.design.weights)
    want = _path_by_designs(current, goal, graph, alone)
    assert len(want) >= 2 and [(r.label, r.megabytes, r.design.state, r.design.procedures) for r in got] == [
        (r.label, r.megabytes, r.design.state, r.design.procedures) for r in want]


def _path_by_designs(current, goal, graph, estimate) -> list:
    """`migration_pick._path` as it was: each design built and diffed to price it."""
    apply, ratio = migration_pick._apply, migration_pick._ratio
    units = migration_pick._units(current, goal, graph)

    def mb(d: Design) -> float:
        return sum(m.bytes for m in moves_between(current, d, graph)) / 1e6

    def speed(d: Design) -> float:
        return estimate.throughput_tps(*d.arrays(graph))

    out, here, remaining = [], current, list(units)
    here_speed = speed(current)
    one_pass = len(units) > migration_pick.FULL_GREEDY_UNITS
    if one_pass:
        remaining.sort(key=lambda u: -ratio(speed(apply(current, u)) - here_speed, mb(apply(current, u))))
    while len(remaining) > 1:
        if one_pass:
            unit = remaining.pop(0)
        else:
            gains = [ratio(speed(apply(here, u)) - here_speed, mb(apply(current, u))) for u in remaining]
            unit = remaining.pop(int(np.argmax(gains)))
        here = apply(here, unit)
        here_speed = speed(here)
        out.append(migration_pick.Reachable(f"path: {len(units) - len(remaining)} of {len(units)} moves ({unit[0]})",
                                            here, mb(here)))
    return out
