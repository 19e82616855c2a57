"""The Spark aggregation equals an independent pandas computation, at every granularity."""
from __future__ import annotations

import json
import os
import shutil
import zlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from traces import load_statistics
from traces.aggregate import aggregate
from traces.errors import JavaError, TraceError
from traces.granularity import parse_granularity
from traces.java import check_java, parse_java_major
from traces.synth import synthesize
from traces.writer import TraceWriter
from test_traces_synth import MIXED

pytestmark = [pytest.mark.spark, pytest.mark.integration]


# -- the independent reference -------------------------------------------------------------------

def reference(trace, granularity: str, hot_tuples: int = 0) -> dict[str, pd.DataFrame]:
    """The statistics computed with pandas only, straight from the definitions."""
    gran = parse_granularity(granularity, hot_tuples)
    txns = pd.read_parquet(trace / "txns")
    acc = pd.read_parquet(trace / "accesses")
    flows = pd.read_parquet(trace / "flows")
    manifest = json.loads((trace / "_trace.json").read_text())
    acc["key"] = acc["key"].astype(str)
    txns["cost"] = txns["end_us"] - txns["start_us"]
    g = txns.groupby("procedure")
    procs = pd.DataFrame({
        "invocations": g.size(),
        "commits": g["status"].apply(lambda s: (s == "commit").sum()),
        "aborts": g["status"].apply(lambda s: (s == "abort").sum()),
        "restarts": g["restarts"].sum(),
        "total_cost_us": g["cost"].sum(),
        "mean_cost_us": g["cost"].mean(),
        "p50_cost_us": g["cost"].quantile(0.5),
        "p95_cost_us": g["cost"].quantile(0.95),
    })
    procs["abort_rate"] = procs["aborts"] / procs["invocations"]

    fragment = acc["table"] + "#" + acc["key"].map(
        lambda k: str(zlib.crc32(k.encode()) % max(gran.fragments, 1)))
    if gran.kind == "table":
        acc["state"] = acc["table"]
    elif gran.kind == "fragment":
        acc["state"] = fragment
    else:
        heat = acc[acc["key"] != ""].groupby(["table", "key"])["rows"].sum().rename("heat").reset_index()
        hot = heat.sort_values(["heat", "table", "key"], ascending=[False, True, True]).head(
            gran.hot_tuples)
        is_hot = pd.MultiIndex.from_frame(acc[["table", "key"]]).isin(
            pd.MultiIndex.from_frame(hot[["table", "key"]]))
        acc["state"] = np.where(is_hot, acc["table"] + "@" + acc["key"], fragment)
    j = acc.merge(txns[["txn_id", "procedure"]], on="txn_id")
    j["is_read"] = j["mode"] == "read"
    j["read_rows"] = np.where(j["is_read"], j["rows"], 0)
    j["write_rows"] = np.where(j["is_read"], 0, j["rows"])
    g = j.groupby(["procedure", "state", "table"])
    ps = pd.DataFrame({
        "reads": g["is_read"].sum(), "writes": g["is_read"].size() - g["is_read"].sum(),
        "read_rows": g["read_rows"].sum(), "write_rows": g["write_rows"].sum(),
        "txns": g["txn_id"].nunique(),
    }).reset_index()
    ps["rows"] = ps["read_rows"] + ps["write_rows"]
    ps["probability"] = ps["txns"] / ps["procedure"].map(procs["invocations"])

    g = flows.groupby(["from_procedure", "to_procedure"])
    streams = pd.DataFrame({"flows": g.size(), "batches": g["batch_id"].nunique(),
                            "tuples": g["tuples"].sum(), "bytes": g["bytes"].sum()})

    state = j.groupby("state").agg(table=("table", "first"), heat=("rows", "sum"),
                                   read_rows=("read_rows", "sum"),
                                   write_rows=("write_rows", "sum"))
    sizes = manifest.get("tables") or {}
    distinct = acc.groupby("state")["key"].nunique()
    n_hot = state[state.index.str.contains("@")].groupby("table").size()
    row_bytes = state["table"].map(lambda t: sizes.get(t, {}).get("row_bytes", 100))
    rows = state["table"].map(lambda t: sizes.get(t, {}).get("rows", np.nan))
    if gran.kind == "table":
        sized = rows * row_bytes
    else:
        sized = (rows - state["table"].map(n_hot).fillna(0)) * row_bytes / gran.fragments
    estimated = np.where(rows.isna(), distinct.reindex(state.index) * row_bytes, sized)
    state["estimated_bytes"] = np.where(state.index.str.contains("@"), row_bytes, estimated)
    return {"procedures": procs, "procedure_state": ps.set_index(["procedure", "state"]),
            "streams": streams, "state": state, "batches": txns["batch_id"].nunique()}


def assert_matches(stats, ref) -> None:
    got = stats.procedures.set_index("procedure")
    exp = ref["procedures"]
    assert sorted(got.index) == sorted(exp.index)
    for c in exp.columns:
        np.testing.assert_allclose(got.loc[exp.index, c], exp[c], rtol=1e-9, err_msg=c)
    got = stats.procedure_state.set_index(["procedure", "state"])
    exp = ref["procedure_state"]
    assert sorted(got.index) == sorted(exp.index)
    for c in ("table",):
        assert (got.loc[exp.index, c] == exp[c]).all()
    for c in ("reads", "writes", "read_rows", "write_rows", "rows", "txns", "probability"):
        np.testing.assert_allclose(got.loc[exp.index, c], exp[c], rtol=1e-12, err_msg=c)
    got = stats.streams.set_index(["from_procedure", "to_procedure"])
    exp = ref["streams"]
    assert sorted(got.index) == sorted(exp.index)
    for c in exp.columns:
        assert (got.loc[exp.index, c] == exp[c]).all(), c
    got = stats.state.set_index("state")
    exp = ref["state"]
    touched = got[got["heat"] > 0]
    assert sorted(touched.index) == sorted(exp.index)
    for c in ("heat", "read_rows", "write_rows", "estimated_bytes"):
        np.testing.assert_allclose(got.loc[exp.index, c], exp[c], rtol=1e-9, err_msg=c)
    assert stats.manifest["batches"] == ref["batches"]


# -- traces ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    out = tmp_path_factory.mktemp("agg") / "mixed"
    synthesize(MIXED, out, batches=400, seed=11, abort_rate=0.1)
    return out


@pytest.fixture(scope="module")
def unsized_int_keys(mixed, tmp_path_factory):
    """The same trace with int64 keys and a manifest that does not size the tables."""
    out = tmp_path_factory.mktemp("agg") / "ints"
    acc = pq.read_table(mixed / "accesses")
    with TraceWriter(out, {"workload": "mixed-ints"}) as w:
        w.write("txns", pq.read_table(mixed / "txns"))
        w.write("accesses", acc.set_column(2, "key", pc.cast(acc.column("key"), pa.int64())))
        w.write("flows", pq.read_table(mixed / "flows"))
    return out


@pytest.fixture(scope="module")
def mixed_stats(spark, mixed):
    """Statistics of the mixed trace per (granularity, hot tuples), computed once."""
    cache = {}

    def get(granularity: str, hot: int = 0):
        if (granularity, hot) not in cache:
            cache[granularity, hot] = aggregate(mixed, None, granularity, hot, spark=spark,
                                                progress=None)
        return cache[granularity, hot]
    return get


@pytest.mark.parametrize("granularity,hot", [("table", 0), ("fragment:4", 0), ("tuple:3", 6)])
def test_statistics_equal_the_pandas_reference(mixed_stats, mixed, granularity, hot):
    stats = mixed_stats(granularity, hot)
    assert_matches(stats, reference(mixed, granularity, hot))
    kinds = set(stats.state["kind"])
    if granularity == "table":
        assert list(stats.state["state"]) == ["A", "B", "C"]
    elif granularity.startswith("fragment"):
        assert kinds == {"fragment"} and len(stats.state) == 3 * 4
        assert stats.state["estimated_bytes"].sum() == pytest.approx(50 * 10 + 1000 * 20 + 20 * 30)
    else:
        assert (stats.state["kind"] == "tuple").sum() == 6 and len(stats.state) == 6 + 3 * 3
        assert stats.state.loc[stats.state["kind"] == "tuple", "state"].str.contains("@").all()
        assert stats.state["estimated_bytes"].sum() == pytest.approx(50 * 10 + 1000 * 20 + 20 * 30)
    assert (stats.procedures["procedure"] == ["P1", "P2", "P3"]).all()
    assert stats.procedures["abort_rate"].between(0.03, 0.2).all()


def test_unpacked_sums_give_the_same_statistics(spark, mixed, mixed_stats, monkeypatch):
    """Traces whose row counts could overflow a packed sum take the four-sum path."""
    import traces.aggregate as job
    packed = mixed_stats("fragment:4")
    monkeypatch.setattr(job, "PACK_LIMIT", 0)
    unpacked = aggregate(mixed, None, "fragment:4", spark=spark, progress=None)
    for name, frame in packed.frames().items():
        pd.testing.assert_frame_equal(unpacked.frames()[name], frame, obj=name)


def test_int64_keys_and_unsized_tables(spark, mixed_stats, unsized_int_keys):
    """int64 keys hash like their decimal text; sizes come from distinct keys x 100 bytes."""
    ints = aggregate(unsized_int_keys, None, "tuple:3", 6, spark=spark, progress=None)
    assert_matches(ints, reference(unsized_int_keys, "tuple:3", 6))
    strings = mixed_stats("tuple:3", 6)
    pd.testing.assert_frame_equal(ints.procedure_state, strings.procedure_state)
    assert list(ints.state["state"]) == list(strings.state["state"])
    assert ints.manifest["key_type"] == "int64"


def test_cli_writes_statistics_that_load_as_pandas(spark, mixed, tmp_path, capsys):
    out = tmp_path / "stats"
    assert run_app(["trace", "aggregate", str(mixed), "--out", str(out),
                    "--granularity", "fragment:2"]) == 0
    captured = capsys.readouterr()
    assert "wrote" in captured.out and "6 state items (fragment:2)" in captured.out
    progress = [ln for ln in captured.err.splitlines() if ln.startswith("aggregate: [")]
    assert len(progress) >= 12  # a start and an end line per step
    frames = load_statistics(out)
    assert set(frames) == {"procedures", "procedure_state", "streams", "state"}
    manifest = json.loads((out / "_stats.json").read_text())
    assert manifest["format"] == "advisor.stats/1" and manifest["granularity"] == "fragment:2"
    assert frames["state"].attrs["manifest"]["sha256"] == manifest["sha256"]
    assert_matches_frames(frames, reference(mixed, "fragment:2"))
    # a second run replaces the statistics in one step; other directories are refused
    assert run_app(["trace", "aggregate", str(mixed), "--out", str(out), "-q"]) == 0
    assert json.loads((out / "_stats.json").read_text())["granularity"] == "table"
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    assert run_app(["trace", "aggregate", str(mixed), "--out", str(tmp_path / "notes")]) == 2
    assert (tmp_path / "notes" / "a.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "stats"]


def assert_matches_frames(frames, ref):
    class S:
        pass
    s = S()
    for name, df in frames.items():
        setattr(s, name, df)
    s.manifest = frames["state"].attrs["manifest"]
    assert_matches(s, ref)


def test_java_check_says_what_it_found_and_how_to_fix(tmp_path, monkeypatch):
    assert parse_java_major('openjdk version "17.0.15" 2025-04-15') == 17
    assert parse_java_major('java version "1.8.0_292"') == 8
    assert "Java" in check_java()
    home = tmp_path / "jdk11"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(home))
    with pytest.raises(JavaError) as info:
        check_java()
    message = str(info.value)
    assert "found Java 11" in message and "17" in message and "apt-get install" in message
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(JavaError, match="Java not found.*apt-get install openjdk-17"):
        check_java()


def test_missing_java_fails_before_spark_starts(tmp_path):
    """In a fresh process (no Spark yet), a bad JAVA_HOME is one line and exit status 2."""
    import subprocess
    import sys

    trace = tmp_path / "t"
    synthesize(MIXED, trace, batches=5, seed=1)
    env = dict(os.environ, JAVA_HOME=str(tmp_path / "no-jdk"))
    proc = subprocess.run([sys.executable, "-m", "advisor", "trace", "aggregate", str(trace),
                           "--out", str(tmp_path / "s")], capture_output=True, text=True,
                          env=env, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "Java not found" in errors[0] and "apt-get" in errors[0]
    assert "Traceback" not in proc.stderr and "WARNING" not in proc.stderr
    assert not (tmp_path / "s").exists()


def test_hand_made_engine_style_trace(spark, tmp_path):
    """Numbers worked out by hand: an abort and its restart, no table sizes in the manifest."""
    with TraceWriter(tmp_path / "t", {"workload": "by-hand"}) as w:
        w.write("txns", {
            "txn_id": [1, 2, 3, 4], "procedure": ["P1", "P1", "P1", "P2"],
            "batch_id": [0, 1, 1, 0], "base_partition": [0, 0, 0, 1],
            "partitions": [[0], [0], [0, 1], [1]],
            "start_us": [0, 1000, 1400, 200], "end_us": [100, 1300, 1600, 250],
            "status": ["commit", "abort", "commit", "commit"], "restarts": [0, 0, 1, 0]})
        w.write("accesses", {
            "txn_id": [1, 1, 3, 4], "table": ["T", "T", "T", "U"],
            "key": ["k1", "k2", "k1", "k9"], "mode": ["read", "read", "write", "read"],
            "rows": [2, 1, 1, 5]})
        w.write("flows", {"batch_id": [0, 1], "from_procedure": ["P1", "P1"],
                          "to_procedure": ["P2", "P2"], "tuples": [3, 2], "bytes": [30, 20]})
    stats = aggregate(tmp_path / "t", None, "table", spark=spark, progress=None)
    p = stats.procedures.set_index("procedure")
    assert p.loc["P1", ["invocations", "commits", "aborts", "restarts"]].tolist() == [3, 2, 1, 1]
    assert p.loc["P1", "abort_rate"] == pytest.approx(1 / 3)
    assert p.loc["P1", "mean_cost_us"] == pytest.approx(200.0)
    assert p.loc["P1", "p95_cost_us"] == pytest.approx(290.0)  # 200 + 0.9 x (300 - 200)
    assert p.loc["P2", ["invocations", "total_cost_us"]].tolist() == [1, 50]
    ps = stats.procedure_state.set_index(["procedure", "state"])
    assert ps.loc[("P1", "T"), ["reads", "writes", "read_rows", "write_rows", "rows", "txns"]
                  ].tolist() == [2, 1, 3, 1, 4, 2]
    assert ps.loc[("P1", "T"), "probability"] == pytest.approx(2 / 3)
    assert ps.loc[("P2", "U"), ["read_rows", "txns", "probability"]].tolist() == [5, 1, 1.0]
    assert stats.streams[["flows", "batches", "tuples", "bytes"]].values.tolist() == [[2, 2, 5, 50]]
    s = stats.state.set_index("state")
    assert s.loc["T", "estimated_bytes"] == 200.0 and s.loc["U", "estimated_bytes"] == 100.0
    assert s.loc["T", "heat"] == 4 and s.loc["U", "heat"] == 5
    assert stats.manifest["batches"] == 2 and stats.manifest["unmatched_access_rows"] == 0


def test_a_few_accesses_of_unknown_transactions_are_counted_and_left_out(spark, mixed, mixed_stats,
                                                                          tmp_path):
    """Under 1 % of the access rows (a trace cut out of a running system) pass validation;
    the aggregation leaves them out of every figure and counts them."""
    trace = tmp_path / "cut"
    shutil.copytree(mixed, trace)
    part = trace / "accesses" / "part-00000.parquet"
    acc = pq.read_table(part)
    ids = acc.column("txn_id").to_pylist()
    cut = [5, 17, 40]
    for i in cut:
        ids[i] = 10 ** 12 + i
    pq.write_table(acc.set_column(0, "txn_id", pa.array(ids, pa.int64())), part)
    stats = aggregate(trace, None, "table", spark=spark, progress=None)
    assert stats.manifest["unmatched_access_rows"] == len(cut)
    full = mixed_stats("table").procedure_state
    lost = sum(acc.column("rows")[i].as_py() for i in cut)
    assert int(full["rows"].sum()) - int(stats.procedure_state["rows"].sum()) == lost


def test_corrupt_page_that_validation_skips_is_one_spark_error(spark, mixed, unsized_int_keys, tmp_path):
    """Validation does not read an int64 key column when the statistics vouch for it (a string
    key it reads, for the name rule); a corrupt key page then fails inside Spark, and that
    failure is one line too, nothing written."""
    trace = tmp_path / "trace"
    shutil.copytree(unsized_int_keys, trace)
    part = trace / "accesses" / "part-00000.parquet"
    column = pq.ParquetFile(part).metadata.row_group(0).column(2)
    assert column.path_in_schema == "key"
    data = bytearray(part.read_bytes())
    start = (column.dictionary_page_offset or column.data_page_offset) + 40
    for i in range(start, start + 120):
        data[i] = (data[i] * 7 + 13) % 256
    part.write_bytes(bytes(data))
    with pytest.raises(TraceError) as info:
        aggregate(trace, tmp_path / "stats", "fragment:4", spark=spark, progress=None)
    message = str(info.value)
    assert "the Spark job failed reading" in message and "part-00000.parquet" in message
    assert "\n" not in message and "\tat " not in message
    assert not (tmp_path / "stats").exists()
    # the session is still usable afterwards
    assert aggregate(mixed, None, "table", spark=spark, progress=None).manifest["batches"] == 400


def test_a_sum_past_64_bits_is_one_line_without_spark_s_log(spark, mixed, tmp_path):
    """Flows of 2**62 bytes each pass validation, then overflow Spark's sum: PySpark printed the
    whole Java stack trace as JSON on stderr, and the error line gave Spark's own advice
    (try_add, spark.sql.ansi.enabled), not the cause."""
    trace = tmp_path / "trace"
    shutil.copytree(mixed, trace)
    part = next((trace / "flows").glob("*.parquet"))
    flows = pq.read_table(part)
    i = flows.schema.get_field_index("bytes")
    pq.write_table(flows.set_column(i, "bytes", pa.array([2**62] * flows.num_rows, flows.schema.field(i).type)), part)
    with pytest.raises(TraceError) as info:
        aggregate(trace, tmp_path / "stats", "table", spark=spark, progress=None)
    assert "a sum of the trace's figures overflows 64-bit integers" in str(info.value)
    assert "try_add" not in str(info.value) and "\n" not in str(info.value)
    # PySpark's handler writes to the sys.stderr of when it was made (not this test's fd 2):
    # the loggers themselves are what must be off
    import logging

    if not os.environ.get("ADVISOR_SPARK_LOG"):
        assert not logging.getLogger("SQLQueryContextLogger").isEnabledFor(logging.ERROR)
        assert not logging.getLogger("DataFrameQueryContextLogger").isEnabledFor(logging.ERROR)
    assert not (tmp_path / "stats").exists()
