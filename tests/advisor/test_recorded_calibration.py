"""A design remembers what its figures were predicted for (`Design.recorded_calibration`):
predicted again for other parameters, `simulate`, `check` and the report say so. A design
recommended with --calibration read 18,149 tuples/s there and 37,715 in `simulate` without
it, and two reports of it could not be told apart."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.cli import run_app
from costmodel.design import Design

CALIBRATION = str(Path(__file__).resolve().parents[2] / "bench" / "calibration.json")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cal") / "d.json"
    assert run_app(["recommend", "tpcdi-trade", "--machines", "2", "--calibration", CALIBRATION,
                    "--out", str(path)]) == 0
    return path


def test_the_label_is_recorded_and_a_note_only_where_another_is_used(calibrated, capsys):
    capsys.readouterr()
    d = Design.load(calibrated)
    assert d.recorded_calibration and d.recorded_calibration != "reference-cluster parameters"
    assert d.calibration_note(d.recorded_calibration) == ""
    assert "'reference-cluster parameters'" in d.calibration_note("reference-cluster parameters")
    assert Design("move-micro", 1, 1, {}, {}).calibration_note("anything") == ""  # nothing recorded
    assert run_app(["simulate", "--design", str(calibrated)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^note: recommend's figures for this design are for '.+', these for "
                     r"'reference-cluster parameters'", out, re.M)
    assert run_app(["simulate", "--design", str(calibrated), "--calibration", CALIBRATION]) == 0
    assert "recommend's figures for this design" not in capsys.readouterr().out
    assert run_app(["check", "--design", str(calibrated), "tpcdi-trade"]) == 0
    assert "note: recommend's figures for this design are for" in capsys.readouterr().out


@pytest.mark.process  # the report's sections run in worker processes
def test_the_report_says_what_its_predictions_are_for(calibrated, tmp_path):
    args = ["report", "--design", str(calibrated), "--no-sensitivity", "--no-scaling", "--no-suggestions", "-q"]
    assert run_app(args + ["--out", str(tmp_path / "ref.html")]) == 0
    assert run_app(args + ["--calibration", CALIBRATION, "--out", str(tmp_path / "cal.html")]) == 0
    ref, cal = ((tmp_path / n).read_text().replace("&#39;", "'") for n in ("ref.html", "cal.html"))
    assert "batches per run), for reference-cluster parameters." in ref
    assert "recommend's figures for this design are for" in ref
    label = Design.load(calibrated).recorded_calibration
    assert f"batches per run), for {label}." in cal and "recommend's figures for this design" not in cal
