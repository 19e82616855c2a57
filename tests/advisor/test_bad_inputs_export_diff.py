"""Bad inputs to `advisor diff` and `advisor export` (found by fuzzing): a design whose
data-parallel lanes the workload cannot run is refused by diff as evaluate refuses it, on
either side; names holding control characters never break the exported DDL, CSV or GraphML
(the spec reader and the statistics refuse such names now; the exporters still escape them)."""
from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import networkx as nx
import pytest

from advisor.api import diff, load_workload, recommend
from advisor.cli import run_app
from advisor.data_parallel import data_parallel_variant
from advisor.export import CSV_COLUMNS, export_design, export_graphml, export_placement_csv, export_voltdb
from advisor.export_voltdb import escaped
from costmodel.design import Design
from costmodel.errors import DesignError, SpecError
from costmodel.graph import WorkloadGraph
from costmodel.workload import Access, Procedure, Stream, Table, Window, Workload

# -- diff: data-parallel lanes are checked on both sides -------------------------------------

BAD_LANES = [
    ("tpcdi-trade", "SecurityLookup", "Nope", "splits on 'Nope', which is not a table of workload"),
    ("linear-road", "AccountBalance", "Accounts", "it is an OLTP procedure"),
    ("linear-road", "SegmentStatistics", "SegmentStats", "it owns a window"),
]


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err and "tuples/s" not in captured.out
    return captured.err


@pytest.mark.parametrize("workload, sp, table, message", BAD_LANES, ids=[f"{w}:{s}" for w, s, _, _ in BAD_LANES])
def test_diff_refuses_lanes_the_workload_cannot_run_on_either_side_as_evaluate_does(
        workload, sp, table, message, tmp_path, capsys):
    good = recommend(workload, machines=2, objective="cost").design
    good_path = good.save(tmp_path / "good.json")
    bad_path = replace(good, data_parallel={sp: table}).save(tmp_path / "bad.json")
    assert run_app(["evaluate", "--design", str(bad_path)]) == 2
    refused = _one_error_line(capsys)
    assert message in refused and f"data_parallel: {sp!r}" in refused
    for current, new in ((good_path, bad_path), (bad_path, good_path)):
        assert run_app(["diff", "--current", str(current), "--design", str(new)]) == 2
        assert _one_error_line(capsys) == refused  # the same check, the same line


def test_diff_api_refuses_the_new_designs_lanes_before_any_prediction():
    good = recommend("tpcdi-trade", machines=2, objective="cost").design
    with pytest.raises(DesignError, match="splits on 'Nope'"):
        diff(good, replace(good, data_parallel={"SecurityLookup": "Nope"}), "tpcdi-trade")


def test_diff_still_compares_lanes_the_workload_can_run():
    workload = load_workload("fraud-scoring")
    lanes = data_parallel_variant(workload, recommend("fraud-scoring", machines=2, objective="cost").design)
    assert lanes is not None and lanes.data_parallel
    plain = replace(lanes, data_parallel={})  # the same fragments, no lanes
    d = diff(plain, lanes, "fraud-scoring")
    assert d.judged_by == "simulator" and d.predicted_tps["new"] > 0 and d.predicted_tps["current"] > 0


# -- export: names with control characters ---------------------------------------------------

TABLE = 'T\u0001,"x"\r;DROP'  # (a line break itself is refused: spec_reader)
KEY = "k\u0002"
WRITER = "P\u0000<&>]]>"
READER = "Q\ufffe\u2028\r\\"
WINDOW = "W\u0085\t"


@pytest.fixture(scope="module")
def weird():
    """A workload built directly, a design of it (the one `recommend` made before such names
    were refused) and its graph: what the exporters are given, past the loader's checks."""
    workload = Workload(
        name="weird\u0001", tables=(Table(TABLE, 10, 10, KEY),),
        procedures=(Procedure(WRITER, 1.0, (Access(TABLE, "write", 1.0),)), Procedure(READER, 1.0)),
        streams=(Stream(WRITER, READER, 1.0),),
        windows=(Window(WINDOW, READER, size=10, slide=5),))
    design = Design(workload.name, 2, 1, {WRITER: 1, READER: 0}, {TABLE: 1, WINDOW: 0})
    return workload, design, WorkloadGraph.from_workload(workload)


def _export(weird, fmt: str):
    workload, design, graph = weird
    if fmt == "voltdb":
        return export_voltdb(design, workload, graph)
    return export_placement_csv(design, graph) if fmt == "csv" else export_graphml(design, graph)


def test_the_loader_refuses_such_names_before_any_export(weird):
    workload, design, _ = weird
    with pytest.raises(SpecError, match=r"name 'weird\\x01' holds '\\x01' \(U\+0001\)"):
        export_design(design, workload, "csv")


def _clean(text: str) -> bool:
    """No character but printable ones (and the newlines that end lines)."""
    return all(line.isprintable() for line in text.split("\n"))


def test_escaped_names_are_printable_distinct_and_plain_names_unchanged():
    assert escaped("SecurityLookup") == "SecurityLookup" and escaped("é ü") == "é ü"
    assert escaped(TABLE) == 'T\\u0001,"x"\\u000D;DROP'
    assert escaped(READER) == "Q\\uFFFE\\u2028\\u000D\\\\"
    assert escaped("A\u0001") != escaped("A\\u0001")  # a backslash is escaped too: no collision
    assert all(escaped(n).isprintable() for n in (TABLE, KEY, WRITER, READER, WINDOW, "\ud800"))


def test_voltdb_ddl_keeps_every_name_inside_its_comment(weird):
    result = _export(weird, "voltdb")
    text = result.text
    assert _clean(text) and text.splitlines() == text.split("\n")[:-1]  # no other line breaks
    for line in text.splitlines():
        if line and not line.startswith("--"):  # SQL: identifiers, numbers and punctuation only
            assert re.fullmatch(r"[A-Za-z0-9_ (),;*=?.]*", line), line
    assert f"-- {escaped(TABLE)} (10 rows" in text and "CREATE TABLE T___x___DROP (" in text
    assert "PARTITION TABLE T___x___DROP ON COLUMN k_;" in text
    assert f"-- {escaped(WRITER)}: multi-partition" in text
    assert "-- VoltDB DDL for a design of workload weird\\u0001," in text
    # the notes are single printable lines, in the header as the command prints them
    assert result.not_expressible and all(n.isprintable() for n in result.not_expressible)
    assert all(f"--   - {n}" in text for n in result.not_expressible)
    assert f"name '{escaped(TABLE)}' written as T___x___DROP (VoltDB identifiers)" in result.not_expressible


def test_graphml_always_parses_and_names_come_back_escaped(weird, tmp_path):
    result = _export(weird, "graphml")
    path = result.write(tmp_path / "w.graphml")
    ET.parse(path)  # well-formed XML 1.0
    g = nx.read_graphml(path)
    assert set(g.nodes) == {escaped(n) for n in (TABLE, WRITER, READER, WINDOW)}
    assert g.graph["workload"] == "weird\\u0001"
    assert g.nodes[escaped(TABLE)]["table"] == escaped(TABLE)
    assert g.nodes[escaped(WINDOW)]["owner"] == escaped(READER)
    assert g.has_edge(escaped(WRITER), escaped(TABLE)) and g.has_edge(escaped(WRITER), escaped(READER))


def test_csv_rows_stay_one_per_node(weird):
    text = _export(weird, "csv").text
    assert _clean(text)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == list(CSV_COLUMNS) and all(len(r) == len(CSV_COLUMNS) for r in rows)
    assert sorted(r[1] for r in rows[1:]) == sorted(escaped(n) for n in (TABLE, WRITER, READER, WINDOW))


def test_diff_names_the_design_that_places_more_as_the_user_gave_it(tmp_path, capsys):
    # "only the first design places state item 'CardProfiles'": the user gave --current and --design
    w = load_workload("move-micro")
    table = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    split = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1#0": 0, "T1#1": 1, "T2": 1})
    assert w.name == "move-micro"
    current, new = table.save(tmp_path / "t.json"), split.save(tmp_path / "s.json")
    assert run_app(["diff", "--current", str(current), "--design", str(new), "move-micro"]) == 2
    err = capsys.readouterr().err
    assert "only the current design (--current) places state item 'T1'" in err, err
    assert run_app(["diff", "--current", str(new), "--design", str(current), "move-micro"]) == 2
    assert "only the new design (--design) places state item 'T1'" in capsys.readouterr().err
