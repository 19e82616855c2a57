"""`--trace-out` streams the run's history to Parquet in row groups of bounded size
(trace_writer.py): on a short run with windows, OLTP requests and aborts, the trace written in
small row groups holds the same rows, in the same order, with the same schema and manifest as
the trace written whole (the old way), and `advisor trace validate` and the Spark aggregation
take it unchanged."""
import json

import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from costmodel.simple_designs import round_robin_design
from engine_sim.engine import run_workload, trace_writer
from engine_sim.engine.run_options import ClientOptions
from traces.schema import DATASETS
from traces.trace_checks import validate_trace

pytestmark = pytest.mark.integration

SMALL = 7  # rows a row group: a 40-batch run gives dozens of row groups a dataset


@pytest.fixture(scope="module")
def traces(tmp_path_factory, workloads):
    """One linear-road run; its history written three ways: by the run (the default row
    groups), streamed in row groups of SMALL rows, and whole in one row group."""
    folder = tmp_path_factory.mktemp("traces")
    written = {}
    original = trace_writer.write_trace

    def write_three_ways(out, plan, records, metadata, **kwargs):
        records = list(records)  # the spool, read once here so the three see the same history
        written["small"] = original(folder / "small", plan, iter(records), metadata, row_group_rows=SMALL)
        written["whole"] = original(folder / "whole", plan, iter(records), metadata, row_group_rows=None)
        written["records"], written["plan"] = records, plan
        return original(out, plan, iter(records), metadata, **kwargs)

    w = workloads("linear-road")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trace_writer, "write_trace", write_three_ways)
        r = run_workload(w, round_robin_design(w), batches=40, in_process=True,
                         trace_out=folder / "run", client=ClientOptions(abort_rate=0.1))
    assert r.history_check == "ok" and r.aborts > 0
    return folder, written


def test_the_streamed_trace_holds_the_rows_of_the_trace_written_whole(traces):
    folder, _written = traces
    for name, schema in DATASETS.items():
        whole = pq.ParquetFile(folder / "whole" / name / "part-00000.parquet")
        small = pq.ParquetFile(folder / "small" / name / "part-00000.parquet")
        default = pq.ParquetFile(folder / "run" / name / "part-00000.parquet")
        assert whole.metadata.num_row_groups == 1
        assert small.metadata.num_row_groups == -(-whole.metadata.num_rows // SMALL) > 3
        assert max(small.metadata.row_group(i).num_rows for i in range(small.metadata.num_row_groups)) <= SMALL
        expected = whole.read()
        assert expected.num_rows > SMALL
        for got in (small.read(), default.read()):
            assert got.schema.equals(expected.schema)
            assert got.to_pylist() == expected.to_pylist()  # row for row, in order
        assert set(schema.names) <= set(expected.schema.names)
    manifests = [json.loads((folder / k / "_trace.json").read_text()) for k in ("whole", "small", "run")]
    assert manifests[0] == manifests[1] == manifests[2]
    assert manifests[0]["rows"]["txns"] == pq.ParquetFile(folder / "whole" / "txns" / "part-00000.parquet").metadata.num_rows


def test_advisor_trace_validate_takes_the_streamed_trace(traces, capsys):
    folder, _written = traces
    assert run_app(["trace", "validate", str(folder / "small")]) == 0
    info = validate_trace(folder / "small")
    assert info.key_type == "string"
    assert "windows" in json.loads((folder / "small" / "_trace.json").read_text())


def test_a_history_that_breaks_off_leaves_no_trace(traces, tmp_path):
    """A history that cannot be read to the end (a spool on a failing disk) leaves nothing,
    though row groups were already written."""
    _folder, written = traces

    def history():
        yield from written["records"][:50]
        raise OSError(5, "Input/output error", "history.0.bin")

    with pytest.raises(OSError):
        trace_writer.write_trace(tmp_path / "t", written["plan"], history(), {}, row_group_rows=SMALL)
    assert list(tmp_path.iterdir()) == []


def _rows(path) -> list[str]:
    """A statistics table's rows, order-free, floats to 9 significant digits."""
    def norm(v):
        return float(f"{v:.9g}") if isinstance(v, float) else v

    return sorted(json.dumps({k: norm(v) for k, v in row.items()}, sort_keys=True, default=str)
                  for row in pq.read_table(path).to_pylist())


@pytest.mark.spark
def test_the_aggregation_of_the_streamed_trace_equals_the_whole_ones(traces, spark, tmp_path):
    from traces.aggregate import aggregate

    folder, _written = traces
    stats = {}
    for k in ("whole", "small"):
        aggregate(folder / k, tmp_path / k, "table", spark=spark, progress=None)
        stats[k] = {p.relative_to(tmp_path / k): _rows(p) for p in sorted((tmp_path / k).rglob("*.parquet"))}
    assert stats["small"].keys() == stats["whole"].keys() and stats["small"]
    assert stats["small"] == stats["whole"]
