"""`advisor demo`: the whole loop (engine trace -> Spark -> recommend -> validate -> report)
ends with a design that beats every baseline in predicted throughput, and says so only when
the simulator agrees."""
from __future__ import annotations

import json
import os

import pytest

from advisor.cli import run_app
from costmodel.design import Design
from advisor.sources import load_workload
from reports.predict import predicted_tps

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def need_engine_and_java():
    try:
        from engine_sim.engine import run_workload  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"the bundled engine is not available: {exc}")
    from traces.errors import JavaError
    from traces.java import check_java

    try:
        check_java()
    except JavaError as exc:
        pytest.skip(str(exc))


def test_demo_runs_the_whole_loop(tpcdi_trade, tmp_path, capsys):
    need_engine_and_java()
    out = tmp_path / "demo"
    code = run_app(["demo", "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    for n in range(1, 7):
        assert f"[{n}/6]" in printed.out
    for name in ("report.html", "design.json", "validation.json", "demo.json", "statistics/_stats.json",
                 "trace/_trace.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "demo.json").read_text())
    assert summary["beats_every_baseline"] is True
    # the advisor worked from the statistics alone: the design's input is the statistics
    stats_manifest = json.loads((out / "statistics" / "_stats.json").read_text())
    design = Design.load(out / "design.json")
    assert design.provenance["input_sha256"] == stats_manifest["sha256"]
    assert design.provenance["objective"] == "throughput"
    # check the claim independently: simulate the written design (on the workload rebuilt from
    # the statistics, as the demo does) against every baseline
    workload = load_workload(str(out / "statistics"))
    assert workload.from_statistics
    tps = predicted_tps(workload, design)
    assert tps == pytest.approx(summary["predicted_tps"]["recommended"])
    for name, other in summary["predicted_tps"].items():
        if name != "recommended" and name not in summary["same_as_recommended"]:
            assert tps > other, name
    # the engine ran both designs side by side on no more machines than this host has cores
    local = summary["engine_machines"]
    assert 1 <= local <= max(1, min(os.cpu_count() or 1, design.machines))
    assert set(summary["engine_tps"]) == {"single-machine", "recommended"}
    from reports.validation_view import ValidationView  # the validation file reads exactly

    view = ValidationView.from_any(out / "validation.json")
    assert [e.design for e in view.entries] == ["naive (single-machine)", "recommended"]
    doc = json.loads((out / "validation.json").read_text())
    assert [e["machines"] for e in doc["designs"]] == [local, local]
    assert view.entries[1].value("engine", "throughput_tps") == pytest.approx(summary["engine_tps"]["recommended"])
    assert view.entries[1].value("simulator", "throughput_tps") == pytest.approx(
        summary["engine_predicted_tps"]["recommended"])
    assert f"engine on {local} machine(s) of this host" in printed.out
    # without a calibration of this host, its prediction says it is for a real cluster
    assert summary["engine_predicted_for"] == "the reference cluster, not this host"
    assert "x for the reference cluster, not this host; `advisor calibrate` then `--calibration` predicts" in printed.out
    html = (out / "report.html").read_text()
    assert "beats every baseline in predicted throughput" in html and 'id="validation"' in html
    assert html.count('src="data:image/png;base64,') == 7  # validation has engine and simulator
    # the statistics the Spark job wrote, as a notebook object
    from matplotlib.figure import Figure
    from reports.statistics_view import StatisticsView

    stats = StatisticsView.load(out / "statistics")
    frame = stats.to_frame()
    assert sorted(frame["procedure"]) == sorted(workload.procedure_names)
    assert (frame["invocations"] >= stats.stats.manifest["batches"]).all()
    assert "Workload statistics" in stats._repr_html_()
    ax = Figure().add_subplot()
    assert stats.plot(ax=ax) is ax


def test_demo_refuses_a_directory_that_is_not_its_own(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    assert run_app(["demo", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "refusing" in err and "\n" not in err
    assert (out / "thesis.tex").read_text() == "precious" and len(list(out.iterdir())) == 1


@pytest.mark.parametrize("batches", ["0", "9", "100001"])
def test_demo_refuses_a_batch_count_out_of_range_before_writing(tmp_path, capsys, batches):
    # --batches 0 used to run the default 200 in silence; 1e11 traced until the disk filled
    out = tmp_path / "demo"
    assert run_app(["demo", "--out", str(out), "--batches", batches]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: --batches must be an integer from 10 to 100,000 (a longer run: trace, aggregate "
                   f"and recommend with their own commands), got {batches}\n")
    assert not out.exists()


def test_an_interrupted_demo_leaves_nothing_and_puts_the_previous_one_back(tmp_path):
    """Ctrl-C after the engine traced: the partial demo is removed and the previous demo is
    back, file for file; a first demo interrupted leaves no directory; the next demo runs into
    the same directory (each is interrupted before Spark starts here)."""
    from reports.demo import MARKER, run_demo

    out = tmp_path / "demo"

    def stop_at(word):
        def progress(line: str) -> None:
            if word in line:
                raise KeyboardInterrupt
        return progress

    with pytest.raises(KeyboardInterrupt):
        run_demo(out, batches=20, progress=stop_at("Spark"))
    assert not out.exists() and list(tmp_path.iterdir()) == []
    out.mkdir()
    (out / MARKER).write_text('{"previous": true}\n')
    (out / "report.html").write_text("<p>the last demo</p>")
    with pytest.raises(KeyboardInterrupt):  # it traced into the directory, then stopped
        run_demo(out, batches=20, progress=stop_at("Spark"))
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "report.html"]
    assert (out / "report.html").read_text() == "<p>the last demo</p>"
    assert [p.name for p in tmp_path.iterdir()] == ["demo"]  # nothing set aside is left