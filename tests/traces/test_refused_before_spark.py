"""What the statistics could not be used with is refused by validation, before Spark runs:
a name holding a line break, an access key holding a control or invisible character (it names
its hot tuple, TABLE@KEY), and flows whose stream edges form a cycle (a stray row from an SP
back upstream, or to itself). Each passed validation and the 10-15 s aggregation, then every
command that read the statistics refused them. The Spark route refuses them alike, in the
same words."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from advisor.sources import load_workload
from costmodel.workload import workload_as_plain
from traces.errors import TraceError
from traces.synth import synthesize
from traces.trace_checks import validate_trace
from trace_edits import rename_procedure


def _trace(tmp_path):
    trace = tmp_path / "t"
    synthesize(workload_as_plain(load_workload("tpcdi-trade")), trace, batches=20, seed=1)
    return trace


def _set_key(trace, row: int, key: str) -> None:
    f = next((trace / "accesses").glob("*.parquet"))
    t = pq.read_table(f)
    keys = t.column("key").to_pylist()
    keys[row] = key
    pq.write_table(t.set_column(t.schema.get_field_index("key"), "key", pa.array(keys, pa.string())), f)


def _drop_manifest_procedures(trace) -> None:
    """Only the datasets name the procedures: what their own checks find, the manifest's aside."""
    manifest = json.loads((trace / "_trace.json").read_text())
    del manifest["procedures"]
    (trace / "_trace.json").write_text(json.dumps(manifest))


def _extra_flow(trace, source: str, target: str) -> None:
    f = next((trace / "flows").glob("*.parquet"))
    t = pq.read_table(f)
    row = t.slice(0, 1)
    row = row.set_column(row.schema.get_field_index("from_procedure"), "from_procedure",
                         pa.array([source], row.schema.field("from_procedure").type))
    row = row.set_column(row.schema.get_field_index("to_procedure"), "to_procedure",
                         pa.array([target], row.schema.field("to_procedure").type))
    pq.write_table(pa.concat_tables([t, row]), f)


def test_a_procedure_name_holding_a_line_break_is_refused(tmp_path):
    trace = _trace(tmp_path)
    rename_procedure(trace, "TradeInsert", "Trade\nInsert")
    with pytest.raises(TraceError, match=r"'procedures\[3\]': name 'Trade\\nInsert' holds a line break"):
        validate_trace(trace)  # the manifest names it first (costmodel.text.name_problem)
    _drop_manifest_procedures(trace)
    with pytest.raises(TraceError, match=r"procedure name 'Trade\\nInsert' holds a line break"):
        validate_trace(trace)


@pytest.mark.parametrize("key, shown", [("Pay\u202eKcab", r"'Pay\\u202eKcab' \(a hot tuple is named TABLE@KEY\) holds "
                                                        r"'\\u202e' \(U\+202E RIGHT-TO-LEFT OVERRIDE\)"),
                                         ("bell\x07", r"'bell\\x07' \(a hot tuple is named TABLE@KEY\) holds '\\x07'")],
                         ids=["U+202E", "U+0007"])
def test_a_key_holding_a_control_or_invisible_character_is_refused(tmp_path, key, shown):
    trace = _trace(tmp_path)
    _set_key(trace, 7, key)
    with pytest.raises(TraceError, match=rf"accesses: column 'key', row 7 \(in part-00000.parquet\): key {shown}"):
        validate_trace(trace)


@pytest.mark.parametrize("source, target", [("TradeInsert", "DateTimeLookup"), ("SecurityLookup", "SecurityLookup")])
def test_flows_forming_a_cycle_are_refused(tmp_path, source, target):
    trace = _trace(tmp_path)
    _extra_flow(trace, source, target)
    with pytest.raises(TraceError, match=r"flows: the stream edges form a cycle \(.*\): a dataflow has none"):
        validate_trace(trace)


@pytest.mark.spark
def test_spark_refuses_them_alike(tmp_path, spark):
    from traces.spark_trace_checks import validate_with_spark

    looped = _trace(tmp_path / "a")
    _extra_flow(looped, "TradeInsert", "DateTimeLookup")
    with pytest.raises(TraceError, match=r"flows: the stream edges form a cycle"):
        validate_with_spark(str(looped), spark)
    broken = _trace(tmp_path / "b")
    rename_procedure(broken, "TradeInsert", "Trade\nInsert")
    _drop_manifest_procedures(broken)
    worded = r"txns: column 'procedure'.*: procedure name 'Trade\\nInsert' holds a line break"
    with pytest.raises(TraceError, match=worded):  # in the words on disk (one helper)
        validate_with_spark(str(broken), spark)
    with pytest.raises(TraceError, match=worded):
        validate_trace(broken)


@pytest.mark.spark
def test_both_routes_refuse_a_key_holding_a_control_or_invisible_character(tmp_path, spark):
    from traces.spark_trace_checks import validate_with_spark

    trace = _trace(tmp_path)
    for key, shown in (("Pay\u202eKcab", r"'Pay\\u202eKcab'.*U\+202E"), ("bell\x07", r"'bell\\x07'.*U\+0007")):
        _set_key(trace, 7, key)
        worded = rf"accesses: column 'key'.*: key {shown}"
        with pytest.raises(TraceError, match=worded):
            validate_with_spark(str(trace), spark)
        with pytest.raises(TraceError, match=worded):
            validate_trace(trace)
    _set_key(trace, 7, "caf\u00e9\u00a0\u4e2d")  # no-break space, accents, CJK: a key that prints as itself
    assert validate_with_spark(str(trace), spark).rows == validate_trace(trace).rows
