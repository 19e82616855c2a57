"""bench/engine.py's scaling figures (sections 5 and 6, docs/measurements.md): the ratios against one
machine, the last step's growth, and the pace the processes' CPU allows on free cores."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

_PATH = Path(__file__).resolve().parents[2] / "bench" / "engine.py"
_spec = importlib.util.spec_from_file_location("engine_bench", _PATH)
B = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(B)


def test_scaling_rows_divide_each_scheduler_by_its_own_one_machine_figure():
    tps = {("dls", 1): 1000.0, ("central", 1): 800.0, ("dls", 2): 1900.0, ("central", 2): 1200.0,
           ("dls", 4): 3600.0, ("central", 4): 2000.0, ("dls", 8): 6000.0, ("central", 8): 2100.0}
    rows = B._scaling_rows((1, 2, 4, 8), tps, ["a", "b", "c", "d"], "notes")
    assert rows[0].split()[-1] == "notes"
    one, two, four, eight = rows[1:5]
    assert one.split()[1:5] == ["1,000", "1.00x", "800", "1.00x"] and one.endswith("a")
    assert two.split()[1:5] == ["1,900", "1.90x", "1,200", "1.50x"] and two.endswith("b")
    assert eight.split()[1:5] == ["6,000", "6.00x", "2,100", "2.62x"] and eight.endswith("d")
    # the last step, where the dissertation's central curve is flat
    assert rows[5].strip() == "8 / 4 machines: DLS 1.67x, central 1.05x"


def test_cpu_pace_is_the_busiest_process_or_all_of_them_spread_over_the_cores():
    run = SimpleNamespace(partition_cpu_s=[4.0, 1.0, 1.0], driver_cpu_s=0.5)
    assert B.cpu_pace(run, batches=100, cores=16) == pytest.approx(0.04)  # partition 0 sets it
    assert B.cpu_pace(run, batches=100, cores=2) == pytest.approx(0.04)  # 6.5 s / 2 < 4 s
    assert B.cpu_pace(run, batches=100, cores=1) == pytest.approx(0.065)  # everything on one core
