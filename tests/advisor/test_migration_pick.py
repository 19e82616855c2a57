"""`recommend --current`: the fastest design reachable from a deployed one within a budget of
megabytes moved, and the frontier of megabytes against predicted throughput."""
from __future__ import annotations


import pytest

from advisor.api import diff, recommend
from advisor.cli import run_app
from costmodel.design import Design
from costmodel.errors import UserError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """tpcdi-trade on 4 machines, deployed round-robin (slow), and the plan from it."""
    root = tmp_path_factory.mktemp("migration")
    current = recommend("tpcdi-trade", machines=4, objective="cost").baselines["round-robin"]
    path = current.save(root / "current.json")
    return current, path, recommend("tpcdi-trade", current=current)


def test_the_frontier_is_monotone_and_each_pick_keeps_its_budget(deployed):
    current, _, rec = deployed
    plan = rec.migration
    assert plan.judged_by == "simulator"
    rows = plan.frontier()
    assert rows[0][1] is plan.reachable[0] and rows[-1][1] is plan.best
    speeds = [r.predicted_tps for _, r in rows]
    assert all(b >= a * (1 - 0.02) for a, b in zip(speeds, speeds[1:])), speeds  # ties: fewer MB
    budgets = sorted({r.megabytes for r in plan.reachable} | {0.0})
    best = [plan.best_within(b) for b in budgets]
    assert all(r.megabytes <= b + 1e-9 for r, b in zip(best, budgets))
    assert all(y.predicted_tps >= x.predicted_tps * (1 - 0.02) for x, y in zip(best, best[1:]))
    # the unconstrained pick is the pool's best, renamed to move least, and much faster here
    assert plan.best.predicted_tps >= 0.98 * max(r.predicted_tps or 0 for r in plan.reachable)
    assert plan.best.predicted_tps > 2 * plan.reachable[0].predicted_tps
    assert rec.design.procedures == plan.best.design.procedures
    assert rec.predicted_tps()["recommended"] == plan.best.predicted_tps


def test_a_budget_bounds_the_bytes_the_recommendation_moves(deployed, tmp_path, capsys):
    current, path, rec = deployed
    budget = rec.migration.best.megabytes / 2
    out = tmp_path / "within.json"
    assert run_app(["recommend", "tpcdi-trade", "--current", str(path), "--max-move-mb", str(budget),
                    "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "from the deployed design: picked" in text and "(asked)" in text
    picked = Design.load(out)
    moved = diff(current, picked, "tpcdi-trade", relabel=False)
    assert moved.megabytes_moved <= budget + 1e-9
    assert picked.provenance["migration"]["max_move_mb"] == budget
    # the file's figures are the design it holds (they were the unconstrained pick's), and it
    # holds the frontier, as `--json` prints it
    from engine_sim.sim import simulate

    p = picked.provenance
    assert p["picked"] == p["migration"]["picked"] != p["migration"]["unconstrained"]["picked"]
    assert p["predicted_tuples_per_s"] == pytest.approx(simulate("tpcdi-trade", picked).throughput_tps, abs=0.1)
    assert p["predicted_tuples_per_s"] < p["migration"]["unconstrained"]["predicted_tuples_per_s"]
    assert [f["budget"] for f in p["migration"]["frontier"]][0] == "no move"
    # the API gives the same design (same input, same design)
    api = recommend("tpcdi-trade", current=current, max_move_mb=budget).design
    assert api.procedures == picked.procedures and api.state == picked.state
    assert moved.predicted_tps["new"] >= moved.predicted_tps["current"]
    # nothing to move: a budget of 0 moves no state
    zero = recommend("tpcdi-trade", current=current, max_move_mb=0).design
    assert diff(current, zero, "tpcdi-trade", relabel=False).bytes_moved == 0


def test_bad_migration_inputs_are_one_line_and_exit_2(deployed, tmp_path, capsys):
    _, path, _ = deployed
    voter = recommend("voter-leaderboard", machines=4, objective="cost").design.save(tmp_path / "v.json")
    cases = [(["--current", str(path), "--max-move-mb", "-1"], "megabytes from 0 to 1e+12"),
             (["--current", str(path), "--max-move-mb", "1e300"], "megabytes from 0 to 1e+12, got 1e+300"),
             (["--max-move-mb", "5"], "--max-move-mb needs --current DEPLOYED.json"),
             (["--current", str(voter)], "voter-leaderboard"),
             (["--current", str(path), "--machines", "5"],
              "is for 4 machines x 1 partition, not 5 machines x 1 partition (a migration keeps the cluster)"),
             (["--current", str(path), "--data-parallel"], "data_parallel")]
    for args, message in cases:
        out = tmp_path / "never.json"
        assert run_app(["recommend", "tpcdi-trade", *args, "--out", str(out)]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
        assert not out.exists()
    with pytest.raises(UserError):
        recommend("tpcdi-trade", current=str(path), max_move_mb=float("nan"))
    with pytest.raises(UserError, match=r"max_move_mb\) needs the deployed design \(current\)"):
        recommend("tpcdi-trade", max_move_mb=5)  # in Python, its parameters' names
    # nothing to move: the frontier is "no move" and the unconstrained best, no row of 0 MB budgets
    plan = recommend("tpcdi-trade", current=str(path)).migration
    same = recommend("tpcdi-trade", current=plan.best.design).migration
    assert same.best.megabytes == 0 and [b for b, _ in same.frontier()] == ["no move", "unconstrained"]


def test_the_report_shows_what_moving_the_deployed_design_takes(deployed, tmp_path, capsys):
    current, path, rec = deployed
    new = rec.design.save(tmp_path / "new.json")
    out = tmp_path / "report.html"
    assert run_app(["report", "--design", str(new), "tpcdi-trade", "--current", str(path), "--out", str(out), "-q",
                    "--no-sensitivity", "--no-scaling", "--no-suggestions"]) == 0
    html = out.read_text()
    section = html[html.index('<section id="migration">'):]
    section = section[:section.index("</section>")]
    moved = diff(current, rec.design, "tpcdi-trade")
    assert f"{moved.megabytes_moved:,.3f} MB" in section
    assert section.count("<tr>") == 1 + len(moved.moves)  # the header and one row per move
    for m in moved.moves:
        assert f"<td>{m.name}</td>" in section


def test_a_deployed_design_that_is_already_the_pick_moves_nothing():
    deployed = recommend("tpcdi-trade", machines=4, objective="cost").design
    rec = recommend("tpcdi-trade", current=deployed, objective="cost")
    plan = rec.migration
    assert plan.judged_by == "cost" and plan.chosen is plan.reachable[0] and plan.chosen.megabytes == 0
    assert not any(r.label.startswith("path:") for r in plan.reachable)
    assert rec.design.procedures == deployed.procedures and rec.design.state == deployed.state


def test_a_deployed_design_of_the_workload_as_it_was_is_one_line_before_the_search():
    """A workload grown an SP since the deployment: "only the second design places procedure
    'Audit'", of a second design the user never gave, after the whole search."""
    import dataclasses

    from advisor.api import recommend
    from advisor.errors import AdvisorError
    from advisor.sources import load_workload
    from costmodel.workload import Procedure, Stream

    before = load_workload("voter-leaderboard")
    deployed = recommend(before, machines=2, objective="cost").design
    grown = dataclasses.replace(before, procedures=before.procedures + (Procedure("Audit", 1.0),),
                                streams=before.streams + (Stream(before.procedures[0].name, "Audit", 1.0),))
    with pytest.raises(AdvisorError) as info:
        recommend(grown, current=deployed)
    assert str(info.value) == ("the deployed design (--current) does not fit the workload as it is now: design "
                               "does not place 'Audit' of workload 'voter-leaderboard' (`advisor check` says "
                               "what changed; recommend without it for a new design)")


def _outgrown(spec):
    """tpcdi-trade where DimDate and DimTime grew to 1,200 MB each: the pick's design keeps
    both on one machine (2,048 MiB), now 240.8 MB over, and designs that split them fit."""
    from dataclasses import replace

    rows = {"DimDate": 10_000_000, "DimTime": 20_000_000}
    return replace(spec, tables=tuple(replace(t, rows=rows.get(t.name, t.rows)) for t in spec.tables))


def test_a_deployed_design_that_no_longer_fits_memory_is_left_for_one_that_fits(tmp_path, capsys):
    """The unconstrained pick prefers designs that fit memory (`pick_by_throughput`); the
    migration's picks kept the deployed design, over memory, because the simulator (which
    does not model memory) predicted it fastest, and printed "no design fits memory"."""
    from advisor.api import evaluate
    from advisor.sources import load_workload

    spec = load_workload("tpcdi-trade")
    deployed = recommend(spec, machines=4).design
    grown = _outgrown(spec)
    assert not evaluate(deployed, grown).feasible
    rec = recommend(grown, current=deployed)
    plan = rec.migration
    assert rec.design.cost.feasible and plan.best.design.cost.feasible
    assert plan.best.megabytes > 0
    # a budget that reaches no design that fits keeps the fastest it reaches, and says so
    assert plan.best_within(0.0).megabytes == 0.0
    from costmodel.spec_writer import workload_to_toml

    (tmp_path / "grown.toml").write_text(workload_to_toml(grown))
    deployed.save(tmp_path / "deployed.json")
    assert run_app(["recommend", str(tmp_path / "grown.toml"), "--current", str(tmp_path / "deployed.json"),
                    "--max-move-mb", "1"]) == 0
    out = capsys.readouterr().out
    assert "deployed design  (over memory)" in out
    assert (f"warning: no design within the budget fits memory (worst machine is 240.8 MB over); the fastest "
            f"that fits moves {plan.best.megabytes:,.3f} MB") in out
