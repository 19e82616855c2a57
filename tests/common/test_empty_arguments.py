"""An empty argument (`--out "$DIR"` with DIR unset) is refused in one line by the CLI and by
the Python API: read as `Path("")`, the working directory, it was written over or named `.`."""
from __future__ import annotations

import pytest

from advisor.cli import run_app
from costmodel.errors import UserError
from costmodel.files import as_path


def test_trace_synth_with_an_empty_out_leaves_the_working_directory_alone(tmp_path, monkeypatch, capsys):
    # `--out ""` was the working directory: an empty one was replaced by the trace, exit 0
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert run_app(["trace", "synth", "bank-transfer", "--batches", "5", "--out", ""]) == 2
    err = capsys.readouterr().err
    assert err == "error: an empty argument after --out (an unset shell variable?): give a workload, " \
                  "a path or a value there, or leave it out\n"
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("command, said", [
    (["recommend", ""], "an empty argument after recommend"),
    (["report", "-d", "d.json", "bank-transfer", "--validation", "", "-o", "r.html"],
     "an empty argument after --validation"),
    (["export", "-d", "d.json", "--format", "csv", "--out="], "--out is given an empty value"),
])
def test_an_empty_argument_is_named_not_read_as_the_working_directory(command, said, tmp_path, monkeypatch, capsys):
    # each was refused as a directory named `.`: `report --validation ""` refused r.html as
    # inside the input `.`
    monkeypatch.chdir(tmp_path)
    assert run_app(command) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {said}") and "(an unset shell variable?)" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_the_python_api_refuses_an_empty_path():
    with pytest.raises(UserError, match="^an empty path: name a file or a folder$"):
        as_path("")
