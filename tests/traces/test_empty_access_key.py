"""An empty access key is fine (the trace format says so: a trace of table-level accesses may
carry one), and at tuple granularity it is a table-level access: it hashes into the table's
fragments (crc32 of the empty text: fragment 0), as at fragment granularity and in the engine's
row routing, and is never a hot tuple. It was the hottest key of such a trace, so it became an
item `T@` that every name reader takes for a table of its own."""
from __future__ import annotations

import pytest

from engine_sim.engine.row_routing import RowRouter
from traces.writer import TraceWriter

pytestmark = [pytest.mark.spark]


def _trace(path):
    """Table `T` read at the table level (key "", many rows) and a few keyed rows; `U` keyed."""
    with TraceWriter(path, {"workload": "table-level", "tables": {"T": {"rows": 40, "row_bytes": 10}}}) as w:
        w.write("txns", {"txn_id": [1, 2, 3], "procedure": ["P", "P", "Q"], "batch_id": [0, 1, 0],
                         "base_partition": [0, 0, 0], "partitions": [[0], [0], [0]],
                         "start_us": [0, 10, 20], "end_us": [5, 15, 25],
                         "status": ["commit"] * 3, "restarts": [0] * 3})
        w.write("accesses", {"txn_id": [1, 2, 2, 3, 3], "table": ["T", "T", "T", "U", "T"],
                             "key": ["", "", "k1", "u1", "k2"], "mode": ["read", "read", "write", "read", "write"],
                             "rows": [40, 40, 1, 3, 2]})
        w.write("flows", {"batch_id": [0], "from_procedure": ["P"], "to_procedure": ["Q"],
                          "tuples": [1], "bytes": [8]})
    return path


def test_an_empty_key_lands_on_the_tables_fragments_never_a_hot_tuple(spark, tmp_path):
    from test_traces_aggregate import assert_matches, reference
    from traces.aggregate import aggregate

    trace = _trace(tmp_path / "t")
    stats = aggregate(trace, None, "tuple:2", hot_tuples=2, spark=spark, progress=None)
    assert "T@" not in set(stats.state["state"])
    assert sorted(stats.state.loc[stats.state["kind"] == "tuple", "state"]) == ["T@k2", "U@u1"]
    ps = stats.procedure_state.set_index(["procedure", "state"])
    assert ps.loc[("P", "T#0"), "read_rows"] == 80  # crc32("") mod 2 = 0, as the engine routes it
    router = RowRouter({"T": 40}, {"T#0": 0, "T#1": 1, "T@k2": 1}, 2)
    assert router.row_partition("T", "") == 0
    assert_matches(stats, reference(trace, "tuple:2", 2))  # the pandas reference reads it alike
