"""The records a notebook or a print shows most (Workload, Design, SimResult, a pick's Selection,
a search's Candidate and DesignSearch, a tuning study and its rounds, a sensitivity, a cost, the
suggestions) print as one line naming what they hold, never their every SP, item, figure and
partition array (19-50 KB each at 100 SPs), and never raise, even where a design was changed
into one no file could hold."""
from __future__ import annotations

from dataclasses import replace

import pytest

import advisor
from costmodel.design import Design

pytestmark = pytest.mark.integration

ONE_LINE = 300  # characters, at most


@pytest.fixture(scope="module")
def chain():
    workload = advisor.load_workload("chain-32")
    rec = advisor.recommend(workload, machines=4, baselines=False, objective="cost")
    return workload, rec.design


def test_a_workload_prints_its_counts_on_one_line(chain):
    workload, _ = chain
    text = repr(workload)
    assert "\n" not in text and len(text) < ONE_LINE
    assert text.startswith("Workload('chain-32': 32 SPs, ")
    assert f"{len(workload.tables)} table" in text and f"{len(workload.streams)} stream" in text
    one = replace(workload, procedures=workload.procedures[:1], streams=())
    assert "1 SP, " in repr(one) and "0 streams" in repr(one)


def test_a_design_prints_its_cluster_and_counts_on_one_line(chain):
    _, design = chain
    text = repr(design)
    assert "\n" not in text and len(text) < ONE_LINE
    assert text.startswith("Design('chain-32' on 4 machines x ")
    assert f"{len(design.procedures)} SPs and {len(design.state)} state items placed" in text
    assert f"cost {design.cost.total:.4f}" in text
    broken = replace(design, machines="four", procedures=None, cost="?")
    assert repr(broken).startswith("Design('chain-32' on machines='four'")  # never raises
    assert isinstance(repr(Design("w", 2, 1, {}, {})), str)


def test_a_simulation_prints_its_figures_on_one_line(chain):
    workload, design = chain
    result = advisor.simulate(workload, design)
    text = repr(result)
    assert "\n" not in text and len(text) < ONE_LINE
    assert f"{result.throughput_tps:,.0f} tuples/s" in text and result.bottleneck in text


def test_a_validation_prints_both_sides_on_one_line(chain):
    workload, design = chain
    result = advisor.validate(workload, design, engine=False)
    text = repr(result)
    assert "\n" not in text and len(text) < ONE_LINE
    assert f"simulator {result.simulator['throughput_tps']:,.0f} tuples/s" in text and "engine -" in text


@pytest.fixture(scope="module")
def picked():
    """A pick by the simulator: its selection weighed search designs and baselines."""
    return advisor.recommend("tpcdi-trade", machines=4)


def test_a_selection_prints_its_pick_on_one_line_and_lists_every_candidate(picked):
    selection = picked.selection
    text = repr(selection)
    assert "\n" not in text and len(text) < ONE_LINE
    assert repr(selection.chosen.label) in text and f"of {len(selection.candidates)} candidates" in text
    frame = selection.to_frame()
    assert list(frame["label"]) == [c.label for c in selection.candidates]
    assert list(frame.loc[frame["picked"], "label"]) == [selection.chosen.label]
    page = selection._repr_html_()
    assert all(f"<td>{c.source}</td>" in page for c in selection.candidates)


def test_a_candidate_and_a_fitted_search_print_without_their_arrays(picked):
    candidate = picked.selection.chosen
    text = repr(candidate)
    assert "\n" not in text and len(text) < ONE_LINE and "array(" not in text
    assert repr(candidate.label) in text and f"cost {candidate.cost.total:.4f}" in text
    search = picked.search
    assert search.pool_  # fitted: its results are there, but not in its repr
    text = repr(search)
    assert "\n" not in text and "array(" not in text and "pool_=" not in text
    assert text.startswith("DesignSearch(weights=")


def test_a_tuning_study_its_rounds_and_a_sensitivity_print_as_one_line():
    # the dataclasses printed every round's workload, design and simulation (1.1 KB a round)
    # and every row of the sweeps (8 KB at 100 SPs)
    from reports.sensitivity import sensitivity

    study = advisor.tune("tpcdi-trade", machines=4, rounds=1, jobs=1)
    sweep = sensitivity("tpcdi-trade", machines=4, shares=(0.2, 0.8))
    texts = [repr(study), repr(study.best), repr(study.rounds), repr(sweep)]
    assert all("\n" not in t and len(t) < 2 * ONE_LINE for t in texts)
    assert texts[0].startswith("TuningStudy('tpcdi-trade' on 4 machines x 1 partition: ")
    assert study.stopped in texts[0] and f"{study.best.predicted_tps:,.0f} tuples/s" in texts[1]
    assert f"{len(sweep.rows)} points" in texts[3] and sweep.verdict() in texts[3]


def test_a_cost_and_the_suggestions_print_as_one_line(chain):
    """`advisor.evaluate`'s CostBreakdown printed each machine's memory overflow (64 floats on
    64 machines); the Suggestions every change tried with its changed workload and design
    (1.6 KB for tpcdi-trade's one)."""
    import numpy as np

    from advisor.sources import load_graph
    from costmodel.model import score
    from reports.suggestions import suggest

    workload, design = chain
    cost = advisor.evaluate(design, workload)
    text = repr(cost)
    assert "\n" not in text and len(text) < ONE_LINE
    assert f"total {cost.total:.4f}" in text and "state co-location" in text and "infeasible" not in text
    graph = load_graph(workload.with_cluster(64)).with_cluster(64, 1, memory_limit_bytes=1.0)  # all over
    tight = score(graph.cost, np.zeros(graph.n_proc, dtype=np.int64), np.arange(graph.n_state) % 64)
    assert len(tight.memory_overflow_mb) == 64 and not tight.feasible
    line = repr(tight)
    assert "\n" not in line and len(line) < ONE_LINE and "MB over memory" in line
    tpcdi = advisor.load_workload("tpcdi-trade")
    found = suggest(tpcdi, advisor.recommend(tpcdi, machines=4).design)
    said = repr(found)
    assert "\n" not in said and len(said) < ONE_LINE and said.startswith("Suggestions(bottleneck ")
    assert (found.items and found.items[0].text[:40] in said) or (not found.items and found.note[:40] in said)
