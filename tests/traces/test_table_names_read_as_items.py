"""A traced table named as a fragment (`T#3`) or a hot tuple (`T@KEY`) is refused by
validation, on disk and through Spark alike: every later step read it as an item of table T,
so the tables `Dim#3` and `Dim@x` became one table `Dim` (rows summed) in the design and the
VoltDB DDL, with no word said."""
import json
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from advisor.sources import load_workload
from costmodel.workload import workload_as_plain
from traces.errors import TraceError
from traces.synth import synthesize
from traces.trace_checks import validate_trace


def _renamed(tmp_path, renames: dict[str, str]):
    trace = tmp_path / "t"
    synthesize(workload_as_plain(load_workload("tpcdi-trade")), trace, batches=20, seed=1)
    for f in (trace / "accesses").glob("*.parquet"):
        t = pq.read_table(f)
        column = t.column("table")
        for old, new in renames.items():
            column = pc.if_else(pc.equal(column, old), pa.scalar(new, column.type), column)
        pq.write_table(t.set_column(t.schema.get_field_index("table"), "table", column), f)
    manifest = json.loads((trace / "_trace.json").read_text())
    for old, new in renames.items():
        manifest["tables"][new] = manifest["tables"].pop(old)
    manifest.pop("access_keys", None)
    (trace / "_trace.json").write_text(json.dumps(manifest))
    return trace


@pytest.mark.parametrize("renames, named", [
    ({"DimTrade": "Dim#3", "DimAccount": "Dim@x"}, "'Dim#3'"),
    ({"DimTrade": "Trades@2026"}, "'Trades@2026'"),
    ({"DimTrade": "Trade@"}, "'Trade@'"),  # (the hot tuple of an empty key: was let through)
])
def test_a_table_named_as_an_item_is_refused_on_disk(tmp_path, renames, named):
    with pytest.raises(TraceError, match=rf"table name {named} reads as a fragment \(T#i\) or a hot tuple"):
        validate_trace(_renamed(tmp_path, renames))


def test_names_with_a_hash_inside_or_digits_without_one_are_fine(tmp_path):
    info = validate_trace(_renamed(tmp_path, {"DimTrade": "Dim#Trade", "DimAccount": "DimAccount2"}))
    assert "Dim#Trade" in info.tables and "DimAccount2" in info.tables


@pytest.mark.spark
@pytest.mark.parametrize("name", ["Dim#3", "Trade@"])
def test_a_table_named_as_an_item_is_refused_through_spark(tmp_path, spark, name):
    from traces.spark_trace_checks import validate_with_spark

    with pytest.raises(TraceError, match=rf"table name '{re.escape(name)}' reads as a fragment"):
        validate_with_spark(str(_renamed(tmp_path, {"DimTrade": name})), spark)
