"""Answers kept on disk: the same request read back is the very pick (design, cost, provenance
and prediction), without a search; any change to the request is another entry; a cache that
is off, not this user's own, unwritable or holding a broken file never changes an answer."""
from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

import advisor.api
from reports import disk_cache
from reports.disk_cache import cache_dir
from reports.pick_cache import CachedPick, pick_key, read_pick, recommend_cached, write_pick
from advisor.sources import load_graph, load_workload
from costmodel import Weights

pytestmark = pytest.mark.integration  # each miss is a whole pick (a second or two)

WEIGHTS = Weights(0.3, 0.1, 0.6)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache" / "picks"


@pytest.fixture(scope="module")
def linear_road():
    return load_workload("linear-road").with_cluster(2, 2)


def _no_search(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("searched again")
    monkeypatch.setattr(advisor.api, "recommend", refuse)


def test_a_pick_read_back_is_the_pick_itself(cache, linear_road, monkeypatch):
    fresh = advisor.api.recommend(linear_road, weights=WEIGHTS, seed=3, baselines=False)
    first = recommend_cached(linear_road, WEIGHTS, 3)
    assert first.design == fresh.design and first.prediction == fresh.prediction
    assert len(list(cache.iterdir())) == 1
    _no_search(monkeypatch)
    again = recommend_cached(linear_road, WEIGHTS, 3)
    assert again.design == fresh.design and again.prediction == fresh.prediction
    assert again.design.cost == fresh.design.cost  # scored again, not the file's rounded figures
    assert os.stat(cache).st_mode & 0o777 == 0o700


def test_every_part_of_the_request_is_in_the_key(linear_road):
    key = pick_key(linear_road, WEIGHTS, 0, None, "throughput", "default")
    bigger_batches = replace(linear_road, input=replace(linear_road.input, batch_size=linear_road.input.batch_size + 1))
    others = [pick_key(linear_road, Weights(0.3, 0.2, 0.5), 0, None, "throughput", "default"),
              pick_key(linear_road, WEIGHTS, 1, None, "throughput", "default"),
              pick_key(linear_road, WEIGHTS, 0, None, "cost", "default"),
              pick_key(linear_road, WEIGHTS, 0, None, "throughput", "report"),
              pick_key(linear_road.with_cluster(4, 2), WEIGHTS, 0, None, "throughput", "default"),
              pick_key(bigger_batches, WEIGHTS, 0, None, "throughput", "default")]
    assert key is not None and key not in others and len(set(others)) == len(others)
    # where it was read from is not part of it: a copy of the same content is the same request
    assert pick_key(replace(linear_road, source="elsewhere.yaml", sha256=""), WEIGHTS, 0, None,
                    "throughput", "default") == key
    assert pick_key(linear_road, None, 0, None, "throughput", "default") is None  # default weights: not named


def test_workloads_that_print_alike_are_different_requests(linear_road):
    """A workload prints as one line of counts: two that differ only inside (an SP split in two
    ways, `tune`'s round 3 on tpcdi-trade x 8, which read the other's pick and failed on it) are
    two requests, and two simulations."""
    from advisor.pick_digest import workload_digest

    renamed = replace(linear_road, procedures=tuple(
        replace(p, name=f"{p.name}#0") if i == 0 else p for i, p in enumerate(linear_road.procedures)))
    busier = replace(linear_road, tables=tuple(
        replace(t, rows=t.rows + 1) if i == 0 else t for i, t in enumerate(linear_road.tables)))
    assert repr(renamed) == repr(busier) == repr(linear_road)
    digests = {workload_digest(w) for w in (linear_road, renamed, busier)}
    assert len(digests) == 3
    keys = {pick_key(w, WEIGHTS, 0, None, "throughput", "default") for w in (linear_road, renamed, busier)}
    assert len(keys) == 3


def _kept(cache, linear_road) -> tuple[str, CachedPick]:
    key = pick_key(linear_road, WEIGHTS, 0, None, "throughput", "default")
    pick = recommend_cached(linear_road, WEIGHTS, 0)
    assert (cache / key).exists()
    return key, pick


def test_a_broken_or_foreign_entry_is_a_miss(cache, linear_road):
    key, pick = _kept(cache, linear_road)
    path = cache / key
    for broken in ("{", "[]", json.dumps({"format": 1, "key": "another", "design": {}, "prediction": 1.0}),
                   json.dumps({"format": 1, "key": key, "design": {"workload": 3}, "prediction": 1.0})):
        path.write_text(broken)
        assert read_pick(key, lambda: load_graph(linear_road)) is None
    again = recommend_cached(linear_road, WEIGHTS, 0)  # searched again, and kept again
    assert again.design == pick.design and read_pick(key, lambda: load_graph(linear_road)) is not None


def test_off_shared_or_unwritable_caches_change_nothing(tmp_path, linear_road, monkeypatch):
    monkeypatch.setenv(disk_cache.CACHE_ENV, "off")
    assert cache_dir() is None
    reference = recommend_cached(linear_road, WEIGHTS, 0)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # others may write here: a design read from it could be anyone's
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(shared))
    write_pick(pick_key(linear_road, WEIGHTS, 0, None, "throughput", "default"), reference)
    assert list(shared.iterdir()) == []
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(blocked / "picks"))
    assert recommend_cached(linear_road, WEIGHTS, 0).design == reference.design


def test_the_oldest_entries_go_beyond_the_limit(cache, linear_road, monkeypatch):
    key, pick = _kept(cache, linear_road)
    os.utime(cache / key, (1, 1))  # the oldest, whatever the clock's resolution
    monkeypatch.setattr(disk_cache, "MAX_ENTRIES", 5)
    for n in range(5):
        write_pick(f"{n:064x}", pick)
    left = sorted(p.name for p in cache.iterdir())
    assert len(left) == 4 and key not in left  # the oldest went first


def test_a_prediction_read_back_is_the_simulation_itself(cache, linear_road, monkeypatch):
    import engine_sim.sim
    from reports.predict import SIMULATIONS, PredictOptions, predict

    design = advisor.api.recommend(linear_road, weights=WEIGHTS, baselines=False).design
    options = PredictOptions(batches=300)
    SIMULATIONS.clear()
    fresh = predict(linear_road, design, options)
    assert len(list((cache.parent / "predictions").iterdir())) == 1
    SIMULATIONS.clear()  # another process: only the disk remembers

    def refuse(*args, **kwargs):
        raise AssertionError("simulated again")
    monkeypatch.setattr(engine_sim.sim, "max_throughput", refuse)
    again = predict(linear_road, design, options)
    assert again == fresh and again.throughput_tps == fresh.throughput_tps
    with pytest.raises(AssertionError, match="simulated again"):  # another setting is another entry
        predict(linear_road, design, PredictOptions(batches=301))
    SIMULATIONS.clear()


def test_a_report_again_reads_its_picks_and_simulations_and_is_the_same(cache, monkeypatch):
    from reports.predict import SIMULATIONS
    from reports.report import ReportOptions, build_report

    small = advisor.api.recommend("voter-leaderboard", machines=2)
    searches = []
    search = advisor.api.recommend

    def counted(*args, **kwargs):
        searches.append(kwargs.get("objective", "throughput"))
        return search(*args, **kwargs)
    monkeypatch.setattr(advisor.api, "recommend", counted)
    options = ReportOptions(jobs=1, scaling_machines=[1, 2, 4])
    SIMULATIONS.clear()
    first = build_report(small, options=options)
    first_searches = len(searches)
    searches.clear()
    SIMULATIONS.clear()  # another process: only the disk remembers
    again = build_report(small, options=options)
    assert again == first
    assert len(searches) < first_searches  # the chart's and the suggestions' picks were read back
    assert {p.parent.name for p in cache.parent.glob("*/*")} == {"picks", "predictions"}
    SIMULATIONS.clear()


def test_where_the_cache_lives(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.delenv(disk_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "sstore-advisor"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "sstore-advisor"
    for off in ("off", "OFF", "0", "none", ""):
        monkeypatch.setenv(disk_cache.CACHE_ENV, off)
        assert cache_dir() is None
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    # a HOME that does not exist keeps no cache (it was made, from / down, to hold one)
    monkeypatch.delenv(disk_cache.CACHE_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "no" / "such" / "home"))
    assert cache_dir() is None
    disk_cache.write_entry("picks", "k" * 64, b"x")
    assert not (tmp_path / "no").exists()


def test_a_sensitivity_point_read_back_is_the_pick_by_cost(cache, monkeypatch):
    from reports.sensitivity import sweep_term, sweep_weights

    graph = load_graph("linear-road", 2, 2)
    shares = (0.5, 0.2)
    fresh = [advisor.api.recommend(graph, weights=sweep_weights(WEIGHTS, "alpha", share), seed=1,
                                   baselines=False).design for share in shares]
    assert sweep_term(graph, WEIGHTS, "alpha", shares, seed=1) == fresh
    _no_search(monkeypatch)
    again = sweep_term(graph, WEIGHTS, "alpha", shares, seed=1)
    assert again == fresh and [d.cost for d in again] == [d.cost for d in fresh]
    with pytest.raises(AssertionError, match="searched again"):  # another graph is another entry
        sweep_term(load_graph("linear-road", 4, 2), WEIGHTS, "alpha", (0.5,), seed=1)


def test_the_content_digest_sees_every_element_of_an_array():
    import numpy as np

    from advisor.pick_digest import content_digest

    graph = load_graph("chain-32", 4, 2)
    same = load_graph("chain-32", 4, 2)
    assert content_digest(graph) == content_digest(same)
    long = np.arange(5_000, dtype=float)
    changed = long.copy()
    changed[2_500] += 1e-9  # numpy's repr shows neither
    assert repr(long) == repr(changed) and content_digest(long) != content_digest(changed)
    same.cost.proc_load[len(same.cost.proc_load) // 2] *= 1.000001
    assert content_digest(graph) != content_digest(same)
    assert content_digest(graph) != content_digest(graph.with_cluster(8, 2))


def test_an_entry_that_is_no_regular_file_is_a_miss_not_read(cache):
    """An entry the user's own hands made a link to a device (or a pipe): its size said 0, so
    it was read whole, and /dev/zero was read until the process was killed (-9 here)."""
    disk_cache.write_entry("picks", "k" * 64, b"{}")
    entry = cache / ("k" * 64)
    for device in ("/dev/null", "/dev/zero"):
        entry.unlink()
        entry.symlink_to(device)
        assert disk_cache.read_entry("picks", "k" * 64) is None
    entry.unlink()
    os.mkfifo(entry)  # no writer: opening it for reading waited for one
    assert disk_cache.read_entry("picks", "k" * 64) is None
