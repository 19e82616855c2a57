"""A hot tuple's key keeps its '#': the fragment marker `#i` follows a table's name, never a key
after '@'. A trace keyed `order#12` made a hot tuple `Trade@order#12`, which every reader cut at
its last '#' into fragment 12 of a table `Trade@order`: the graph called it a fragment of another
table, another trace's hot set was refused as "another granularity", and the VoltDB notes listed
it among the fragments."""
from __future__ import annotations

import pytest

from advisor.export_voltdb import TableLayout, placement_notes
from costmodel.granularity import base_table, fragment_of, table_among, tables_among, with_hot_set

HOT = "Trade@order#12"
NAMES = ["Trade#0", "Trade#1", "Users#0", "Users#1", HOT, "Trade@5"]


def test_a_hot_tuple_whose_key_ends_in_hash_digits_is_a_tuple_of_its_table():
    assert tables_among(NAMES) == {**{n: n.split("#")[0] for n in NAMES[:4]}, HOT: "Trade", "Trade@5": "Trade"}
    assert table_among(HOT, set(NAMES)) == "Trade"
    assert base_table(HOT, {"Trade", "Users"}) == base_table(HOT) == "Trade"


def test_another_hot_set_carries_a_hashed_key_to_its_fragment():
    state = {n: i % 2 for i, n in enumerate(NAMES)}
    now = [n for n in NAMES if n != HOT] + ["Trade@order#13"]
    carried = with_hot_set(state, now)
    assert carried is not None  # (was None: its hot tuples read as fragments of `Trade@order`)
    assert carried["Trade@order#13"] == state[f"Trade#{fragment_of('order#13', 2)}"]


def test_the_voltdb_notes_list_it_as_a_hot_tuple():
    layout = TableLayout("Trade", "id", 100, 50, {"Trade#0": 0, "Trade#1": 1, HOT: 1})
    notes = placement_notes(layout, 2)
    assert any("fragments (Trade#0->0, Trade#1->1)" in n for n in notes)
    assert any(f"hot tuples {HOT} have partitions" in n for n in notes)


@pytest.mark.spark
def test_its_trace_aggregates_into_a_hot_tuple_of_the_table(spark, tmp_path):
    from advisor.statistics_graph import graph_from_statistics
    from traces.aggregate import aggregate
    from traces.writer import TraceWriter

    with TraceWriter(tmp_path / "t", {"workload": "hashed-keys"}) as w:
        w.write("txns", {"txn_id": [1, 2], "procedure": ["P", "P"], "batch_id": [0, 1],
                         "base_partition": [0, 0], "partitions": [[0], [0]], "start_us": [0, 10],
                         "end_us": [5, 15], "status": ["commit", "commit"], "restarts": [0, 0]})
        w.write("accesses", {"txn_id": [1, 2, 2], "table": ["Trade", "Trade", "Users"],
                             "key": ["order#12", "order#12", "u1"], "mode": ["read", "write", "read"],
                             "rows": [9, 9, 1]})
        w.write("flows", {"batch_id": [], "from_procedure": [], "to_procedure": [], "tuples": [], "bytes": []})
    aggregate(tmp_path / "t", tmp_path / "s", "tuple:2", hot_tuples=1, spark=spark, progress=None)
    graph = graph_from_statistics(tmp_path / "s")
    j = graph.state_index(HOT)
    assert (graph.table_of(j), graph.state_kind(j)) == ("Trade", "tuple")


# hot keys `order#0` and `order#12` of `Trade`: `Trade@order#0` beside `Trade@order#12` read as
# fragment 0 of a split table `Trade@order` (its `T#0` among the names), and so did its key-mate
BESIDE = [*NAMES, "Trade@order#0"]


def test_a_hot_tuple_keyed_hash_zero_makes_no_split_table_of_its_key_mates():
    tables = tables_among(BESIDE)
    assert {n for n in BESIDE if tables[n] != n.split("#")[0]} == {HOT, "Trade@order#0", "Trade@5"}
    assert tables[HOT] == tables["Trade@order#0"] == tables["Trade@5"] == "Trade"
    assert table_among("Trade@order#0", set(BESIDE)) == "Trade"


def test_another_hot_set_beside_a_hot_tuple_keyed_hash_zero_is_carried_over():
    state = {n: i % 2 for i, n in enumerate(BESIDE)}
    carried = with_hot_set(state, [n for n in BESIDE if n != HOT] + ["Trade@order#13"])
    assert carried is not None  # (was None: `Trade@order` read as a split table of one fragment)
    assert carried["Trade@order#13"] == state[f"Trade#{fragment_of('order#13', 2)}"]


def test_the_graph_and_the_voltdb_layout_read_it_as_a_hot_tuple_of_its_table():
    from advisor.export_voltdb import table_layouts
    from costmodel.design import Design
    from costmodel.graph import WorkloadGraph
    from costmodel.workload import Access, Procedure, Table, Workload

    workload = Workload("hashed-keys", tuple(Table(n, 1 if "@" in n else 100, 50, "id") for n in BESIDE),
                        (Procedure("P", 1.0, tuple(Access(n, "read", 1.0) for n in BESIDE)),))
    graph = WorkloadGraph.from_workload(workload)
    j = graph.state_index("Trade@order#0")
    assert (graph.table_of(j), graph.state_kind(j)) == ("Trade", "tuple")
    design = Design("hashed-keys", 1, 2, {"P": 0}, {n: i % 2 for i, n in enumerate(BESIDE)})
    assert set(table_layouts(design, workload)) == {"Trade", "Users"}


def test_a_spec_table_named_like_a_hot_tuple_split_as_its_neighbour_is_still_a_table():
    # (the other reading: `Trade@Type` a table of the spec, in as many fragments as `Trade`)
    names = ["Trade#0", "Trade#1", "Trade@Type#0", "Trade@Type#1", "Trade@Type@7", "Trade@x#0"]
    assert tables_among(names) == {"Trade#0": "Trade", "Trade#1": "Trade", "Trade@Type#0": "Trade@Type",
                                   "Trade@Type#1": "Trade@Type", "Trade@Type@7": "Trade@Type",
                                   "Trade@x#0": "Trade"}
