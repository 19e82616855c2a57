"""Three inputs a user session found accepted by the spec reader and refused (or printed) only
later, now refused as the spec is read, in one line, by every entry point alike:

- `[input] cost_unit_us = 0`: every SP free; its trace was refused only when aggregated, as
  `trace synth --cost-unit-us 0` and a manifest's 0 already were;
- an SP `code` the engine does not have (`code = "os.system"`): refused only by `run`; it is
  looked up in the engine's table of bundled code, never imported;
- a name holding U+202E (right-to-left override) or another invisible or control character:
  printed raw, `Pay\\u202eKcab` showed as "PaybacK". Traces and statistics take the same rule
  (`costmodel.text.name_problem`). What an error line quotes from the command line (a path,
  a workload name, an option's value) is shown escaped (`costmodel.text.visible`)."""
from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from advisor.sources import load_workload
from costmodel.design import Design
from costmodel.errors import SpecError, UserError
from costmodel.procedure_code import BUNDLED_CODE, code_names
from costmodel.spec_reader import parse_workload, read_spec
from costmodel.text import name_problem
from costmodel.workload import workload_as_plain
from traces.errors import TraceError
from traces.manifest_fields import check_manifest_fields
from traces.statistics import read_statistics_arrow
from traces.synth import synthesize
from traces.trace_checks import validate_trace
from trace_edits import rename_procedure
from window_specs import one_procedure_spec

ROOT = Path(__file__).resolve().parents[2]
STATS = ROOT / "tests" / "common" / "data" / "stats-move-micro"



def spec(tmp_path: Path, *, input: str = "", proc: str = '"P"', extra: str = "") -> Path:
    path = tmp_path / "w.toml"
    path.write_text(one_procedure_spec(input, proc, extra))
    return path


def one_error_line(capsys) -> str:
    """The command's stderr is one `error:` line, nothing on stdout, no traceback."""
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured
    return captured.err.rstrip("\n")


def refused_by_every_command(tmp_path: Path, path: Path, capsys) -> str:
    """`recommend`, `validate` and `run` refuse the spec with the same line, before any work."""
    design = Design("w", 1, 1, {"P": 0}, {"A": 0}).save(tmp_path / "d.json")
    lines = set()
    for args in (["recommend", str(path)], ["validate", "--design", str(design), str(path)],
                 ["run", "--design", str(design), str(path), "--in-process", "--batches", "5"]):
        assert run_app(args) == 2, args
        lines.add(one_error_line(capsys))
    assert len(lines) == 1, lines
    return lines.pop()


# -- 1. cost_unit_us: > 0 at every entry point ----------------------------------------------------

UNIT_RANGE = "cost_unit_us must be a number > 0 and <= 1000000 (engine CPU microseconds per unit of SP cost)"


@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_cost_unit_of_zero_or_less_is_refused_at_spec_load(value, tmp_path, capsys):
    path = spec(tmp_path, input=f"cost_unit_us = {value}")
    assert refused_by_every_command(tmp_path, path, capsys) == \
        f"error: {path}: [input]: {UNIT_RANGE}, got {value}"


@pytest.mark.parametrize("value", [0, -1])
def test_the_trace_entry_points_refuse_it_alike(value, tmp_path, capsys):
    assert run_app(["trace", "synth", "move-micro", "--batches", "5", "--out", str(tmp_path / "t"),
                    "--cost-unit-us", str(value)]) == 2
    assert one_error_line(capsys) == f"error: --cost-unit-us must be a number > 0 and <= 1e+06, got {float(value)}"
    with pytest.raises(TraceError, match=r"'input.cost_unit_us' must be a number > 0, got"):
        check_manifest_fields({"input": {"cost_unit_us": value}}, "t")
    plain = workload_as_plain(load_workload("move-micro"))  # one built in Python: "the spec's" when it is
    plain["input"]["cost_unit_us"] = value
    with pytest.raises(TraceError, match=r"^the spec's \[input\] cost_unit_us must be a number > 0 and <= 1e\+06"):
        synthesize(plain, tmp_path / "p", batches=5)


def test_a_small_cost_unit_still_reads():
    assert parse_workload(one_procedure_spec("cost_unit_us = 0.001")).input.cost_unit_us == 0.001


# -- 2. code: only the engine's bundled SP bodies -----------------------------------------------

VOTER = "does not exist in voter (it has: delete_contestant, update_leaderboard, vote)"
NAIVE = "does not exist in naive_window (it has: insert, maintain:SIZE:SLIDE)"


@pytest.mark.parametrize("code, problem", [
    ("os.system", "unknown procedure code 'os.system' (bundled code: naive_window.*, voter.*)"),
    ("voter", "unknown procedure code 'voter' (bundled code: naive_window.*, voter.*)"),
    ("voter.nope", f"code 'voter.nope' {VOTER}"),
    ("voter.__init__", f"code 'voter.__init__' {VOTER}"),
    ("naive_window.maintain:5:10", f"code 'naive_window.maintain:5:10' {NAIVE}"),  # slide > size
    ("naive_window.maintain:SIZE:SLIDE", f"code 'naive_window.maintain:SIZE:SLIDE' {NAIVE}"),
    ("naive_window.maintain: 10:5", f"code 'naive_window.maintain: 10:5' {NAIVE}"),
])
def test_code_the_engine_does_not_have_is_refused_at_spec_load(code, problem, tmp_path, capsys):
    path = spec(tmp_path, extra=f'code = "{code}"')
    assert refused_by_every_command(tmp_path, path, capsys) == f"error: {path}: procedures[0] 'P': {problem}"


def test_code_from_two_modules_is_refused_at_spec_load():
    text = one_procedure_spec(procedure_toml='code = "voter.vote"') + (
        '[[procedures]]\nname = "Q"\ncost = 1.0\ncode = "naive_window.insert"\n')
    with pytest.raises(SpecError, match=r"^w.toml: procedures: procedures use code from several modules "
                                        r"\(naive_window, voter\); one per workload$"):
        parse_workload(text, "w.toml")


def test_bundled_code_still_reads():
    assert read_spec("voter-leaderboard").procedures[0].code == "voter.vote"
    w = parse_workload(one_procedure_spec(procedure_toml='code = "naive_window.maintain:100:10"'))
    assert w.procedures[0].code == "naive_window.maintain:100:10"


def test_a_code_name_is_looked_up_never_imported(tmp_path, monkeypatch):
    """Importing what a spec names would run its module's code: a module on the path that says
    when it is imported is never imported, by the spec reader or by the engine."""
    from engine_sim.engine.errors import EngineError
    from engine_sim.workloads import resolve_code

    marker = tmp_path / "imported"
    (tmp_path / "probe_module.py").write_text(f"open({str(marker)!r}, 'w').close()\ndef run(ctx, batch):\n"
                                              "    yield []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SpecError, match="unknown procedure code 'probe_module.run'"):
        parse_workload(one_procedure_spec(procedure_toml='code = "probe_module.run"'))
    with pytest.raises(EngineError, match="procedure 'P': unknown procedure code 'probe_module.run'"):
        resolve_code("probe_module.run", "P")
    assert not marker.exists() and "probe_module" not in sys.modules


def test_the_spec_readers_table_is_the_engines_code():
    from engine_sim.workloads import MODULES, resolve_code

    assert set(MODULES) == set(BUNDLED_CODE)
    for module in BUNDLED_CODE:
        names = code_names(module)
        assert sorted(__import__(MODULES[module], fromlist=["PROCEDURES"]).PROCEDURES) == names
        for name in names:
            concrete = name.replace("SIZE:SLIDE", "100:10")
            assert callable(resolve_code(f"{module}.{concrete}", "P"))


# -- 3. names: no invisible or control character --------------------------------------------------

@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200b", "\ufeff", "\x1b", "\t", "\x7f", "\x85", "\u2028"])
def test_the_name_rule(char):
    assert name_problem(f"a{char}b").startswith(f"holds {char!r} (U+{ord(char):04X}")
    assert name_problem("a\nb") == "holds a line break"
    assert name_problem("Zürich 中 ok-name_1 (x)") == ""


@pytest.mark.parametrize("old, new, entry", [
    ('name = "w"', 'name = "w\\u202e"', "top level"),
    ('name = "A"', 'name = "A\\u202e"', "tables[0]"),
    ('key = "k"', 'key = "k\\u202e"', "tables[0] 'A'"),
    ('batch_size = 4', 'batch_size = 4\nfields = ["f\\u202e"]', "[input]"),
])
def test_every_name_holding_a_bidi_control_is_refused_at_spec_load(old, new, entry):
    text = one_procedure_spec()
    assert old in text
    with pytest.raises(SpecError) as exc:
        parse_workload(text.replace(old, new, 1), "w.toml")
    message = str(exc.value)
    assert message.startswith(f"w.toml: {entry}: ") and "'\\u202e' (U+202E RIGHT-TO-LEFT OVERRIDE)" in message
    assert "\u202e" not in message and "\n" not in message


def test_an_sp_name_holding_u202e_is_refused_by_the_cli_shown_escaped(tmp_path, capsys):
    path = spec(tmp_path, proc='"Pay\\u202eKcab"')
    line = refused_by_every_command(tmp_path, path, capsys)
    assert line == (f"error: {path}: procedures[0]: name 'Pay\\u202eKcab' holds '\\u202e' (U+202E RIGHT-TO-LEFT "
                    "OVERRIDE), an invisible or control character a name may not hold (it would not print as "
                    "what it is)")


def test_an_error_line_shows_what_the_user_typed_escaped(tmp_path, capsys):
    """What an error line quotes from the command line (a workload name, a spec's path, an
    option's value) was printed raw: `recommend voter\\u202e` reversed the rest of the line."""
    assert run_app(["recommend", "voter\u202e"]) == 2
    assert one_error_line(capsys).startswith("error: voter\\u202e: not a spec file or a bundled workload")
    path = tmp_path / "c\u202eode.toml"
    path.write_text(one_procedure_spec(procedure_toml='code = "os.system"'))
    assert run_app(["recommend", str(path)]) == 2
    assert one_error_line(capsys) == (f"error: {tmp_path}/c\\u202eode.toml: procedures[0] 'P': unknown procedure "
                                      "code 'os.system' (bundled code: naive_window.*, voter.*)")
    design = Design("w", 1, 1, {"P": 0}, {"A": 0}).save(tmp_path / "d.json")
    assert run_app(["export", "--design", str(design), "-f", "volt\u202edb", "-o", str(tmp_path / "x")]) == 2
    assert "'volt\\u202edb' is not one of" in one_error_line(capsys)


def test_an_error_line_quoting_a_line_break_is_one_line(tmp_path, capsys):
    """A line break in what an error line quotes (a path, an option's value) split the line in
    two: `visible` keeps line breaks (human output needs them), an error line shows it `\\n`."""
    missing = tmp_path / "bad\nname.toml"
    assert run_app(["recommend", str(missing)]) == 2
    assert one_error_line(capsys).startswith(f"error: {tmp_path}/bad\\nname.toml: ")
    folder = tmp_path / "dir\nx"
    folder.mkdir()
    path = folder / "w.toml"
    path.write_text(one_procedure_spec(procedure_toml='code = "os.system"'))
    assert run_app(["recommend", str(path)]) == 2
    assert one_error_line(capsys).startswith(f"error: {tmp_path}/dir\\nx/w.toml: procedures[0] 'P': unknown")
    design = Design("w", 1, 1, {"P": 0}, {"A": 0}).save(tmp_path / "d.json")
    assert run_app(["export", "--design", str(design), "-f", "volt\ndb", "-o", str(tmp_path / "x")]) == 2
    assert "'volt\\ndb' is not one of" in one_error_line(capsys)


def test_a_window_or_stream_end_holding_one_is_refused(tmp_path):
    text = one_procedure_spec() + (
        '[[windows]]\nname = "W\\u2067"\nprocedure = "P"\nsize = 10\nslide = 5\n')
    with pytest.raises(SpecError, match=r"^w.toml: windows\[0\]: name 'W\\u2067' holds '\\u2067'"):
        parse_workload(text, "w.toml")
    text = one_procedure_spec() + '[[streams]]\nfrom = "P\\u200b"\nto = "P"\ntuples = 1\n'
    with pytest.raises(SpecError, match=r"^w.toml: streams\[0\]: from 'P\\u200b' holds '\\u200b'"):
        parse_workload(text, "w.toml")


def test_a_workload_built_in_python_is_held_to_the_rule():
    w = load_workload("move-micro")
    with pytest.raises(UserError, match=r"name 'SP1\\u202e' holds '\\u202e'"):
        load_workload(replace(w, procedures=(replace(w.procedures[0], name="SP1\u202e"),) + w.procedures[1:],
                              streams=()))


@pytest.fixture
def trace(tmp_path) -> Path:
    out = tmp_path / "t"
    synthesize(workload_as_plain(load_workload("move-micro")), out, batches=10, seed=1)
    return out


def test_a_trace_carrying_such_a_name_is_refused_before_spark(trace, capsys):
    rename_procedure(trace, "SP1", "SP1\u202e", in_manifest=True)
    assert run_app(["trace", "validate", str(trace)]) == 2
    assert one_error_line(capsys).startswith(
        f"error: {trace}: _trace.json: 'procedures[0]': name 'SP1\\u202e' holds '\\u202e' (U+202E")
    rename_procedure(trace, "SP1\u202e", "SP1\u202e", in_manifest=False)  # only the datasets say it
    with pytest.raises(TraceError, match=r"txns: .*procedure name 'SP1\\u202e' holds '\\u202e' \(U\+202E"):
        validate_trace(trace)


@pytest.mark.spark
def test_spark_refuses_such_a_trace_alike(trace, spark):
    from traces.spark_trace_checks import validate_with_spark

    rename_procedure(trace, "SP1", "SP1\u202e", in_manifest=False)
    with pytest.raises(TraceError, match=r"txns: column 'procedure': procedure name 'SP1\\u202e' holds '\\u202e' "
                                         r"\(U\+202E"):
        validate_with_spark(str(trace), spark)


@pytest.fixture
def stats(tmp_path) -> Path:
    return Path(shutil.copytree(STATS, tmp_path / "stats"))


def test_statistics_carrying_such_a_name_are_refused_as_read(stats, capsys):
    table = pq.read_table(stats / "procedures.parquet")
    names = table.column("procedure").to_pylist()
    names[1] = names[1] + "\u202e"
    pq.write_table(table.set_column(0, "procedure", pa.array(names)), stats / "procedures.parquet")
    with pytest.raises(TraceError, match=r"procedures.parquet: column 'procedure', row 1: name 'SP2\\u202e' "
                                         r"holds '\\u202e' \(U\+202E RIGHT-TO-LEFT OVERRIDE\)"):
        read_statistics_arrow(stats)
    assert run_app(["recommend", str(stats)]) == 2
    assert "procedures.parquet: column 'procedure', row 1: name 'SP2\\u202e'" in one_error_line(capsys)


def test_a_statistics_manifest_carrying_such_a_name_is_refused_as_read(stats, capsys):
    manifest = json.loads((stats / "_stats.json").read_text())
    manifest["windows"] = {"W\u202e": {"procedure": "SP2", "size": 10, "slide": 5}}
    (stats / "_stats.json").write_text(json.dumps(manifest))
    assert run_app(["recommend", str(stats)]) == 2
    assert one_error_line(capsys).startswith(
        f"error: {stats}: _stats.json: 'windows': name 'W\\u202e' holds '\\u202e' (U+202E")


# -- 4. `report`: the spec read and checked before its first progress line ----------------------

@pytest.mark.parametrize("edit, problem", [
    (lambda text: text + "[[[\n", "not valid TOML"),
    (lambda text: text.replace('table = "A"', 'table = "Zzz"'), "unknown table or window 'Zzz'"),
])
def test_report_refuses_a_bad_spec_before_any_progress_line(edit, problem, tmp_path, capsys):
    """`advisor report --design d.json BAD.toml` printed "report: scoring baselines" on stderr
    before the spec was read, then refused it: a progress line for work never done."""
    path = tmp_path / "w.toml"
    path.write_text(edit(one_procedure_spec()))
    design = Design("w", 1, 1, {"P": 0}, {"A": 0}).save(tmp_path / "d.json")
    assert run_app(["report", "--design", str(design), str(path), "--out", str(tmp_path / "r.html")]) == 2
    line = one_error_line(capsys)  # stderr is that one line: no "report: ..." before it
    assert line.startswith(f"error: {path}: ") and problem in line, line
    assert not (tmp_path / "r.html").exists()
