"""The validation file (`advisor.validation/1`): written by `advisor validate --out` and the
demo, read exactly by the report (no guessed key aliases), refused in one line otherwise."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from advisor.cli import run_app
from reports.validation import FORMAT, ValidationResult, validation_document
from reports.validation_view import ValidationFormatError, ValidationView, parse_validation

ROOT = Path(__file__).resolve().parents[2]
# every field RunResult and SimResult cannot do without (the reader requires them)
ENGINE = {"throughput_tps": 1000.0, "throughput_bps": 100.0, "latency_p50_ms": 2.0, "latency_p99_ms": 3.0,
          "distributed_txns": 0, "moves": 30, "history_check": "ok", "state_digest": "d", "committed": 120,
          "aborts": 0, "restarts": 0, "partition_busy_s": [0.1, 0.1], "wall_s": 0.5}
SIM = {"throughput_tps": 1200.0, "throughput_bps": 120.0, "latency_p50_ms": 1.5, "latency_p99_ms": 2.0,
       "distributed_txns": 0, "moves": 30, "partition_utilisation": [0.5, 0.5]}


def document(**entry) -> dict:
    e = {"design": "recommended", "engine": ENGINE, "simulator": SIM, **entry}
    return {"format": FORMAT, "workload": "tpcdi-trade", "designs": [e], "notes": ["a note"]}


def test_the_writer_and_the_reader_agree():
    results = [ValidationResult("w", "naive", 2, 1, {"total": 0.5}, engine=ENGINE, simulator=None,
                                bottleneck={"machine": {"machine": 1, "text": "most loaded machine: 1"}},
                                notes=["engine only"]),
               ValidationResult("w", "advisor", 2, 1, {"total": 0.1}, engine=ENGINE, simulator=SIM)]
    doc = validation_document("w", results, notes=["same host"])
    assert doc["format"] == FORMAT == "advisor.validation/1"
    view = ValidationView.from_any(json.loads(json.dumps(doc)))
    assert [e.design for e in view.entries] == ["naive", "advisor"] and view.workload == "w"
    assert view.entries[0].simulator is None and view.entries[1].simulator == SIM
    assert view.has_both
    assert view.notes[:4] == ["advisor over naive: engine 1.00x, simulator - (throughput)",
                              "naive: most loaded machine: 1", "naive: engine only", "note: same host"]
    assert "naive: engine history check ok" in view.notes
    one = ValidationView.from_any(results[1])  # a ValidationResult object reads the same way
    assert one.entries[0].engine == ENGINE and one.notes == ["advisor: engine history check ok"]


def test_each_design_s_speed_up_over_the_first_is_given_on_both_sides():
    # the engine runs on this host and the simulator predicts a cluster: their absolute figures
    # differ by the machines, the ratio of two designs is what each says of the designs
    naive = {"design": "naive", "engine": {**ENGINE, "throughput_tps": 6516.0},
             "simulator": {**SIM, "throughput_tps": 11452.0}}
    rec = {"design": "recommended", "engine": {**ENGINE, "throughput_tps": 10551.0},
           "simulator": {**SIM, "throughput_tps": 22463.0}}
    view = parse_validation({"format": FORMAT, "workload": "w", "designs": [naive, rec]})
    assert view.speedups == ["recommended over naive: engine 1.62x, simulator 1.96x (throughput)"]
    assert view.notes[0] == view.speedups[0]  # the report shows it first under the table
    assert parse_validation(document()).speedups == []  # one design: nothing to compare


def test_counts_are_compared_per_batch_each_side_completed():
    # the demo's engine runs 200 batches and its simulator 300: 200 MOVEs against 300 are one
    # a batch on both sides, not a simulator "1.50x" the engine
    doc = document(engine={**ENGINE, "batches": 200, "moves": 200, "distributed_txns": 50},
                   simulator={**SIM, "batches": 300, "completed_batches": 300, "moves": 300, "distributed_txns": 150})
    view = parse_validation(doc)
    rows = {r[1]: r[2:] for r in view.rows}
    assert rows["MOVEs per batch"] == ["1.00", "1.00", "1.00"]
    assert rows["distributed txns per batch"] == ["0.25", "0.50", "2.00"]
    result = ValidationResult("w", "advisor", 2, 1, {"total": 0.1, "state_colocation": 0.0,
                                                     "processing_colocation": 0.5, "load_balance": 0.1},
                              engine=doc["designs"][0]["engine"], simulator=doc["designs"][0]["simulator"])
    text = "\n".join(result.describe())  # `advisor validate`'s table reads the same
    assert "MOVEs per batch" in text and "0.25" in text and "0.50" in text
    # how long each side ran is shown (a simulator's 100 batches read apart from recommend's 300)
    assert rows["batches run"] == ["200", "300", ""]
    assert re.search(r"batches run +200 +300\n", text)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("format"), 'no "format"'),
    (lambda d: d.update(format="advisor.validation/2"), "'advisor.validation/2'"),
    (lambda d: d.update(format="advisor.design/1"), "'advisor.design/1'"),
    (lambda d: d.update(results=d.pop("designs")), "unknown field 'results'"),
    (lambda d: d.update(designs=[]), "non-empty list"),
    (lambda d: d.update(notes="one note"), "list of strings"),
    (lambda d: d["designs"][0].update(sim=d["designs"][0].pop("simulator")), "unknown field 'sim'"),
    (lambda d: d["designs"][0].pop("engine"), "missing field 'engine'"),
    (lambda d: d["designs"][0].update(engine=None, simulator=None), "neither engine nor simulator"),
    (lambda d: d["designs"][0].update(design=3), '"design" must be a string'),
    (lambda d: d["designs"][0].update(engine=[1, 2]), '"engine" must be an object or null'),
    # an integer past a float's range (JSON holds one): math.isfinite's OverflowError, an internal error
    (lambda d: d["designs"][0].update(simulator={**d["designs"][0]["simulator"], "throughput_tps": 10**400}),
     "simulator.throughput_tps must be"),
    (lambda d: d["designs"][0].update(predicted_cost={"total": 10**400}), "predicted_cost.total must be a finite"),
])
def test_anything_else_is_refused_with_one_line(change, message):
    doc = document()
    parse_validation(json.loads(json.dumps(doc)))  # the unchanged document reads
    change(doc)
    with pytest.raises(ValidationFormatError) as err:
        parse_validation(doc, "v.json")
    text = str(err.value)
    assert message in text and text.startswith("v.json") and "\n" not in text


def test_plot_refuses_an_unknown_metric_naming_the_ones_it_draws():
    # the figure read a column engine_<metric> that is not there: a KeyError 'engine_nope'
    from matplotlib.figure import Figure

    from costmodel.errors import UserError

    view = parse_validation(document())
    with pytest.raises(UserError, match=r"^unknown metric 'nope': the comparison has throughput_tps, "
                                        r"latency_p50_ms, latency_p99_ms, distributed_txns_per_batch, "
                                        r"moves_per_batch, batches$"):
        view.plot(metric="nope")
    ax = Figure().add_subplot()
    assert view.plot(ax=ax, metric="moves_per_batch") is ax  # each one named draws


def test_a_validation_result_draws_and_tabulates_itself_as_its_view_does():
    # what advisor.validate returns had _repr_html_ only: .plot and .to_frame were its view's
    from matplotlib.figure import Figure

    result = ValidationResult("w", "advisor", 2, 1, {"total": 0.1}, engine=ENGINE, simulator=SIM)
    frame = result.to_frame()
    assert list(frame["design"]) == ["advisor"]
    assert frame["engine_throughput_tps"][0] == 1000.0 and frame["sim_throughput_tps"][0] == 1200.0
    ax = Figure().add_subplot()
    assert result.plot(ax=ax) is ax and ax.has_data()
    assert result.plot(ax=Figure().add_subplot(), metric="latency_p99_ms").has_data()


def test_the_pre_format_shapes_are_refused_not_guessed():
    for old in ({"engine": ENGINE, "simulation": SIM},
                {"designs": [{"name": "x", "measured": ENGINE, "sim": SIM}], "note": "n"},
                [{"design": "x", "engine": ENGINE}]):
        with pytest.raises(ValidationFormatError, match="advisor.validation/1"):
            ValidationView.from_any(old)


def test_cli_report_refuses_an_unversioned_validation_in_one_line(tmp_path, capsys):
    design = tmp_path / "design.json"
    assert run_app(["recommend", "tpcdi-trade", "--out", str(design)]) == 0
    capsys.readouterr()
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"engine": ENGINE, "simulator": SIM}))
    future = tmp_path / "future.json"
    future.write_text(json.dumps({**document(), "format": "advisor.validation/9"}))
    out = tmp_path / "r.html"
    for path in (old, future, tmp_path / "missing.json"):
        code = run_app(["report", "--design", str(design), "tpcdi-trade", "--out", str(out), "--validation", str(path), "-q"])
        err = capsys.readouterr().err.strip()
        assert code == 2, err
        assert err.startswith(f"error: {path}") and "\n" not in err and "Traceback" not in err
    assert not out.exists()


def test_validate_writes_the_versioned_format(tmp_path, capsys):
    from advisor.sources import load_workload
    from engine_sim.sim import scenario_designs as designs

    design = designs.tpcdi_design(load_workload("tpcdi-trade"), 4).save(tmp_path / "d.json")
    out = tmp_path / "v.json"
    assert run_app(["validate", "--design", str(design), "tpcdi-trade", "--sim", "--batches", "30", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["format"] == FORMAT and data["workload"] == "tpcdi-trade"
    [entry] = data["designs"]
    assert entry["engine"] is None and entry["simulator"]["throughput_tps"] > 0
    view = ValidationView.from_any(out)
    assert view.entries[0].value("simulator", "throughput_tps") == entry["simulator"]["throughput_tps"]
    assert any("most loaded machine" in n for n in view.notes)


def test_the_formats_page_documents_the_format():
    formats = (ROOT / "docs" / "formats.md").read_text()
    assert "## Validation (JSON)" in formats and f'"format": "{FORMAT}"' in formats


@pytest.mark.parametrize("failure, shown", [
    ("exactly-once violated: A never committed batch 0", "exactly-once violated: A never committed batch 0"),
    ("exactly-once violated: A\nB never committed batch 0", "exactly-once violated: A\\nB never committed batch 0"),
])
def test_validate_exits_1_where_the_engine_run_failed_its_history_check(tmp_path, capsys, monkeypatch, failure, shown):
    # validate printed "engine history check: exactly-once violated ..." and exited 0 (run
    # exits 1): a script could not tell. The engine's figures here are a real simulator run's,
    # its history check the failure's line, so only the exit and the error line are under
    # test. The failure's text can quote a name from the spec or the design; a line break in
    # it went to stderr raw (`say`), unlike every other error line (`say_error`: one line)
    import reports.validation
    from advisor.sources import load_workload
    from engine_sim.sim import scenario_designs as designs

    real = reports.validation.validate_design

    def failing(spec, design, **kw):
        result = real(spec, design, **{**kw, "engine": False, "sim": True})
        result.engine = dict(result.simulator, history_check=failure)
        return result

    monkeypatch.setattr(reports.validation, "validate_design", failing)
    design = designs.tpcdi_design(load_workload("tpcdi-trade"), 4).save(tmp_path / "d.json")
    assert run_app(["validate", "--design", str(design), "tpcdi-trade", "--batches", "30"]) == 1
    captured = capsys.readouterr()
    assert "engine history check: exactly-once violated" in captured.out
    assert captured.err.strip().splitlines()[-1] == f"error: the engine run failed its correctness check: {shown}"


def test_a_design_validated_on_another_cluster_says_so():
    """`advisor report -d four-machines.json --validation two-machines.json` showed the
    validation's 2-machine simulator figure under the design's name beside the summary's
    4-machine one, with nothing saying the two are of different clusters."""
    view = ValidationView.from_any({"format": FORMAT, "workload": "tpcdi-trade", "designs": [
        {"design": "naive", "machines": 2, "partitions_per_machine": 1, "engine": ENGINE, "simulator": SIM},
        {"design": "advisor", "machines": 4, "partitions_per_machine": 1, "engine": None, "simulator": SIM},
        {"design": "unsaid", "engine": None, "simulator": SIM}]})
    assert view.cluster_notes(4, 1) == [
        "naive: validated on 2 machines x 1 partition, not this design's 4 machines x 1 partition: "
        "its figures are that cluster's"]
    assert view.cluster_notes(2, 1)[0].startswith("advisor: validated on 4 machines x 1 partition, not this design's 2")
    assert view.cluster_notes(1, 2) == [
        f"{name}: validated on {m} machines x 1 partition, not this design's 1 machine x 2 partitions: "
        "its figures are that cluster's" for name, m in (("naive", 2), ("advisor", 4))]


@pytest.mark.integration
def test_the_report_of_a_design_validated_on_another_cluster_says_so(tmp_path, capsys):
    four, two, validation, out = (tmp_path / n for n in ("d4.json", "d2.json", "v.json", "r.html"))
    for machines, design in ((4, four), (2, two)):
        assert run_app(["recommend", "tpcdi-trade", "--machines", str(machines), "--objective", "cost",
                        "--out", str(design)]) == 0
    assert run_app(["validate", "-d", str(two), "--sim", "--batches", "20", "--out", str(validation)]) == 0
    for design, said in ((four, True), (two, False)):
        assert run_app(["report", "-d", str(design), "--validation", str(validation), "--no-sensitivity",
                        "--no-scaling", "--no-suggestions", "--quiet", "--out", str(out)]) == 0
        shown = "advisor: validated on 2 machines x 1 partition, not this design&#39;s 4 machines x 1 partition"
        assert (shown in out.read_text()) == said, design
    capsys.readouterr()
