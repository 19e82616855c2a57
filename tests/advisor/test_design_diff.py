"""`advisor diff`: what moves from one design to another, with its bytes from the graph."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from advisor.api import diff, recommend
from advisor.cli import run_app
from costmodel.errors import DesignError
from advisor.migration import align, copy_seconds, moves_between
from engine_sim.sim import Calibration

PARAMS = Calibration.reference().params


@pytest.fixture(scope="module")
def tpcdi():
    rec = recommend("tpcdi-trade", machines=4, objective="cost", seed=0)
    return rec.design, rec.graph, rec.workload


def _swap_machines(design, a: int, b: int):
    ppm = design.partitions_per_machine

    def moved(p):
        if p is None:
            return None
        m = {a: b, b: a}.get(p // ppm, p // ppm)
        return m * ppm + p % ppm
    return replace(design, procedures={n: moved(p) for n, p in design.procedures.items()},
                   state={n: moved(p) for n, p in design.state.items()})


def test_a_design_with_its_machines_renamed_moves_nothing_once_aligned(tpcdi):
    design, graph, _ = tpcdi
    used = sorted({p for p in design.state.values() if p is not None})
    renamed = _swap_machines(design, used[0], used[1])
    assert moves_between(design, renamed, graph)  # as written, machines differ
    aligned = align(design, renamed, graph)
    assert aligned.procedures == design.procedures and aligned.state == design.state
    assert moves_between(design, aligned, graph) == []


def test_moved_bytes_are_the_graph_sizes_and_a_new_replica_copies_to_every_machine(tpcdi):
    design, graph, workload = tpcdi
    table = max(workload.tables, key=lambda t: t.bytes)
    here = design.state[table.name]
    elsewhere = (here + 1) % design.n_partitions
    moved = replace(design, state={**design.state, table.name: elsewhere})
    (move,) = moves_between(design, moved, graph)
    assert (move.kind, move.name, move.from_partition, move.to_partition) == ("table", table.name, here, elsewhere)
    assert move.bytes == table.rows * table.row_bytes
    replicated = replace(design, state={**design.state, table.name: None})
    (copy,) = moves_between(design, replicated, graph)
    assert copy.bytes == table.bytes * (design.machines - 1) and copy.to_partition is None
    # dropping the replicas again copies nothing
    (back,) = moves_between(replicated, design, graph)
    assert back.bytes == 0
    # the copy takes longer the more bytes move, and an SP alone copies nothing
    small = min((t for t in workload.tables if design.state[t.name] is not None), key=lambda t: t.bytes)
    light = replace(design, state={**design.state, small.name: (design.state[small.name] + 1) % 4})
    assert copy_seconds(moves_between(design, moved, graph), design, PARAMS) > \
        copy_seconds(moves_between(design, light, graph), design, PARAMS) > 0
    sp = next(iter(design.procedures))
    only_sp = replace(design, procedures={**design.procedures, sp: (design.procedures[sp] + 1) % 4})
    assert copy_seconds(moves_between(design, only_sp, graph), design, PARAMS) == 0


def test_diff_predicts_both_designs_with_the_simulator(tpcdi):
    design, _, _ = tpcdi
    slow = recommend("tpcdi-trade", machines=4, objective="cost").baselines["round-robin"]
    d = diff(slow, design, "tpcdi-trade")
    assert d.judged_by == "simulator"
    assert d.predicted_tps["new"] > d.predicted_tps["current"] > 0
    assert d.bytes_moved == pytest.approx(sum(m.bytes for m in d.state_moves)) and d.bytes_moved > 0


def test_cli_diff_human_and_json(tpcdi, tmp_path, capsys):
    design, graph, workload = tpcdi
    table = max(workload.tables, key=lambda t: t.bytes)
    moved = replace(design, state={**design.state, table.name: (design.state[table.name] + 1) % 4})
    a, b = design.save(tmp_path / "a.json"), moved.save(tmp_path / "b.json")
    assert run_app(["diff", "--current", str(a), "--design", str(b), "tpcdi-trade", "--json", "--no-relabel"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in data["moves"]] == [table.name] and not data["relabelled"]
    assert data["bytes_moved"] == table.bytes and data["copy_seconds"] > 0
    # renaming machines may move other (smaller) items instead, never more bytes
    assert run_app(["diff", "--current", str(a), "--design", str(b), "tpcdi-trade", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bytes_moved"] <= table.bytes
    assert run_app(["diff", "--current", str(a), "--design", str(b), "tpcdi-trade", "--no-relabel"]) == 0
    out = capsys.readouterr().out
    assert f"{table.bytes / 1e6:,.3f} MB" in out and table.name in out and "simulator: current" in out


def test_diff_out_writes_the_renamed_design_its_moves_are_counted_against(tpcdi, tmp_path, capsys):
    # diff counted the moves to a renamed design no command wrote: export wrote the design as
    # given, whose migration moves more
    design, graph, _ = tpcdi
    used = sorted({p for p in design.state.values() if p is not None})
    renamed = _swap_machines(design, used[0], used[1])
    a, b = design.save(tmp_path / "a.json"), renamed.save(tmp_path / "b.json")
    out = tmp_path / "deploy.json"
    assert run_app(["diff", "--current", str(a), "--design", str(b), "tpcdi-trade", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    written = json.loads(out.read_text())
    placed = {n: v["partition"] for n, v in written["procedures"].items()}
    assert placed == design.procedures  # renamed back onto the deployed machines: nothing moves
    assert run_app(["diff", "--current", str(a), "--design", str(out), "tpcdi-trade", "--no-relabel", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["moves"] == []


def test_bad_diff_inputs_are_one_line_and_exit_2(tpcdi, tmp_path, capsys):
    design, _, _ = tpcdi
    a = design.save(tmp_path / "a.json")
    other = recommend("voter-leaderboard", machines=2, objective="cost").design.save(tmp_path / "voter.json")
    bigger = recommend("tpcdi-trade", machines=5, objective="cost").design.save(tmp_path / "five.json")
    window = recommend("window-micro", machines=2, objective="cost").design
    owner = window.procedures["InsertWindow"]
    misplaced = replace(window, state={**window.state, "Window": (owner + 1) % 2})
    w1, w2 = window.save(tmp_path / "w1.json"), misplaced.save(tmp_path / "w2.json")
    for args, message in [([a, other, "tpcdi-trade"], "different workloads: the current one of 'tpcdi-trade', "
                                                        "the new one of 'voter-leaderboard'"),
                          # without a workload (the new design's by default): named alike, not
                          # "this is a design of workload 'voter-leaderboard': design does not place ..."
                          ([a, other, None], "the new one of 'voter-leaderboard'"),
                          ([a, bigger, "tpcdi-trade"], "different clusters: the current one for 4 machines x "
                                                       "1 partition, the new one for 5 machines x 1 partition"),
                          ([w1, w2, "window-micro"], "window")]:
        if args[2] is not None:
            with pytest.raises(DesignError):  # the API raises what the CLI prints
                diff(*args)
        current, new, source = map(str, args)
        assert run_app(["diff", "--current", current, "--design", new] + ([source] if args[2] else [])) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1


@pytest.mark.process  # the report forks its worker
def test_a_deployed_design_of_a_workload_that_dropped_an_sp_is_diffed_without_it(tpcdi, tmp_path, capsys):
    # `check` and `recommend --current` judge the deployed design without what the workload
    # dropped; `diff` (and `report --current`) refused it: "design places 'TradeInsert', which
    # workload 'tpcdi-trade' does not have"
    from costmodel.spec_writer import workload_to_toml

    design, _, spec = tpcdi
    smaller = replace(spec, procedures=tuple(p for p in spec.procedures if p.name != "TradeInsert"),
                      tables=tuple(t for t in spec.tables if t.name != "DimTrade"),
                      streams=tuple(s for s in spec.streams if "TradeInsert" not in (s.source, s.target)))
    now = tmp_path / "now.toml"
    now.write_text(workload_to_toml(smaller))
    new = recommend(smaller, current=design).design
    out = diff(design, new, now)
    assert sorted(out.gone) == ["DimTrade", "TradeInsert"] and out.to_dict()["gone"] == out.gone
    assert all(m.name not in out.gone for m in out.moves)
    assert out.predicted_tps["current"] > 0
    current, new_path = design.save(tmp_path / "current.json"), new.save(tmp_path / "new.json")
    assert run_app(["diff", "--current", str(current), "--design", str(new_path), str(now)]) == 0
    assert ("the workload no longer has 2 of what the deployed design places (TradeInsert, DimTrade): "
            "judged without them") in capsys.readouterr().out
    assert run_app(["report", "--current", str(current), "--design", str(new_path), str(now),
                    "--out", str(tmp_path / "r.html")]) == 0
