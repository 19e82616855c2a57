"""costmodel.lock_waits: the faster forms of the lock waits' array steps give what the forms
they replaced gave, to the last bit, on random locks (the estimate's climbs break ties on
exact figures, so close is not enough)."""
from __future__ import annotations

import numpy as np
import pytest

from costmodel.lock_waits import LockSuffixes, earlier_partitions, meeting_groups, suffix_within


def random_locks(rng, n_designs: int, n_txns: int, n_parts: int, most: int):
    """Locks as the estimate orders them: by design, then transaction, each transaction's
    partitions ascending and distinct. Returns (design, transaction numbered across designs,
    partition, index of each lock's next transaction's first lock)."""
    design, txn, part = [], [], []
    for d in range(n_designs):
        for _ in range(int(rng.integers(1, n_txns + 1))):
            parts = np.sort(rng.choice(n_parts, size=int(rng.integers(1, min(most, n_parts) + 1)), replace=False))
            design += [d] * parts.size
            txn += [len(set(txn)) if not txn else txn[-1] + 1] * parts.size
            part += parts.tolist()
    design, txn, part = np.array(design), np.array(txn), np.array(part)
    seg_end = np.append(np.flatnonzero(np.diff(txn)) + 1, txn.size)
    next_txn = seg_end[np.searchsorted(seg_end, np.arange(txn.size), side="right")]
    return design, txn, part, next_txn


def earlier_by_masks(t: np.ndarray, part: np.ndarray, n_parts: int) -> np.ndarray:
    """The form `earlier_partitions` replaced: each transaction's partitions as a mask,
    scattered with `bitwise_or.at`, and each lock's bits below its partition kept."""
    words = (n_parts + 62) // 63
    masks = np.zeros((int(t[-1]) + 1, words), dtype=np.uint64)
    np.bitwise_or.at(masks, (t, part // 63), np.left_shift(np.uint64(1), (part % 63).astype(np.uint64)))
    word = np.arange(words)[None, :]
    below = np.where(word < (part // 63)[:, None], np.uint64((1 << 63) - 1), np.uint64(0))
    own_word = word == (part // 63)[:, None]
    below[own_word] = np.left_shift(np.uint64(1), (part % 63).astype(np.uint64)) - np.uint64(1)
    return masks[t] & below


def suffix_by_rows(step: np.ndarray, next_txn: np.ndarray, design: np.ndarray) -> np.ndarray:
    """The form `LockSuffixes` replaced: a row per design, summed from its end."""
    starts = np.searchsorted(design, np.arange(int(design[-1]) + 1))
    pos = np.arange(step.size) - starts[design]
    rows = np.zeros((starts.size, int(pos.max()) + 2))
    rows[design, pos] = step
    suffix = np.cumsum(rows[:, ::-1], axis=1)[:, ::-1]
    return suffix[design, pos] - suffix[design, next_txn - starts[design]]


@pytest.mark.parametrize("n_parts", [1, 2, 6, 63, 64, 65, 127, 130, 300])
def test_earlier_partitions_by_running_sums_are_the_masks(n_parts):
    """Per word, a running sum of the locks' bits less its value at the transaction's first
    lock; the last partition's bit, which no lock has below it, gets no word of its own
    (64 partitions fit one word): the words kept equal the masks', the ones left were zero."""
    rng = np.random.default_rng(n_parts)
    _design, t, part, _next = random_locks(rng, 3, 40, n_parts, 6)
    got = earlier_partitions(t, part, n_parts)
    want = earlier_by_masks(t, part, n_parts)
    assert got.dtype == np.uint64 and got.shape[0] == t.size
    assert np.array_equal(got, want[:, :got.shape[1]])
    assert not want[:, got.shape[1]:].any()


def test_earlier_partitions_of_a_transaction_locking_every_partition():
    """Every bit of a full word in the running sums: 2**63 - 1 before the 64th lock."""
    part = np.arange(130)
    t = np.zeros(130, dtype=np.int64)
    got = earlier_partitions(t, part, 130)
    assert np.array_equal(got, earlier_by_masks(t, part, 130))
    assert got[63, 0] == np.uint64((1 << 63) - 1)


@pytest.mark.parametrize("n_designs", [1, 2, 7, 40])
def test_lock_suffixes_add_what_the_rows_added(n_designs):
    """The reversed, transposed rows sum each design's steps in the order its own row did:
    the same figures to the last bit, step after step over one set of locks."""
    rng = np.random.default_rng(n_designs)
    design, _t, _part, next_txn = random_locks(rng, n_designs, 30, 20, 5)
    suffixes = LockSuffixes(next_txn, design)
    for scale in (1e-6, 1.0, 1e3):
        step = rng.random(design.size) * scale
        step[rng.random(design.size) < 0.2] = 0.0
        want = suffix_by_rows(step, next_txn, design) if n_designs > 1 else None
        got = suffixes(step)
        if want is not None:
            assert got.tobytes() == want.tobytes()
        assert got.tobytes() == suffix_within(step, next_txn, design).tobytes()
        # and what one design alone adds, design by design
        for d in range(n_designs):
            mine = design == d
            first = int(np.flatnonzero(mine)[0])
            alone = suffix_within(step[mine], next_txn[mine] - first)
            assert got[mine].tobytes() == alone.tobytes()


def test_meeting_groups_keep_the_pairs_the_whole_word_test_kept():
    """The (later lock, group) pairs apart, tested a word at a time: the same pairs, in the
    same order, as the test on every word at once (a pairs x words matrix)."""
    rng = np.random.default_rng(11)
    design, t, part, _next = random_locks(rng, 5, 30, 130, 6)
    at = design * 130 + part
    later = np.r_[False, t[1:] == t[:-1]]
    earlier = earlier_partitions(t, part, 130)
    group, pair_j, pair_g = meeting_groups(at, later, earlier)
    # the pairs before the test, and the test as it was
    order = np.lexsort((*earlier.T[::-1], at))
    first = np.r_[True, (at[order][1:] != at[order][:-1]) | (earlier[order][1:] != earlier[order][:-1]).any(axis=1)]
    g_at, g_earlier = at[order][first], earlier[order][first]
    js = np.flatnonzero(later)
    all_j = np.concatenate([np.full(int((g_at == at[j]).sum()), j) for j in js])
    all_g = np.concatenate([np.flatnonzero(g_at == at[j]) for j in js])
    apart = ~((earlier[all_j] & g_earlier[all_g]) != 0).any(axis=1)
    assert pair_j.tolist() == all_j[apart].tolist() and pair_g.tolist() == all_g[apart].tolist()
    assert apart.any() and not apart.all()


# -- the forms the group-at-a-time lock waits replaced, kept as oracles -------------------------

class TransposedSuffixes:
    """The form `LockSuffixes` had before its rows: reversed and transposed, a design a column."""

    def __init__(self, next_txn: np.ndarray, design: np.ndarray):
        starts = np.searchsorted(design, np.arange(int(design[-1]) + 1))
        first = starts[design]
        pos = np.arange(design.size) - first
        width = int(pos.max()) + 2
        self.shape = (width, starts.size)
        self.at = (width - 1 - pos) * starts.size + design
        self.after = (width - 1 - (next_txn - first)) * starts.size + design

    def __call__(self, step: np.ndarray) -> np.ndarray:
        rows = np.zeros(self.shape[0] * self.shape[1])
        rows[self.at] = step
        suffix = np.cumsum(rows.reshape(self.shape), axis=0).ravel()
        return suffix.take(self.at) - suffix.take(self.after)


def hold_by_lock_pairs(txn, part, held, next_txn, single_busy, single_part, single_s, coordinator_s,
                       rounds=6, *, design=None, n_parts=None):
    """`hold_with_lock_waits` as it was: every (later lock, group) pair, each lock's wait summed
    on its own, the suffixes by columns."""
    if txn.size == 0:
        return held
    n_parts = n_parts or single_busy.size
    n_designs = single_busy.size // n_parts
    design = np.zeros(txn.size, dtype=np.int64) if design is None else design
    coordinator_s = np.full(n_designs, coordinator_s) if np.isscalar(coordinator_s) else coordinator_s
    at = design * n_parts + part
    later = np.r_[False, txn[1:] == txn[:-1]]
    t = np.cumsum(~later) - 1
    earlier = earlier_by_masks(t, part, n_parts)
    order = np.lexsort((*earlier.T[::-1], at))
    s_at, s_earlier = at[order], earlier[order]
    first = np.r_[True, (s_at[1:] != s_at[:-1]) | (s_earlier[1:] != s_earlier[:-1]).any(axis=1)]
    group = np.empty(order.size, dtype=np.int64)
    group[order] = np.cumsum(first) - 1
    g_at, g_earlier = s_at[first], s_earlier[first]
    js = np.flatnonzero(later)
    lo = np.searchsorted(g_at, at[js])
    reps = np.searchsorted(g_at, at[js] + 1) - lo
    offset = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    pair_j, pair_g = np.repeat(js, reps), np.repeat(lo, reps) + offset
    apart = ~((earlier[pair_j] & g_earlier[pair_g]) != 0).any(axis=1)
    pair_j, pair_g = pair_j[apart], pair_g[apart]
    single_sq = np.bincount(single_part, weights=single_s ** 2, minlength=single_busy.size)[at] * later
    if pair_j.size == 0 and not single_sq.any():
        return held
    n_groups = int(group.max()) + 1
    one = design[0] == design[-1]
    suffixes = (lambda step: suffix_within(step, next_txn)) if one else TransposedSuffixes(next_txn, design)
    hold = held
    busy = single_busy + np.bincount(at, weights=hold, minlength=single_busy.size)
    rate = 1.0 / np.maximum(busy.reshape(n_designs, n_parts).max(axis=1), coordinator_s)
    for _ in range(rounds):
        squares = np.bincount(group, weights=hold ** 2, minlength=n_groups)
        meets = single_sq + np.bincount(pair_j, weights=squares[pair_g], minlength=part.size)
        wait = (rate[0] if n_designs == 1 else rate[design]) / 2 * meets
        hold = held + np.maximum(suffixes(wait) - wait, 0.0)
        busy = single_busy + np.bincount(at, weights=hold, minlength=single_busy.size)
        rate = 0.5 * (rate + 1.0 / np.maximum(busy.reshape(n_designs, n_parts).max(axis=1), coordinator_s))
    return hold


@pytest.mark.parametrize("n_designs", [2, 7, 40])
def test_lock_suffixes_by_rows_add_what_the_columns_added(n_designs):
    """The rows of `LockSuffixes` give what its transposed layout gave, to the last bit."""
    rng = np.random.default_rng(100 + n_designs)
    design, _t, _part, next_txn = random_locks(rng, n_designs, 30, 20, 5)
    rows, columns = LockSuffixes(next_txn, design), TransposedSuffixes(next_txn, design)
    for scale in (1e-6, 1.0, 1e3):
        step = rng.random(design.size) * scale
        step[rng.random(design.size) < 0.3] = 0.0
        assert rows(step).tobytes() == columns(step).tobytes()


@pytest.mark.parametrize("n_parts", [2, 6, 64, 130])
def test_group_meetings_sum_what_each_locks_pairs_summed(n_parts):
    """A sum over a group's pairs (`group_meetings`), handed to each of its later locks, is
    the sum over that lock's own pairs (`meeting_groups`) to the last bit; and the lock pairs
    are the group pairs' locks, in the same order."""
    from costmodel.lock_waits import group_meetings

    rng = np.random.default_rng(n_parts)
    design, t, part, _next = random_locks(rng, 6, 40, n_parts, 6)
    at = design * n_parts + part
    later = np.r_[False, t[1:] == t[:-1]]
    earlier = earlier_partitions(t, part, n_parts)
    group, g_at, pair_later, pair_met = group_meetings(at, later, earlier)
    lock_group, pair_j, pair_g = meeting_groups(at, later, earlier)
    assert np.array_equal(group, lock_group) and np.array_equal(g_at, at[np.unique(group, return_index=True)[1]])
    assert np.isin(pair_later, group[later]).all()
    for _ in range(3):
        squares = np.bincount(group, weights=rng.random(t.size) ** 2 * 10.0 ** rng.integers(-6, 3))
        by_lock = np.bincount(pair_j, weights=squares[pair_g], minlength=t.size)
        by_group = np.bincount(pair_later, weights=squares[pair_met], minlength=g_at.size)[group] * later
        assert by_group.tobytes() == by_lock.tobytes()
    if n_parts > 2:
        assert pair_j.size > pair_later.size > 0


@pytest.mark.parametrize("n_designs, n_parts", [(1, 6), (1, 64), (3, 6), (12, 64), (5, 130), (30, 20)])
def test_lock_waits_a_group_at_a_time_are_the_waits_lock_by_lock(n_designs, n_parts):
    """`hold_with_lock_waits` gives, to the last bit, what it gave pairing every later lock
    with the groups it meets and summing its wait on its own (`hold_by_lock_pairs`), on
    random locks of one design or many, with and without single-sited work around them."""
    from costmodel.lock_waits import hold_with_lock_waits

    rng = np.random.default_rng(n_designs * 1000 + n_parts)
    for trial in range(4):
        design, t, part, next_txn = random_locks(rng, n_designs, 25, n_parts, 5)
        held = rng.random(t.size) * 10.0 ** rng.integers(-5, -2)
        n_single = int(rng.integers(0, 40)) if trial % 2 else 0
        single_part = rng.integers(0, n_designs * n_parts, n_single)
        single_s = rng.random(n_single) * 1e-3
        single_busy = np.bincount(single_part, weights=single_s, minlength=n_designs * n_parts)
        coordinator_s = rng.random(n_designs) * 1e-3
        kw = dict(design=design, n_parts=n_parts) if n_designs > 1 else {}
        coord = coordinator_s if n_designs > 1 else float(coordinator_s[0])
        got = hold_with_lock_waits(t, part, held, next_txn, single_busy, single_part, single_s, coord, **kw)
        want = hold_by_lock_pairs(t, part, held, next_txn, single_busy, single_part, single_s, coord, **kw)
        assert got.tobytes() == want.tobytes()
        assert (got > held).any()  # the waits are in the draw
