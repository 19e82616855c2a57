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
