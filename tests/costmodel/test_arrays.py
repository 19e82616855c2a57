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
