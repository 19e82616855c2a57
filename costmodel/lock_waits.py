"""The waits of distributed transactions for each other's locks, and the sums along a
transaction's locks that the busy-time estimate (`costmodel.busy_time`) needs.

Why a module of its own: the busy-time estimate charges work where it runs; these are the
holds stretched by contention, a fixed point over every lock of every design priced at once.
Each lock is an entry of flat arrays ordered by (design, transaction, partition): a
transaction's locks are consecutive, in ascending partition order (the engine's lock order).
"""
from __future__ import annotations

import numpy as np

from costmodel.arrays import sorted_unique


def hold_with_lock_waits(txn: np.ndarray, part: np.ndarray, held: np.ndarray, next_txn: np.ndarray,
                          single_busy: np.ndarray, single_part: np.ndarray, single_s: np.ndarray,
                          coordinator_s, rounds: int = 6, *, design: np.ndarray | None = None,
                          n_parts: int | None = None, suffixes: "LockSuffixes | None" = None) -> np.ndarray:
    """Each distributed transaction's hold of each partition it locks (in lock order, `held`
    without waiting), plus the waits for its later locks while it holds this one.

    Why: several distributed transactions that lock the same partitions stretch each other's
    holds, and the busy partition that waits for a lock runs nothing meanwhile. A request finds
    its partition in one of the other transactions' visits with probability rate x visit, and
    waits half that visit on average, so a lock's wait is rate/2 x the sum of the squared visits
    it can meet. It cannot meet a transaction that shares a partition it locked earlier (both
    hold that one first: ascending lock order), nor itself. The rate is where the busiest
    partition or coordinator is saturated with these waits in it (a fixed point, a few
    damped rounds from the rate without waits). First order: a queue of several waiters is not
    modelled.

    Several designs at once (`busy_times`): `design` gives each lock's design, `n_parts` the
    partitions of one; `single_busy` and `single_part` are then by (design, partition) and
    `coordinator_s` one figure per design. Without them, one design. `suffixes`: the caller's
    `LockSuffixes(next_txn, design, ...)` of these locks, if it has one."""
    if txn.size == 0:
        return held
    n_parts = n_parts or single_busy.size
    n_designs = single_busy.size // n_parts
    design = np.zeros(txn.size, dtype=np.int64) if design is None else design
    coordinator_s = np.full(n_designs, coordinator_s) if np.isscalar(coordinator_s) else coordinator_s
    at = design * n_parts + part  # each lock's (design, partition)
    # a transaction's locks are consecutive: the first of each holds nothing yet, so only the
    # later locks' waits count
    later = np.empty(txn.size, dtype=bool)
    later[0] = False
    np.equal(txn[1:], txn[:-1], out=later[1:])
    t = np.cumsum(~later) - 1  # each lock's transaction, numbered from 0
    group, g_at, pair_later, pair_met = group_meetings(at, later, earlier_partitions(t, part, n_parts))
    n_groups = g_at.size
    g_later = np.zeros(n_groups, dtype=bool)
    g_later[group[later]] = True
    # everything a lock's wait depends on but its hold is its group's: its (design, partition)
    # and whether it is a later lock. So the waits are worked out per group and handed to its
    # locks: the same operations on the same numbers, as lock by lock
    single_sq = np.bincount(single_part, weights=single_s ** 2, minlength=single_busy.size)[g_at] * g_later
    if pair_later.size == 0 and not single_sq.any():
        return held  # no later lock can meet anybody
    g_design = g_at // n_parts
    if suffixes is None:
        suffixes = LockSuffixes(next_txn, design, np.searchsorted(design, np.arange(n_designs)))
    hold = held
    busy = single_busy + np.bincount(at, weights=hold, minlength=single_busy.size)
    rate = 1.0 / np.maximum(busy.reshape(n_designs, n_parts).max(axis=1), coordinator_s)
    for _ in range(rounds):
        squares = np.bincount(group, weights=hold ** 2, minlength=n_groups)
        meets = single_sq + np.bincount(pair_later, weights=squares[pair_met], minlength=n_groups)
        wait = ((rate[0] if n_designs == 1 else rate[g_design]) / 2 * meets)[group]
        hold = held + np.maximum(suffixes(wait) - wait, 0.0)  # its later locks' waits
        busy = single_busy + np.bincount(at, weights=hold, minlength=single_busy.size)
        rate = 0.5 * (rate + 1.0 / np.maximum(busy.reshape(n_designs, n_parts).max(axis=1), coordinator_s))
    return hold


_BITS = np.left_shift(np.uint64(1), np.arange(63, dtype=np.uint64))  # bit b of a word, b < 63


def earlier_partitions(t: np.ndarray, part: np.ndarray, n_parts: int) -> np.ndarray:
    """Each lock's earlier partitions: those its transaction (`t`, ascending) locks below its
    partition, as bits of 63-bit words (locks x words), so no transactions x partitions matrix
    is built.

    A transaction's locks are consecutive and ascending, so its partitions below a lock's are
    the locks before it in the transaction: per word, a running sum of the locks' bits (one
    bit each, so the sum is their OR) less that sum at the transaction's first lock. The sums
    wrap modulo 2**64 and the difference is still exact (it is below 2**63). Why: scattering
    each lock's bit into a mask per transaction (`bitwise_or.at`) was the slow part.

    The last partition is nobody's earlier one, so it has no bit: 64 partitions (32 machines
    of 2) fit one word, and the groups are sorted on one key fewer."""
    words = max(1, (n_parts - 1 + 62) // 63)
    bit = _BITS[part % 63]
    word = part // 63 if words > 1 else None
    # each lock's transaction's first lock (`np.searchsorted(t, t)`, twice as fast: t ascends)
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, t.size]))
    out = np.empty((t.size, words), dtype=np.uint64)
    for w in range(words):
        bits = bit if words == 1 else np.where(word == w, bit, np.uint64(0))
        before = np.cumsum(bits, dtype=np.uint64) - bits  # the bits of every earlier lock
        out[:, w] = before - before[first]
    return out


def meeting_groups(at: np.ndarray, later: np.ndarray, earlier: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The locks that each later lock may meet, as groups: (each lock's group, and every
    (later lock, group) pair it may meet, by lock, then group).

    A later lock j cannot meet a lock k at its partition whose transaction locks one of j's
    earlier partitions (both take that one first: ascending lock order). Whether they share
    one depends on k's earlier partitions only (j's are all below this partition), so the
    locks at one partition with the same earlier partitions are met or not together: one
    group. A dataflow whose SPs share a few tables has millions of (lock, lock) pairs but few
    groups at each partition (on 150 SPs, 6x less work than pairing the locks). j's own lock
    falls in a group it shares partitions with (its earlier ones are not empty), so it never
    meets itself.

    The lock pairs of `group_meetings`' group pairs (what the lock waits sum per group)."""
    group, _g_at, pair_later, pair_met = group_meetings(at, later, earlier)
    js = np.flatnonzero(later)
    starts = np.searchsorted(pair_later, group[js])
    reps = np.searchsorted(pair_later, group[js], side="right") - starts
    offset = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    return group, np.repeat(js, reps), pair_met[np.repeat(starts, reps) + offset]


def group_meetings(at: np.ndarray, later: np.ndarray, earlier: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`meeting_groups` a group at a time: (each lock's group, each group's (design,
    partition), and every (group of later locks, group) pair that may meet, by the first group,
    then the second).

    Why: a later lock's group has its partition and its earlier partitions, all that decides
    what it meets, so every lock of a group meets the same groups, in the same order; pairing
    groups with groups is the locks' pairs without their repeats (on 150 SPs sharing tables,
    ten times fewer), and a sum over one group's pairs is, to the last bit, the sum over each
    of its locks' pairs."""
    order = _lock_order(at, earlier)  # by partition, then earlier partitions
    s_at, s_earlier = at[order], earlier[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = (s_at[1:] != s_at[:-1]) | (s_earlier[1:] != s_earlier[:-1]).any(axis=1)
    group = np.empty(order.size, dtype=np.int64)
    group[order] = np.cumsum(first) - 1
    g_at, g_earlier = s_at[first], s_earlier[first]
    # the groups of later locks (a later lock has earlier partitions, a first lock none, so no
    # group holds both), each paired with the groups at its partition: found for those
    # partitions only (an index of every (design, partition) was most of a big cluster's
    # estimate: a million partitions)
    gs = np.zeros(g_at.size, dtype=bool)
    gs[group[later]] = True
    gs = np.flatnonzero(gs)
    lo = np.searchsorted(g_at, g_at[gs])
    hi = np.searchsorted(g_at, g_at[gs] + 1)
    skip_lo, skip_hi = _same_top_bit(g_at, g_earlier[:, 0], gs)
    # each later group's candidates: its partition's groups but those skipped, in order
    start = np.stack([lo, skip_hi], axis=1).ravel()
    reps = np.stack([skip_lo - lo, hi - skip_hi], axis=1).ravel()
    owner = np.repeat(gs, 2)
    pair_met = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps - start, reps)
    return group, g_at, *_apart(np.repeat(owner, reps), pair_met, g_earlier, g_earlier)


def _lock_order(at: np.ndarray, earlier: np.ndarray) -> np.ndarray:
    """The locks ordered by (design, partition), then their earlier partitions' words (first
    word first). Why: with one word (64 partitions or fewer) both fit one 64-bit key, and one
    sort of it is several times faster than `lexsort` of two keys; the order of equal keys is
    not used (every lock of a group gets the group's number whatever its place)."""
    if earlier.shape[1] == 1 and at.size:
        shift = int(earlier.max()).bit_length()
        if int(at.max()).bit_length() + shift <= 64:
            key = np.left_shift(at.astype(np.uint64), np.uint64(shift)) | earlier[:, 0]
            return np.argsort(key)
    return np.lexsort((*earlier.T[::-1], at))


def _same_top_bit(g_at: np.ndarray, g_word: np.ndarray, gs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each later group `gs`, the range of groups at its partition whose first word of
    earlier partitions has the same highest bit as its own: all of them lock that partition
    before this one too, so none can meet it (and it is one of them). Why: the groups are
    ordered by (partition, first word), so that range is contiguous, and on gen150's
    round-robin on 32 machines it held 82 % of the pairs `_apart` tested. A group whose first
    word is empty (its earlier partitions all past 62) skips nothing."""
    values = sorted_unique(g_word)
    # (partition, first word) as one ordered key: the word by its rank among the values
    width = values.size + 1
    key = g_at * width + np.searchsorted(values, g_word)
    top = _highest_bit(g_word[gs])
    base = g_at[gs] * width
    skip_lo = np.searchsorted(key, base + np.searchsorted(values, top))
    skip_hi = np.searchsorted(key, base + np.searchsorted(values, top << np.uint64(1)))
    return skip_lo, skip_hi


def _highest_bit(x: np.ndarray) -> np.ndarray:
    """Each word's highest set bit as a word (0 for 0): the bits below it filled in, then it
    alone kept."""
    x = x.copy()
    for s in (1, 2, 4, 8, 16, 32):
        x |= x >> np.uint64(s)
    return x - (x >> np.uint64(1))


def _apart(pair_j: np.ndarray, pair_g: np.ndarray, earlier: np.ndarray, g_earlier: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """The (later lock, group) pairs whose earlier partitions share none, a word at a time
    (a pairs x words matrix and its `any` along a handful of words cost more than a column
    each)."""
    clash = np.zeros(pair_j.size, dtype=bool)
    for w in range(earlier.shape[1]):
        clash |= (earlier[:, w][pair_j] & g_earlier[:, w][pair_g]) != 0
    apart = ~clash
    return pair_j[apart], pair_g[apart]


def suffix_within(step: np.ndarray, next_txn: np.ndarray, design: np.ndarray | None = None,
                   starts: np.ndarray | None = None) -> np.ndarray:
    """For each lock (in a transaction's order), the sum of its own step and every later
    step of the same transaction (`next_txn`: index of the next transaction's first lock).

    With `design` (each lock's design, ascending; `starts`: where each design's locks begin),
    the sums run within each design's own row, so they add what one design alone adds, in the
    same order (a row's padding is zeros after its end, and adding zeros to zero is exact)."""
    return LockSuffixes(next_txn, design, starts)(step)


class LockSuffixes:
    """`suffix_within` for many steps over one set of locks: where each lock and its next
    transaction's first lock sit in the designs' padded rows is found once. Why: the lock
    waits' fixed point sums six rounds of waits over the same locks.

    The rows are stored reversed (a design a row, its last lock first, the padding before
    it), so each row's running sum adds its design's steps in the order a row summed from its
    end adds them. A cumulative sum along contiguous rows is twice as fast as one down the
    columns of the transposed layout this had before (NumPy 2.4), and each design's locks are
    scattered into one stretch of memory."""

    def __init__(self, next_txn: np.ndarray, design: np.ndarray | None = None,
                 starts: np.ndarray | None = None):
        self.next_txn = next_txn
        self.one_design = design is None or design.size == 0 or design[0] == design[-1]
        if self.one_design:
            return
        starts = np.searchsorted(design, np.arange(int(design[-1]) + 1)) if starts is None else starts
        width = int(np.diff(starts, append=design.size).max()) + 1  # a design's locks and one cell
        self.shape = (starts.size, width)
        # lock i of design d sits at d * width + width - 1 - (i - starts[d]): one number per
        # design less the lock's index (fewer passes over the locks than its parts one by one)
        cell = (np.arange(starts.size) * width + (width - 1) + starts)[design]
        self.at = cell - np.arange(design.size)  # each lock's cell
        self.after = cell - next_txn  # its next transaction's
        self._rows: np.ndarray | None = None  # the padded rows, zero but at `at` (kept between calls)
        self._suffix = np.empty(self.shape)

    def __call__(self, step: np.ndarray) -> np.ndarray:
        if self.one_design:
            suffix = np.zeros(step.size + 1)
            suffix[:-1] = np.cumsum(step[::-1])[::-1]
            return suffix[:-1] - suffix[self.next_txn]
        if self._rows is None:  # (each call writes the same cells, so the padding stays zero)
            self._rows = np.zeros(self.shape)
        self._rows.ravel()[self.at] = step
        suffix = np.cumsum(self._rows, axis=1, out=self._suffix).ravel()
        return suffix.take(self.at) - suffix.take(self.after)
