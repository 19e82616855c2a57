"""`advisor run`: a short table or the JSON result; every bad input is one line, exit 2."""
import json

import pytest

from advisor.api import recommend
from advisor.cli import run_app
from advisor.sources import load_workload
from costmodel.simple_designs import round_robin_design

pytestmark = pytest.mark.integration


@pytest.fixture
def design(tmp_path):
    return recommend("tpcdi-trade", baselines=False).design.save(tmp_path / "d.json")


def test_run_prints_a_short_table(design, capsys):
    assert run_app(["run", "tpcdi-trade", "--design", str(design), "--batches", "20", "--in-process"]) == 0
    out = capsys.readouterr().out
    for word in ("throughput", "latency", "history check", "ok", "state digest", "MOVEs"):
        assert word in out


def test_run_json_has_the_issue_fields(design, capsys):
    assert run_app(["run", "tpcdi-trade", "--design", str(design), "--batches", "20", "--in-process",
                    "--recovery", "strong", "--crash-after", "10", "--scheduler", "central",
                    "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("throughput_tps", "throughput_bps", "latency_p50_ms", "latency_p99_ms",
                "distributed_txns", "moves", "history_check", "state_digest", "committed", "aborts",
                "restarts", "partition_busy_s", "wall_s"):
        assert key in data
    assert data["history_check"] == "ok" and data["crashed"] and data["scheduler"] == "central"


@pytest.mark.process  # the multi-process engine
def test_run_in_processes_from_a_spec_file(tmp_path, capsys):
    from importlib import resources

    w = load_workload("move-micro")
    spec = tmp_path / "move.toml"
    spec.write_text(resources.files("costmodel.workloads").joinpath("move-micro.toml").read_text())
    d = round_robin_design(w).save(tmp_path / "d.json")
    assert run_app(["run", str(spec), "--design", str(d), "--batches", "30", "--move", "txn", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "multi-process" and data["move_txns"] == 30 and data["history_check"] == "ok"


@pytest.mark.parametrize("args, problem", [
    (["--batches", "0"], "--batches must be an integer >= 1"),
    (["--batches", "5", "--recovery", "off", "--crash-after", "2"], "needs recovery"),
    (["--batches", "5", "--crash-after", "0"], "--crash-after must be an integer >= 1"),
])
def test_bad_options_are_one_line_and_exit_2(design, capsys, args, problem):
    assert run_app(["run", "tpcdi-trade", "--design", str(design), "--in-process", *args]) == 2
    err = capsys.readouterr().err
    assert problem in err and err.count("\n") == 1


@pytest.mark.parametrize("option, word, choices", [
    ("--scheduler", "fifo", ("dls", "central")),
    ("--move", "teleport", ("rpc", "txn")),
    ("--recovery", "maybe", ("strong", "weak", "off")),
    ("--migration", "gradual", ("live", "restart", "compare")),
])
def test_a_word_outside_a_choice_is_a_usage_error_naming_the_choices(tmp_path, capsys, option, word,
                                                                    choices):
    # the design does not exist: a usage error is found while parsing, before anything is read
    argv = ["run", "tpcdi-trade", "--design", str(tmp_path / "none.json"), "--batches", "5", option, word]
    assert run_app(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and " run: " in err and err.count("\n") == 1, err
    assert option in err and repr(word) in err and all(repr(c) in err for c in choices), err
    assert "no such file" not in err


def test_every_word_the_command_offers_the_engine_accepts(tmp_path):
    from typing import get_args

    from advisor.cli.choices import MoveMode, Recovery, Scheduler
    from engine_sim.engine import run_workload
    from engine_sim.engine.run_options import CommandLogOptions, RecoveryOptions

    w = load_workload("move-micro")
    d = round_robin_design(w)
    for option, words in (("scheduler", Scheduler), ("move", MoveMode), ("recovery", Recovery)):
        for word in get_args(words):
            chosen = {option: RecoveryOptions(mode=word) if option == "recovery" else word}
            r = run_workload(w, d, batches=3, in_process=True, **chosen,
                             command_log=CommandLogOptions(dir=tmp_path / f"{option}-{word}", fsync=False))
            assert r.history_check == "ok", (option, word)


def test_bad_sources_and_designs_are_one_line_and_exit_2(tmp_path, design, capsys):
    cases = [
        (["run", "no-such-workload", "--design", str(design), "--batches", "5"], "not a spec file"),
        (["run", "tpcdi-trade", "--design", str(tmp_path / "none.json"), "--batches", "5"], "no such file"),
        (["run", "voter-leaderboard", "--design", str(design), "--batches", "5"], "does not place procedure"),
    ]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    cases.append((["run", "tpcdi-trade", "--design", str(bad), "--batches", "5"], "not valid JSON"))
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("keep me")
    cases.append((["run", "tpcdi-trade", "--design", str(design), "--batches", "5", "--in-process",
                   "--trace-out", str(keep)], "refusing to replace"))
    for argv, problem in cases:
        assert run_app(argv) == 2, argv
        err = capsys.readouterr().err
        assert problem in err and err.count("\n") == 1, err
    assert (keep / "notes.txt").read_text() == "keep me"


def test_a_failed_correctness_check_is_one_error_line(design, capsys, monkeypatch):
    # the failure's text can quote a name from the spec or the design: a line break in it is
    # shown as \n, as in every other error line, not printed raw
    import engine_sim.engine

    real = engine_sim.engine.run_workload

    def failing(*args, **kw):
        result = real(*args, **kw)
        result.history_check = "exactly-once violated: A\nB never committed batch 0"
        return result

    monkeypatch.setattr(engine_sim.engine, "run_workload", failing)
    assert run_app(["run", "tpcdi-trade", "--design", str(design), "--batches", "5", "--in-process"]) == 1
    err = capsys.readouterr().err
    assert err == "error: run failed its correctness check: exactly-once violated: A\\nB never committed batch 0\n"
