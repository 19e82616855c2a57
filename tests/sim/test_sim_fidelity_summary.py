"""bench/sim_fidelity.py's figures: per workload, pooled after normalising per workload, and
whether the simulator's first pick measures within 10 % of the engine's best."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

_PATH = Path(__file__).resolve().parents[2] / "bench" / "sim_fidelity.py"
_spec = importlib.util.spec_from_file_location("sim_fidelity_bench", _PATH)
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)


def test_pooled_figures_are_normalised_per_workload():
    # the simulator is 10x off on every design of "fast" but orders everything right: pooled
    # raw values would look perfect or awful by accident, normalised ones show the order only
    rows = [("fast", "a", 1000.0, 10000.0, 1.0), ("fast", "b", 2000.0, 20000.0, 1.0),
            ("fast", "c", 3000.0, 30000.0, 1.0),
            ("slow", "a", 10.0, 12.0, 1.0), ("slow", "b", 20.0, 18.0, 1.0), ("slow", "c", 30.0, 33.0, 1.0)]
    s = F.summarise(rows)
    fast, slow = s["workloads"]["fast"], s["workloads"]["slow"]
    assert fast["spearman"] == pytest.approx(1.0) and fast["median_error"] == pytest.approx(9.0)
    assert slow["spearman"] == pytest.approx(1.0) and slow["median_error"] == pytest.approx(0.1)
    assert s["pooled"]["spearman"] > 0.9
    assert s["pooled"]["median_error"] < 0.15  # per-workload scale removed


def test_the_first_pick_is_judged_by_what_the_engine_measured_for_it():
    rows = [("w", "best", 100.0, 50.0, 1.0), ("w", "close", 95.0, 60.0, 1.0), ("w", "bad", 40.0, 40.0, 1.0)]
    s = F.summarise(rows)["workloads"]["w"]
    assert s["top_pick"] == "close" and s["top_pick_share_of_best"] == pytest.approx(0.95)
    assert s["top_pick_within"]
    rows[1] = ("w", "close", 80.0, 60.0, 1.0)
    s = F.summarise(rows)["workloads"]["w"]
    assert s["top_pick_share_of_best"] == pytest.approx(0.8) and not s["top_pick_within"]


def test_every_workload_of_the_bench_has_at_least_five_designs_that_fit_this_machine():
    for name, make in F.WORKLOADS.values():
        designs = make()
        assert len(designs) >= 5, name
        assert all(d.n_partitions <= 8 for _, _, d in designs)


def test_engine_runs_round_trip_through_the_saved_file(tmp_path):
    runs = {"w": {"a": [{"throughput_tps": 10.0, "background_jobs": 1.0}],
                  "b": [{"throughput_tps": 20.0, "background_jobs": 0.0}]}}
    path = tmp_path / "engine.json"
    F.save_engine(path, runs, {"w": 300})
    doc = F.load_engine(path)
    assert doc["runs"] == runs and doc["batches"] == {"w": 300} and doc["in_flight"] == F.IN_FLIGHT


def test_a_saved_file_with_one_batch_count_applies_it_to_every_workload(tmp_path):
    runs = {"w": {"a": [{"throughput_tps": 10.0}]}, "v": {"a": [{"throughput_tps": 5.0}]}}
    path = tmp_path / "engine.json"
    path.write_text(json.dumps({"format": F.ENGINE_FORMAT, "batches": 300, "window": F.IN_FLIGHT, "runs": runs}))
    assert F.load_engine(path)["batches"] == {"w": 300, "v": 300}


def test_repeats_are_interleaved_so_a_burst_of_load_spreads_over_designs(monkeypatch):
    order = []
    monkeypatch.setattr(F, "engine_run", lambda w, d, batches, seed: order.append((d.method, seed))
                        or {"throughput_tps": 1.0})
    monkeypatch.setattr(F, "WORKLOADS", {"x": ("X", lambda: [("a", None, _Labelled("a")),
                                                             ("b", None, _Labelled("b"))])})
    runs = F.measure_engine(["x"], {"X": 10}, repeats=2, save=None)
    assert order == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    assert {k: len(v) for k, v in runs["X"].items()} == {"a": 2, "b": 2}


class _Labelled:
    def __init__(self, method: str):
        self.method = method


@pytest.mark.parametrize("text", ["not json", '{"format": "something else", "runs": {}}', "[]"])
def test_a_file_that_is_not_saved_engine_runs_is_refused_in_one_line(tmp_path, text):
    path = tmp_path / "engine.json"
    path.write_text(text)
    with pytest.raises(SystemExit) as e:
        F.load_engine(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_repeat_agreement_is_the_engines_own_ranking_between_repeats():
    same = {d: [{"throughput_tps": v}, {"throughput_tps": v * 1.1}] for d, v in zip("abcd", (1, 2, 3, 4))}
    assert F.repeat_agreement(same) == pytest.approx(1.0)
    flipped = {d: [{"throughput_tps": v}, {"throughput_tps": 5 - v}] for d, v in zip("abcd", (1, 2, 3, 4))}
    assert F.repeat_agreement(flipped) == pytest.approx(-1.0)
    one = {d: [{"throughput_tps": v}] for d, v in zip("abcd", (1, 2, 3, 4))}
    assert F.repeat_agreement(one) != F.repeat_agreement(one)  # nan: nothing to compare
