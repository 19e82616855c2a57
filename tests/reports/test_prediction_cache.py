"""The report's simulation cache: the same question is simulated once per process, and the
answer handed out again is the answer the simulator gives (issue 21, item 1)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.api import recommend
from advisor.sources import load_workload
from engine_sim.sim import max_throughput
from reports.predict import SIMULATIONS, CachedSimulator, PredictOptions, predict
from reports.scaling import scaling_curve

OPTIONS = PredictOptions(batches=120)


@pytest.fixture()
def tpcdi():
    SIMULATIONS.clear()
    yield load_workload("tpcdi-trade").with_cluster(2)
    SIMULATIONS.clear()


def test_a_repeated_prediction_is_the_simulators_answer_simulated_once(tpcdi):
    design = recommend(tpcdi, seed=0, baselines=False, objective="cost").design
    first = predict(tpcdi, design, OPTIONS)
    misses = SIMULATIONS.misses
    again = predict(tpcdi, replace(design, method="renamed", provenance={}), OPTIONS)  # same placement
    assert again is first and SIMULATIONS.misses == misses and SIMULATIONS.hits >= 1
    fresh = max_throughput(tpcdi, design, batches=OPTIONS.batches, seed=OPTIONS.seed)
    assert fresh.throughput_tps == first.throughput_tps


def test_a_changed_spec_or_setting_is_simulated_afresh(tpcdi):
    design = recommend(tpcdi, seed=0, baselines=False, objective="cost").design
    base = predict(tpcdi, design, OPTIONS)
    heavier = replace(tpcdi, procedures=tuple(replace(p, cost=p.cost * 3) for p in tpcdi.procedures))
    misses = SIMULATIONS.misses
    slower = predict(heavier, design, OPTIONS)
    other_seed = predict(tpcdi, design, replace(OPTIONS, seed=1))
    assert SIMULATIONS.misses == misses + 2
    assert slower.throughput_tps < base.throughput_tps
    assert other_seed is not base


def test_the_pick_through_the_cache_picks_as_without_it(tpcdi):
    plain = recommend(tpcdi, seed=0, baselines=False)
    cached = recommend(tpcdi, seed=0, baselines=False, simulator=CachedSimulator())
    hits = SIMULATIONS.hits
    again = recommend(tpcdi, seed=0, baselines=False, simulator=CachedSimulator())
    assert cached.design.procedures == plain.design.procedures == again.design.procedures
    assert cached.design.state == plain.design.state == again.design.state
    assert SIMULATIONS.hits > hits  # the second pick simulated nothing new


def test_scaling_with_the_design_given_draws_the_same_baselines(tpcdi):
    """The chart's count whose design is given skips the search; its baselines are placed on
    the very graph the search would have used."""
    searched = scaling_curve(tpcdi, [2], options=OPTIONS)
    own = next(r for r in searched.rows if r["design"] == "advisor")
    design = recommend(tpcdi, seed=0, baselines=False).design
    given = scaling_curve(tpcdi, [2], options=OPTIONS, fixed={2: (design, own["throughput_tps"])})
    assert [r for r in given.rows if r["design"] != "advisor"] == [r for r in searched.rows if r["design"] != "advisor"]
    assert len(given.rows) == len(searched.rows) >= 2
