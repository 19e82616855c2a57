"""Inputs a fuzzing pass found reaching an internal error, a hang or a silent default, each
now refused in one line: values past what any run can take, types the readers took for
their defaults, and output paths a write would have destroyed."""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.cli import run_app
from costmodel.calibration import Calibration
from costmodel.design import Design
from costmodel.errors import UserError
from costmodel.spec_reader import parse_workload

ROOT = Path(__file__).resolve().parents[2]
TPCDI = (ROOT / "costmodel" / "workloads" / "tpcdi-trade.toml").read_text()


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text.strip()
    return text


@pytest.mark.parametrize("old, new, problem", [
    ("batch_size = 10", "batch_size = 1000001", "batch_size must be <= 1000000"),
    ('rows = 10, keys = "input:security_id"', 'rows = 1e300, keys = "input:security_id"',
     "rows must be <= 1000000000"),
    ("tuples = 10\ntuple_bytes = 96", "tuples = 1e300\ntuple_bytes = 96", "tuples must be <= 1000000000"),
    ("tuples = 10\ntuple_bytes = 96", "tuples = 10\ntuple_bytes = 10000000000", "tuple_bytes must be <="),
    # a declared rate no simulation can be offered: 1e300 printed a 300-digit rate beside every
    # prediction, 1e-300 overflowed a time window's timestamps in `trace synth`
    ("batch_size = 10", "batch_size = 10\nrate = 1e300", "rate must be from 1e-06 to 1e+09 batches per second, got 1e+300"),
    ("batch_size = 10", "batch_size = 10\nrate = 1e-300", "rate must be from 1e-06 to 1e+09 batches per second, got 1e-300"),
    # a procedure its clients invoke cannot wait for a stream's batches (the engine stalled)
    ('name = "SecurityLookup"\ncost = 2.0', 'name = "SecurityLookup"\ncost = 2.0\noltp = true',
     "'SecurityLookup' is an OLTP procedure"),
    # nor feed one: its requests are not batches (the engine stalled downstream of it)
    ('name = "DateTimeLookup"\ncost = 1.0', 'name = "DateTimeLookup"\ncost = 1.0\noltp = true',
     "'DateTimeLookup' is an OLTP procedure (oltp = true): it answers its clients' requests"),
    # input fields the input does not declare: only `run` refused them, every other command took them
    ('keys = "input:security_id"', 'keys = "input:nofield"',
     "keys 'input:nofield' name a field the input does not declare ([input] fields: account_id,"),
    ('name = "TradeInsert"\n', 'name = "TradeInsert"\npartition_key = "nope"\n',
     "partition_key 'nope' is not a field the input declares"),
    # a memory under a byte: 5e-324 MB made the machines the state needs infinite (recommend's
    # internal OverflowError)
    ("machine_memory_mb = 2048", "machine_memory_mb = 5e-324", "machine_memory_mb must be at least 9.54e-07 (a byte)"),
])
def test_a_spec_past_what_a_run_can_take_is_refused(old, new, problem):
    assert old in TPCDI
    with pytest.raises(UserError) as exc:
        parse_workload(TPCDI.replace(old, new, 1), "t.toml")
    assert problem in _one_line(exc)


@pytest.mark.parametrize("old, new", [
    ('name = "tpcdi-trade"', 'name = "trade\\nsecond line"'),
    ('name = "TradeInsert"\n', 'name = "Trade\\nInsert"\n'),
    ('name = "DimDate"', 'name = "Dim\\nDate"'),
])
def test_a_name_holding_a_line_break_is_refused_as_every_listing_would_break_on_it(old, new):
    # every output shows a name's other control characters as escapes; a line break it keeps
    assert old in TPCDI
    with pytest.raises(UserError) as exc:
        parse_workload(TPCDI.replace(old, new, 1), "t.toml")
    assert "must be one line, got" in _one_line(exc) and "\\n" in str(exc.value)


def test_a_workload_built_in_python_with_a_line_break_in_a_name_is_refused_too():
    from advisor.sources import load_workload  # (statistics are rebuilt and checked the same way)
    workload = parse_workload(TPCDI, "t.toml")
    with pytest.raises(UserError) as exc:
        load_workload(replace(workload, name="a\nb"))
    assert "must be one line" in _one_line(exc)


def test_the_bounds_leave_the_bundled_values_alone():
    assert parse_workload(TPCDI, "t.toml").input.batch_size == 10


def test_files_nested_thousands_deep_are_refused_not_a_recursion_error(tmp_path):
    with pytest.raises(UserError) as exc:
        parse_workload("name = \"x\"\nfoo = " + "[" * 5000 + "]" * 5000, "deep.toml")
    assert "nested too deeply" in _one_line(exc)
    (tmp_path / "d.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UserError) as exc:
        Design.load(tmp_path / "d.json")
    assert "nested too deeply" in _one_line(exc)


def _design() -> dict:
    return json.loads(Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": None}).to_json())


@pytest.mark.parametrize("change, problem", [
    ({"weights": [0.1, 0.2, 0.3]}, "weights: must be an object of alpha, beta and gamma"),
    ({"weights": {"alpha": 1, "delta": 3}}, "unknown weight 'delta'"),
    ({"cost": {"memory_overflow_mb": 5}}, "cost.memory_overflow_mb must be a list"),
    ({"cost": {"memory_overflow_mb": ["a"]}}, "cost.memory_overflow_mb must be a list"),
    ({"cost": {"feasible": "maybe"}}, "cost.feasible must be true or false"),
    # an integer past a float's range (JSON holds one): math.isfinite's OverflowError, an internal error
    ({"cost": {"state_colocation": 0, "processing_colocation": 0, "load_balance": 0, "total": 10**400}},
     "cost.total must be a finite number"),
    ({"cost": {"memory_overflow_mb": [10**400]}}, "cost.memory_overflow_mb must be a list"),
])
def test_a_design_field_of_the_wrong_shape_is_refused_not_defaulted(change, problem):
    data = _design()
    for key, value in change.items():
        data[key] = {**data[key], **value} if key == "cost" and isinstance(data.get(key), dict) else value
    with pytest.raises(UserError) as exc:
        Design.from_dict(data, "d.json")
    assert problem in _one_line(exc)


def test_a_design_without_weights_still_takes_the_defaults():
    data = _design()
    del data["weights"]
    assert not Design.from_dict(data, "d.json").weights_stated


CALIBRATION = json.loads((ROOT / "bench" / "calibration.json").read_text())


@pytest.mark.parametrize("change, problem", [
    (("simulator", "central_machine", 0.5), "central_machine must be a whole number"),
    (("simulator", "host_cores", 2.5), "host_cores must be a whole number"),
    (("prices", "distributed_txn_s", 1e308), "prices.distributed_txn_s must be at most 1e+06 seconds"),
    ((None, "weights", [1, 2, 3]), "weights: must be an object"),
    # a string where an object goes reached .get() (an internal error); a bandwidth of 1e-300
    # overflowed the simulator's sums (numpy warnings, then an infinite latency)
    ((None, "machine", "x"), "machine must be an object"),
    (("simulator", "bandwidth_Bps", 1e-300), "bandwidth_Bps must be at least 1 byte/s"),
    (("simulator", "txn_overhead_s", 1e300), "txn_overhead_s must be at most 1e+06 seconds"),
    # an integer past a float's range (JSON holds one): math.isfinite's OverflowError, an internal error
    (("simulator", "txn_overhead_s", 10**400), "txn_overhead_s must be a finite number >= 0"),
    (("simulator", "host_cores", 10**400), "host_cores must be a finite number >= 0"),
    (("prices", "move_s", 10**400), "prices.move_s must be a finite number >= 0"),
    (("measurements", "txn:latency", 10**400), "measurements.txn:latency must be a finite number >= 0"),
    (("fit", "throughput_checks", {"a": {"engine_bps": 10**400}}), "fit.throughput_checks must map each check"),
])
def test_a_calibration_value_no_run_can_use_is_refused(change, problem, tmp_path):
    section, key, value = change
    data = json.loads(json.dumps(CALIBRATION))
    (data if section is None else data.setdefault(section, {}))[key] = value
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError) as exc:
        Calibration.load(path)
    assert problem in _one_line(exc)


def test_a_report_into_a_directory_or_a_pipe_fails_before_its_work(tmp_path, capsys):
    design = tmp_path / "d.json"
    design.write_text(json.dumps(_design()))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for out, problem in ((tmp_path, "is a directory"), (fifo, "is not a regular file")):
        assert run_app(["report", "--design", str(design), "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert problem in err and err.count("\n") == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the pipe it was


# -- a second pass: tune, calibrate, run, diff --------------------------------------------------

def _calibration_file(tmp_path, **measurements) -> Path:
    data = json.loads(json.dumps(CALIBRATION))
    data["measurements"].update(measurements)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("value", [0.0, 1e-320, 1e20])
def test_refit_refuses_a_measurement_the_fit_cannot_divide_by(value, tmp_path, capsys):
    # 1e20 everywhere made scipy's nnls abort the process (a matrix of no columns); 0 and a
    # denormal were internal errors
    key = next(iter(CALIBRATION["measurements"]))
    path = _calibration_file(tmp_path, **{key: value})
    assert run_app(["calibrate", "--refit", str(path), "--out", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert f"measurements.{key} must be between 1e-09 and 1e+06 seconds" in err and err.count("\n") == 1
    assert not (tmp_path / "out.json").exists()


def test_an_output_below_a_file_is_said_as_such(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    path = _calibration_file(tmp_path)
    out = tmp_path / "notes.txt" / "sub" / "c.json"
    assert run_app(["calibrate", "--refit", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "notes.txt is a file, not a directory" in err and err.count("\n") == 1  # not "File exists"


def test_tune_refuses_zero_partitions_per_machine():
    from advisor.errors import AdvisorError
    from reports.tuning import TuningStudy

    with pytest.raises(AdvisorError, match="partitions per machine must be an integer >= 1, got 0"):
        TuningStudy("tpcdi-trade", machines=2, partitions_per_machine=0)


@pytest.mark.parametrize("option, value, problem", [
    ("--batch-size", "100000000", "--batch-size must be at most 1,000,000"),
    ("--batches", "100000000000", "--batches must be at most 10,000,000"),
])
def test_a_run_past_what_it_could_finish_is_refused_before_it_starts(option, value, problem, tmp_path, capsys):
    design = tmp_path / "d.json"
    design.write_text(json.dumps(_design()))
    args = ["run", "--design", str(design), "--in-process", option, value]
    if option != "--batches":
        args += ["--batches", "5"]
    assert run_app(args) == 2
    err = capsys.readouterr().err
    assert problem in err and err.count("\n") == 1


def test_diff_against_another_workload_is_one_line_even_when_the_designs_differ(tmp_path, capsys):
    # two different designs of move-micro, diffed as bank-transfer: a KeyError before
    one = _design()
    two = json.loads(json.dumps(one))
    two["state"]["T1"] = {"machine": 1, "partition": 1}
    for name, data in (("one.json", one), ("two.json", two)):
        (tmp_path / name).write_text(json.dumps(data))
    assert run_app(["diff", "bank-transfer", "--current", str(tmp_path / "one.json"),
                    "--design", str(tmp_path / "two.json")]) == 2
    err = capsys.readouterr().err
    assert "does not place" in err and "bank-transfer" in err and err.count("\n") == 1


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a /proc, where no file can be created")
@pytest.mark.parametrize("command", [
    ["recommend", "move-micro", "-o", "/proc/advisor-test.json"],
    ["report", "--design", "{design}", "-o", "/proc/advisor-test.html"],
    ["simulate", "--design", "{design}", "-o", "/proc/advisor-test.json"],
    ["trace", "aggregate", "/nonexistent-trace", "--out", "/proc/advisor-test-stats"],
    ["tune", "move-micro", "-m", "2", "-o", "/proc/advisor-test-tune"],
])
def test_an_output_place_that_cannot_be_written_fails_before_the_work(command, tmp_path, capsys):
    """A place no file can be created in (here /proc; elsewhere no permission or a read-only
    disk) is said in one line before the command's work, not after a search, a report or a
    Spark job (the trace here does not even exist: the output is checked first). The reason is
    the directory's refusal: "No such file or directory" read as if /proc were missing."""
    design = tmp_path / "d.json"
    design.write_text(json.dumps(_design()))
    args = [a.replace("{design}", str(design)) for a in command]
    assert run_app(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: /proc/advisor-test") and err.count("\n") == 1
    assert "cannot write: /proc exists but takes no new files or directories (ENOENT)" in err, err


@pytest.mark.parametrize("seed", [-1, "x", True, 2.0, None])
def test_a_bad_seed_in_the_python_api_is_one_line_from_every_entry_point(seed):
    """A notebook's `seed=` reaches numpy, whose refusal names neither the option nor the value
    ('expected non-negative integer', a TypeError from SeedSequence): each entry point says it."""
    import advisor
    from advisor.sources import load_workload

    w = load_workload("move-micro")
    design = Design.from_dict(_design())
    calls = [lambda: advisor.recommend(w, seed=seed), lambda: advisor.tune(w, machines=2, rounds=0, seed=seed)]
    if seed is not None:  # (None, to the verbs about a design: the seed it was recommended with)
        calls += [lambda: advisor.simulate(w, design, seed=seed),
                  lambda: advisor.validate(w, design, engine=False, seed=seed)]
    for call in calls:
        with pytest.raises(UserError, match=rf"^seed must be an integer >= 0, got {re.escape(repr(seed))}$"):
            call()


def test_a_validation_of_nothing_is_refused():
    import advisor
    from advisor.sources import load_workload

    w = load_workload("move-micro")
    with pytest.raises(UserError, match="nothing to validate: engine and sim are both off"):
        advisor.validate(w, advisor.recommend(w).design, engine=False, sim=False)


def test_a_cluster_past_the_limits_is_one_line_before_any_array_is_built(capsys):
    # 10**23 machines reached numpy ("Maximum allowed dimension exceeded") as an internal error
    assert run_app(["recommend", "bank-transfer", "--machines", str(10**23)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: a cluster has at most 1,000,000 machines") and err.count("\n") == 1
    # the count as given, as every output names a cluster (it said "got 1e+06 machines")
    assert run_app(["recommend", "bank-transfer", "--machines", "1000001"]) == 2
    assert capsys.readouterr().err.endswith("got 1,000,001 machines x 1 partition\n")


@pytest.mark.parametrize("command", [
    ["export", "--format", "csv"], ["simulate", "--batches", "20"], ["report", "--quiet"],
    ["recommend", "bank-transfer", "--current", "{design}"],
])
def test_an_output_that_is_the_commands_own_input_is_refused_and_the_input_kept(command, tmp_path, capsys):
    # `export -d x.json -o x.json` replaced the design with its export
    design = tmp_path / "x.json"
    run_app(["recommend", "bank-transfer", "--machines", "2", "--objective", "cost", "--out", str(design)])
    kept = design.read_bytes()
    capsys.readouterr()
    args = [a.replace("{design}", str(design)) for a in command]
    if "--current" not in args:
        args += ["--design", str(design)]
    assert run_app(args + ["--out", str(design)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {design}: is also this command's input {design}; writing there would replace it: "
                   "choose another output\n")
    assert design.read_bytes() == kept


@pytest.fixture(scope="module")
def bank():
    from advisor.api import recommend
    from advisor.sources import load_workload

    workload = load_workload("bank-transfer")
    return workload, recommend(workload, machines=2, objective="cost")


def _api_cases():
    import advisor
    from costmodel import Weights

    return {
        # a tuple of weights reached `.alpha` in the search (AttributeError), a list a hash
        "recommend, weights a tuple": lambda w, r: advisor.recommend(w, machines=2, weights=(0.3, 0.1, 0.6)),
        "evaluate, weights a string": lambda w, r: advisor.evaluate(r.design, w, weights="x"),
        "tune, weights a string": lambda w, r: advisor.tune(w, machines=2, rounds=0, weights="x"),
        "Weights, a negative one": lambda w, r: Weights(-1, 0, 1),
        "Weights, all zero": lambda w, r: Weights(0, 0, 0),  # the CLI refused them, the API took them
        # pathlib's TypeError for a path that is not one
        "recommend, calibration 5": lambda w, r: advisor.recommend(w, machines=2, calibration=5),
        "recommend, current 5": lambda w, r: advisor.recommend(w, machines=2, current=5),
        "Design.load(None)": lambda w, r: advisor.Design.load(None),
        "design.save(None)": lambda w, r: r.design.save(None),
        # simulate and validate read only objects: `.input`, `.sim_params` of a string
        "simulate, no design": lambda w, r: advisor.simulate(w, None),
        "simulate, a graph as the workload": lambda w, r: advisor.simulate(r.graph, r.design),
        "simulate, calibration 5": lambda w, r: advisor.simulate(w, r.design, calibration=5),
        "validate, no design": lambda w, r: advisor.validate(w, None, engine=False),
        "validate, engine a string": lambda w, r: advisor.validate(w, r.design, engine="no"),  # ran it
        # str() of the object was read as a path: "path too long"
        "load_workload, a design": lambda w, r: advisor.load_workload(r.design),
        "plot_workload, a changed Workload": lambda w, r: advisor.plot_workload(replace(w, tables=None)),
        # a changed deployed design reached numpy's IndexError in the migration's pick
        "recommend, current changed to partition 5": lambda w, r: advisor.recommend(
            w, current=replace(r.design, procedures={n: 5 for n in r.design.procedures})),
        "recommend, current without provenance": lambda w, r: advisor.recommend(w, current=replace(r.design, provenance=None)),
        # written as no accesses, so it passed the check; every verb then iterated None
        "recommend, an SP's accesses None": lambda w, r: advisor.recommend(
            replace(w, procedures=(replace(w.procedures[0], accesses=None),) + w.procedures[1:]), machines=2),
        "plot_machine_load, a changed design": lambda w, r: __import__("reports.figures", fromlist=["_"]).plot_machine_load(
            replace(r.design, procedures={n: 5 for n in r.design.procedures}), r.graph),
        # a Calibration changed in Python: a TypeError in the weights' pricing, an AttributeError in the simulator
        "recommend, calibration without prices": lambda w, r: advisor.recommend(
            w, machines=2, calibration=replace(advisor.Calibration.reference(), prices=None)),
        "simulate, calibration without params": lambda w, r: advisor.simulate(
            w, r.design, calibration=replace(advisor.Calibration.reference(), params=None)),
        "Design.save, 0 partitions a machine": lambda w, r: replace(r.design, partitions_per_machine=0).save("never.json"),
        # values compared or iterated deep inside: a TypeError, or a run on a nonsense value
        "simulate, batches a string": lambda w, r: advisor.simulate(w, r.design, batches="300"),
        "simulate, batch size 2.5": lambda w, r: advisor.simulate(w, r.design, batch_size=2.5),
        "simulate, latency bound a string": lambda w, r: advisor.simulate(w, r.design, latency_bound_s="1"),
        "simulate, tolerance -1": lambda w, r: advisor.simulate(w, r.design, tolerance=-1),
        "tune, min_gain nan": lambda w, r: advisor.tune(w, machines=2, rounds=0, min_gain=float("nan")),
        "tune, min_gain a string": lambda w, r: advisor.tune(w, machines=2, rounds=0, min_gain="x"),
        "tune, jobs 0": lambda w, r: advisor.tune(w, machines=2, rounds=0, jobs=0),
        "tune, progress not a function": lambda w, r: advisor.tune(w, machines=2, rounds=0, progress=5),
        # stop 60: a flag given as a string was taken as true ("false" too); diff's simulator 5
        # was an AttributeError ('int' object has no attribute 'reference_calibration')
        "recommend, replicate a string": lambda w, r: advisor.recommend(w, machines=2, replicate="false"),
        "recommend, data_parallel a string": lambda w, r: advisor.recommend(w, machines=2, data_parallel="x"),
        "recommend, baselines a string": lambda w, r: advisor.recommend(w, machines=2, baselines="no"),
        "diff, relabel a string": lambda w, r: advisor.diff(r.design, r.design, w, relabel="x"),
        "diff, simulator 5": lambda w, r: advisor.diff(r.design, r.design, w, simulator=5),
    }


@pytest.mark.parametrize("case", list(_api_cases()))
def test_the_python_api_refuses_an_argument_of_the_wrong_kind_in_one_line(case, bank):
    with pytest.raises(UserError) as exc:
        _api_cases()[case](*bank)
    _one_line(exc)


def test_simulate_and_validate_take_names_and_files_as_the_cli_does(bank, tmp_path):
    import advisor

    workload, rec = bank
    path = rec.design.save(tmp_path / "d.json")
    by_objects = advisor.simulate(workload, rec.design, batches=50).throughput_tps
    assert advisor.simulate("bank-transfer", str(path), batches=50).throughput_tps == by_objects
    checked = advisor.validate("bank-transfer", path, engine=False, batches=50)
    assert checked.simulator["throughput_tps"] == pytest.approx(by_objects)


def test_an_output_over_the_commands_workload_spec_is_refused(tmp_path, capsys):
    spec = tmp_path / "wl.toml"
    spec.write_text((ROOT / "costmodel" / "workloads" / "bank-transfer.toml").read_text())
    kept = spec.read_bytes()
    assert run_app(["recommend", str(spec), "--machines", "2", "--objective", "cost", "--out", str(spec)]) == 2
    assert "is also this command's input" in capsys.readouterr().err
    assert spec.read_bytes() == kept


def test_a_terminal_too_wide_to_be_real_is_taken_as_a_wide_one(monkeypatch, capsys):
    # COLUMNS=10**20 overflowed the help's renderer (an internal error)
    monkeypatch.setenv("COLUMNS", str(10**20))
    assert run_app(["recommend", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage" in out and max(len(line) for line in out.splitlines()) <= 1_000


def test_a_synthetic_trace_past_a_runs_limit_is_refused(tmp_path, capsys):
    # 10**20 batches ran until killed, on its way to filling the disk
    assert run_app(["trace", "synth", "bank-transfer", "-n", str(10**20), "-o", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err == (f"error: --batches must be an integer from 1 to 10,000,000 (the engine's "
                                       f"own limit for a run), got {10**20}\n")
    assert not (tmp_path / "t").exists()


def test_a_synthetic_trace_longer_than_its_timestamps_hold_is_refused(tmp_path, capsys):
    # at the lowest rate a spec may declare, 9.3 million batches overflowed the microsecond
    # timestamps (a trace of garbage times, exit 0)
    spec = tmp_path / "slow.toml"
    text = (ROOT / "costmodel" / "workloads" / "bank-transfer.toml").read_text()
    spec.write_text(text.replace("[input]\n", "[input]\nrate = 1e-6\n", 1))
    assert run_app(["trace", "synth", str(spec), "-n", "9300000", "-o", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    years = 9_300_000 * 1e6 / (365.25 * 24 * 3600)  # a batch every million seconds
    assert err.startswith(f"error: --batches 9,300,000 at 1e-06 batches/s spans {years:,.0f} years")
    assert err.count("\n") == 1 and f"at most {2 ** 62 // 10 ** 12:,} batches at this rate" in err
    assert not (tmp_path / "t").exists()
    assert run_app(["trace", "synth", str(spec), "-n", "3", "-o", str(tmp_path / "t"), "-q"]) == 0


def test_the_simulator_takes_no_batch_larger_than_a_spec_or_the_engine_may(tmp_path, capsys):
    """`simulate --batch-size 1e11` printed a latency of 3.7e8 ms and 0 batches/s, exit 0."""
    path = tmp_path / "d.json"
    path.write_text(json.dumps(_design()))
    argv = ["simulate", "move-micro", "--design", str(path), "--batches", "50", "--batch-size"]
    assert run_app([*argv, "1000001"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: batch size must be at most 1,000,000") and err.count("\n") == 1
    assert run_app([*argv, "1000000"]) == 0  # the bound itself is a batch size a spec may declare


def test_a_key_given_twice_in_a_design_is_refused_not_the_last_one_taken(tmp_path, capsys):
    """A hand-edited design that places SP1 twice: JSON readers keep the last value silently."""
    text = json.dumps(_design())
    assert text.count('"procedures": {') == 1
    path = tmp_path / "twice.json"
    path.write_text(text.replace('"procedures": {', '"procedures": {"SP1": {"machine": 1, "partition": 0}, '))
    with pytest.raises(UserError) as exc:
        Design.load(path)
    assert _one_line(exc).endswith("key 'SP1' is given twice in one object")
    assert run_app(["evaluate", "move-micro", "--design", str(path)]) == 2
    assert "given twice" in capsys.readouterr().err
    path.write_text(text)
    assert Design.load(path).procedures == {"SP1": 0, "SP2": 1}


@pytest.mark.parametrize("path", ["a" * 300, "a/" * 2100, "x\0y"], ids=["long name", "long path", "nul"])
def test_a_path_no_system_call_takes_is_one_line(path, tmp_path, capsys):
    """A name over 255 bytes was an OSError (ENAMETOOLONG) from the first is_dir(), "internal
    error" and exit 1 at the CLI; a NUL byte was Python's ValueError."""
    import advisor

    for call in (lambda: advisor.load_workload(path), lambda: Design.load(path),
                 lambda: Calibration.load(path), lambda: _saved_design().save(path)):
        with pytest.raises(UserError) as exc:
            call()
        assert "NUL byte" in _one_line(exc) or "path too long" in _one_line(exc)
    if "\0" not in path:  # (no argv holds a NUL)
        assert run_app(["recommend", path, "--machines", "2"]) == 2
        assert run_app(["evaluate", "move-micro", "--design", path]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 2 and "path too long" in err and "internal error" not in err


@pytest.mark.parametrize("path", ["a" * 300, "a/" * 2100], ids=["long name", "long path"])
@pytest.mark.parametrize("command", [["export", "--format", "csv"], ["diff", "--current", "{design}"]])
def test_an_output_path_too_long_beside_an_input_is_one_line(command, path, tmp_path, capsys):
    """`export` and `diff` compare their output with their inputs first: `exists()` on a name
    over 255 bytes raised ENAMETOOLONG there, "internal error" and exit 1."""
    design = tmp_path / "d.json"
    _saved_design().save(design)
    args = [a.replace("{design}", str(design)) for a in command]
    assert run_app(args + ["--design", str(design), "--out", str(tmp_path / path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "path too long" in err and "internal error" not in err


def _saved_design() -> Design:
    return Design.from_dict(_design(), "d.json")


def test_diff_reads_a_calibration_file_as_recommend_does():
    """`diff(..., calibration=PATH)` passed the path on as prices: AttributeError."""
    import advisor
    from advisor.api import diff
    from advisor.priced_weights import as_calibration

    path = ROOT / "advisor" / "data" / "calibration.json"
    w = advisor.load_workload("move-micro")
    current = Design.from_dict(_design(), "d.json")
    new = Design("move-micro", 2, 1, {"SP1": 1, "SP2": 1}, {"T1": 1, "T2": None})
    by_path = diff(current, new, w, calibration=str(path))
    by_object = diff(current, new, w, calibration=as_calibration(path))
    assert by_path.predicted_tps == by_object.predicted_tps and by_path.copy_seconds == by_object.copy_seconds
    with pytest.raises(UserError):
        diff(current, new, w, calibration=5)


@pytest.mark.parametrize("change", [
    {"procedures": {"SP1": 5, "SP2": 1}}, {"procedures": {"SP1": 1.5, "SP2": 1}},
    {"procedures": {"SP1": "1", "SP2": 1}}, {"procedures": {"SP1": None, "SP2": 1}},
    {"procedures": None}, {"machines": 0}, {"machines": 2.0}, {"weights": None},
    {"data_parallel": ["SP1"]},
], ids=["out of range", "float", "str", "none", "no dict", "no machines", "float machines",
        "no weights", "dp list"])
def test_a_design_built_in_python_is_held_to_what_a_file_may_say(change):
    """A partition 1.5 was truncated by evaluate, a TypeError in simulate and an IndexError in
    diff; machines 0 a ValueError, weights None an AttributeError. One DesignError-like line
    (SimError in the simulator) in every verb now."""
    import dataclasses

    import advisor
    from advisor.api import diff

    w = advisor.load_workload("move-micro")
    good = Design.from_dict(_design(), "d.json")
    bad = dataclasses.replace(good, **change)
    for call in (lambda: advisor.evaluate(bad, w), lambda: advisor.simulate(w, bad, batches=50),
                 lambda: diff(bad, good, w), lambda: diff(good, bad, w)):
        with pytest.raises(UserError) as exc:
            call()
        assert "design" in _one_line(exc)


@pytest.mark.parametrize("argument", ["search", "simulator", "workload"])
def test_recommend_refuses_a_collaborator_of_the_wrong_kind(argument):
    """`recommend(w, search="x")` was "'str' object has no attribute 'fit'" from the pick."""
    import advisor

    with pytest.raises(UserError) as exc:
        advisor.recommend("move-micro", machines=2, **{argument: "x"})
    assert _one_line(exc).startswith(f"{argument} must be a")


def test_a_graph_given_for_a_workload_says_what_it_lacks():
    """`plot_workload(rec.graph)` took the graph's text for a path ("File name too long")."""
    import advisor

    graph = advisor.recommend("move-micro", machines=2, objective="cost").graph
    with pytest.raises(UserError) as exc:
        advisor.plot_workload(graph)
    assert _one_line(exc).startswith("graph 'move-micro' holds no dataflow")


def _changed_workloads():
    """A Workload changed in Python as a notebook user might (`dataclasses.replace`), each with
    what the one line must name; before `check_workload` the first and fourth reached a
    KeyError in the graph and the others ran."""
    from dataclasses import replace as changed

    def first_access(w, **kw):
        p = w.procedures[0]
        return changed(w, procedures=(changed(p, accesses=(changed(p.accesses[0], **kw), *p.accesses[1:])),
                                      *w.procedures[1:]))

    return {
        "unknown table": (lambda w: first_access(w, table="NOPE"), "unknown table or window 'NOPE'"),
        "negative rows": (lambda w: changed(w, tables=(changed(w.tables[0], rows=-5), *w.tables[1:])),
                          "tables[0] 'Contestants': rows must be >= 0, got -5"),  # docs/python-api.md's example
        "negative tuples": (lambda w: changed(w, streams=(changed(w.streams[0], tuples=-3), *w.streams[1:])),
                            "tuples must be > 0"),
        "unknown SP in a stream": (lambda w: changed(w, streams=(changed(w.streams[0], target="ZZ"), *w.streams[1:])),
                                   "unknown procedure 'ZZ'"),
        "an SP twice": (lambda w: changed(w, procedures=(*w.procedures, w.procedures[0])), "duplicate name"),
        "a cost as a string": (lambda w: changed(w, procedures=(changed(w.procedures[0], cost="3"), *w.procedures[1:])),
                               "cost must be a number"),
        "rows as a string": (lambda w: changed(w, tables=(changed(w.tables[0], rows="5"), *w.tables[1:])),
                             "a number is needed here"),
        "no procedures": (lambda w: changed(w, procedures=None), "not a workload a spec could hold"),
    }


@pytest.mark.parametrize("verb", ["recommend", "evaluate", "simulate"])
@pytest.mark.parametrize("case", list(_changed_workloads()))
def test_a_workload_changed_in_python_is_held_to_what_a_spec_may_say(case, verb):
    import advisor
    from advisor.sources import load_workload

    workload = load_workload("voter-leaderboard")
    change, problem = _changed_workloads()[case]
    bad = change(workload)
    design = advisor.recommend(workload, machines=2, objective="cost").design
    run = {"recommend": lambda: advisor.recommend(bad, machines=2, objective="cost"),
           "evaluate": lambda: advisor.evaluate(design, bad),
           "simulate": lambda: advisor.simulate(bad, design, batches=50)}[verb]
    with pytest.raises(UserError) as exc:
        run()
    assert problem in _one_line(exc)
    assert str(exc.value).startswith("workload 'voter-leaderboard': ")


def test_every_bundled_workload_and_a_split_one_pass_the_check_unchanged():
    from costmodel.spec_reader import bundled_workloads, check_workload, read_spec
    from reports.transforms import split_procedure

    for name in bundled_workloads():
        check_workload(read_spec(name))
    split = split_procedure(read_spec("linear-road"), "TollCalculation", 3)  # tables T#0.. of its own
    check_workload(split)
    assert "SegmentStats#2" in split.table_names and "TollCalculation#2" in split.procedure_names


@pytest.mark.parametrize("command", [
    ["recommend", "bank-transfer", "--machines", "2", "--objective", "cost"],
    ["export", "--design", "{design}", "--format", "csv"],
    ["simulate", "--design", "{design}", "--batches", "20"],
    ["validate", "--design", "{design}", "--sim", "--batches", "20"],
    ["report", "--design", "{design}", "--quiet"],
], ids=lambda c: c[0])
def test_a_file_output_that_ends_in_a_slash_is_refused_and_nothing_written(command, tmp_path, capsys):
    """A Path drops the slash: `-o notes.txt/` replaced notes.txt, `-o results/` wrote a file."""
    design = tmp_path / "x.json"
    assert run_app(["recommend", "bank-transfer", "--machines", "2", "--objective", "cost", "--out", str(design)]) == 0
    notes = tmp_path / "notes.txt"
    notes.write_text("the user's notes")
    capsys.readouterr()
    args = [a.replace("{design}", str(design)) for a in command]
    for out in (f"{notes}/", f"{tmp_path / 'results'}/"):
        assert run_app(args + ["--out", out]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{Path(out).name}/: ends in '/', so it names a directory" in err
    assert notes.read_text() == "the user's notes" and not (tmp_path / "results").exists()


@pytest.mark.parametrize("command", [
    ["recommend", "bank-transfer", "--machines", "2", "--objective", "cost"],
    ["export", "--design", "{design}", "--format", "csv"],
    ["simulate", "--design", "{design}", "--batches", "20"],
    ["report", "--design", "{design}", "--quiet"],
    ["trace", "synth", "bank-transfer", "--batches", "5", "--quiet"],
], ids=lambda c: "-".join(c[:2]))
def test_an_output_named_dash_is_refused_not_written_as_a_file_named_dash(command, tmp_path, capsys,
                                                                         monkeypatch):
    """`--out -` (standard output, by custom) wrote a file named `-` and said "wrote -"."""
    design = tmp_path / "x.json"
    assert run_app(["recommend", "bank-transfer", "--machines", "2", "--objective", "cost", "--out", str(design)]) == 0
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    capsys.readouterr()
    assert run_app([a.replace("{design}", str(design)) for a in command] + ["--out", "-"]) == 2
    out, err = capsys.readouterr()
    kind = "folder" if command[0] == "trace" else "file"
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert err.endswith(f"'-': outputs are written to a {kind}, not to standard output; name a {kind} to write\n")
    assert "wrote" not in out and list(work.iterdir()) == []


def test_the_python_api_refuses_a_file_path_that_ends_in_a_slash(bank, tmp_path):
    _, rec = bank
    with pytest.raises(UserError, match="ends in '/', so it names a directory"):
        rec.design.save(f"{tmp_path}/d.json/")
    assert list(tmp_path.iterdir()) == []


def test_rerunning_into_an_output_folder_keeps_what_the_user_added_there(tmp_path, capsys):
    """`trace synth` and `tune` replaced the whole folder, the user's files in it too."""
    trace = tmp_path / "tr"
    synth = ["trace", "synth", "bank-transfer", "--batches", "5", "--out", str(trace), "--quiet"]
    assert run_app(synth) == 0
    assert run_app(synth) == 0  # its own output: replaced
    (trace / "NOTES.md").write_text("the user's")
    capsys.readouterr()
    assert run_app(synth) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds NOTES.md, which this tool did not write there" in err
    assert (trace / "NOTES.md").read_text() == "the user's" and (trace / "_trace.json").exists()


DESIGN_TYPOS = [
    (lambda d: d.update(zzz=1), "zzz: not a field of a design file (a design has format, workload"),
    (lambda d: d["cluster"].update(machine=2), "cluster.machine: not a field of a design file"),
    (lambda d: d["procedures"][next(iter(d["procedures"]))].update(partiton=1), ".partiton: not a field"),
    (lambda d: d["state"][next(iter(d["state"]))].update(replicated="yes"), "replicated must be true or false"),
]


@pytest.mark.parametrize("change, message", DESIGN_TYPOS, ids=["top", "cluster", "placement", "replicated"])
def test_a_design_file_with_a_key_it_does_not_have_is_refused(change, message, bank, tmp_path, capsys):
    """A typo was dropped without a word and the entry read without what the user meant."""
    _, rec = bank
    data = json.loads(rec.design.to_json())
    change(data)
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    assert run_app(["evaluate", "--design", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize("bound", [1e308, 1e-300, 10**400, float("nan")])
def test_a_latency_bound_no_run_can_be_held_to_is_refused(bound, bank, capsys):
    """1e308 s printed "bound inf ms"; 1e-300 s "1e-297 ms, NOT MET" (at a fixed rate too)."""
    import advisor
    from engine_sim.engine import ClientOptions
    from engine_sim.engine.errors import EngineError
    from engine_sim.sim import SimError

    workload, rec = bank
    for call in (lambda: advisor.simulate(workload, rec.design, latency_bound_s=bound),
                 lambda: advisor.simulate(workload, rec.design, latency_bound_s=bound, input_rate=100.0)):
        with pytest.raises(SimError, match="latency bound must be > 0 seconds, from 1e-06 to 86,400"):
            call()
    with pytest.raises(EngineError, match="latency bound must be > 0 seconds"):
        ClientOptions(latency_bound_s=bound)


def test_a_design_changed_into_one_no_file_holds_still_renders_in_a_notebook(bank):
    """`_repr_html_` raised ZeroDivisionError (0 partitions a machine) or AttributeError."""
    _, rec = bank
    for changed in (replace(rec.design, partitions_per_machine=0), replace(rec.design, method=None),
                    replace(rec.design, procedures=None)):
        shown = changed._repr_html_()
        assert shown.startswith("<p><b>Not a valid design:</b> design: ") and "\n" not in shown


@pytest.mark.process  # a shell's process substitution feeds the pipe
def test_a_design_given_through_a_pipe_is_read_once(tmp_path):
    """Without WORKLOAD a command read the design twice (the workload it names, then the
    design): through `<(...)` the second read found the pipe empty ("not valid JSON"), and a
    FIFO hung on its second open."""
    import subprocess
    import sys

    design = tmp_path / "d.json"
    design.write_text(json.dumps(_design()))
    proc = subprocess.run(["bash", "-c", f'"{sys.executable}" -m advisor evaluate -d <(cat "{design}")'],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("/dev/fd/") and "state co-location" in proc.stdout


def test_an_empty_spec_name_with_the_output_there_is_one_line_not_an_internal_error(tmp_path, monkeypatch, capsys):
    # `report --spec ""`: os.path.samefile(out, "") raised FileNotFoundError (an internal error)
    from advisor.api import recommend

    monkeypatch.chdir(tmp_path)
    design = recommend("tpcdi-trade", machines=2, objective="cost").design.save(tmp_path / "d.json")
    (tmp_path / "x.html").write_text("kept")
    assert run_app(["report", "-d", str(design), "--spec", "", "-q", "-o", "x.html"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: an empty argument after --spec") and err.count("\n") == 1
    assert (tmp_path / "x.html").read_text() == "kept"


@pytest.mark.parametrize("command", [
    ["recommend", "bank-transfer", "--machines", "2", "--objective", "cost", "--out", "s3a://bucket/d.json"],
    ["trace", "synth", "bank-transfer", "--batches", "5", "--out", "file:///tmp/advisor-uri-out"],
    ["trace", "aggregate", "/nonexistent-trace", "--out", "hdfs://namenode/stats"],
    ["tune", "bank-transfer", "--machines", "2", "--rounds", "0", "--out", "s3a://bucket/tune"],
])
def test_an_output_given_as_a_uri_is_refused_not_written_to_a_local_folder(command, tmp_path, monkeypatch, capsys):
    """A Path folds `s3a://b/x` into `s3a:/b/x`: the output was written to a folder named
    `s3a:` (or `file:`) in the working directory, and the command said it wrote the URI."""
    monkeypatch.chdir(tmp_path)
    assert run_app(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a URI; an output is written to a local path only" in err
    assert list(tmp_path.iterdir()) == []


def test_the_python_api_refuses_an_output_given_as_a_uri(tmp_path, monkeypatch):
    from costmodel.files import check_writable

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="a URI"):
        check_writable("s3a://bucket/d.json")
