"""`import advisor`, the notebook facade: cheap to import (the verbs load their home module on
first use), every exported name resolves to the existing function or type, a recommendation
draws itself and its design without the graph passed back, and what the verbs return renders
itself in a notebook."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.figure import Figure

import advisor
from advisor.errors import AdvisorError
from costmodel.errors import DesignError, UserError

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("engine_sim", "reports", "pyspark", "matplotlib")

LOADED_AFTER = """
import json, sys
def heavy():
    return sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in %r})
import advisor
steps = {"import advisor": heavy()}
advisor.Design
steps["advisor.Design"] = heavy() + (["costmodel.design"] if "costmodel.design" in sys.modules else [])
advisor.simulate
steps["advisor.simulate"] = heavy()
print(json.dumps(steps))
""" % (HEAVY,)


@pytest.mark.process  # a fresh interpreter: this one has imported everything already
def test_import_advisor_loads_nothing_heavy_until_a_name_is_used():
    done = subprocess.run([sys.executable, "-c", LOADED_AFTER], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)
    assert steps["import advisor"] == []
    assert steps["advisor.Design"] == ["costmodel.design"]  # its home only: no engine, no reports
    assert steps["advisor.simulate"] == []  # a thin wrapper: its homes load when it is called


def test_every_exported_name_resolves_and_dir_lists_it():
    assert {"load_workload", "recommend", "evaluate", "diff", "simulate", "validate", "tune",
            "Calibration", "Design"} <= set(advisor.__all__)
    from advisor.api import diff

    assert advisor.diff is diff  # the CLI's `advisor diff` has its verb here too (it was missing)
    for name in advisor.__all__:
        assert getattr(advisor, name) is not None, name
    assert set(advisor.__all__) <= set(dir(advisor))
    assert "__version__" in dir(advisor)


def test_the_verbs_are_the_existing_functions():
    import advisor.api
    import engine_sim.sim
    import reports.validation
    from costmodel.calibration import Calibration
    from costmodel.design import Design

    assert advisor.recommend is advisor.api.recommend and advisor.evaluate is advisor.api.evaluate
    assert advisor.simulate is not engine_sim.sim.simulate  # the wrapper that reads statistics too
    design = advisor.recommend("move-micro", machines=2, objective="cost").design
    wrapped, direct = (run("move-micro", design, batches=100) for run in (advisor.simulate, engine_sim.sim.simulate))
    assert (wrapped.throughput_tps, wrapped.moves) == (direct.throughput_tps, direct.moves)
    assert advisor.validate is reports.validation.validate_design
    assert advisor.Design is Design and advisor.Calibration is Calibration


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import():
    with pytest.raises(AttributeError, match="no_such_verb"):
        advisor.no_such_verb  # noqa: B018
    assert not hasattr(advisor, "no_such_verb")
    from advisor import metis  # a submodule of the package, not a facade name

    assert metis.__name__ == "advisor.metis"


@pytest.fixture(scope="module")
def rec():
    return advisor.recommend("tpcdi-trade", machines=4, objective="cost")  # nothing simulated


def dashed_edges(ax) -> int:
    """Cut edges as `plot_graph` draws them: dashed arrows."""
    return sum(1 for t in ax.texts if getattr(t, "arrow_patch", None) is not None
               and t.arrow_patch.get_linestyle() == "--")


def test_recommendation_plots_without_the_graph_passed_back(rec):
    ax = Figure().add_subplot()
    assert rec.plot(ax=ax) is ax and ax.patches  # one bar per cost term and design
    drawn = rec.plot_design(ax=Figure().add_subplot())
    assert len(drawn.collections) == rec.graph.n_nodes  # every SP and state item, coloured by machine
    assert dashed_edges(drawn) > 0  # 4 machines: the pick cuts something
    together = rec.plot_design("single-machine", ax=Figure().add_subplot())
    assert dashed_edges(together) == 0  # the baseline is drawn, not the pick


def test_plot_design_refuses_a_design_it_does_not_hold(rec):
    with pytest.raises(AdvisorError, match="no design 'nope'.*single-machine"):
        rec.plot_design("nope")


def test_plot_design_given_a_design_or_a_string_axes_says_what_it_expected(rec):
    # a Design as the name was "unhashable type: 'Design'"; ax="x" an AttributeError of `annotate`
    other = advisor.recommend("move-micro", machines=2, objective="cost", baselines=False).design
    with pytest.raises(AdvisorError, match="^name must be the name of a design in this recommendation "
                                           r"\(recommended, .*\), got Design; any other design: advisor.plot_graph"):
        rec.plot_design(other)
    with pytest.raises(UserError, match="^ax must be a matplotlib Axes"):
        rec.plot_design(ax="x")
    with pytest.raises(DesignError, match="^this is a design of workload 'move-micro'"):
        advisor.plot_graph(other, "tpcdi-trade", ax=Figure().add_subplot())  # was a KeyError


def test_plot_graph_reads_the_graph_from_any_source(rec, tmp_path):
    path = rec.design.save(tmp_path / "design.json")
    from_rec = dashed_edges(rec.plot_design(ax=Figure().add_subplot()))
    for design, source in ((rec.design, "tpcdi-trade"), (path, rec.workload), (rec.design, rec.graph)):
        ax = Figure().add_subplot()
        assert advisor.plot_graph(design, source, ax=ax) is ax
        assert dashed_edges(ax) == from_rec


def test_plot_workload_takes_what_the_other_verbs_take(rec, tmp_path):
    # it was reports.figures' own, which draws a Workload only: a name was refused
    from costmodel.errors import SpecError

    drawn = []
    for source in ("tpcdi-trade", rec.workload):
        ax = Figure().add_subplot()
        assert advisor.plot_workload(source, ax=ax) is ax
        drawn.append(sorted(t.get_text() for t in ax.texts))
    assert drawn[0] == drawn[1] and "TradeInsert" in drawn[0]
    with pytest.raises(SpecError):
        advisor.plot_workload(str(tmp_path / "missing.toml"))


def test_a_design_and_its_cost_render_themselves(rec):
    assert "Design for tpcdi-trade" in rec.design._repr_html_()
    cost = advisor.evaluate(rec.design, "tpcdi-trade")
    assert cost._repr_html_() in rec.design._repr_html_()  # one rendering of a cost, reused
    assert f"{cost.total:.4f}" in cost._repr_html_()
    assert "Recommendation for tpcdi-trade" in rec._repr_html_()
    assert rec.prediction is None and "predicted" not in rec._repr_html_().split("<br>")[0]  # by cost


def test_a_throughput_pick_renders_with_its_figure():
    """In a notebook the recommendation states the figure the CLI's first line states."""
    picked = advisor.recommend("bank-transfer", machines=2)
    assert picked.prediction > 0
    assert (picked._repr_html_().split("<br>")[0]
            == f"<b>Recommendation for bank-transfer</b>: predicted {picked.prediction:,.0f} tuples/s by the simulator")
    assert "Workload tpcdi-trade" in advisor.load_workload("tpcdi-trade")._repr_html_()


def test_tune_refuses_bad_rounds_in_one_line():
    with pytest.raises(AdvisorError, match="rounds must be an integer"):
        advisor.tune("tpcdi-trade", machines=4, rounds=-1)


@pytest.mark.integration  # a simulation, a validation and a tuning round in this process
def test_what_the_verbs_return_renders_itself(rec):
    workload = advisor.load_workload("tpcdi-trade")
    simulated = advisor.simulate(workload, rec.design, batches=200)
    assert "Simulated tpcdi-trade" in simulated._repr_html_()
    validation = advisor.validate(workload, rec.design, engine=False, batches=100)
    assert "<b>Validation</b>" in validation._repr_html_()
    assert f"{validation.simulator['throughput_tps']:,.0f}" in validation._repr_html_()
    study = advisor.tune(workload, machines=4, rounds=0)
    assert len(study.rounds) == 1 and "Tuning study" in study._repr_html_()


def test_a_numpy_machine_count_is_a_machine_count(tmp_path):
    # `for m in np.arange(2, 9, 2): advisor.recommend(..., machines=m)` was refused ("got
    # np.int64(2)"); the design it gives writes plain integers to its JSON
    import numpy as np

    rec = advisor.recommend("move-micro", machines=np.int64(2), partitions_per_machine=np.int32(1),
                            objective="cost")
    assert type(rec.design.machines) is int and rec.design.machines == 2
    saved = json.loads(Path(rec.design.save(tmp_path / "d.json")).read_text())
    assert saved["cluster"]["machines"] == 2
    study = advisor.tune("move-micro", machines=np.int64(2), rounds=0, jobs=1)
    assert type(study.machines) is int
    with pytest.raises(AdvisorError, match=r"^machines must be an integer >= 1, got np.float64\(2.0\)$"):
        advisor.recommend("move-micro", machines=np.float64(2.0))


def test_the_notebook_frames_hold_numbers_as_floats_where_a_figure_is_missing(rec):
    """A side not run, or a design not simulated, left an `object` column of None."""
    import advisor
    from reports.suggestions import Suggestions

    frame = rec.to_frame()
    assert frame["estimated_tps"].dtype == float and frame["predicted_tps"].dtype == float
    checked = advisor.validate(rec.workload, rec.design, engine=False, batches=20).to_frame()
    assert all(checked[c].dtype == float for c in checked.columns if c.startswith(("engine_", "sim_")))
    assert checked["engine_throughput_tps"].isna().all() and checked["sim_throughput_tps"].notna().all()
    empty = Suggestions(rec.bottleneck).to_frame()
    assert empty.empty and all(empty[c].dtype == float for c in ("cost_before", "tps_after", "gain"))


@pytest.mark.parametrize("call, verb", [
    (lambda d: advisor.simulate(d, "move-micro"), "simulate(workload, design)"),
    (lambda d: advisor.validate(d, "move-micro"), "validate(workload, design)"),
    (lambda d: advisor.evaluate("move-micro", d), "evaluate(design, source)"),
    (lambda d: advisor.diff(d, "move-micro", d), "diff(current, new, source)"),
    (lambda d: advisor.plot_graph("move-micro", d), "plot_graph(design, source)"),
])
def test_swapped_design_and_workload_are_said_to_be_swapped(tmp_path, call, verb):
    # the verbs' orders differ; a swap read "d.json: not valid TOML" or "move-micro: no such file"
    from costmodel.design import Design

    path = str(Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1}).save(tmp_path / "d.json"))
    with pytest.raises(AdvisorError, match=rf"^{re.escape(verb)}: the arguments look swapped: '.*d.json' is a design file"):
        call(path)


@pytest.mark.parametrize("call, verb", [
    (lambda d, w: advisor.simulate(d, w), "simulate(workload, design)"),
    (lambda d, w: advisor.validate(d, w, engine=False), "validate(workload, design)"),
    (lambda d, w: advisor.evaluate(w, d), "evaluate(design, source)"),
    (lambda d, w: advisor.diff(d, w, d), "diff(current, new, source)"),
    (lambda d, w: advisor.plot_graph(w, d), "plot_graph(design, source)"),
    (lambda d, w: advisor.check(w, d), "check(design, source)"),
])
def test_swapped_design_and_workload_objects_are_said_to_be_swapped_in_a_short_line(call, verb):
    # the objects themselves swapped read "expected a file path, got Workload(...)", the whole
    # workload's repr in the line (2,400 characters for tpcdi-trade), or not swapped at all
    from costmodel.design import Design

    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    with pytest.raises(AdvisorError) as caught:
        call(design, advisor.load_workload("move-micro"))
    said = str(caught.value)
    assert said.startswith(f"{verb}: the arguments look swapped: Design of 'move-micro' is a design")
    assert "Workload 'move-micro' where the design goes" in said and len(said) < 200


def test_a_recommendation_where_a_design_path_goes_is_one_short_line(rec):
    # `evaluate(rec, workload)` (the recommendation, not its .design) printed its whole repr
    with pytest.raises(UserError, match=r"^expected a file path, got Recommendation\(") as caught:
        advisor.evaluate(rec, "tpcdi-trade")
    assert len(str(caught.value)) < 120


def test_a_recommendation_prints_in_one_line(rec):
    # its dataclass repr held the graph, every baseline and every candidate: 23 KB in a list
    said = repr(rec)
    assert "\n" not in said and len(said) < 200
    assert said.startswith("Recommendation('tpcdi-trade' on 4 machines x 1 partition") and f"cost {rec.design.cost.total:.4f}" in said
    assert str([rec]) == f"[{said}]"
    thrown = advisor.recommend("tpcdi-trade", machines=2)
    assert f"predicted {thrown.prediction:,.0f} tuples/s" in repr(thrown)
