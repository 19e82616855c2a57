"""costmodel.arrays: `sorted_unique` is `np.unique` by sorting."""
from __future__ import annotations

import numpy as np
import pytest

from costmodel.arrays import sorted_unique


@pytest.mark.parametrize("shape, high", [((0,), 5), ((1,), 5), ((2,), 1), ((500,), 40), ((30, 7), 1000)])
def test_sorted_unique_is_np_unique(shape, high):
    values = np.random.default_rng(3).integers(-1, high, shape)  # -1: REPLICATED among them
    got = sorted_unique(values)
    assert got.tolist() == np.unique(values).tolist()
    assert got.dtype == values.dtype


def test_sorted_unique_leaves_its_input_as_it_was():
    values = np.array([3, 1, 3, 2])
    assert sorted_unique(values).tolist() == [1, 2, 3]
    assert values.tolist() == [3, 1, 3, 2]


def test_ordered_sums_are_successive_add_at_calls_to_the_last_bit():
    """One `bincount` over every addition, in order, adds each value to its bin's running
    sum as the `np.add.at` calls did one after the other (not their sums added together)."""
    from costmodel.arrays import OrderedSums

    rng = np.random.default_rng(5)
    want, sums = np.zeros(17), OrderedSums(17)
    for k in range(6):
        bins = rng.integers(0, 17, (int(rng.integers(0, 40)), 3))
        values = rng.random(bins.shape) * 10.0 ** rng.integers(-9, 3) if k % 3 else 1e-6 * (k + 1)
        np.add.at(want, bins.ravel(), np.broadcast_to(values, bins.shape).ravel())
        sums.add(bins, values)
        assert sums.sums().tobytes() == want.tobytes()


def test_ordered_sums_of_nothing_are_float_zeros():
    """`bincount` of no values counts in integers; the sums are floats whatever was added."""
    from costmodel.arrays import OrderedSums

    empty = OrderedSums(4)
    assert empty.sums().dtype == np.float64 and not empty.sums().any()
    empty.add(np.array([], dtype=np.int64), np.array([]))
    assert empty.sums().dtype == np.float64 and empty.sums().tolist() == [0.0] * 4


@pytest.mark.parametrize("bound, n, dense", [(1000, 300, True), (50_000_000, 2000, False)])
def test_unique_and_positions_are_sorted_unique_and_searchsorted(bound, n, dense, monkeypatch):
    """Marked in an array of the key range (a small range) or sorted (a large one): the
    distinct keys ascending and each query's place among them, as `np.unique` and
    `np.searchsorted` give them."""
    import costmodel.arrays as arrays

    rng = np.random.default_rng(bound)
    values = rng.integers(0, bound, n)
    queries = values[rng.integers(0, n, 3 * n)]
    sorted_ = []
    real = arrays.sorted_unique
    monkeypatch.setattr(arrays, "sorted_unique", lambda v: sorted_.append(1) or real(v))
    unique, at = arrays.unique_and_positions(values, bound, queries)
    assert bool(sorted_) is not dense
    assert np.array_equal(unique, np.unique(values)) and unique.dtype == np.unique(values).dtype
    assert np.array_equal(at, np.searchsorted(np.unique(values), queries))
