"""A report's sensitivity and scaling parts read their rows as plain lists: building a report
does not import pandas (half a second of a report's serial tail), and the figures draw the
same lines from a result object as from its DataFrame."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from costmodel import Weights
from reports.figures._sensitivity import _sensitivity_info
from reports.figures._throughput import _curve_info
from reports.scaling import ScalingCurve
from reports.sensitivity import Sensitivity

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _same(a, b) -> bool:
    """Equal lists of numbers, NaN equal to NaN."""
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


def test_the_chart_draws_the_same_lines_from_the_curve_and_from_its_frame():
    curve = ScalingCurve(rows=[
        {"machines": 4, "design": "advisor", "throughput_tps": 400.0, "cost": 0.1},
        {"machines": 1, "design": "advisor", "throughput_tps": 100.0, "cost": 0.2},
        {"machines": 1, "design": "round-robin", "throughput_tps": None, "cost": 0.5},
        {"machines": 4, "design": "round-robin", "throughput_tps": 90.0, "cost": 0.6},
    ])
    plain, framed = _curve_info(curve).lines, _curve_info(curve.to_frame()).lines
    assert list(plain) == list(framed) == ["advisor", "round-robin"]
    assert plain["advisor"] == ([1, 4], [100.0, 400.0])  # by machine count
    for design in plain:
        assert plain[design][0] == framed[design][0] and _same(plain[design][1], framed[design][1])
    assert math.isnan(plain["round-robin"][1][0])  # no prediction: a gap in the line


def test_the_sweep_figure_reads_the_rows_in_sweep_order():
    rows = [{"term": t, "share": s, "total": s + i, "base_design_total": s + 2 * i, "design": "AB"[i % 2]}
            for i, (t, s) in enumerate([("alpha", 0.1), ("beta", 0.1), ("alpha", 0.5), ("beta", 0.5)])]
    info = _sensitivity_info(Sensitivity(base=Weights(0.3, 0.1, 0.6), rows=rows))
    assert list(info.lines) == ["alpha", "beta"]
    assert info.lines["alpha"] == ([0.1, 0.5], [0.1, 2.5], [0.1, 4.5], ["A", "A"])
    assert info.lines["beta"] == ([0.1, 0.5], [1.1, 3.5], [2.1, 6.5], ["B", "B"])


def test_building_a_report_does_not_import_pandas(tmp_path):
    script = (
        "import sys\n"
        "from advisor.api import recommend\n"
        "from reports.report import ReportOptions, build_report\n"
        "rec = recommend('voter-leaderboard', machines=2)\n"
        "html = build_report(rec, options=ReportOptions(jobs=1, scaling_machines=[1, 2]))\n"
        "assert 'sensitivity' in html and 'tuples/s' in html\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"
