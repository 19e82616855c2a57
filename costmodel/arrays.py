"""Array helpers the vectorised parts share.

Why a module: NumPy 2.3+ finds `np.unique`'s values with a hash table when no index, inverse or
count is asked for, and on the integer keys the busy-time estimate builds (a design's locks,
each as (design, transaction, partition)) that is 5-30x slower than sorting them
(10 thousand to a million keys, NumPy 2.4). `sorted_unique` is what `np.unique` returned
before, by sorting, on every NumPy version.
"""
from __future__ import annotations

import threading

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


class OrderedSums:
    """Values added into bins as successive `np.add.at` calls on an array of zeros add them,
    in one `np.bincount` at the end: the same terms in the same order (both add each value to
    its bin's running sum, index after index), so the sums are equal to the last digit.

    Why: `np.add.at` costs several times a `bincount`, and the busy-time estimate adds into
    its coordinators' and partitions' sums in many steps for every design it prices."""

    def __init__(self, n_bins: int):
        self.n_bins = n_bins
        self._bins: list[np.ndarray] = []
        self._values: list[np.ndarray] = []

    def add(self, bins, values) -> None:
        """`np.add.at(sums, bins.ravel(), values.ravel())`: bins an integer array, values
        one per bin (in the bins' order, any shape) or one for all."""
        bins = np.asarray(bins).ravel()
        values = np.asarray(values, dtype=float)
        self._bins.append(bins)
        self._values.append(values.ravel() if values.size == bins.size else np.broadcast_to(values, bins.shape))

    def sums(self) -> np.ndarray:
        """Every bin's sum so far (zeros where nothing was added)."""
        if not self._bins:
            return np.zeros(self.n_bins)
        if len(self._bins) == 1:  # (nothing to join: `concatenate` would only copy)
            bins, values = self._bins[0], self._values[0]
        else:
            bins, values = np.concatenate(self._bins), np.concatenate(self._values)
        sums = np.bincount(bins, weights=values, minlength=self.n_bins)
        return sums.astype(float, copy=False)  # (integers where nothing was added)


DENSE_KEYS = 4_000_000  # a key range up to which `unique_and_positions` marks keys in an array


def unique_and_positions(values: np.ndarray, bound: int, queries: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """(`sorted_unique(values)`, `np.searchsorted(that, queries)`) for integer `values` in
    [0, bound) and `queries` among them. Why: the busy-time estimate's lock keys are bounded by
    designs x transactions x partitions (a few hundred thousand on 24 machines), so marking
    them in an array of that many flags and numbering the marks is linear, where sorting 140,000
    keys and searching them took three times as long. Past `DENSE_KEYS` (a big cluster), it sorts."""
    if bound > max(DENSE_KEYS, 8 * values.size):
        unique = sorted_unique(values)
        return unique, np.searchsorted(unique, queries)
    mark, number = _dense_buffers(bound)
    try:
        mark[values] = True
        unique = np.flatnonzero(mark[:bound])
        mark[unique] = False  # (the buffers are the next call's: left as found)
    except BaseException:  # (an index out of range, Ctrl-C: flags may be left set) not kept
        _DENSE.mark = None
        raise
    number[unique] = np.arange(unique.size)  # (read only where marked: the queries are values)
    return unique, number[queries]


_DENSE = threading.local()  # this thread's flags and numbers for `unique_and_positions`


def _dense_buffers(bound: int) -> tuple[np.ndarray, np.ndarray]:
    """Arrays of at least `bound` flags (all False) and numbers, kept between calls. Why: a
    climb on 64 machines calls `unique_and_positions` 559 times on 1.2 million keys; a fresh
    1.2 MB of flags and 10 MB of numbers each time was most of its 1.7 s."""
    mark = getattr(_DENSE, "mark", None)
    if mark is not None and mark.size >= bound:
        return mark, _DENSE.number
    mark, number = np.zeros(bound, dtype=bool), np.empty(bound, dtype=np.int64)
    if bound <= DENSE_KEYS:  # (a larger range, beside many keys, is not held on to)
        _DENSE.mark, _DENSE.number = mark, number
    return mark, number
