"""A trace that is not a local path is read in place by Spark (issue 18 item 6): any URI the
session has a filesystem for aggregates to the same statistics as the local copy, is checked
by Spark before the job, and what Spark cannot read is one line with Spark's reason.

`viewfs://` stands in for a remote filesystem: it is Hadoop's own mount-table filesystem,
served by the same FileSystem API as `hdfs://` or `s3a://`, and its mount points here lead to
a temporary directory, so no cluster is needed. Each test mounts under a fresh authority
(Hadoop caches a filesystem per scheme and authority).
"""
from __future__ import annotations

import json
import shutil
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from costmodel.workload import workload_as_plain
from traces.aggregate import aggregate, check_trace
from traces.errors import TraceError
from traces.schema import MANIFEST
from traces.statistics import load_statistics, read_stats_manifest
from traces.synth import synthesize
from traces.trace_checks import validate_trace

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def local_trace(tpcdi_trade, tmp_path_factory):
    """A 40-batch tpcdi-trade trace on the local disk."""
    return synthesize(workload_as_plain(tpcdi_trade), tmp_path_factory.mktemp("inplace") / "trace",
                      batches=40, seed=3).out


@pytest.fixture
def mount(spark, tmp_path, local_trace):
    """(a viewfs:// URI prefix, the local directory it leads to), with a copy of the local
    trace mounted as PREFIX/trace."""
    authority = "t" + uuid.uuid4().hex[:10]
    spark.sparkContext._jsc.hadoopConfiguration().set(
        f"fs.viewfs.mounttable.{authority}.link./data", tmp_path.absolute().as_uri())
    shutil.copytree(local_trace, tmp_path / "trace")
    return f"viewfs://{authority}/data", tmp_path


def test_a_trace_elsewhere_aggregates_in_place_to_the_statistics_of_its_local_copy(
        spark, local_trace, mount, tmp_path_factory):
    prefix, folder = mount
    out = tmp_path_factory.mktemp("stats")
    remote = aggregate(f"{prefix}/trace", out / "remote", spark=spark, progress=None)
    local = aggregate(local_trace, out / "local", spark=spark, progress=None)
    assert remote.manifest["source_trace"] == f"{prefix}/trace"
    a, b = load_statistics(out / "local"), load_statistics(out / "remote")
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].equals(b[name]), name
    assert read_stats_manifest(out / "remote")["batches"] == local.manifest["batches"] == 40
    # the Spark checks see what the Arrow checks see
    here, there = validate_trace(local_trace), check_trace(f"{prefix}/trace", spark=spark)
    assert (there.rows, there.key_type, there.procedures, there.tables) == \
        (here.rows, here.key_type, here.procedures, here.tables)
    assert there.rows_bound >= int(pc.sum(pq.read_table(local_trace / "accesses",
                                                        columns=["rows"])["rows"]).as_py())


@pytest.mark.slow  # the API test above aggregates in place; this one adds the CLI's parsing
def test_the_cli_validates_and_aggregates_a_trace_elsewhere(spark, local_trace, mount,
                                                              tmp_path_factory, capsys):
    prefix, folder = mount
    assert run_app(["trace", "validate", f"{prefix}/trace"]) == 0
    assert "valid" in capsys.readouterr().out
    out = tmp_path_factory.mktemp("cli") / "stats"
    assert run_app(["trace", "aggregate", f"{prefix}/trace", "-o", str(out), "-q"]) == 0
    assert read_stats_manifest(out)["source_trace"] == f"{prefix}/trace"


def test_a_scheme_spark_cannot_read_is_one_line_with_sparks_reason(spark, tmp_path, capsys):
    out = tmp_path / "stats"
    for cmd in (["trace", "validate", "s3a://no-such-bucket/trace"],
                ["trace", "aggregate", "s3a://no-such-bucket/trace", "-o", str(out), "-q"]):
        assert run_app(cmd) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "s3a://no-such-bucket/trace: Spark cannot read this trace: " in err
        reason = err.split("Spark cannot read this trace: ", 1)[1]
        # Hadoop's words: the s3a filesystem class is not on the classpath (no hadoop-aws jar)
        assert "S3AFileSystem not found" in reason or 'No FileSystem for scheme "s3a"' in reason
        assert "Traceback" not in err and "at org." not in err
    assert not out.exists()


def _rewrite(file, change) -> None:
    table = change(pq.read_table(file))
    pq.write_table(table, file)


def _set(column: str, values):
    def change(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index(column)
        return t.set_column(i, column, pa.array(values(t), t.schema.field(i).type))
    return change


BAD_TRACES = {
    "no such trace directory": lambda d: shutil.rmtree(d),
    f"{MANIFEST} is missing": lambda d: (d / MANIFEST).unlink(),
    "not valid JSON": lambda d: (d / MANIFEST).write_text("{oops"),
    "dataset 'flows' is missing": lambda d: shutil.rmtree(d / "flows"),
    "column 'rows' is missing": lambda d: _rewrite(
        d / "accesses" / "part-00000.parquet", lambda t: t.drop_columns(["rows"])),
    "column 'rows': negative value (e.g. '-4') in 1 rows (first in part-00000.parquet)": lambda d: _rewrite(
        d / "accesses" / "part-00000.parquet",
        _set("rows", lambda t: [-4] + t["rows"].to_pylist()[1:])),
    "column 'status': status is not 'commit' or 'abort' (e.g. 'maybe')": lambda d: _rewrite(
        d / "txns" / "part-00000.parquet",
        _set("status", lambda t: ["maybe"] + t["status"].to_pylist()[1:])),
    "column 'to_procedure': a procedure that never ran": lambda d: _rewrite(
        d / "flows" / "part-00000.parquet",
        _set("to_procedure", lambda t: ["Ghost"] + t["to_procedure"].to_pylist()[1:])),
    "has no row in txns, and 300 of ": lambda d: _rewrite(
        d / "accesses" / "part-00000.parquet",
        _set("txn_id", lambda t: [10 ** 12] * 300 + t["txn_id"].to_pylist()[300:])),
    "transaction 7 has 160 rows for 4 procedure(s)": lambda d: _rewrite(
        d / "txns" / "part-00000.parquet", _set("txn_id", lambda t: [7] * t.num_rows)),
    "'nested' must be": lambda d: (d / MANIFEST).write_text(json.dumps(
        {**json.loads((d / MANIFEST).read_text()), "nested": 7})),
}


# two run by default (a listing check and a data check); the rest with -m slow
DEFAULT_BAD = {"dataset 'flows' is missing",
               "column 'rows': negative value (e.g. '-4') in 1 rows (first in part-00000.parquet)"}


@pytest.mark.parametrize("words", [w if w in DEFAULT_BAD else pytest.param(w, marks=pytest.mark.slow)
                                   for w in BAD_TRACES])
def test_a_bad_trace_elsewhere_is_one_line_and_writes_nothing(spark, local_trace, mount, words,
                                                              tmp_path_factory, capsys):
    prefix, folder = mount
    BAD_TRACES[words](folder / "trace")
    out = tmp_path_factory.mktemp("bad") / "stats"
    assert run_app(["trace", "aggregate", f"{prefix}/trace", "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and f"{prefix}/trace" in err, err
    assert not out.exists()


def test_the_api_raises_the_same_line(spark, local_trace, mount):
    prefix, folder = mount
    shutil.rmtree(folder / "trace" / "txns")
    with pytest.raises(TraceError, match=r"/trace: dataset 'txns' is missing \(txns/: directory missing\)"):
        check_trace(f"{prefix}/trace", spark=spark)
