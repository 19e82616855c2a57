"""The busy-time estimate's climbs on a big cluster within the limits (`recommend -m 24 -p
4096`, 98,304 partitions) hold a bounded number of busy times: the memo and every list of
moves priced kept one busy time per partition each, and the command grew past 9 GB and a
minute and a half before it was stopped. The same designs are priced and picked."""
from __future__ import annotations

import numpy as np

from advisor import busy_estimate, estimate_climb
from advisor.busy_estimate import BusyEstimate
from advisor.design_moves import lock_order_swaps
from advisor.sources import load_workload
from costmodel.busy_time import BusyTime
from costmodel.graph import WorkloadGraph
from engine_sim.sim import Calibration


def _estimate(machines: int, per_machine: int) -> tuple[WorkloadGraph, BusyEstimate]:
    w = load_workload("bank-transfer").with_cluster(machines, per_machine)
    g = WorkloadGraph.from_workload(w)
    return g, BusyEstimate.of(g, w, Calibration.reference().params)


def _designs(g: WorkloadGraph, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    parts = g.cost.n_partitions
    return [(rng.integers(0, parts, g.cost.n_proc), rng.integers(0, parts, g.cost.n_state)) for _ in range(n)]


def test_the_memo_keeps_a_bounded_number_of_busy_times_and_counts_a_design_once(monkeypatch):
    monkeypatch.setattr(busy_estimate, "MEMO_FLOATS", 1_000, raising=False)
    g, estimate = _estimate(4, 64)  # 256 partitions: a design's busy times are 264 floats
    designs = _designs(g, 40)
    first = estimate.estimate_many(designs)
    kept = sum(e.partition.size + e.coordinator.size + (0 if e.link is None else e.link.size)
               for e in estimate._memo.values() if isinstance(e, BusyTime))
    assert kept <= 1_000
    priced = estimate.priced
    again = estimate.estimate_many(designs)
    assert estimate.priced == priced == len(designs)  # remembered as priced, as before
    assert all(np.array_equal(a.partition, b.partition) and a.throughput_tps == b.throughput_tps
               for a, b in zip(first, again))


def test_moves_are_priced_a_chunk_at_a_time_and_the_best_is_the_same(monkeypatch):
    g, estimate = _estimate(2, 16)
    proc, state = _designs(g, 1)[0]
    current = estimate.estimate(proc, state)
    whole = estimate_climb._first_best(estimate_climb.priced_moves(
        estimate, lock_order_swaps(g, proc, state, current)))
    monkeypatch.setattr(estimate_climb, "PRICE_AT_ONCE", 4, raising=False)
    sizes = []
    many = estimate.estimate_many
    monkeypatch.setattr(estimate, "estimate_many", lambda designs: sizes.append(len(designs)) or many(designs))
    best = estimate_climb.best_by_estimate(estimate, lock_order_swaps(g, proc, state, current))
    assert max(sizes) <= 4 and sum(sizes) == 15  # 15 trades on a machine of 16 partitions
    assert best[1] == whole[1] and best[0].throughput_tps == whole[0].throughput_tps


def _less_loaded_one_by_one(a, b) -> bool:
    """`_less_loaded` as it was written, a place at a time: what the numpy one must give."""
    for x, y in zip(a, b):
        if abs(x - y) > estimate_climb.CLIMB_GAIN * max(x, y):
            return bool(x < y)
    return False


def test_comparing_busy_times_answers_as_a_loop_over_the_places_did():
    # on a big cluster most partitions are empty in both designs, so the first difference lies
    # deep (a loop over 8,192 partitions a comparison took most of `recommend -m 2 -p 4096`'s
    # 50 s); the vectorised comparison must answer as the loop did, ties and lengths included
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 40):
        for _ in range(200):
            a = np.sort(rng.choice([0.0, 1.0, 1.004, 2.0], n))[::-1]
            b = np.sort(rng.choice([0.0, 1.0, 1.004, 2.0], n + int(rng.integers(0, 2))))[::-1]
            assert estimate_climb._less_loaded(a, b) == _less_loaded_one_by_one(a, b)
            assert estimate_climb._less_loaded(b, a) == _less_loaded_one_by_one(b, a)
    a = np.zeros(5_000_000)
    b = a.copy()
    b[-1] = 1.0
    assert estimate_climb._less_loaded(a, b) and not estimate_climb._less_loaded(b, a)


def test_a_big_cluster_prices_fewer_designs_a_call_with_the_same_figures(monkeypatch):
    # 128 designs of 1,000,000 partitions a call of busy_times made arrays of a GB each
    g, estimate = _estimate(4, 64)  # 256 partitions: 2 designs a call under 600 busy times
    designs = _designs(g, 9)
    alone = [estimate.estimate(p, s) for p, s in designs]
    monkeypatch.setattr(busy_estimate, "CHUNK_FLOATS", 600, raising=False)
    rows = []
    real = busy_estimate.busy_times
    monkeypatch.setattr(busy_estimate, "busy_times", lambda cost, procs, *rest: rows.append(len(procs)) or
                        real(cost, procs, *rest))
    fresh = BusyEstimate.of(g, load_workload("bank-transfer").with_cluster(4, 64), Calibration.reference().params)
    together = fresh.estimate_many(designs)
    assert max(rows) <= 2 and sum(rows) == len(designs)
    assert [e.throughput_tps for e in together] == [e.throughput_tps for e in alone]


def _stand_ins_one_by_one(graph, busy: np.ndarray) -> set[int]:
    """`_machine_stand_ins` as it was written, a machine at a time: what the numpy one must give."""
    ppm = graph.cost.partitions_per_machine
    by_machine = busy[: graph.cost.machines * ppm].reshape(graph.cost.machines, ppm)
    alike = {}
    for m in range(graph.cost.machines):
        alike.setdefault(tuple(np.sort(by_machine[m])), m)
    return {int(m * ppm + np.argmin(by_machine[m])) for m in alike.values()}


def test_the_moves_of_a_million_machines_are_found_without_a_loop_over_them():
    # a loop over the machines (their load profiles, the busiest partitions sorted in Python)
    # took a minute of `recommend -m 1000000`; the same stand-ins and busiest partitions
    from types import SimpleNamespace

    from advisor.design_moves import _busiest_partitions, _machine_stand_ins

    rng = np.random.default_rng(1)
    for machines, ppm in ((7, 3), (40, 2), (5, 1)):
        graph = SimpleNamespace(cost=SimpleNamespace(machines=machines, partitions_per_machine=ppm))
        busy = rng.integers(0, 3, machines * ppm).astype(float)  # ties, and machines alike
        busy[busy == 0] = -0.0 if machines == 40 else 0.0
        assert _machine_stand_ins(graph, busy) == _stand_ins_one_by_one(graph, busy)
        order = sorted(range(busy.size), key=lambda p: (-busy[p], p))
        assert _busiest_partitions(busy)[0] == order[0]
    graph = SimpleNamespace(cost=SimpleNamespace(machines=1_000_000, partitions_per_machine=1))
    busy = np.zeros(1_000_000)
    busy[5] = 1.0
    assert _machine_stand_ins(graph, busy) == {0, 5} and _busiest_partitions(busy) == [5]
