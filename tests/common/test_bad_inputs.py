"""A generator of bad inputs over the files the tool reads (specs, designs, calibrations,
validation results, trace manifests, statistics manifests): every leaf of a good file is replaced, one at a time,
by a value of the wrong type, a NaN, an infinity, a negative number or a huge one. Each
mutant must be refused by its loader with a one-line user error (exit 2 on the command line)
or, for a value the format allows, be read: never another exception, never a traceback.
Wrong types, NaN and infinities must always be refused."""
from __future__ import annotations

import copy
import json
import math
import tomllib
from pathlib import Path

import pytest

from costmodel.design import Design
from advisor.sources import load_source_for
from costmodel.spec_reader import parse_workload
from advisor.statistics_workload import workload_from_statistics
from costmodel.errors import UserError
from costmodel.calibration import Calibration
from reports.validation_view import SHOWN_FIELDS, read_validation

ROOT = Path(__file__).resolve().parents[2]
NUMBER_BAD = ("x", [1], {"a": 1}, True, float("nan"), float("inf"), -1, 1e308)
STRING_BAD = (5, [1], {"a": 1}, True)
MUST_REFUSE = ("wrong type", "nan", "inf")


def _leaves(data, path=()):
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, path + (i,))
    else:
        yield path, data


def _put(data, path, value):
    data = copy.deepcopy(data)
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return data


def _kind(good, bad) -> str:
    if isinstance(bad, float) and math.isnan(bad):
        return "nan"
    if isinstance(bad, float) and math.isinf(bad):
        return "inf"
    numeric = (int, float)
    same = (isinstance(good, numeric) and not isinstance(good, bool) and isinstance(bad, numeric)
            and not isinstance(bad, bool)) or type(good) is type(bad)
    return "value" if same else "wrong type"


def mutants(data, skip=()):
    """(name, mutated data, kind) for every leaf and every bad value of its type."""
    for path, good in _leaves(data):
        if any(s in path for s in skip):
            continue
        bads = STRING_BAD if isinstance(good, str) else NUMBER_BAD if isinstance(good, (int, float)) \
            else (5, "x")
        for bad in bads:
            if bad == good and type(bad) is type(good):
                continue
            yield ".".join(map(str, path)) + f"={bad!r}", _put(data, path, bad), _kind(good, bad)


def _toml(data: dict) -> str:
    """A minimal TOML writer for the spec's shapes: tables, arrays of tables, inline values."""
    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        return str(v)

    lines, later = [], []
    for k, v in data.items():
        if isinstance(v, dict):
            later.append(f"\n[{k}]\n" + "".join(f"{kk} = {value(vv)}\n" for kk, vv in v.items()))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                later.append(f"\n[[{k}]]\n" + "".join(f"{kk} = {value(vv)}\n" for kk, vv in item.items()))
        else:
            lines.append(f"{k} = {value(v)}")
    return "\n".join(lines) + "\n" + "".join(later)


def _check(load, name: str, kind: str) -> None:
    try:
        load()
    except UserError as exc:
        assert "\n" not in str(exc).strip(), f"{name}: a refusal of several lines: {exc}"
        return
    except Exception as exc:  # noqa: BLE001 - this is what the test looks for
        pytest.fail(f"{name}: {type(exc).__name__}: {exc}")
    assert kind not in MUST_REFUSE, f"{name}: accepted"


SPECS = ("fraud-scoring", "voter-leaderboard", "window-micro", "tpcdi-trade")
SPEC_CASES = [(spec, *m) for spec in SPECS
              for m in mutants(tomllib.loads((ROOT / "costmodel" / "workloads" / f"{spec}.toml").read_text()),
                              skip=("description",))]


@pytest.mark.parametrize("spec, name, data, kind", SPEC_CASES, ids=[f"{c[0]}:{c[1]}" for c in SPEC_CASES])
def test_a_spec_with_a_bad_value_is_refused_in_one_line(spec, name, data, kind):
    _check(lambda: parse_workload(_toml(data), f"{spec}.toml"), name, kind)


def _design_dict() -> dict:
    return json.loads(Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": None}).to_json())


DESIGN_CASES = list(mutants(_design_dict(), skip=("provenance",)))


@pytest.mark.parametrize("name, data, kind", DESIGN_CASES, ids=[c[0] for c in DESIGN_CASES])
def test_a_design_with_a_bad_value_is_refused_in_one_line(name, data, kind):
    _check(lambda: load_source_for(Design.from_dict(data, "d.json"), "move-micro"), name, kind)


CALIBRATION = json.loads((ROOT / "bench" / "calibration.json").read_text())
# `machine` and `fit` record where and how the fit was made (shown, not computed with), but
# for the two fields `--refit` uses, mutated below
CALIBRATION_CASES = list(mutants(CALIBRATION, skip=("machine", "fit")))
CALIBRATION_CASES += [(f"machine.cpus={v!r}", _put(CALIBRATION, ("machine", "cpus"), v), "wrong type")
                      for v in ("x", 0, True, 2.5)]
_CHECK = next(iter(CALIBRATION["fit"]["throughput_checks"]))
CALIBRATION_CASES += [(f"fit.throughput_checks.{_CHECK}.engine_bps={v!r}",
                       _put(CALIBRATION, ("fit", "throughput_checks", _CHECK, "engine_bps"), v), "wrong type")
                      for v in ("x", 0, float("nan"), None)]


@pytest.mark.parametrize("name, data, kind", CALIBRATION_CASES, ids=[c[0] for c in CALIBRATION_CASES])
def test_a_calibration_with_a_bad_value_is_refused_in_one_line(name, data, kind, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    _check(lambda: Calibration.load(path), name, kind)


@pytest.fixture(scope="module")
def engine_trace(tmp_path_factory) -> Path:
    from advisor.sources import load_workload
    from engine_sim.engine import run_workload

    out = tmp_path_factory.mktemp("trace") / "t"
    w = load_workload("move-micro")
    run_workload(w, Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1}),
                 batches=20, in_process=True, trace_out=out)
    return out


def _trace_cases() -> list:
    """The manifest of a trace the engine writes (its fields as `docs/traces.md` lists them)."""
    manifest = {"format": "advisor.trace/1", "workload": "move-micro", "batches": 20, "batch_size": 10,
                "procedures": ["SP1", "SP2"],
                "tables": {"T1": {"rows": 10000, "row_bytes": 64, "read_mostly": False, "key": "tuple_id"}},
                "streams": [{"from": "SP1", "to": "SP2", "tuples": 10, "tuple_bytes": 64}],
                "nested": [["SP1", "SP2"]],
                "input": {"batch_size": 10, "fields": ["tuple_id", "value"], "cost_unit_us": 100.0,
                          "durations": "execution"},
                "cluster": {"machines": 2, "partitions_per_machine": 1, "machine_memory_mb": 1024},
                "access_keys": {"SP1": {"T1": "input:tuple_id"}}}
    return list(mutants(manifest, skip=("seed",)))


TRACE_CASES = _trace_cases()


@pytest.mark.parametrize("name, data, kind", TRACE_CASES, ids=[c[0] for c in TRACE_CASES])
def test_a_trace_manifest_with_a_bad_value_is_refused_before_spark(name, data, kind, engine_trace, tmp_path):
    """`advisor trace validate` (no Spark) reads the manifest beside the engine's own data."""
    import shutil

    from traces.trace_checks import validate_trace

    trace = tmp_path / "t"
    shutil.copytree(engine_trace, trace)
    written = json.loads((trace / "_trace.json").read_text())
    (trace / "_trace.json").write_text(json.dumps({**written, **data}))
    _check(lambda: validate_trace(trace), name, kind)


# Made once with the tool itself (`validate_design` of move-micro on the engine and the
# simulator; `advisor trace aggregate` of a 40-batch engine trace of it): the good files.
DATA = Path(__file__).parent / "data"
VALIDATION = json.loads((DATA / "validation-move-micro.json").read_text())
_SHOWN = set(SHOWN_FIELDS)


def _read_by_the_report(name: str) -> bool:
    """A validation file's engine and simulator results are kept whole as measured; the
    reader interprets (and checks) the metrics the report shows and the bottleneck's texts."""
    path = name.split("=", 1)[0].split(".")
    if len(path) > 3 and path[2] in ("engine", "simulator"):
        return path[3] in _SHOWN and len(path) == 4
    if len(path) > 3 and path[2] == "bottleneck":
        return path[-1] == "text"
    return True


VALIDATION_CASES = [c for c in mutants(VALIDATION) if _read_by_the_report(c[0])]


def test_the_good_validation_file_and_statistics_are_read():
    assert read_validation(DATA / "validation-move-micro.json").entries[0].engine is not None
    assert list(workload_from_statistics(DATA / "stats-move-micro").procedure_names) == ["SP1", "SP2"]


@pytest.mark.parametrize("name, data, kind", VALIDATION_CASES, ids=[c[0] for c in VALIDATION_CASES])
def test_a_validation_file_with_a_bad_value_is_refused_in_one_line(name, data, kind, tmp_path):
    path = tmp_path / "v.json"
    path.write_text(json.dumps(data))
    _check(lambda: read_validation(path), name, kind)


STATS_MANIFEST = json.loads((DATA / "stats-move-micro" / "_stats.json").read_text())
# where and when it was made (shown, never computed with)
STATS_CASES = list(mutants(STATS_MANIFEST, skip=("source_trace", "spark_master", "seconds", "created_by")))


@pytest.mark.parametrize("name, data, kind", STATS_CASES, ids=[c[0] for c in STATS_CASES])
def test_a_statistics_manifest_with_a_bad_value_is_refused_in_one_line(name, data, kind, tmp_path):
    """What `recommend STATS` and every other command read first: the workload rebuilt."""
    import shutil

    stats = tmp_path / "stats"
    shutil.copytree(DATA / "stats-move-micro", stats)
    (stats / "_stats.json").write_text(json.dumps(data))
    _check(lambda: workload_from_statistics(stats), name, kind)


def test_the_generator_covers_hundreds_of_cases():
    cases = (SPEC_CASES, DESIGN_CASES, CALIBRATION_CASES, TRACE_CASES, VALIDATION_CASES, STATS_CASES)
    assert sum(map(len, cases)) >= 300 and min(map(len, cases)) >= 30
