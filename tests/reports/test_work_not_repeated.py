"""A report's steps hand the same Workload object on, and it is checked as a spec and digested
once (`costmodel.object_memo`), not at every step; the answers reused are the ones computed
afresh, a changed copy is checked again, and the busy-time estimate's reused buffers leave
no trace between calls."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import costmodel.spec_reader as spec_reader
from advisor.pick_digest import DIGESTS, content_digest, workload_digest
from advisor.sources import load_workload
from costmodel.arrays import sorted_unique, unique_and_positions
from costmodel.errors import SpecError
from reports.scaling import scaling_rows


@pytest.fixture
def counted(monkeypatch):
    """Each workload the spec check parses, by id (the memos emptied first)."""
    seen: list[int] = []
    check = spec_reader._check_workload

    def counting(workload):
        seen.append(id(workload))
        return check(workload)

    monkeypatch.setattr(spec_reader, "_check_workload", counting)
    spec_reader.CHECKED.clear()
    DIGESTS.clear()
    return seen


@pytest.mark.integration
def test_a_chart_point_checks_and_digests_its_workload_once(counted, monkeypatch):
    import advisor.pick_digest as pick_digest

    digested: list[int] = []
    feed = pick_digest.content_digest
    monkeypatch.setattr(pick_digest, "content_digest", lambda v: digested.append(1) or feed(v))
    w = load_workload("tpcdi-trade").with_cluster(2)
    counted.clear()
    rows = scaling_rows(w, 2)  # its graph, its pick, its runs: each read its cluster's workload before
    assert len(counted) == 1  # that one workload, checked once
    assert len(digested) <= 1  # (none where nothing names a kept answer)
    assert {r["design"] for r in rows} >= {"advisor", "round-robin"}


def test_a_reused_digest_is_the_one_computed_afresh():
    w = load_workload("tpcdi-trade").with_cluster(3)
    DIGESTS.clear()
    first = workload_digest(w)
    assert workload_digest(w) == first == content_digest(replace(w, source="", sha256="", description=""))
    other = w.with_cluster(4)
    assert workload_digest(other) != first  # another record: digested on its own


def test_a_changed_copy_is_checked_again_and_a_refusal_is_never_kept(counted):
    w = load_workload("tpcdi-trade")
    spec_reader.check_workload(w)
    spec_reader.check_workload(w)
    assert counted == [id(w)]
    bad = replace(w, procedures=w.procedures + (w.procedures[0],))  # an SP named twice
    for _ in range(2):
        with pytest.raises(SpecError):
            spec_reader.check_workload(bad)
    assert counted[1:] == [id(bad), id(bad)]


def test_unique_and_positions_is_the_same_call_after_call_whatever_came_before():
    rng = np.random.default_rng(7)
    for bound in (50, 5_000, 1_000, 200_000, 30):
        values = rng.integers(0, bound, size=max(1, bound // 3))
        queries = rng.choice(values, size=20)
        unique, where = unique_and_positions(values, bound, queries)
        expected = sorted_unique(values)
        assert np.array_equal(unique, expected)
        assert np.array_equal(where, np.searchsorted(expected, queries))
    with pytest.raises(IndexError):  # a key out of range: refused, and the next call is clean
        unique_and_positions(np.array([3, 10**9]), 100, np.array([3]))
    unique, where = unique_and_positions(np.array([5, 2, 5]), 10, np.array([5, 2]))
    assert unique.tolist() == [2, 5] and where.tolist() == [1, 0]
