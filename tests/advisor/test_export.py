"""`advisor export`: VoltDB DDL parsed back, CSV and GraphML read back, equal to the design."""
import csv
from dataclasses import replace
import io
import re
from pathlib import Path

import networkx as nx
import pytest
import sqlglot
from sqlglot import exp

from advisor.sources import load_source_for
from advisor.api import recommend
from advisor.cli import run_app
from costmodel.design import Design
from costmodel.errors import DesignError
from costmodel.errors import UserError
from advisor.export import ExportResult, export_design, export_voltdb
from advisor.export_voltdb import Identifiers
from costmodel.granularity import base_table

ROOT = Path(__file__).resolve().parents[2]
PARTITION_TABLE = re.compile(r"PARTITION TABLE (\w+) ON COLUMN (\w+)")
CREATE_PROCEDURE = re.compile(r"CREATE PROCEDURE (?:(\w+) )?(?:PARTITION ON TABLE (\w+) COLUMN (\w+) )?"
                              r"(?:AS (.+)|FROM CLASS ([\w.]+))", re.S)


@pytest.fixture(scope="module")
def trade():
    return recommend("tpcdi-trade", machines=4, objective="cost", seed=0).design


def trade_fragments(trade: Design) -> Design:
    """tpcdi-trade at fragment granularity: DimTrade hashed over 4 partitions, DimAccount in
    2 fragments and a hot tuple, DimSecurity replicated."""
    state = {n: p for n, p in trade.state.items() if n not in ("DimTrade", "DimAccount")}
    state |= {f"DimTrade#{i}": i for i in range(4)} | {"DimAccount#0": 0, "DimAccount#1": 2,
                                                        "DimAccount@5": 3, "DimSecurity": None}
    return Design("tpcdi-trade", 4, 1, dict(trade.procedures), state, method="by hand")


def fraud_lanes() -> Design:
    """fraud-scoring with ScoreCard in data-parallel lanes over CardProfiles' fragments."""
    frags = {f"{t}#{i}": i for t in ("CardProfiles", "CardStats") for i in range(4)}
    return Design("fraud-scoring", 4, 1, {"Ingest": 0, "ScoreCard": 0, "RaiseAlert": 1},
                  frags | {"Alerts": 1}, data_parallel={"ScoreCard": "CardProfiles"})


@pytest.fixture(scope="module")
def cases(trade) -> list[tuple[str, Design]]:
    """(source, design): whole tables, fragments and hot tuples, data-parallel lanes,
    windows and streams, a nested transaction, an SP that owns only a window."""
    out = [("tpcdi-trade", trade), ("tpcdi-trade", trade_fragments(trade)), ("fraud-scoring", fraud_lanes())]
    return out + [(name, recommend(name, objective="cost", seed=0, baselines=False).design)
                  for name in ("linear-road", "voter-leaderboard", "window-micro")]


def parse_ddl(text: str):
    """(tables: name -> columns, partitions: [(table, column)], procedures: name ->
    (table, column, body)), failing on any statement that is none of VoltDB's four forms."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    tables, partitions, procedures = {}, [], {}
    for stmt in (" ".join(s.split()) for s in code.split(";")):
        if not stmt:
            continue
        if stmt.startswith("CREATE TABLE"):
            create = sqlglot.parse_one(stmt)
            assert isinstance(create, exp.Create) and create.kind == "TABLE"
            cols = {c.name: c for c in create.this.expressions}
            tables[create.this.this.name] = cols
        elif m := PARTITION_TABLE.fullmatch(stmt):
            partitions.append(m.groups())
        elif m := CREATE_PROCEDURE.fullmatch(stmt):
            name, table, column, body, cls = m.groups()
            assert (name is None) == (cls is not None)  # FROM CLASS names the class, not the procedure
            procedures[name or cls.rsplit(".", 1)[1]] = (table, column, body)
        else:
            pytest.fail(f"not a VoltDB DDL statement: {stmt}")
    return tables, partitions, procedures


@pytest.mark.parametrize("case", range(6))
def test_voltdb_ddl_parses_and_partitions_exactly_the_tables_the_design_places(cases, case):
    source, design = cases[case]
    workload, _ = load_source_for(design, source)
    result = export_design(design, source, "voltdb")
    tables, partitions, procedures = parse_ddl(result.text)
    placed = {}
    for item, p in design.state.items():
        if item not in workload.window_names:
            placed[base_table(item)] = placed.get(base_table(item), False) or p is not None
    assert set(tables) == set(placed)  # every table once, no window
    for table, cols in tables.items():
        assert [c.args["kind"].sql() for c in cols.values()][0] == "BIGINT"
        assert "NOT NULL" in [x.sql() for x in next(iter(cols.values())).constraints]
    by_table = {t: [c for pt, c in partitions if pt == t] for t in tables}
    for table, is_partitioned in placed.items():
        if is_partitioned:  # exactly one PARTITION, on a real column: the spec's key
            assert len(by_table[table]) == 1 and by_table[table][0] in tables[table]
            assert by_table[table][0] == workload.table(next(
                n for n in workload.table_names if base_table(n) == table)).key
        else:
            assert by_table[table] == []
    assert set(procedures) == set(workload.procedure_names)
    for name, (table, column, body) in procedures.items():
        if table is not None:  # single-partition: on a partitioned table's partitioning column
            assert by_table[table] == [column]
        if body is not None:  # the placeholder SQL is SQL over the tables created above
            select = sqlglot.parse_one(body)
            assert isinstance(select, exp.Select)
            assert {t.name for t in select.find_all(exp.Table)} <= set(tables)
            if table is not None:
                assert [c.name for c in select.find_all(exp.Column)] == [column]
                assert select.find(exp.Placeholder) is not None
    header = result.text.split("\n\n", 1)[0]
    assert result.not_expressible and all(f"--   - {n}" in header for n in result.not_expressible)


def test_voltdb_routes_procedures_by_their_input_keys(trade):
    text = export_design(trade_fragments(trade), "tpcdi-trade", "voltdb").text
    _, partitions, procedures = parse_ddl(text)
    assert procedures["AccountLookup"][:2] == ("DimAccount", "account_id")  # input:account_id
    assert procedures["TradeInsert"][0] is None  # sequential keys: multi-partition
    assert procedures["SecurityLookup"][0] is None  # reads only replicated DimSecurity
    assert "DimSecurity" not in {t for t, _ in partitions}
    replicated = dict(trade_fragments(trade).state) | {f"DimTrade#{i}": None for i in range(4)}
    d = Design("tpcdi-trade", 4, 1, dict(trade.procedures), replicated)
    text = export_design(d, "tpcdi-trade", "voltdb").text
    assert parse_ddl(text)[2]["TradeInsert"][0] is None
    assert "TradeInsert: multi-partition, it writes replicated table DimTrade" in text
    fraud = export_design(fraud_lanes(), "fraud-scoring", "voltdb")
    _, _, procedures = parse_ddl(fraud.text)
    assert procedures["ScoreCard"][:2] == ("CardProfiles", "card_id")
    assert procedures["Ingest"] == (None, None, None)  # no table: FROM CLASS
    assert any(n.startswith("data-parallel lanes: ScoreCard") for n in fraud.not_expressible)


def test_voltdb_keeps_a_table_named_like_a_fragment_beside_its_namesake_as_a_table(tmp_path):
    """A spec with tables `T` and `T#0` (a name `advisor tune` writes): `T#0` is a table of its
    own, not a fragment of T (the export used to fold it into T and route its SP to T)."""
    from costmodel.spec_reader import read_spec
    from costmodel.spec_writer import workload_to_toml

    base = read_spec("voter-leaderboard")
    twin = replace(base.table("Contestants"), name="Contestants#0", rows=7, key="twin_key")
    reader = replace(base.procedure("Vote"), name="ReadTwin", code=None,
                     accesses=(replace(base.procedure("Vote").accesses[0], table="Contestants#0"),))
    spec = tmp_path / "twin.toml"
    spec.write_text(workload_to_toml(replace(base, tables=(*base.tables, twin), procedures=(*base.procedures, reader))))
    workload = read_spec(spec)
    design = Design(workload.name, 2, 1, {p: 0 for p in workload.procedure_names},
                    {t: i % 2 for i, t in enumerate(workload.table_names)} | {w: 0 for w in workload.window_names})
    result = export_design(design, str(spec), "voltdb")
    tables, partitions, procedures = parse_ddl(result.text)
    assert {"Contestants", "Contestants_0"} <= set(tables)
    assert ("Contestants_0", "twin_key") in partitions
    assert "-- Contestants#0 (7 rows" in result.text
    assert procedures["ReadTwin"][:2] == ("Contestants_0", "twin_key")  # its own table, not Contestants
    assert not any("fragments (Contestants#0" in n for n in result.not_expressible)
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(export_design(design, str(spec), "csv").text))}
    assert (rows["Contestants#0"]["kind"], rows["Contestants#0"]["table"]) == ("table", "Contestants#0")
    assert (rows["Contestants"]["kind"], rows["Contestants"]["table"]) == ("table", "Contestants")


def test_voltdb_lists_what_it_cannot_express(trade, cases):
    notes = export_design(trade, "tpcdi-trade", "voltdb").not_expressible
    for table, p in trade.state.items():  # whole tables on one partition each
        assert f"table {table}: the design keeps it on partition {p} (machine {p})" in " ".join(notes)
    notes = export_design(trade_fragments(trade), "tpcdi-trade", "voltdb").not_expressible
    assert any("DimTrade#0->0, DimTrade#1->1" in n for n in notes)
    assert any("hot tuples DimAccount@5" in n for n in notes)
    notes = export_design(cases[3][1], "linear-road", "voltdb").not_expressible
    assert sum(n.startswith("window ") for n in notes) == 2
    assert any(n.startswith("window SegmentSpeeds (owned by SegmentStatistics") for n in notes)
    assert sum(n.startswith("stream ") for n in notes) == 4
    notes = export_design(cases[4][1], "voter-leaderboard", "voltdb").not_expressible
    assert "nested transaction (Vote, UpdateLeaderboard, DeleteContestant): VoltDB commits each " \
           "procedure call alone" in notes


def test_identifiers_are_valid_unique_and_renames_are_said():
    ids = Identifiers()
    assert [ids("Window"), ids("my table"), ids("my-table"), ids("1x"), ids("ok")] == [
        "Window_", "my_table", "my_table_2", "x_1x", "ok"]
    assert ids("my table") == "my_table" and ("ok", "ok") not in ids.renamed
    assert len(ids.renamed) == 4


def test_identifiers_that_differ_only_in_case_are_two_names():
    """VoltDB ignores an identifier's case: `Orders` and `ORDERS` were two CREATE TABLEs of one
    table, `Select_` and `select_` (two reserved words renamed) too."""
    ids = Identifiers()
    given = [ids(n) for n in ("Orders", "ORDERS", "Select", "select", "orders_2")]
    assert given == ["Orders", "ORDERS_2", "Select_", "select__2", "orders_2_2"]
    assert len({g.upper() for g in given}) == len(given) and ("ORDERS", "ORDERS_2") in ids.renamed


def export_rows(text: str) -> dict[str, dict]:
    return {r["name"]: r for r in csv.DictReader(io.StringIO(text))}


@pytest.mark.parametrize("case", [1, 2, 3])
def test_csv_reads_back_equal_to_the_design(cases, case):
    source, design = cases[case]
    _, graph = load_source_for(design, source)
    rows = export_rows(export_design(design, source, "csv").text)
    assert len(rows) == graph.n_nodes
    for i, name in enumerate(graph.proc_names):
        r = rows[name]
        p = design.procedures[name]
        assert (r["kind"], r["partition"], r["machine"], r["replicated"]) == (
            "procedure", str(p), str(p // design.partitions_per_machine), "false")
        assert float(r["load"]) == graph.cost.proc_load[i] and r["bytes"] == ""
        assert r["data_parallel"] == design.data_parallel.get(name, "")
    for j, name in enumerate(graph.state_names):
        r, p = rows[name], design.state[name]
        kind = ("window" if graph.is_window(j) else "fragment" if "#" in name
                else "tuple" if "@" in name else "table")
        assert r["kind"] == kind and r["replicated"] == str(p is None).lower()
        assert r["partition"] == ("" if p is None else str(p))
        assert r["machine"] == ("" if p is None else str(p // design.partitions_per_machine))
        assert float(r["bytes"]) == graph.cost.state_bytes[j] and r["load"] == ""


@pytest.mark.parametrize("case", [1, 3])
def test_graphml_reads_back_equal_to_the_design(cases, case, tmp_path):
    source, design = cases[case]
    _, graph = load_source_for(design, source)
    path = export_design(design, source, "graphml").write(tmp_path / "g.graphml")
    g = nx.read_graphml(path)
    assert g.number_of_nodes() == graph.n_nodes and g.graph["workload"] == source
    ppm = design.partitions_per_machine
    for name, p in design.procedures.items():
        node = g.nodes[name]
        assert (node["kind"], node["partition"], node["machine"], node["replicated"]) == (
            "procedure", p, p // ppm, False)
    for name, p in design.state.items():
        node = g.nodes[name]
        assert node["kind"] in ("table", "fragment", "tuple", "window")
        want = (-1, -1, True) if p is None else (p, p // ppm, False)
        assert (node["partition"], node["machine"], node["replicated"]) == want
    assert g.number_of_edges() > 0


def test_api_refuses_a_bare_graph_and_a_missing_directory(trade, tmp_path):
    _, graph = load_source_for(trade, "tpcdi-trade")
    with pytest.raises(UserError, match="needs the workload"):
        export_voltdb(trade, None, graph)
    with pytest.raises(UserError, match="does not exist"):
        ExportResult("csv", "x\n").write(tmp_path / "no" / "x.csv")
    with pytest.raises(DesignError, match="does not place"):
        export_design(trade, "linear-road", "csv")


@pytest.mark.parametrize("fmt", ["voltdb", "csv", "graphml"])
def test_cli_writes_each_format(trade, fmt, tmp_path, capsys):
    design = trade.save(tmp_path / "d.json")
    out = tmp_path / f"out.{fmt}"
    spec = str(ROOT / "costmodel" / "workloads" / "tpcdi-trade.toml")  # a spec path works too
    assert run_app(["export", "--design", str(design), spec, "--format", fmt, "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    result = export_design(trade, "tpcdi-trade", fmt)
    assert out.read_text() == result.text and f"wrote {out}" in stdout
    kinds = [line.split(" ", 1)[0] for line in result.not_expressible]
    for k, line in enumerate(result.not_expressible):  # printed, the first 3 of each kind of item
        assert (f"  - {line}\n" in stdout) == (kinds[:k + 1].count(kinds[k]) <= 3)
    for kind in set(kinds):
        more = kinds.count(kind) - 3
        assert (f"  ... and {more} more '{kind} ...' notes, every one at the top of {out}\n" in stdout) == (more > 0)
    assert not list(tmp_path.glob(".*.tmp"))


def test_cli_prints_a_few_notes_of_each_kind_on_a_large_design(tmp_path, capsys):
    """A 100-SP design printed 295 lines, 164 of them one sentence table after table; and one
    note listed where each of its 100 SPs runs on one line."""
    rec = recommend("chain-32", machines=8, objective="cost", baselines=False)
    design = rec.design.save(tmp_path / "d.json")
    out = tmp_path / "out.ddl"
    assert run_app(["export", "--design", str(design), "--format", "voltdb", "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    notes = export_design(rec.design, "chain-32", "voltdb").not_expressible
    streams = [n for n in notes if n.startswith("stream ")]
    assert len(streams) > 3 and len(stdout.splitlines()) < len(notes)
    assert all(f"  - {n}\n" in stdout for n in streams[:3]) and not any(n in stdout for n in streams[3:])
    assert f"  ... and {len(streams) - 3} more 'stream ...' notes, every one at the top of {out}" in stdout
    assert max(map(len, stdout.splitlines())) < 350 + len(str(out))  # a long note clipped
    assert all(f"--   - {n}" in out.read_text() for n in notes)  # the file keeps every one


@pytest.mark.parametrize("args, problem", [
    (["tpcdi-trade", "--format", "xml"], "'xml' is not one of 'voltdb', 'csv', 'graphml'"),
    (["linear-road", "--format", "voltdb"], "does not place"),
    (["tpcdi-trade", "--format", "csv", "--out", "{tmp}/missing/x.csv"], "does not exist"),
])
def test_cli_bad_inputs_are_one_line_and_write_nothing(trade, tmp_path, capsys, args, problem):
    design = trade.save(tmp_path / "d.json")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "x.out")]
    assert run_app(["export", "--design", str(design)] + args) == 2
    err = capsys.readouterr().err
    assert problem in err and err.count("\n") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["d.json"]


@pytest.mark.parametrize("fmt", ["csv", "graphml"])
def test_a_window_the_design_leaves_out_is_exported_beside_its_owner(fmt):
    """A design may leave a window out (it lives with its owner, as `simulate` and `report`
    take it): the CSV and GraphML rows put it on its owner's partition. It was an internal
    KeyError."""
    rec = recommend("linear-road", machines=4)
    owners = rec.graph.window_owners()
    assert owners  # linear-road has windows
    design = replace(rec.design, state={n: p for n, p in rec.design.state.items() if n not in owners})
    text = export_design(design, "linear-road", fmt).text
    if fmt == "csv":
        rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
        for window, owner in owners.items():
            assert rows[window]["partition"] == rows[owner]["partition"] == str(design.procedures[owner])
    else:
        g = nx.parse_graphml(text)
        for window, owner in owners.items():
            assert g.nodes[window]["partition"] == g.nodes[owner]["partition"] == design.procedures[owner]


def test_graphml_keeps_each_streams_direction_and_each_fragments_table(tmp_path):
    # the graph was undirected (a stream SP2 -> SP1 read back as SP1 - SP2), and a fragment's
    # `table` was its own name where the CSV gives its table
    from advisor.api import recommend
    from advisor.data_parallel import data_parallel_variant
    from advisor.sources import load_workload
    from costmodel.workload import Stream

    move = load_workload("move-micro")
    [s] = move.streams
    reversed_ = replace(move, name="rev", streams=(Stream(s.target, s.source, s.tuples, s.tuple_bytes),))
    design = recommend(reversed_, machines=2, objective="cost").design
    g = nx.read_graphml(export_design(design, reversed_, "graphml").write(tmp_path / "rev.graphml"))
    assert g.is_directed()
    flows = [(a, b) for a, b, k in g.edges(data="kind") if k == "processing-processing"]
    assert flows == [(s.target, s.source)]
    assert all(g.nodes[a]["kind"] == "procedure" for a, _, k in g.edges(data="kind") if k == "processing-state")
    fraud = load_workload("fraud-scoring").with_cluster(2, 1)
    table = recommend(fraud, objective="cost").design
    lanes = data_parallel_variant(fraud, table)
    g = nx.read_graphml(export_design(lanes, "fraud-scoring", "graphml").write(tmp_path / "f.graphml"))
    csv_rows = export_design(lanes, "fraud-scoring", "csv").text.splitlines()
    assert "fragment,CardProfiles#0,CardProfiles," in "\n".join(csv_rows)
    assert g.nodes["CardProfiles#0"]["table"] == "CardProfiles" and g.nodes["CardProfiles#0"]["kind"] == "fragment"


def test_voltdb_names_a_replicated_fragment_replicated_not_none():
    from advisor.api import recommend
    from advisor.data_parallel import data_parallel_variant
    from advisor.sources import load_workload

    fraud = load_workload("fraud-scoring").with_cluster(2, 1)
    lanes = data_parallel_variant(fraud, recommend(fraud, objective="cost").design)
    state = {**lanes.state, "CardProfiles#3": None}
    design = replace(lanes, data_parallel={}, state=state)
    text = export_design(design, "fraud-scoring", "voltdb").text
    assert "CardProfiles#3->replicated" in text and "->None" not in text
