"""A report of a design `recommend` wrote does not search again: the design's provenance holds
the digest of the request it answered, and where the report would ask the same (same code,
input, cluster, weights, seed, calibration) and the placement is unedited, the design is the
search's pick. Anything else searches as before."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

import advisor.api
import advisor.pick_digest as pick_digest
from advisor.api import recommend
from costmodel.design import Design
from reports.compared import CURRENT_SEARCH, compared_designs, report_subject

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """tpcdi-trade on 2 machines as `advisor recommend -o` writes it, read back from the file."""
    path = tmp_path_factory.mktemp("pick") / "design.json"
    recommend("tpcdi-trade", machines=2, seed=0).design.save(path)
    return Design.load(path)


def _searches(monkeypatch) -> list:
    calls = []
    real = advisor.api.recommend

    def counted(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(advisor.api, "recommend", counted)
    return calls


def test_a_design_recommend_wrote_is_compared_without_a_search_and_with_the_same_baselines(written, monkeypatch):
    design, graph, workload = report_subject(written, "tpcdi-trade")
    calls = _searches(monkeypatch)
    skipped = compared_designs(design, graph, workload)
    assert calls == []  # no search ran
    monkeypatch.setattr(pick_digest, "is_the_pick", lambda *args: False)
    searched = compared_designs(design, graph, workload)
    assert len(calls) == 1
    assert CURRENT_SEARCH not in searched  # the search agrees: the file is its pick
    assert list(skipped) == list(searched)
    for name, d in searched.items():
        assert (skipped[name].procedures, skipped[name].state) == (d.procedures, d.state), name
        assert skipped[name].cost == d.cost, name


def test_the_digest_is_the_same_for_the_same_request_and_differs_with_any_part_of_it():
    a = recommend("tpcdi-trade", machines=2, seed=0, baselines=False).design.provenance
    b = recommend("tpcdi-trade", machines=2, seed=0, baselines=False).design.provenance
    assert a["request_sha256"] == b["request_sha256"] and a["placement_sha256"] == b["placement_sha256"]
    for other in (dict(machines=3), dict(seed=1), dict(replicate=True)):
        c = recommend("tpcdi-trade", **{"machines": 2, "seed": 0, **other}, baselines=False).design.provenance
        assert c["request_sha256"] != a["request_sha256"], other


@pytest.mark.parametrize("change", ["edited placement", "other weights", "other seed", "other code", "no digest",
                                    "no sources to read"])
def test_anything_but_the_same_request_searches_again(written, change, monkeypatch):
    design, graph, workload = report_subject(written, "tpcdi-trade")
    seed = 0
    if change == "edited placement":  # an SP moved by hand, the provenance kept
        name = next(iter(design.procedures))
        design = replace(design, procedures={**design.procedures, name: (design.procedures[name] + 1) % 2})
    elif change == "other weights":
        w = design.weights
        design = replace(design, weights=type(w)(w.alpha * 0.5, w.beta, w.gamma))
    elif change == "other seed":
        seed = 1
    elif change == "other code":
        monkeypatch.setattr(pick_digest, "code_fingerprint", lambda: "0" * 64)
    elif change == "no sources to read":  # a frozen install: the code has no identity
        monkeypatch.setattr(pick_digest, "code_fingerprint", lambda: "")
    else:  # a file from before the digest existed
        made = {k: v for k, v in design.provenance.items() if k != "request_sha256"}
        design = replace(design, provenance=made)
    calls = _searches(monkeypatch)
    compared = compared_designs(design, graph, workload, seed=seed)
    assert len(calls) == 1
    if change == "edited placement":
        assert CURRENT_SEARCH in compared  # the search's pick is not the edited design


def test_the_digest_survives_the_file_and_names_what_it_covers(written):
    made = written.provenance
    assert made["placement_sha256"] == pick_digest.placement_digest(written)
    assert len(made["request_sha256"]) == 64
    text = json.dumps(made)
    assert "request_sha256" in text and "placement_sha256" in text
