"""From statistics to a graph to a design: a trace synthesized from the TPC-DI spec and
aggregated at table granularity recommends the same design as the spec itself."""
from __future__ import annotations

import numpy as np
import pytest

from advisor.cli import run_app
from costmodel.workload import workload_as_plain
from costmodel.errors import UserError
from costmodel.graph import WorkloadGraph
from advisor.statistics_graph import graph_from_statistics
from traces.aggregate import aggregate
from traces.synth import synthesize

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.fixture(scope="module")
def tpcdi(tpcdi_trade, tmp_path_factory, spark):
    root = tmp_path_factory.mktemp("tpcdi")
    synthesize(workload_as_plain(tpcdi_trade), root / "trace", batches=400,
               seed=3)
    aggregate(root / "trace", root / "table", "table", spark=spark, progress=None)
    aggregate(root / "trace", root / "frag", "fragment:4", spark=spark, progress=None)
    return root


def normalized(x: np.ndarray) -> np.ndarray:
    return x / x.sum()


def test_table_graph_has_the_spec_graph_shape_and_relative_weights(tpcdi_trade, tpcdi):
    spec = WorkloadGraph.from_workload(tpcdi_trade)
    got = graph_from_statistics(tpcdi / "table")
    assert got.proc_names == spec.proc_names and got.state_names == spec.state_names
    assert (got.state_read_mostly == spec.state_read_mostly).all()
    s, g = spec.cost, got.cost
    assert (g.machines, g.partitions_per_machine) == (s.machines, s.partitions_per_machine)
    assert g.memory_limit_bytes == s.memory_limit_bytes
    np.testing.assert_allclose(g.state_bytes, s.state_bytes)
    np.testing.assert_allclose(normalized(g.proc_load), normalized(s.proc_load), rtol=0.03)
    spec_edges = {(p, t, w): x for p, t, w, x in zip(s.ps_proc, s.ps_state, s.ps_write, s.ps_weight)}
    got_edges = {(p, t, w): x for p, t, w, x in zip(g.ps_proc, g.ps_state, g.ps_write, g.ps_weight)}
    assert spec_edges.keys() == got_edges.keys()
    for edge, weight in spec_edges.items():
        assert got_edges[edge] == pytest.approx(weight, rel=0.05)  # rows per batch
    assert sorted(zip(g.pp_src, g.pp_dst)) == sorted(zip(s.pp_src, s.pp_dst))
    np.testing.assert_allclose(g.pp_weight, s.pp_weight)  # exactly 10 tuples per batch


def canonical(design, names) -> tuple:
    """The design up to renaming identical machines: which items share a partition, which
    are replicated."""
    placement = {**design.procedures, **design.state}
    groups: dict = {}
    for n in names:
        groups.setdefault(placement[n], []).append(n)
    return frozenset(frozenset(v) for k, v in groups.items() if k is not None), frozenset(
        groups.get(None, []))


@pytest.mark.parametrize("replicate", [False, True])
def test_statistics_recommend_the_same_design_as_the_spec(tpcdi, replicate):
    api = pytest.importorskip("advisor.api")
    from_spec = api.recommend("tpcdi-trade", replicate=replicate, objective="cost")
    from_stats = api.recommend(str(tpcdi / "table"), replicate=replicate, objective="cost")
    names = from_spec.graph.proc_names + from_spec.graph.state_names
    assert canonical(from_stats.design, names) == canonical(from_spec.design, names)
    # the weights are priced per graph (statistics measure load in microseconds, specs in cost
    # units), so the costs are compared under the spec's weights
    stats_on_spec = from_stats.design.score(from_spec.graph, from_spec.design.weights)
    assert stats_on_spec.total == pytest.approx(from_spec.design.cost.total, abs=0.01)


def test_fragment_graph_and_recommend_cli(tpcdi_trade, tpcdi, capsys):
    g = graph_from_statistics(tpcdi / "frag", machines=2, partitions_per_machine=2)
    assert g.n_state == 7 * 4 and g.cost.n_partitions == 4
    assert g.state_names[:4] == ["DimDate#0", "DimDate#1", "DimDate#2", "DimDate#3"]
    assert set(g.state_tables) == set(tpcdi_trade.table_names)
    # every access edge lands on a fragment of the table the spec says
    spec = tpcdi_trade
    touched = {(g.proc_names[p], g.state_tables[s]) for p, s in zip(g.cost.ps_proc, g.cost.ps_state)}
    assert touched == {(p.name, a.table) for p in spec.procedures for a in p.accesses}
    assert run_app(["recommend", str(tpcdi / "frag"), "--machines", "2"]) == 0
    assert "DimTrade#" in capsys.readouterr().out


def test_bad_statistics_directory_is_one_line(tmp_path, capsys):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "_stats.json").write_text('{"format": "advisor.stats/1", "batches": 3}')
    with pytest.raises(UserError, match="procedures.parquet is missing"):
        graph_from_statistics(tmp_path / "s")
    assert run_app(["recommend", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err


def test_a_statistics_table_that_is_no_regular_file_is_named_so(tpcdi, tmp_path, capsys):
    # a link to /dev/zero and a pipe were "state.parquet is missing"; a folder, an empty
    # dataset: "column 'state' is missing"
    import os
    import shutil

    for kind in ("device", "pipe", "folder"):
        stats = tmp_path / kind
        shutil.copytree(tpcdi / "table", stats)
        (stats / "state.parquet").unlink()
        if kind == "device":
            (stats / "state.parquet").symlink_to("/dev/zero")
        elif kind == "pipe":
            os.mkfifo(stats / "state.parquet")
        else:
            (stats / "state.parquet").mkdir()
        assert run_app(["recommend", str(stats), "--machines", "2", "--objective", "cost"]) == 2
        assert capsys.readouterr().err == (f"error: {stats}: state.parquet is not a regular file (a folder, "
                                           "device or pipe): statistics are the files `advisor trace "
                                           "aggregate` writes\n")


def test_check_of_a_table_design_against_fragment_statistics_says_another_granularity(tpcdi, tmp_path, capsys):
    # statistics at fragment granularity name their items T#i; a table-level design checked
    # against them is another granularity (exit 2), not drift, while a spec's own T#0 tables
    # (what `advisor tune` writes) are drift (tests/reports/test_drift.py)
    design = tmp_path / "table.json"
    assert run_app(["recommend", str(tpcdi / "table"), "--machines", "2", "--objective", "cost",
                    "--out", str(design)]) == 0
    capsys.readouterr()
    assert run_app(["check", "--design", str(design), str(tpcdi / "frag")]) == 2
    assert "place state at different granularities" in capsys.readouterr().err


def test_recommend_current_of_another_granularity_says_so_as_check_does(tpcdi, tmp_path, capsys):
    # recommend --current said "does not fit the workload as it is now: design does not place
    # 'DimDate#0' ... (`advisor check` says what changed)", as if the workload had changed,
    # where check says what is wrong: the statistics are of another granularity
    table, frag = tmp_path / "table.json", tmp_path / "frag.json"
    for source, design in (("table", table), ("frag", frag)):
        assert run_app(["recommend", str(tpcdi / source), "--machines", "2", "--objective", "cost",
                        "--out", str(design)]) == 0
    capsys.readouterr()
    for deployed, now in ((table, "frag"), (frag, "table")):
        assert run_app(["check", "--design", str(deployed), str(tpcdi / now)]) == 2
        assert "place state at different granularities" in capsys.readouterr().err
        assert run_app(["recommend", str(tpcdi / now), "--current", str(deployed), "--objective", "cost"]) == 2
        err = capsys.readouterr().err
        assert err.count("error:") == 1 and "Traceback" not in err and "advisor check" not in err, err
        assert ("error: the deployed design (--current) and the workload place state at different "
                "granularities (tables, fragments, tuples)") in err
    # diff said "design does not place 'DimDate#0'"; the design of the pair at the other
    # granularity is named (a fragment design on table statistics is seen at its own, as
    # evaluate sees it: the statistics' tables split, so a pair of them is diffed)
    for current, new, now, which in ((table, table, "frag", "--current"), (frag, table, "frag", "--design"),
                                     (table, frag, "table", "--design")):
        assert run_app(["diff", "--current", str(current), "--design", str(new), str(tpcdi / now)]) == 2
        err = capsys.readouterr().err
        assert err.count("error:") == 1 and "Traceback" not in err, err
        assert f"design ({which}) and the workload place state at different granularities" in err, err
    for now in ("frag", "table"):
        assert run_app(["diff", "--current", str(frag), "--design", str(frag), str(tpcdi / now)]) == 0


@pytest.mark.parametrize("command", [
    ["evaluate"], ["simulate", "--batches", "20"], ["validate", "--sim", "--batches", "20"],
    ["run", "--batches", "5", "--in-process"], ["export", "--format", "csv", "--out", "{tmp}/x.csv"],
    ["report", "--out", "{tmp}/r.html"]], ids=lambda c: c[0])
def test_every_command_on_a_design_says_another_granularity_as_check_does(tpcdi, tmp_path, capsys, command):
    # these six said "design does not place 'DimDate#0' ... (and 27 more)", as if the workload
    # had changed; a fragment design on table statistics is seen at its own, as before
    table, frag = tmp_path / "table.json", tmp_path / "frag.json"
    for source, design in (("table", table), ("frag", frag)):
        assert run_app(["recommend", str(tpcdi / source), "--machines", "2", "--objective", "cost",
                        "--out", str(design)]) == 0
    capsys.readouterr()
    words = [w.replace("{tmp}", str(tmp_path)) for w in command]
    assert run_app([words[0], "--design", str(table), str(tpcdi / "frag"), *words[1:]]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == ("error: the design and the workload place state at different granularities "
                                    "(tables, fragments, tuples): give statistics of the design's own granularity"), err
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "r.html").exists()
    assert run_app([words[0], "--design", str(frag), str(tpcdi / "table"), *words[1:]]) == 0
