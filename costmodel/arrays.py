"""Array helpers the vectorised parts share.

Why a module: NumPy 2.3+ finds `np.unique`'s values with a hash table when no index, inverse or
count is asked for, and on the integer keys the busy-time estimate builds (a design's locks,
each as (design, transaction, partition)) that is 5-30x slower than sorting them
(10 thousand to a million keys, NumPy 2.4). `sorted_unique` is what `np.unique` returned
before, by sorting, on every NumPy version.
"""
from __future__ import annotations

import numpy as np


def sorted_unique(values) -> np.ndarray:
    """The distinct values of `values` (flattened), ascending: `np.unique(values)`."""
    a = np.sort(np.asarray(values).ravel())
    if a.size < 2:
        return a
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]
