"""The files of a trace's dataset folders as Spark reads them: a file under a failed job's hidden
folder is no part of the trace, a file name Hadoop reads as a glob is read as the one file it
names, a name Hadoop cannot open is refused before Spark starts, and a file gone between the
validation and the Spark job is one line, never an internal error."""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import traces.aggregate as aggregate_module
from advisor.cli import run_app
from traces.aggregate import aggregate
from traces.errors import TraceError
from traces.statistics import read_statistics_arrow
from traces.trace_checks import spark_paths, validate_trace

STATS = Path(__file__).resolve().parents[1] / "common" / "data" / "stats-move-micro"


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def split_txns(trace, first: str, second: str) -> None:
    """The txns dataset as two files of those names, half the rows each."""
    whole = trace / "txns" / "part-00000.parquet"
    table = pq.read_table(whole)
    whole.unlink()
    half = table.num_rows // 2
    for name, rows in ((first, table.slice(0, half)), (second, table.slice(half))):
        (trace / "txns" / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, trace / "txns" / name)


@pytest.mark.parametrize("folder", ["_temporary/0/_temporary/attempt_1", ".spark-staging-1"])
def test_files_under_a_hidden_or_underscore_folder_are_no_part_of_the_trace(trace, folder):
    """A failed Spark write leaves partial copies in `_temporary/`: read as data, their rows were
    the trace's rows twice ("transaction 1 ... appears twice"), where Spark skips them."""
    rows = validate_trace(trace).rows["txns"]
    leftover = trace / "txns" / folder
    leftover.mkdir(parents=True)
    pq.write_table(pq.read_table(trace / "txns" / "part-00000.parquet").slice(0, 5),
                   leftover / "part-00000.parquet")
    info = validate_trace(trace)
    assert info.rows["txns"] == rows
    assert [f.name for f in info.files["txns"]] == ["part-00000.parquet"]


def test_a_file_in_a_plain_subfolder_is_still_read(trace):
    rows = validate_trace(trace).rows["txns"]
    split_txns(trace, "a.parquet", "day=2/b.parquet")
    assert validate_trace(trace).rows["txns"] == rows


def test_a_file_name_holding_a_colon_is_refused_before_spark(trace, tmp_path, capsys):
    """Hadoop's local filesystem cannot open `part:1.parquet` (its checksum file's name is no
    path): it failed inside the Spark job, after the first stages had run."""
    split_txns(trace, "a.parquet", "part:1.parquet")
    with pytest.raises(TraceError, match=r"txns: part:1\.parquet: Spark cannot read a file whose name holds ':'"):
        validate_trace(trace)
    stats = tmp_path / "stats"
    for argv in (["trace", "validate", str(trace)], ["trace", "aggregate", str(trace), "--out", str(stats)]):
        assert run_app(argv) == 2
        assert "holds ':'" in one_error_line(capsys)
    assert not stats.exists()


def test_glob_characters_are_escaped_for_spark():
    assert spark_paths(["/t/txns/part[1].parquet", "/t/a{1,2}/p*?.parquet", "/t/back\\slash.parquet",
                        "/t/plain-00000.parquet"]) == [
        "/t/txns/part\\[1\\].parquet", "/t/a\\{1,2\\}/p\\*\\?.parquet", "/t/back\\\\slash.parquet",
        "/t/plain-00000.parquet"]


@pytest.mark.integration
def test_file_names_hadoop_reads_as_globs_are_read_as_the_files_they_name(trace, spark):
    """`part[1].parquet` was "Path does not exist" (an internal error, exit 1), and
    `part*.parquet` matched `part-1.parquet` too, so Spark read that file's rows twice."""
    expected = aggregate(trace, None, "table", spark=spark, progress=None)
    txns = pq.read_table(trace / "txns" / "part-00000.parquet")
    for first, second in (("a.parquet", "part[1].parquet"), ("a.parquet", "part{1,2}.parquet"),
                          ("part-1.parquet", "part*.parquet")):
        for f in (trace / "txns").iterdir():
            f.unlink()
        pq.write_table(txns, trace / "txns" / "part-00000.parquet")
        split_txns(trace, first, second)
        stats = aggregate(trace, None, "table", spark=spark, progress=None)
        for name, frame in stats.frames().items():
            assert frame.equals(expected.frames()[name]), (second, name)


@pytest.mark.integration
def test_a_file_gone_before_spark_reads_it_is_one_line(trace, spark, monkeypatch):
    validate = aggregate_module.validate_trace

    def validate_then_remove(where):
        info = validate(where)
        (trace / "flows" / "part-00000.parquet").unlink()
        return info
    monkeypatch.setattr(aggregate_module, "validate_trace", validate_then_remove)
    with pytest.raises(TraceError, match=r"the Spark job failed: .*PATH_NOT_FOUND.*flows/part-00000\.parquet"):
        aggregate(trace, None, "table", spark=spark, progress=None)


def test_a_relative_path_whose_first_folder_holds_a_colon_is_read_as_a_path(trace, tmp_path, monkeypatch, capsys):
    """Arrow reads a relative `run:2/trace/txns/part-00000.parquet` as a URI of a filesystem
    named `run`: a trace or statistics under a folder named by a time (`12:30/`) was "not a
    readable Parquet file (Unrecognized filesystem type in URI ...)"."""
    rows = validate_trace(trace).rows
    monkeypatch.chdir(tmp_path)
    shutil.copytree(trace, tmp_path / "run:2" / "trace")
    shutil.copytree(STATS, tmp_path / "run:2" / "stats")
    assert validate_trace("run:2/trace").rows == rows
    assert read_statistics_arrow("run:2/stats")[1]["sha256"] == read_statistics_arrow(STATS)[1]["sha256"]
    assert run_app(["trace", "validate", "run:2/trace"]) == 0
    assert run_app(["recommend", "run:2/stats", "--objective", "cost", "--out", "d.json"]) == 0
    assert run_app(["evaluate", "--design", "d.json", "run:2/stats"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("where", ["x[1]/run:2", "run:2/x[1]", "run:2/x*"])
def test_a_path_holding_a_colon_and_a_glob_character_is_refused_before_spark(trace, tmp_path, where, capsys):
    """Spark escapes a path's glob characters, but then Hadoop walks it as a pattern and reads
    a folder named `run:2` in it as a URI: the Spark job failed with Hadoop's wording
    ("URISyntaxException: Relative path in absolute URI"), after the session had started."""
    moved = tmp_path / where
    shutil.copytree(trace, moved)
    with pytest.raises(TraceError, match=r"Spark cannot read a path that holds both ':' and one of"):
        validate_trace(moved)
    stats = tmp_path / "stats"
    assert run_app(["trace", "aggregate", str(moved), "--out", str(stats)]) == 2
    assert "holds both ':'" in one_error_line(capsys)
    assert not stats.exists()
