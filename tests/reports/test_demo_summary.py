"""The demo's summary: the engine's measurement beside its prediction, and a pointer to the
note when the measurement favours the naive design."""
from __future__ import annotations

from pathlib import Path

import pytest

from reports.demo import NAIVE, DemoResult


def summary(engine_naive: float, engine_rec: float, **kw) -> str:
    r = DemoResult(Path("out"), Path("out/design.json"), Path("out/report.html"), Path("out/statistics"),
                   predicted_tps={"recommended": 40_000.0, NAIVE: 12_000.0},
                   engine_tps={NAIVE: engine_naive, "recommended": engine_rec},
                   engine_predicted_tps={NAIVE: 12_000.0, "recommended": 24_000.0}, engine_machines=2, **kw)
    return "\n".join(r.summary())


@pytest.mark.parametrize("naive, rec, pointer", [(7_000.0, 10_000.0, False), (7_000.0, 4_000.0, True)])
def test_the_engine_line_shows_measured_and_predicted_and_points_at_the_note(naive, rec, pointer):
    text = summary(naive, rec)
    assert f"engine on 2 machine(s) of this host: {NAIVE} {naive:,.0f} -> recommended {rec:,.0f}" in text
    assert f"({rec / naive:.2f}x; predicted 2.00x" in text
    assert ("see the note above" in text) is pointer


def test_the_engine_line_says_what_its_prediction_is_for():
    # measured on machines that are processes of this host, predicted (without a calibration
    # of it) for a real cluster: the line must not read as a prediction of what it measured
    assert "(1.43x; predicted 2.00x for the reference cluster, not this host)" in summary(7_000.0, 10_000.0)
    calibrated = summary(7_000.0, 10_000.0, engine_predicted_for="this host, as calibrated on vm")
    assert "(1.43x; predicted 2.00x for this host, as calibrated on vm)" in calibrated
