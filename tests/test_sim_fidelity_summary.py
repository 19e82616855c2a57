"""bench/sim_fidelity.py's figures: per workload, pooled after normalising per workload, and
whether the simulator's first pick measures within 10 % of the engine's best."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "bench" / "sim_fidelity.py"
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
