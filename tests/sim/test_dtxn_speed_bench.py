"""bench/dtxn_speed.py's identity check: it must see a one-ulp change anywhere in a result
(the rate search's probes included) and a field one tree lacks, and its check set must stay
at least 20 designs of at least 4 workloads."""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import dtxn_speed as B  # noqa: E402

RESULT = {"throughput_tps": 1234.5, "partition_busy_s": [0.25, 0.5],
          "search": [{"input_rate": 9.447930526936158, "within_bound": True}]}


def test_equal_results_differ_nowhere():
    assert B.differences({"d": RESULT}, {"d": {**RESULT, "throughput_tps": 1234.5}}) == []


def test_a_one_ulp_change_in_a_probe_or_a_timeline_is_seen():
    rate = RESULT["search"][0]["input_rate"]
    probe = {**RESULT, "search": [{**RESULT["search"][0], "input_rate": math.nextafter(rate, math.inf)}]}
    timeline = {**RESULT, "partition_busy_s": [0.25, math.nextafter(0.5, 0.0)]}
    assert B.differences({"d": RESULT}, {"d": probe}) == ["d: search"]
    assert B.differences({"d": RESULT}, {"d": timeline}) == ["d: partition_busy_s"]


def test_a_field_or_a_design_one_tree_lacks_is_a_difference():
    fewer = {k: v for k, v in RESULT.items() if k != "throughput_tps"}
    assert B.differences({"d": RESULT}, {"d": fewer}) == ["d: throughput_tps"]
    assert B.differences({"d": RESULT}, {}) == [f"d: {k}" for k in sorted(RESULT)]


def test_the_check_set_is_at_least_20_designs_of_4_workloads():
    designs = sum(len(B.BASELINES) + extra for *_, extra in B.CHECKED)
    workloads = {case.split("@")[0] for case, *_ in B.CHECKED}
    assert designs >= 20 and len(workloads) >= 4
