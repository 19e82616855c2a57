"""A flow belongs to a batch some transaction ran in: a trace whose flows name batches no
transaction of it ran (beyond the 1 % a trace cut from a running system may catch) is
refused by validation, on disk and through Spark alike; it was accepted, and their tuples
counted in the streams' tuples per batch."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from advisor.sources import load_workload
from costmodel.workload import workload_as_plain
from traces.errors import TraceError
from traces.synth import synthesize
from traces.trace_checks import validate_trace


def _trace_with_stray_flows(tmp_path, name: str, stray: int):
    trace = tmp_path / name
    synthesize(workload_as_plain(load_workload("tpcdi-trade")), trace, batches=100, seed=1)
    flows = pq.read_table(next((trace / "flows").glob("*.parquet")))
    extra = flows.slice(0, stray).set_column(
        flows.schema.get_field_index("batch_id"), "batch_id", pa.array([10**6 + i for i in range(stray)],
                                                                        type=flows.schema.field("batch_id").type))
    pq.write_table(extra, trace / "flows" / "stray.parquet")
    return trace, flows.num_rows


@pytest.mark.spark
def test_flows_of_batches_no_transaction_ran_are_refused(tmp_path, spark):
    from traces.spark_trace_checks import validate_with_spark

    trace, rows = _trace_with_stray_flows(tmp_path, "many", 20)
    assert rows + 20 > 100  # more than 1 %: refused
    for check in (lambda: validate_trace(trace), lambda: validate_with_spark(str(trace), spark)):
        with pytest.raises(TraceError, match=r"flows: column 'batch_id', .*batch 1000000 has no transaction in "
                                             r"txns, and 20 of [\d,]+ flow rows have none"):
            check()
    few, rows = _trace_with_stray_flows(tmp_path, "few", 1)
    assert 1 <= 0.01 * (rows + 1)  # a cut trace's few: accepted
    assert validate_trace(few).rows["flows"] == rows + 1
    assert validate_with_spark(str(few), spark).rows["flows"] == rows + 1
