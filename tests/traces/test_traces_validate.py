"""Every bad trace of the issue gets one line naming the dataset, the column and the first bad
row, exit status 2, no traceback, and no (half-)written statistics directory."""
from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from costmodel.text import hidden_character
from traces.errors import TraceError
from traces.schema import ACCESSES, TXNS
from traces.trace_checks import is_local_trace, validate_trace
from traces.writer import TraceWriter


def part(trace, dataset):
    return trace / dataset / "part-00000.parquet"


def rewrite(trace, dataset, change):
    table = pq.read_table(part(trace, dataset))
    pq.write_table(change(table), part(trace, dataset))


def set_value(table: pa.Table, column: str, row: int, value) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    idx = table.schema.get_field_index(column)
    return table.set_column(idx, table.schema.field(idx), pa.array(values, table.schema.field(idx).type))


def _missing_dataset(t):
    shutil.rmtree(t / "flows")


def _missing_column(t):
    rewrite(t, "txns", lambda x: x.drop_columns(["status"]))


def _wrong_type(t):
    rewrite(t, "txns", lambda x: x.set_column(5, "start_us", pc.cast(x.column("start_us"), pa.string())))


def _wrong_key_type(t):
    rewrite(t, "accesses", lambda x: x.set_column(2, "key", pa.array([1.5] * x.num_rows)))


def _negative_duration(t):
    def change(x):
        return set_value(x, "end_us", 7, x.column("start_us")[7].as_py() - 3)
    rewrite(t, "txns", change)


def _negative_time(t):
    rewrite(t, "txns", lambda x: set_value(x, "start_us", 4, -10))


def _bad_status(t):
    rewrite(t, "txns", lambda x: set_value(x, "status", 6, "maybe"))


def _unknown_flow_procedure(t):
    rewrite(t, "flows", lambda x: set_value(x, "to_procedure", 11, "Ghost"))


def _empty_trace(t):
    pq.write_table(TXNS.empty_table(), part(t, "txns"))


def _corrupt_file(t):
    data = part(t, "accesses").read_bytes()
    part(t, "accesses").write_bytes(data[: len(data) // 2])


def _corrupt_pages(t):
    data = bytearray(part(t, "accesses").read_bytes())
    for i in range(100, len(data) // 2):  # the footer stays intact, the data pages do not
        data[i] = (data[i] * 7 + 13) % 256
    part(t, "accesses").write_bytes(bytes(data))


def _garbage_file(t):
    (t / "txns" / "part-00001.parquet").write_bytes(b"this is not parquet at all")


def _negative_rows(t):
    rewrite(t, "accesses", lambda x: set_value(x, "rows", 9, -1))


def _bad_mode(t):
    rewrite(t, "accesses", lambda x: set_value(x, "mode", 3, "delete"))


def _null_table(t):
    rewrite(t, "accesses", lambda x: set_value(x, "table", 2, None))


def _null_key_in_second_file(t):
    """File 0 stays good; file 1 gets a null key at its row 5 (row n0 + 5 of the dataset)."""
    table = pq.read_table(part(t, "accesses"))
    pq.write_table(set_value(table, "key", 5, None), t / "accesses" / "part-00001.parquet")
    return [f"row {table.num_rows + 5} "]


def _key_holding(value: str, second_file: bool = False):
    """Row 5's key (of file 1, a copy of file 0, when `second_file`) set to `value`: a key names
    its hot tuple (TABLE@KEY), which the statistics' reader refused after the Spark job."""
    def make_bad(t):
        table = pq.read_table(part(t, "accesses"))
        target = t / "accesses" / "part-00001.parquet" if second_file else part(t, "accesses")
        pq.write_table(set_value(table, "key", 5, value), target)
        return [f"row {table.num_rows * second_file + 5} ", f"(in {target.name})"]
    make_bad.__name__ = f"_key_holding_u{ord(hidden_character(value)):04x}{'_in_second_file' if second_file else ''}"
    return make_bad


def _missing_manifest(t):
    (t / "_trace.json").unlink()


def _future_format(t):
    (t / "_trace.json").write_text(json.dumps({"format": "advisor.trace/9"}))


def _mixed_key_types(t):
    table = pq.read_table(part(t, "accesses"))
    ints = table.set_column(2, pa.field("key", pa.int64()), pc.cast(table.column("key"), pa.int64()))
    pq.write_table(ints, t / "accesses" / "part-00001.parquet")


def _one_id_for_all(t):
    rewrite(t, "txns", lambda x: x.set_column(0, "txn_id", pa.array([7] * x.num_rows, pa.int64())))


def _id_in_two_batches(t):
    """Row 0's id given to the first row of another procedure in another batch (a nested
    group, were they in one batch)."""
    x = pq.read_table(part(t, "txns"))
    procs, batches = x.column("procedure").to_pylist(), x.column("batch_id").to_pylist()
    j = next(i for i in range(x.num_rows) if procs[i] != procs[0] and batches[i] != batches[0])
    pq.write_table(set_value(x, "txn_id", j, x.column("txn_id")[0].as_py()), part(t, "txns"))
    return [f"row {j} ", f"in batch {batches[j]} and in batch {batches[0]}"]


def _orphan_accesses(t):
    """Rows 12.. (2 % of the accesses) name a transaction txns does not hold."""
    def change(x):
        ids = x.column("txn_id").to_pylist()
        n = x.num_rows // 50
        ids[12:12 + n] = [10 ** 12] * n
        return x.set_column(0, "txn_id", pa.array(ids, pa.int64()))
    rewrite(t, "accesses", change)


BAD = [
    # (make it bad, words the one line must contain)
    (_one_id_for_all, ["txns", "'txn_id'", "transaction 7", "appears twice", "one execution"]),
    (_id_in_two_batches, ["txns", "'txn_id'"]),
    (_orphan_accesses, ["accesses", "'txn_id'", "row 12", "transaction 1000000000000 has no row in txns",
                        "more than 1%"]),
    (_missing_dataset, ["flows", "missing"]),
    (_missing_column, ["txns", "'status'", "missing"]),
    (_wrong_type, ["txns", "'start_us'", "type string", "int64", "row 0"]),
    (_wrong_key_type, ["accesses", "'key'", "double", "int64 or string"]),
    (_negative_duration, ["txns", "'end_us'", "row 7", "negative duration"]),
    (_negative_time, ["txns", "'start_us'", "row 4", "negative"]),
    (_bad_status, ["txns", "'status'", "row 6", "'maybe'"]),
    (_unknown_flow_procedure, ["flows", "'to_procedure'", "row 11", "'Ghost'", "never ran"]),
    (_empty_trace, ["txns", "empty trace"]),
    (_corrupt_file, ["accesses", "part-00000.parquet", "Parquet"]),
    (_corrupt_pages, ["accesses", "part-00000.parquet", "corrupt Parquet data"]),
    (_garbage_file, ["txns", "part-00001.parquet", "not a readable Parquet file"]),
    (_negative_rows, ["accesses", "'rows'", "row 9", "-1"]),
    (_bad_mode, ["accesses", "'mode'", "row 3", "'delete'"]),
    (_null_table, ["accesses", "'table'", "row 2", "null"]),
    (_null_key_in_second_file, ["accesses", "'key'", "part-00001.parquet", "null"]),
    (_key_holding("Trade\u202eKcab"), ["accesses", "'key'", r"key 'Trade\u202eKcab'", "U+202E", "TABLE@KEY"]),
    (_key_holding("bell\x07", second_file=True), ["accesses", "'key'", r"key 'bell\x07'", "U+0007"]),
    (_key_holding("two\nlines"), ["accesses", "'key'",
                                   r"key 'two\nlines' (a hot tuple is named TABLE@KEY) holds a line break"]),
    (_missing_manifest, ["_trace.json", "missing"]),
    (_future_format, ["_trace.json", "advisor.trace/9"]),
    (_mixed_key_types, ["accesses", "'key'", "int64", "string"]),
]


@pytest.mark.parametrize("make_bad,words", BAD, ids=[f.__name__.strip("_") for f, _ in BAD])
def test_bad_trace_is_one_line_exit_2_and_writes_nothing(trace, tmp_path, capsys, make_bad, words):
    words = words + (make_bad(trace) or [])
    with pytest.raises(TraceError) as info:
        validate_trace(trace)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    stats = tmp_path / "stats"
    for argv in (["trace", "validate", str(trace)],
                 ["trace", "aggregate", str(trace), "--out", str(stats)]):
        assert run_app(argv) == 2
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1 and "Traceback" not in err
        assert str(info.value) in lines[0]
    assert not stats.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".stats")]


def test_existing_statistics_survive_a_failed_aggregation(trace, tmp_path, capsys):
    stats = tmp_path / "stats"
    stats.mkdir()
    (stats / "_stats.json").write_text('{"format": "advisor.stats/1"}')
    _negative_duration(trace)
    assert run_app(["trace", "aggregate", str(trace), "--out", str(stats)]) == 2
    assert (stats / "_stats.json").read_text() == '{"format": "advisor.stats/1"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats", "trace"]


def test_bad_options_are_one_line(good_trace, tmp_path, capsys):
    for argv in (["--granularity", "fragment:0"], ["--granularity", "rows"],
                 ["--granularity", "tuple", "--hot-tuples", "-1"],
                 ["--spark-conf", "no-equals-sign"]):
        assert run_app(["trace", "aggregate", str(good_trace), "--out", str(tmp_path / "s"),
                        *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("error:") == 1 and "Traceback" not in err, argv
    assert not (tmp_path / "s").exists()


def test_a_few_accesses_of_unknown_transactions_are_tolerated(trace):
    """Fewer than 1 % (a trace cut out of a running system): valid; the aggregation counts them."""
    total = validate_trace(trace).rows["accesses"]
    rewrite(trace, "accesses", lambda x: set_value(x, "txn_id", 3, 10 ** 12))
    assert validate_trace(trace).rows["accesses"] == total
    rewrite(trace, "accesses", lambda x: x.set_column(0, "txn_id", pa.array(
        [10 ** 12] * (total // 100 + 1) + x.column("txn_id").to_pylist()[total // 100 + 1:], pa.int64())))
    with pytest.raises(TraceError, match=f"{total // 100 + 1:,} of {total:,} access rows"):
        validate_trace(trace)


def test_good_traces_pass_with_string_or_int64_keys(good_trace, tmp_path, capsys):
    info = validate_trace(good_trace)
    assert info.key_type == "string" and info.rows["txns"] == 120
    assert info.procedures == sorted(["DateTimeLookup", "SecurityLookup", "AccountLookup",
                                      "TradeInsert"])
    txns = pq.read_table(part(good_trace, "txns"))
    acc = pq.read_table(part(good_trace, "accesses"))
    flows = pq.read_table(part(good_trace, "flows"))
    with TraceWriter(tmp_path / "ints", {"workload": "ints"}) as w:
        w.write("txns", txns)
        w.write("accesses", acc.set_column(2, "key", pc.cast(acc.column("key"), pa.int64())))
        w.write("flows", flows)
    info = validate_trace(tmp_path / "ints")
    assert info.key_type == "int64"
    assert run_app(["trace", "validate", str(tmp_path / "ints")]) == 0
    assert "int64 keys" in capsys.readouterr().out


def test_a_dataflow_of_many_procedures_validates_in_a_few_lines(chain32, tmp_path, capsys):
    """The summary names how many procedures ran and the first of them, as every listing does
    (`costmodel.text.first_of`); `--json` has every one. It listed every name: 12 lines at 150
    SPs on a 100-column terminal, about 80 at 1,000."""
    from traces.synth import synthesize
    from costmodel.workload import workload_as_plain

    synthesize(workload_as_plain(chain32), tmp_path / "trace", batches=3, seed=1)
    assert run_app(["trace", "validate", str(tmp_path / "trace")]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1
    assert "32 procedures: " in out and "... (16 more; --json has every one)" in out
    assert run_app(["trace", "validate", str(tmp_path / "trace"), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["procedures"]) == 32


def test_writer_leaves_nothing_behind_when_the_producer_fails(tmp_path):
    with pytest.raises(RuntimeError):
        with TraceWriter(tmp_path / "t") as w:
            w.write("accesses", ACCESSES.empty_table())
            raise RuntimeError("producer died")
    assert list(tmp_path.iterdir()) == []


def test_keys_that_print_as_themselves_validate_whatever_their_script(trace):
    """Only a key the name rule refuses is: a no-break space, accents and CJK keys (which Arrow's
    printable test flags or passes) validate, and so does an empty key (no name rule for it)."""
    keys = ["caf\u00e9", "\u4e2d\u6587", "no\u00a0break", "tab-free text", ""]
    rewrite(trace, "accesses", lambda x: x.set_column(
        2, "key", pa.array(keys * (x.num_rows // len(keys)) + keys[:x.num_rows % len(keys)], pa.string())))
    assert validate_trace(trace).rows["accesses"] == pq.read_metadata(part(trace, "accesses")).num_rows


def test_a_file_uri_is_a_local_trace_and_other_schemes_are_read_by_spark(good_trace, capsys):
    uri = good_trace.absolute().as_uri()  # file:///...
    assert validate_trace(uri).rows == validate_trace(good_trace).rows
    assert run_app(["trace", "validate", uri]) == 0
    assert "valid" in capsys.readouterr().out
    assert is_local_trace(uri) and is_local_trace(good_trace)
    for other in ("s3a://bucket/trace", "hdfs://namenode:8020/traces/t1", "viewfs://c/t"):
        assert not is_local_trace(other)
        with pytest.raises(TraceError, match="read in place by Spark"):
            validate_trace(other)  # the Arrow validator does not pretend to read it