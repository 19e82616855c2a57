"""The lock waits' faster pairing (`costmodel.lock_waits.group_meetings` no longer tests the
groups at a partition whose first word of earlier partitions has the later group's highest bit:
all of them clash) and its one-key sort, the cheaper `LockSuffixes`: the same pairs in the same
order as testing every group at the partition, and the same busy times as the straightforward
reference (`test_busy_times_reference.busy_times_before`, lock by lock), to the last bit, on
random designs with replicated tables and windows, crowded ones (many groups a partition, where
the skip matters) and clusters of more than 64 partitions (two words of earlier partitions).
The data are such that a sum in another order gives other bytes (checked here too)."""
from __future__ import annotations

import numpy as np
import pytest

from advisor.busy_estimate import BusyEstimate
from advisor.sources import load_workload
from costmodel.busy_time import BusyInputs
from costmodel.graph import WorkloadGraph
from costmodel.lock_waits import LockSuffixes, earlier_partitions, group_meetings
from engine_sim.sim import Calibration
from test_busy_times_reference import assert_priced_as_before, random_designs
from test_lock_waits import random_locks, suffix_by_rows
from workload_edits import scale_workload


def pairs_tested_one_by_one(at: np.ndarray, later: np.ndarray, earlier: np.ndarray):
    """Every later group paired with every group at its partition, in group order, kept where
    no word of their earlier partitions shares a bit: the pairs before the skip."""
    group, g_at, _pl, _pm = group_meetings(at, later, earlier)
    g_earlier = np.zeros((g_at.size, earlier.shape[1]), dtype=np.uint64)
    g_earlier[group] = earlier
    pair_later, pair_met = [], []
    for g in np.unique(group[later]):
        for h in np.flatnonzero(g_at == g_at[g]):
            if not (g_earlier[g] & g_earlier[h]).any():
                pair_later.append(g)
                pair_met.append(h)
    return np.array(pair_later, dtype=np.int64), np.array(pair_met, dtype=np.int64)


@pytest.mark.parametrize("n_parts, most", [(6, 5), (32, 12), (64, 20), (65, 6), (130, 6), (300, 8)])
def test_skipped_groups_leave_the_pairs_and_their_order_as_they_were(n_parts, most):
    """Crowded transactions (many groups a partition) and, past 63 partitions, transactions
    whose first word is empty (they skip nothing): the pairs, in order, of the test on every
    group at the partition."""
    rng = np.random.default_rng(n_parts * 7 + most)
    design, t, part, _next = random_locks(rng, 4, 60, n_parts, most)
    at = design * n_parts + part
    later = np.r_[False, t[1:] == t[:-1]]
    earlier = earlier_partitions(t, part, n_parts)
    _group, _g_at, pair_later, pair_met = group_meetings(at, later, earlier)
    want_later, want_met = pairs_tested_one_by_one(at, later, earlier)
    assert pair_later.tolist() == want_later.tolist() and pair_met.tolist() == want_met.tolist()
    assert pair_later.size > 0
    if n_parts > 100:  # a later lock with nothing below partition 63 was among them
        assert ((earlier[:, 0] == 0) & later).any()


def test_a_sum_over_the_pairs_in_another_order_gives_other_bytes():
    """What the tests here would catch: the same squares summed over each group's pairs from
    its last pair back differ in the last bits from the sum in order."""
    rng = np.random.default_rng(3)
    design, t, part, _next = random_locks(rng, 4, 60, 32, 12)
    at = design * 32 + part
    later = np.r_[False, t[1:] == t[:-1]]
    group, g_at, pair_later, pair_met = group_meetings(at, later, earlier_partitions(t, part, 32))
    squares = np.bincount(group, weights=(rng.random(t.size) * 1e-3) ** 2, minlength=g_at.size)
    in_order = np.bincount(pair_later, weights=squares[pair_met], minlength=g_at.size)
    back = np.lexsort((-pair_met, pair_later))
    reordered = np.bincount(pair_later[back], weights=squares[pair_met[back]], minlength=g_at.size)
    assert np.allclose(in_order, reordered) and in_order.tobytes() != reordered.tobytes()


def test_lock_suffixes_with_designs_without_locks_and_called_again():
    """Designs with no lock between others and after the last (as `busy_times` hands them:
    a start for every design), the rows kept between calls: each call the rows' sums."""
    rng = np.random.default_rng(8)
    design, _t, _part, next_txn = random_locks(rng, 5, 20, 16, 5)
    design = design * 2  # designs 1, 3, 5, 7 have no locks; 9 and 10 neither
    suffixes = LockSuffixes(next_txn, design, np.searchsorted(design, np.arange(11)))
    for scale in (1e-6, 1.0, 1e3, 1e-6):
        step = rng.random(design.size) * scale
        got = suffixes(step)
        assert got.tobytes() == suffix_by_rows(step, next_txn, design).tobytes()


CASES = [("gen40", 40, 2), ("shared40", 4, 1), ("window-micro", 2, 1), ("voter-leaderboard", 40, 2),
         ("linear-road", 8, 1)]


@pytest.mark.parametrize("name, machines, ppm", CASES)
def test_busy_times_with_the_skip_are_the_lock_by_lock_reference(name, machines, ppm):
    """Random designs (a third with tables replicated, windows with their owners, some crowded
    onto two partitions) of one, a few and a climb's chunk, with and without lock waits, on
    one word of earlier partitions and on two (80 partitions): the reference's bytes."""
    w = scale_workload(name) if name.startswith(("gen", "shared")) else load_workload(name)
    w = w.with_cluster(machines, ppm)
    g = WorkloadGraph.from_workload(w)
    estimate = BusyEstimate.of(g, w, Calibration.reference().params)
    inputs = BusyInputs.of(g.cost, estimate.prices, estimate.traits)
    rng = np.random.default_rng(sum(map(ord, name)) + machines)
    designs = list(random_designs(g, 50, rng))
    assert_priced_as_before(g, estimate, inputs, designs, ((0, 1), (1, 3), (4, 46)))
