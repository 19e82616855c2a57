"""`advisor report --validation` reads the validation file as strictly as docs/formats.md
says (found by fuzzing): each side holds exactly its result type's fields, of their types;
each bottleneck entry has its text line; the file is of the design's workload. Anything else
is one line, exit 2, and no report."""
from __future__ import annotations

import copy
import json
from dataclasses import fields

import pytest

from advisor.api import load_workload, recommend
from advisor.cli import run_app
from engine_sim.engine.metrics import RunResult
from engine_sim.sim.result import SimResult
from reports.validation import validate_design
from reports.validation_view import _FIELD_TYPES, ValidationFormatError, parse_validation, read_validation


@pytest.fixture(scope="module")
def good():
    """(design, a validation document of it): the simulator's real result, with the engine's
    side a real `RunResult.to_dict` (running the engine would start processes)."""
    design = recommend("tpcdi-trade", machines=2, objective="cost").design
    result = validate_design(load_workload("tpcdi-trade"), design, engine=False, sim=True, batches=30)
    result.engine = RunResult(1000.0, 100.0, 2.0, 3.0, 0, 30, "ok", "digest", 120, 0, 0,
                              [0.1, 0.2], 0.5).to_dict()
    return design, json.loads(json.dumps(result.to_document()))


def _entry(d: dict) -> dict:
    return d["designs"][0]


BAD = [
    ("simulator-unknown-field", lambda d: _entry(d)["simulator"].update(foo=1),
     "designs[0]: simulator: unknown field 'foo'"),
    ("engine-unknown-field", lambda d: _entry(d)["engine"].update(window=64),
     "designs[0]: engine: unknown field 'window'"),
    ("engine-empty", lambda d: _entry(d).update(engine={}),
     "designs[0]: engine: missing field 'throughput_tps'"),
    ("simulator-missing", lambda d: _entry(d)["simulator"].pop("partition_utilisation"),
     "designs[0]: simulator: missing field 'partition_utilisation'"),
    ("partition-utilisation-string", lambda d: _entry(d)["simulator"].update(partition_utilisation="x"),
     "simulator.partition_utilisation must be a list of numbers, got 'x'"),
    ("machine-utilisation-object", lambda d: _entry(d)["simulator"].update(machine_utilisation={"a": 1}),
     "simulator.machine_utilisation must be a list of numbers, got {'a': 1}"),
    ("procedures-list", lambda d: _entry(d)["simulator"].update(procedures=[1]),
     "simulator.procedures must be an object of objects"),
    ("history-check-number", lambda d: _entry(d)["engine"].update(history_check=1),
     "engine.history_check must be a string, got 1"),
    ("bottleneck-without-text", lambda d: _entry(d)["bottleneck"]["machine"].pop("text"),
     'bottleneck.machine must be an object whose "text" is a string'),
    ("other-workload", lambda d: d.update(workload="linear-road"),
     "a validation of workload 'linear-road', not of 'tpcdi-trade' (the design's)"),
]


def test_the_good_document_reads_with_its_workload(good, tmp_path):
    design, doc = good
    path = tmp_path / "v.json"
    path.write_text(json.dumps(doc))
    view = read_validation(path, design.workload)
    assert view.workload == "tpcdi-trade" and view.has_both
    assert any("most loaded machine" in n for n in view.notes)


@pytest.mark.parametrize("name, change, message", BAD, ids=[b[0] for b in BAD])
def test_a_validation_off_the_format_is_refused_in_one_line(good, name, change, message):
    design, doc = good
    bad = copy.deepcopy(doc)
    change(bad)
    with pytest.raises(ValidationFormatError) as err:
        parse_validation(bad, "v.json", design.workload)
    assert str(err.value).startswith("v.json: ") and message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name, change, message", BAD, ids=[b[0] for b in BAD])
def test_report_refuses_it_with_exit_2_and_writes_nothing(good, name, change, message, tmp_path, capsys):
    design, doc = good
    bad = copy.deepcopy(doc)
    change(bad)
    path, out = tmp_path / "v.json", tmp_path / "r.html"
    path.write_text(json.dumps(bad))
    design_path = design.save(tmp_path / "d.json")
    code = run_app(["report", "--design", str(design_path), "--validation", str(path), "--out", str(out), "-q"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: {path}: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err and not out.exists()


def test_every_result_field_type_is_checked():
    """A field added to RunResult or SimResult with a new kind of annotation must be given a
    check here, or the reader would take anything in it."""
    for result in (RunResult, SimResult):
        unchecked = {f"{result.__name__}.{f.name}: {f.type}" for f in fields(result) if str(f.type) not in _FIELD_TYPES}
        assert not unchecked


def test_validate_takes_a_numpy_batch_count_as_the_simulator_does():
    # `validate(batches=np.int64(30))` was refused while `simulate` took it
    import numpy as np
    from engine_sim.sim import SimError

    design = recommend("tpcdi-trade", machines=2, objective="cost").design
    w = load_workload("tpcdi-trade")
    plain = validate_design(w, design, engine=False, sim=True, batches=30)
    numpy_count = validate_design(w, design, engine=False, sim=True, batches=np.int64(30), in_flight=np.int64(8))
    documents = [r.to_document()["designs"][0] for r in (plain, numpy_count)]
    for d in documents:
        d["simulator"].pop("wall_s")  # (the simulator's own run time)
    assert documents[0] == documents[1] and documents[0]["simulator"]["throughput_tps"] > 0
    with pytest.raises(SimError, match=r"got np.float64\(30.0\)$"):
        validate_design(w, design, engine=False, sim=True, batches=np.float64(30))
