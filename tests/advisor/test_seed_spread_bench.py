"""bench/seed_spread.py: each seed's pick predicted on the same run, and the spread read from
them (the signal that found stops 63's and 64's searches stopping short)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import seed_spread as S  # noqa: E402

pytestmark = pytest.mark.integration


def test_the_cases_are_read_on_their_own_clusters():
    small = S.workload_of("gen-3807@4")
    assert (small.cluster.machines, small.name) == (4, "generated-3807")
    assert S.workload_of("gen-3807@2").cluster.machines == 2
    big = S.workload_of("gen100#4501")
    assert (len(big.procedures), big.cluster.machines) == (100, 24)


def test_each_seed_s_pick_is_predicted_and_the_same_seed_gives_the_same_figure():
    w = S.workload_of("gen-3807@4")
    first = S.picks(w, [0, 1, 0], batches=100)
    assert [p.seed for p in first] == [0, 1, 0]
    assert all(p.predicted_tps > 0 and p.estimated_tps > 0 for p in first)
    assert first[2].predicted_tps == first[0].predicted_tps  # a seed in, the same design out
    assert S.spread(first) == max(p.predicted_tps for p in first) / min(p.predicted_tps for p in first) >= 1.0
