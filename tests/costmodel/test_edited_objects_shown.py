"""A Workload or a Calibration changed in a notebook (`dataclasses.replace`) into one no file
could hold: the notebook's table renders the one line that says why (it was an AttributeError
from inside), `to_frame` is that line as an error, and `save` writes no file that every command
would then refuse."""
import dataclasses

import pytest

from costmodel.calibration import Calibration, CalibrationError
from costmodel.errors import SpecError


def test_a_workload_no_spec_could_hold_renders_its_error_line(tpcdi_trade):
    bad = dataclasses.replace(tpcdi_trade, procedures=("TradeInsert",))
    assert "Not a valid workload:" in bad._repr_html_()
    with pytest.raises(SpecError, match="not a workload a spec could hold"):
        bad.to_frame()
    assert "<table>" in tpcdi_trade._repr_html_() and len(tpcdi_trade.to_frame()) == len(tpcdi_trade.procedures)


def test_a_calibration_no_file_could_hold_is_not_saved(tmp_path):
    bad = dataclasses.replace(Calibration.reference(), prices=[1])
    with pytest.raises(CalibrationError, match="prices must be an object"):
        bad.save(tmp_path / "calibration.json")
    assert not list(tmp_path.iterdir())
    good = Calibration.reference().save(tmp_path / "good.json")
    assert Calibration.load(good).prices == Calibration.reference().prices
