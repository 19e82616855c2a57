"""The driver's latencies and finished batches in bounded memory (metrics.py): the histogram's
percentiles stay within their stated relative error of numpy's on the same values, its mean is
exact, and the finished-batch record answers what the runner and a migration's figures ask."""
import numpy as np
import pytest

from engine_sim.engine.metrics import CompletedBatches, LatencyHistogram, latency_stats

QUANTILES = [0, 1, 10, 25, 50, 75, 90, 99, 99.9, 100]


def _samples(kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "lognormal":
        return rng.lognormal(mean=8.0, sigma=1.5, size=20_000)
    if kind == "uniform-ints":  # microsecond integers, as the driver adds them, zeros included
        return rng.integers(0, 5_000, size=10_000).astype(float)
    if kind == "two-modes":  # fast batches and a few slow ones: the p99 falls between the modes
        return np.concatenate([rng.normal(2_000, 100, 9_850).clip(1), rng.normal(900_000, 5e4, 150)])
    return rng.pareto(1.2, size=5_000) * 1e3 + 1  # heavy tail


@pytest.mark.parametrize("kind", ["lognormal", "uniform-ints", "two-modes", "pareto"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentiles_are_within_the_stated_error_of_numpys(kind, seed):
    values = _samples(kind, np.random.default_rng(seed))
    hist = LatencyHistogram(relative_error=0.01)
    for v in values:
        hist.add(float(v))
    for q in QUANTILES:
        exact = float(np.percentile(values, q))
        assert abs(hist.percentile(q) - exact) <= 0.01 * abs(exact) + 1e-9, (q, hist.percentile(q), exact)
    assert hist.count == len(values)
    assert hist.mean == pytest.approx(float(values.mean()), rel=1e-12)
    assert len(hist.buckets) < 2_000  # bounded however many values went in


def test_a_coarser_histogram_keeps_its_own_stated_error():
    values = np.random.default_rng(9).lognormal(6.0, 2.0, 5_000)
    hist = LatencyHistogram(relative_error=0.05)
    for v in values:
        hist.add(float(v))
    errors = [abs(hist.percentile(q) - np.percentile(values, q)) / np.percentile(values, q) for q in QUANTILES]
    assert max(errors) <= 0.05 + 1e-12
    assert max(errors) > 0.001  # it is an approximation: a histogram kept the values would be exact


def test_the_summary_is_in_milliseconds_and_empty_runs_give_zeros():
    hist = LatencyHistogram()
    assert latency_stats(hist) == (0.0, 0.0, 0.0)
    for us in (1_000, 2_000, 3_000, 10_000):
        hist.add(us)
    p50, p99, mean = latency_stats(hist)
    assert mean == 4.0
    assert p50 == pytest.approx(np.percentile([1, 2, 3, 10], 50), rel=0.01)
    assert p99 == pytest.approx(np.percentile([1, 2, 3, 10], 99), rel=0.01)
    with pytest.raises(ValueError):
        LatencyHistogram(relative_error=0.0)


def test_finished_batches_are_held_as_a_low_mark_and_the_few_above_it():
    done = CompletedBatches(batches=10)
    for b in (0, 2, 3, 1, 5):
        assert done.add(b, 100 + b)
    assert not done.add(2, 999)  # finished before: not counted again
    assert len(done) == 5 and done.low == 4 and done.above == {5}
    assert [b for b in range(10) if b in done] == [0, 1, 2, 3, 5]
    with pytest.raises(KeyError):
        done[0]  # times are kept only when asked
    assert done.values() == []


def test_a_migrating_run_keeps_the_finish_times_it_counts_by():
    done = CompletedBatches(batches=4, times=True)
    done.add(1, 50)
    done.add(0, 70)
    assert done[1] == 50 and done[0] == 70 and 2 not in done
    assert sorted(done.values()) == [50, 70]
    assert [done[b] for b in range(4) if b in done] == [70, 50]
    with pytest.raises(KeyError):
        done[2]
