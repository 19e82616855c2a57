"""The records a notebook or a print shows most (Workload, Design, SimResult) print as one
line naming what they hold, never their every SP, item and figure (19-50 KB each at 100 SPs),
and never raise, even where a design was changed into one no file could hold."""
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
