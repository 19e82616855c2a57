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
    fresh = max_throughput(tpcdi, design, batches=OPTIONS.batches, seed=OPTIONS.seed, tolerance=OPTIONS.tolerance)
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


@pytest.mark.parametrize("name, machines", [("boundaries-16sp", 4), ("bank-transfer", 2)])
def test_recommends_figure_is_what_a_report_simulates(name, machines):
    """One answer (issue 21, item 2): the figure `recommend` shows for its pick is the report's
    simulation of that design on its default settings, to the last digit, whether the pick
    ran the simulated search (boundaries-16sp) or enumerated every assignment (bank-transfer);
    the table's shorter side-by-side runs give other figures."""
    SIMULATIONS.clear()
    workload = load_workload(name).with_cluster(machines)
    rec = recommend(workload, seed=1)
    simulated = predict(workload, rec.design, PredictOptions(seed=1)).throughput_tps
    assert rec.prediction == simulated
    assert rec.design.provenance["predicted_tuples_per_s"] == round(simulated, 1)
    assert rec.design.provenance["simulator"]["batches"] == PredictOptions().batches
    assert predict(workload, rec.design, PredictOptions(seed=0)).throughput_tps != simulated  # a seed's own run
    SIMULATIONS.clear()


def test_the_reports_picks_take_the_picks_own_figure(tpcdi):
    """A suggestion's and a scaling point's pick are not simulated again for the report: the
    figure they carry is the one `predict` gives (asked afterwards, it is simulated then)."""
    from reports.scaling import scaling_rows
    from reports.suggestions import SuggestionsStart, try_change

    design = recommend(tpcdi, seed=0).design
    start = SuggestionsStart.of(tpcdi, design)
    change = start.changes[0]
    assert change.replicated == ()
    new_design, tps = try_change(tpcdi, design, start.weights, change)
    rows = scaling_rows(tpcdi, 3, baselines=())
    for spec, d, figure in ((change.workload, new_design, tps),
                            (tpcdi.with_cluster(3), None, rows[0]["throughput_tps"])):
        if d is None:
            d = recommend(spec, seed=0, baselines=False).design
        misses = SIMULATIONS.misses
        assert predict(spec, d).throughput_tps == figure
        assert SIMULATIONS.misses == misses + 1  # not simulated for the report before
