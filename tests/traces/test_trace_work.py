"""An SP's own work in a trace (`txns.work_us`): the engine records it, the writer and both
validators take it as an optional column, the aggregation keeps its median, and the workload
rebuilt from the statistics takes it as the SP's cost instead of guessing the overhead."""
from __future__ import annotations

import json
import math
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from advisor.sources import load_workload
from advisor.statistics_graph import graph_from_statistics
from advisor.statistics_workload import workload_from_statistics
from costmodel.graph import WorkloadGraph
from costmodel.simple_designs import round_robin_design
from engine_sim.engine import run_workload
from engine_sim.engine.run_options import ClientOptions
from traces.errors import TraceError
from traces.statistics import read_statistics_arrow
from traces.trace_checks import validate_trace
from traces.writer import TraceWriter

pytestmark = pytest.mark.integration


def txns_of(trace):
    return pq.read_table(trace / "txns").to_pandas()


@pytest.fixture(scope="module")
def tpcdi_trace(tmp_path_factory):
    """tpcdi-trade on one machine, DateTimeLookup and SecurityLookup in one nested group,
    with injected aborts."""
    root = tmp_path_factory.mktemp("work")
    w = load_workload("tpcdi-trade")
    w = replace(w, nested=(("DateTimeLookup", "SecurityLookup"),))
    run_workload(w, round_robin_design(w, 1, 1), batches=80, in_process=True, trace_out=root / "trace",
                 client=ClientOptions(abort_rate=0.1))
    return root, w


def test_the_engine_records_each_declared_sps_own_work(tpcdi_trace):
    root, w = tpcdi_trace
    txns = txns_of(root / "trace")
    commits = txns[txns["status"] == "commit"]
    assert commits["work_us"].notna().all()
    assert txns.loc[txns["status"] == "abort", "work_us"].isna().all()  # not told, not zero
    unit = w.input.cost_unit_us
    for p in w.procedures:  # each member of the nested group its own, not the group's
        work = commits.loc[commits["procedure"] == p.name, "work_us"]
        assert work.median() == pytest.approx(p.cost * unit, rel=0.05), p.name
        durations = commits.loc[commits["procedure"] == p.name].eval("end_us - start_us")
        assert (durations >= work - 1).all()  # a part of the execution, never more


def test_the_engines_manifest_says_what_a_trace_cannot_show(tmp_path):
    # which SPs clients invoke and by which input field an SP splits (the rebuilt workload
    # dropped both)
    w = load_workload("linear-road")
    run_workload(w, round_robin_design(w, 1, 1), batches=3, in_process=True, trace_out=tmp_path / "t")
    manifest = json.loads((tmp_path / "t" / "_trace.json").read_text())
    assert manifest["oltp"] == [p.name for p in w.procedures if p.oltp] != []
    assert manifest["partition_keys"] == {p.name: p.partition_key for p in w.procedures if p.partition_key} != {}


def test_bundled_code_is_not_timed(tmp_path):
    w = load_workload("voter-leaderboard")
    run_workload(w, round_robin_design(w, 1, 1), batches=5, in_process=True, trace_out=tmp_path / "t")
    assert txns_of(tmp_path / "t")["work_us"].isna().all()


def _txns(n: int, work=None, first: int = 0) -> dict:
    out = {"txn_id": list(range(first, first + n)), "procedure": ["A"] * n,
           "batch_id": list(range(first, first + n)),
           "base_partition": [0] * n, "partitions": [[0]] * n, "start_us": [0] * n,
           "end_us": [10] * n, "status": ["commit"] * n, "restarts": [0] * n}
    if work is not None:
        out["work_us"] = work
    return out


def _write(out, *writes):
    with TraceWriter(out, {"procedures": ["A"]}) as tw:
        for data in writes:
            tw.write("txns", data)
    return out


def test_the_writer_keeps_the_optional_column_and_fills_a_later_write_without_it(tmp_path):
    _write(tmp_path / "t", _txns(2, [3.0, None]), _txns(2, first=2))
    txns = txns_of(tmp_path / "t")
    assert txns["work_us"].tolist()[0] == 3.0 and txns["work_us"].isna().sum() == 3
    validate_trace(tmp_path / "t")
    with pytest.raises(TraceError, match="txns: column 'work_us' first appears after the dataset's first write"):
        _write(tmp_path / "late", _txns(2), _txns(2, [1.0, 2.0], first=2))  # its values would be lost
    assert not (tmp_path / "late").exists()
    _write(tmp_path / "plain", _txns(2))  # a trace without it is as valid
    assert "work_us" not in pq.read_schema(next((tmp_path / "plain" / "txns").glob("*.parquet"))).names
    validate_trace(tmp_path / "plain")


@pytest.mark.parametrize("bad, shown", [(-1.0, "-1.0"), (math.nan, "nan"), (math.inf, "inf")])
def test_a_bad_work_us_is_one_line(tmp_path, bad, shown):
    _write(tmp_path / "t", _txns(3, [1.0, 2.0, bad]))
    with pytest.raises(TraceError, match=rf"txns: .*work_us.*row 2.*finite number >= 0, got {shown}"):
        validate_trace(tmp_path / "t")


@pytest.mark.parametrize("column", [pa.array(["x"]), pa.array([5], pa.int64())], ids=["string", "int64"])
def test_a_work_us_of_another_type_is_refused(tmp_path, column):
    """An int64 column passed the validation and failed in the Spark job, which reads a double."""
    _write(tmp_path / "t", _txns(1))
    file = next((tmp_path / "t" / "txns").glob("*.parquet"))
    table = pq.read_table(file)
    pq.write_table(table.append_column("work_us", column), file)
    with pytest.raises(TraceError, match=f"column 'work_us' has type {column.type}, expected a number of type double"):
        validate_trace(tmp_path / "t")


@pytest.mark.spark
def test_statistics_keep_the_median_work_and_the_workload_takes_it(tpcdi_trace, spark, tmp_path):
    from traces.aggregate import aggregate

    root, w = tpcdi_trace
    aggregate(root / "trace", tmp_path / "stats", "table", spark=spark, progress=None)
    procs = read_statistics_arrow(tmp_path / "stats")[0]["procedures"].to_pandas().set_index("procedure")
    txns = txns_of(root / "trace")
    commits = txns[txns["status"] == "commit"]
    for p in w.procedures:
        assert procs.loc[p.name, "p50_work_us"] == pytest.approx(
            commits.loc[commits["procedure"] == p.name, "work_us"].median())
    rebuilt = workload_from_statistics(tmp_path / "stats")
    for p in w.procedures:  # the declared cost back, retries and aborts included per batch
        calls = procs.loc[p.name, "invocations"] / 80
        assert rebuilt.procedure(p.name).cost == pytest.approx(p.cost * calls, rel=0.05), p.name
    assert not any("less" in a and "per transaction" in a for a in rebuilt.assumed)
    graph = graph_from_statistics(tmp_path / "stats")  # loads in the spec's proportions
    spec_graph = WorkloadGraph.from_workload(w)
    ratio = graph.cost.proc_load / spec_graph.cost.proc_load
    assert ratio == pytest.approx([ratio[0]] * len(ratio), rel=0.1)

    # zero for every SP says nothing was timed: read as not told
    table = pq.read_table(tmp_path / "stats" / "procedures.parquet")
    zeros = table.set_column(table.schema.get_field_index("p50_work_us"), "p50_work_us",
                             pa.array([0.0] * table.num_rows))
    (tmp_path / "zeros").mkdir()
    for f in (tmp_path / "stats").iterdir():
        (tmp_path / "zeros" / f.name).write_bytes(f.read_bytes())
    pq.write_table(zeros, tmp_path / "zeros" / "procedures.parquet")
    read = read_statistics_arrow(tmp_path / "zeros")[0]["procedures"]
    assert read.column("p50_work_us").null_count == read.num_rows
    assert any("per row read" in a for a in workload_from_statistics(tmp_path / "zeros").assumed)

    # the same statistics without the column (written before it existed): the old estimate
    for f in ("procedures.parquet",):
        table = pq.read_table(tmp_path / "stats" / f)
        pq.write_table(table.drop(["p50_work_us"]), tmp_path / "stats" / f)
    manifest = json.loads((tmp_path / "stats" / "_stats.json").read_text())
    old = workload_from_statistics(tmp_path / "stats")
    assert manifest["batches"] == 80
    assert any("per row read" in a for a in old.assumed)
    dt = old.procedure("DateTimeLookup").cost
    assert dt != pytest.approx(rebuilt.procedure("DateTimeLookup").cost, rel=0.05)
    durations = graph_from_statistics(tmp_path / "stats").cost.proc_load  # execution times again
    assert durations.min() > graph.cost.proc_load.min()


@pytest.mark.spark
@pytest.mark.slow  # the Arrow validator's test above runs by default; this is its Spark twin
def test_spark_validation_refuses_a_negative_work_us(tmp_path, spark):
    from traces.spark_trace_checks import validate_with_spark

    _write(tmp_path / "t", _txns(3, [1.0, -2.0, 1.0]))
    with pytest.raises(TraceError, match="work_us.*finite number >= 0"):
        validate_with_spark(str(tmp_path / "t"), spark)
    _write(tmp_path / "ok", _txns(3))
    assert validate_with_spark(str(tmp_path / "ok"), spark).rows["txns"] == 3


@pytest.mark.parametrize("element, shown", [(-1, "-1"), (None, "None")])
def test_a_partition_list_with_a_negative_or_missing_element_is_one_line(tmp_path, element, shown):
    """A trace's `partitions` lists took a -1 or a null (nothing reads them yet; a trace that
    says so is still not one the format allows)."""
    txns = _txns(3)
    txns["partitions"] = [[0], [0, 1], [2, element]]
    _write(tmp_path / "t", txns)
    with pytest.raises(TraceError, match=rf"txns: column 'partitions', row 2 .*a partition must be an integer >= 0, "
                                         rf"got {shown}"):
        validate_trace(tmp_path / "t")
