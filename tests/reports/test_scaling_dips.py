"""The scaling chart says where the advisor's design on a larger cluster is predicted slower
than on a smaller one (a design on fewer machines runs on more, so that is the search missing
it, and the user should know which design to take)."""
from __future__ import annotations

import pytest

from reports.scaling import ScalingCurve


def curve(points: dict[int, float], baseline: dict[int, float] | None = None) -> ScalingCurve:
    rows = [{"machines": m, "design": "advisor", "throughput_tps": t, "cost": 0.0} for m, t in points.items()]
    rows += [{"machines": m, "design": "round-robin", "throughput_tps": t, "cost": 0.0}
             for m, t in (baseline or {}).items()]
    return ScalingCurve(rows=rows)


def test_a_larger_cluster_below_a_smaller_ones_pick_is_a_dip_against_the_best_smaller():
    c = curve({1: 4000.0, 2: 6471.0, 4: 6170.0, 8: 5606.0})
    dips = c.dips()
    assert [(d.machines, d.fewer) for d in dips] == [(4, 2), (8, 2)]
    assert dips[1].tps == 5606.0 and dips[1].fewer_tps == 6471.0
    text = dips[1].describe()
    assert "On 8 machines" in text and "5,606" in text and "6,471 on 2" in text


def test_a_rising_or_flat_curve_and_the_baselines_lines_have_no_dip():
    assert curve({1: 4000.0, 2: 6000.0, 4: 5950.0, 8: 9000.0}).dips() == []  # within 2 %
    # a baseline that falls is what a baseline does: only the advisor's line is read
    assert curve({1: 4000.0, 2: 6000.0}, baseline={1: 4000.0, 2: 1000.0}).dips() == []
    assert curve({2: 6000.0, 4: 5000.0}).dips("round-robin") == []


@pytest.mark.integration
def test_the_report_prints_the_dip_under_its_scaling_chart(monkeypatch):
    """A report whose chart dips says so under it (the chart's other counts made to dip here:
    which real dataflows dip is the search's business, docs/measurements.md)."""
    import reports.scaling as scaling
    from advisor.api import recommend
    from reports.report import ReportOptions, build_report

    real = scaling.scaling_rows

    def rows(workload, machines, *args, **kwargs):
        out = real(workload, machines, *args, **kwargs)
        if machines == 4:  # the advisor's design on 4 machines, made slower than on 2
            for r in out:
                if r["design"] == "advisor":
                    r["throughput_tps"] = 1000.0
        return out

    monkeypatch.setattr(scaling, "scaling_rows", rows)
    rec = recommend("bank-transfer", machines=2)
    html = build_report(rec, options=ReportOptions(sensitivity=False, suggestions=False, jobs=1,
                                                   scaling_machines=[1, 2, 4]))
    assert 'class="note dip"' in html and "On 4 machines the advisor&#39;s line is at 1,000 tuples/s" in html
    calm = build_report(rec, options=ReportOptions(sensitivity=False, suggestions=False, jobs=1,
                                                   scaling_machines=[1, 2]))
    assert 'class="note dip"' not in calm


@pytest.mark.parametrize("counts, said", [
    (4, r"^machine_counts must be a list of machine counts \(integers >= 1\), got 4"),  # 'int' object is not iterable
    ([2, 0], r"^machine_counts must be a list of machine counts \(integers >= 1\), got \[2, 0\]"),
    (["2"], r"^machine_counts must be a list of machine counts \(integers >= 1\), got \['2'\]"),
])
def test_a_scaling_curve_of_no_list_of_counts_is_one_line(counts, said):
    from advisor.errors import AdvisorError
    from reports.scaling import scaling_curve

    with pytest.raises(AdvisorError, match=said):
        scaling_curve("tpcdi-trade", counts)


def test_numpy_machine_counts_are_the_counts_they_are():
    # they stayed numpy integers in the rows (and in `to_frame`'s machines column)
    import numpy as np

    from advisor.sources import load_workload
    from reports.scaling import scaling_curve

    curve = scaling_curve(load_workload("move-micro"), np.arange(1, 3), baselines=(), objective="cost")
    assert [type(r["machines"]) for r in curve.rows] == [int, int]
    assert [r["machines"] for r in curve.rows] == [1, 2]
