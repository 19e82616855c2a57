"""An input a user session found accepted by the spec reader and refused only later, now
refused as the spec is read, in one line, by every entry point alike:

- `[input] cost_unit_us = 0`: every SP free; its trace was refused only when aggregated, as
  `trace synth --cost-unit-us 0` and a manifest's 0 already were."""
from __future__ import annotations

from pathlib import Path

import pytest

from advisor.cli import run_app
from advisor.sources import load_workload
from costmodel.design import Design
from costmodel.spec_reader import parse_workload
from costmodel.workload import workload_as_plain
from traces.errors import TraceError
from traces.manifest_fields import check_manifest_fields
from traces.synth import synthesize

SPEC = """name = "w"
[input]
batch_size = 4
{input}
[[tables]]
name = "A"
rows = 100
row_bytes = 8
key = "k"
[[procedures]]
name = {proc}
cost = 2.0
{extra}
accesses = [ {{ table = "A", mode = "write", rows = 1 }} ]
"""


def spec(tmp_path: Path, *, input: str = "", proc: str = '"P"', extra: str = "") -> Path:
    path = tmp_path / "w.toml"
    path.write_text(SPEC.format(input=input, proc=proc, extra=extra))
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
    assert parse_workload(SPEC.format(input="cost_unit_us = 0.001", proc='"P"', extra="")).input.cost_unit_us == 0.001
