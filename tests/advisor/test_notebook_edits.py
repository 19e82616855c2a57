"""What a notebook does to the objects it is given: a Design changed with
`dataclasses.replace` (its cost and figures were the original's, shown and saved as its own),
numpy's integers wherever a count goes (a raw TypeError from JSON, or refused as "not an
integer"), a cluster of no machines (taken, and refused only by the next verb)."""
import dataclasses
import json

import numpy as np
import pytest

import advisor
from advisor.sources import load_workload
from costmodel.design import Design
from costmodel.errors import UserError


@pytest.fixture(scope="module")
def rec():
    return advisor.recommend("tpcdi-trade", machines=4)


def test_an_edited_design_keeps_no_cost_or_figure_of_the_one_it_came_from(rec, tmp_path):
    d = dataclasses.replace(rec.design, procedures={**rec.design.procedures, "TradeInsert": 0},
                            state={**rec.design.state, "DimTrade": 0})
    assert "cost not known: edited since the advisor made it" in d._repr_html_()
    data = json.loads(d.save(tmp_path / "edited.json").read_text())
    assert data["cost"] is None and data["provenance"]["edited"] is True
    assert "predicted_tuples_per_s" not in data["provenance"] and "placement_sha256" not in data["provenance"]
    assert data["provenance"]["seed"] == rec.design.provenance["seed"]  # what still holds is kept
    back = Design.load(tmp_path / "edited.json")
    assert back.cost is None and back.procedures == d.procedures
    # a copy that places the same keeps its cost and figures
    same = json.loads(dataclasses.replace(rec.design).save(tmp_path / "same.json").read_text())
    assert same["cost"] is not None and same["provenance"]["predicted_tuples_per_s"] > 0


def test_a_recommendation_whose_design_was_edited_in_place_does_not_show_its_figure_as_the_designs():
    fresh = advisor.recommend("tpcdi-trade", machines=2)  # (its own: the module's stays as made)
    assert f"predicted {fresh.prediction:,.0f} tuples/s" in fresh._repr_html_()
    fresh.design.procedures["TradeInsert"] = 1 - fresh.design.procedures["TradeInsert"]
    page = fresh._repr_html_()
    assert "its design was edited since" in page
    assert f"predicted {fresh.prediction:,.0f} tuples/s by the simulator" not in page  # (the pick's lines say it as the pick's)
    assert "advisor.evaluate(d, source)" in page  # the design's own line says what prices it


def test_numpy_integers_go_where_counts_go(rec, tmp_path):
    w = load_workload("tpcdi-trade")
    two = advisor.recommend(w.with_cluster(machines=np.int64(2)))
    assert two.design.machines == 2 and type(two.design.machines) is int
    d = dataclasses.replace(rec.design, procedures={k: np.int64(v) for k, v in rec.design.procedures.items()})
    assert Design.load(d.save(tmp_path / "np.json")).procedures == rec.design.procedures
    assert advisor.recommend(w, jobs=np.int64(1)).design.procedures == advisor.recommend(w).design.procedures
    assert advisor.tune(w, machines=2, rounds=np.int64(0)).rounds
    assert advisor.recommend(w, current=two.design, max_move_mb=np.int64(1)).migration is not None


def test_numpy_floats_go_where_numbers_go(rec):
    # a float32 (a float32 column's value) is no Python float: "input rate must be from 1e-06 to
    # 1e+09 batches per second, got 1000.0", and the tolerance, min_gain and latency bound refused
    import json

    from engine_sim.engine import ClientOptions, NetworkOptions

    w = load_workload("tpcdi-trade")
    at = advisor.simulate(w, rec.design, input_rate=np.float32(1000), latency_bound_s=np.float32(0.5))
    assert at.throughput_tps == advisor.simulate(w, rec.design, input_rate=1000.0, latency_bound_s=0.5).throughput_tps
    json.dumps(at.to_dict())  # its settings are plain numbers
    assert advisor.check(rec.design, w, tolerance=np.float32(0.1)).within
    study = advisor.tune(w, machines=2, rounds=0, min_gain=np.float32(0.02), jobs=1)
    assert type(study.min_gain) is float
    client = ClientOptions(latency_bound_s=np.float32(0.5), abort_rate=np.float32(0.1))
    assert {type(client.latency_bound_s), type(client.abort_rate)} == {float}
    assert type(NetworkOptions(machine_delay_ms=np.float32(1)).machine_delay_ms) is float


@pytest.mark.parametrize("machines", [0, -3, 2.5, True])
def test_a_cluster_of_no_machines_is_refused_where_it_is_asked_for(machines):
    with pytest.raises(UserError, match="machines must be an integer >= 1"):
        load_workload("tpcdi-trade").with_cluster(machines=machines)


def test_a_diff_renders_itself_and_a_simulation_describes_itself_without_a_label(rec):
    """A notebook showed a DesignDiff as a 3,300-character repr, and `simulate(...).describe()`
    raised a TypeError (its label argument was required)."""
    w = load_workload("tpcdi-trade")
    cheap = advisor.recommend(w, machines=4, objective="cost").design
    d = advisor.diff(rec.design, cheap, w)
    frame = d.to_frame()
    assert len(frame) == len(d.moves) > 0 and frame["bytes"].sum() == pytest.approx(d.bytes_moved)
    page = d._repr_html_()
    assert "<table>" in page and all(m.name in page for m in d.moves)
    lines = advisor.simulate(w, rec.design).describe()
    assert lines[0].endswith("(dls scheduler, rpc MOVE)") and "throughput" in lines[2]


def test_a_lanes_pick_renders_in_a_notebook_as_the_cli_shows_it():
    """The notebook's frame and HTML lacked the granularity note and the table-level pick row
    the CLI shows, and printed throughput with 4 decimals (37979.4911)."""
    lanes = advisor.recommend("fraud-scoring", machines=4, data_parallel=True)
    frame = lanes.to_frame()
    assert list(frame.index[:2]) == ["recommended", "table-level pick"]
    assert frame.loc["table-level pick", "predicted_tps"] == pytest.approx(lanes.data_parallel.table_tps)
    page = lanes._repr_html_()
    assert "granularity: picked data-parallel ScoreCard" in page and "table-level pick" in page
    assert "58,718" in page and not any(f"{v:.4f}" in page for v in frame["predicted_tps"].dropna())
    # every row of the frame draws (the table-level pick's was "no design 'table-level pick'")
    for name in frame.index:
        assert lanes.plot_design(name) is not None, name
    table = lanes.plot_design("table-level pick")
    assert "CardProfiles" in {t.get_text() for t in table.texts}  # on the table-level graph, not its fragments


def test_a_recommendation_renders_the_lines_recommend_prints(capsys):
    # the notebook's rendering lacked the pick line, the simulated search and the idle machines
    import html
    import re

    from advisor.cli import run_app
    from advisor.recommendation_text import idle_line

    def untimed(text: str) -> str:  # (the pick's seconds differ from run to run)
        return re.sub(r"simulated in [\d.]+ s", "simulated in - s", text)

    rec = advisor.recommend("linear-road", machines=4)
    page = untimed(html.unescape(re.sub(r"<[^>]+>", "\n", rec._repr_html_())))
    assert idle_line(rec.design).startswith("uses 1 of 4 machines")
    for line in rec.pick_lines() + [idle_line(rec.design)]:
        assert untimed(line) in page, line
    assert run_app(["recommend", "linear-road", "--machines", "4"]) == 0
    printed = untimed(capsys.readouterr().out)
    for line in rec.pick_lines(shortened_to=32) + [idle_line(rec.design)]:
        assert untimed(line) in printed, line


def test_the_frontier_lists_an_asked_budget_once():
    plan = advisor.recommend("tpcdi-trade", machines=4,
                             current=advisor.recommend("tpcdi-trade", machines=4, objective="cost").design,
                             max_move_mb=5).migration
    budgets = [b for b, _ in plan.frontier()]
    assert "<= 5.000 MB (asked)" in budgets and "<= 5.000 MB" not in budgets
    assert len(budgets) == len(set(budgets))


def test_the_frontier_and_a_diff_print_in_a_line_each():
    """`rec.migration.frontier()`, as docs/drift.md shows it, printed every design whole, with
    its provenance (28 KB for tpcdi-trade), and so did a DesignDiff outside a notebook (10 KB)."""
    deployed = advisor.recommend("tpcdi-trade", machines=4, objective="cost").design
    plan = advisor.recommend("tpcdi-trade", machines=4, current=deployed).migration
    for budget, r in plan.frontier():
        shown = repr(r)
        assert "\n" not in shown and "provenance" not in shown and "candidate_table" not in shown
        assert repr(r.label) in shown and f"{r.megabytes:,.3f} MB" in shown
        assert f"predicted {r.predicted_tps:,.0f} tuples/s" in shown
    d = advisor.diff(deployed, plan.best.design, "tpcdi-trade")
    shown = repr(d)
    assert "\n" not in shown and "provenance" not in shown
    assert f"{len(d.moves)} moves" in shown and f"{d.megabytes_moved:,.3f} MB" in shown
