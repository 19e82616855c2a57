"""The CLI's one grammar (issue 21, item 4): the design is `--design/-d` in every command that
takes one, the workload the positional WORKLOAD (optional where the design names a bundled
workload), the old positional form one line and exit 2; `--json`, `--calibration` and `--seed`
in every command where they apply, and a reason stated beside the command where one does not.

The rule is walked over the Typer app itself, so a new command is held to it without being
listed here."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
import typer.main

import advisor.cli  # noqa: F401  registers every command
from advisor.cli import run_app
from advisor.cli.app import app
from advisor.cli.grammar import SHARED_OPTIONS, DesignCommand, not_applicable, positional_designs
from advisor.sources import load_workload
from costmodel.design import Design

# what each shared option is: the same kind of value in every command that has it
SHARED_KIND = {"--json": "bool", "--calibration": "Path", "--seed": "int"}
# commands with a design whose WORKLOAD is required all the same, and why
WORKLOAD_REQUIRED = {("check",): "it weighs the deployed design against the workload now, "
                                 "which the design file cannot name"}


def every_command():
    """(the words that name it, the command) for every command, groups walked."""
    def walk(group, path):
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from walk(command, (*path, name))
            else:
                yield (*path, name), command
    yield from walk(typer.main.get_command(app), ())


def options_of(command) -> dict:
    return {o: p for p in command.params if p.param_type_name == "option" for o in p.opts}


@pytest.fixture
def design_file(tmp_path):
    """A design of the bundled tpcdi-trade, as a user's file: everything on partition 0."""
    w = load_workload("tpcdi-trade")
    design = Design("tpcdi-trade", 1, 1, {p.name: 0 for p in w.procedures}, {t.name: 0 for t in w.tables})
    return design.save(tmp_path / "d.json")


def test_every_command_has_the_shared_options_or_says_why_not():
    commands = list(every_command())
    assert len(commands) >= 16  # the walk reaches the groups' commands too
    problems = []
    for path, command in commands:
        has = options_of(command)
        reasons = getattr(command.callback, "not_applicable", {})
        for option in SHARED_OPTIONS:
            if option in has and option in reasons:
                problems.append(f"{' '.join(path)}: has {option} but says it does not apply")
            elif option not in has and not reasons.get(option, "").strip():
                problems.append(f"{' '.join(path)}: no {option} and no reason why not")
            elif option in has and has[option].bare_type() != SHARED_KIND[option]:
                problems.append(f"{' '.join(path)}: {option} takes {has[option].bare_type()}")
        if "--json" in has and not has["--json"].is_flag:
            problems.append(f"{' '.join(path)}: --json is not a flag")
    assert problems == []


def test_every_seed_refuses_a_negative_value_before_anything_runs(capsys):
    # numpy's generators take no negative seed: it used to end in an internal error
    seeds = [(path, options_of(command)["--seed"]) for path, command in every_command()
             if "--seed" in options_of(command)]
    assert len(seeds) >= 10
    assert [path for path, option in seeds if option.min != 0] == []
    capsys.readouterr()
    assert run_app(["recommend", "tpcdi-trade", "--machines", "2", "--seed", "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "--seed" in err and "\n" not in err


def test_a_design_is_an_option_everywhere_and_workload_the_positional():
    takers = []
    for path, command in every_command():
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        assert not [p.name for p in arguments if p.name in ("design", "current", "new")], path
        if "--design" in options_of(command):
            takers.append(path)
            assert isinstance(command, DesignCommand), path
            assert [p.metavar for p in arguments] == ["WORKLOAD"], path
            assert arguments[0].required == (path in WORKLOAD_REQUIRED), path
    assert len(takers) >= 8  # evaluate, diff, check, export, run, simulate, validate, report


def test_the_old_positional_form_is_one_line_naming_the_option(design_file, capsys):
    for path, command in every_command():
        if not isinstance(command, DesignCommand):
            continue
        for argv in ([*path, str(design_file), "tpcdi-trade"], [*path, str(design_file)]):
            assert run_app(argv) == 2, argv
            err = capsys.readouterr().err
            option = command.design_options[0]
            assert err.count("\n") == 1 and f"give it as {option} {design_file}" in err, (argv, err)
    assert run_app(["diff", str(design_file), str(design_file), "tpcdi-trade"]) == 2
    assert f"--current {design_file} --design {design_file}" in capsys.readouterr().err


def test_a_design_file_is_found_by_its_content_and_never_in_an_option_s_value(design_file, tmp_path):
    command = dict(every_command())[("report",)]
    renamed = tmp_path / "deployed.design"
    renamed.write_text(design_file.read_text())
    assert positional_designs([str(renamed), "tpcdi-trade"], command.params) == [str(renamed)]
    assert positional_designs(["--current", str(design_file), "-o", "r.json", "tpcdi-trade"], command.params) == []
    assert positional_designs(["--current=x.json", "--", str(design_file)], command.params) == [str(design_file)]
    assert positional_designs(["tpcdi-trade", str(tmp_path)], command.params) == []  # a directory
    # a flag takes no value; an option the command does not know is taken to take one
    assert positional_designs(["--no-scaling", "-q", str(design_file)], command.params) == [str(design_file)]
    assert positional_designs(["--deployed", str(design_file)], command.params) == []


def test_a_mistyped_design_option_is_named_as_unknown_not_as_positional(design_file, capsys):
    # `check` names the deployed design --design, `diff` --current: the one for the other
    assert run_app(["check", "--current", str(design_file), "tpcdi-trade"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No such option: --current" in err, err


def test_an_unknown_flag_before_a_known_option_is_named_not_the_option_s_value(design_file, tmp_path, capsys):
    """`validate -d d.json --in-process --out v.json` (a `run` flag given to `validate`): the
    unknown flag was taken to take `--out` as its value, so `v.json`, the output, was called
    a design given positionally ("v.json is a design: give it as --design v.json")."""
    command = dict(every_command())[("validate",)]
    out = tmp_path / "v.json"
    assert positional_designs(["-d", str(design_file), "--in-process", "--out", str(out)], command.params) == []
    assert positional_designs(["--in-process", "--out=x.json", str(design_file)], command.params) == [str(design_file)]
    for argv in (["validate", "-d", str(design_file), "--in-process", "--out", str(out)],
                 ["export", "-d", str(design_file), "--bogus", "--out", str(out), "--format", "csv"]):
        assert run_app(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"No such option: {argv[3]}" in err and "is a design" not in err, (argv, err)
    assert not out.exists()


def test_workload_defaults_to_the_bundled_one_the_design_names(design_file, tmp_path, capsys):
    assert run_app(["evaluate", "--design", str(design_file), "tpcdi-trade", "--json"]) == 0
    given = json.loads(capsys.readouterr().out)
    assert run_app(["evaluate", "-d", str(design_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == given
    design = Design.load(design_file)
    other = replace(design, provenance={"input_sha256": "0" * 64}).save(tmp_path / "from-stats.json")
    mine = replace(design, workload="my-own").save(tmp_path / "mine.json")
    for path, message in ((other, "made from a source other than the bundled 'tpcdi-trade'"),
                          (mine, "'my-own', which is not bundled")):
        assert run_app(["evaluate", "--design", str(path)]) == 2
        err = capsys.readouterr().err
        assert message in err and "WORKLOAD" in err and err.count("\n") == 1, err
    assert run_app(["check", "--design", str(design_file)]) == 2  # the workload now: never assumed
    assert "WORKLOAD" in capsys.readouterr().err


def test_json_is_one_object_and_nothing_else_on_stdout(design_file, tmp_path, capsys):
    trace = tmp_path / "trace"
    for argv in (["workloads", "--json"],
                 ["evaluate", "--design", str(design_file), "--json"],
                 ["export", "--design", str(design_file), "-f", "csv", "-o", str(tmp_path / "p.csv"), "--json"],
                 ["trace", "synth", "move-micro", "-n", "3", "-o", str(trace), "--json"],
                 ["trace", "validate", str(trace), "--json"]):
        assert run_app(argv) == 0, argv
        data = json.loads(capsys.readouterr().out)  # the whole of stdout
        assert isinstance(data, dict) and data, argv


def test_evaluate_prices_its_weights_from_the_calibration_given(design_file, tmp_path, capsys):
    from engine_sim.sim import Calibration

    data = Calibration.reference().to_dict()
    files = []
    for name, move_scale in (("reference.json", 1), ("slow-network.json", 100)):  # MOVEs cost far more
        files.append(tmp_path / name)
        files[-1].write_text(json.dumps({**data, "prices": {**data["prices"],
                                                            "move_s": data["prices"]["move_s"] * move_scale}}))
    design = Design.load(design_file)
    spread = replace(design, machines=2, procedures={n: i % 2 for i, n in enumerate(design.procedures)})
    path = spread.save(tmp_path / "spread.json")
    betas = []
    for calibration in files:
        assert run_app(["evaluate", "--design", str(path), "--calibration", str(calibration), "--json"]) == 0
        betas.append(json.loads(capsys.readouterr().out)["weights"]["beta"])
    assert betas[1] > betas[0]  # MOVEs weigh more where they cost more


def test_not_applicable_takes_only_the_shared_options_with_a_reason():
    with pytest.raises(TypeError):
        not_applicable(colour="no")
    with pytest.raises(TypeError):
        not_applicable(seed=" ")

    @not_applicable(seed="nothing random")
    def command() -> None:
        pass
    assert command.not_applicable == {"--seed": "nothing random"}


def test_a_flag_shows_no_value_in_help_and_an_option_with_one_shows_its_kind(monkeypatch, capsys):
    """`--replicate <bool>` read as an option taking a value (`--replicate true` was a usage
    error): every command's flags show no type; options with a value still show theirs."""
    monkeypatch.setenv("COLUMNS", "200")
    for path, command in every_command():
        capsys.readouterr()
        assert run_app([*path, "--help"]) == 0
        shown = capsys.readouterr().out
        assert "<bool>" not in shown, path
        for param in command.params:
            if param.param_type_name == "option" and not param.hidden and not param.is_flag:
                name = max(param.opts, key=len)  # its long form: the panel row starts with it
                row = next(line for line in shown.splitlines() if line.lstrip("│ *").startswith(f"{name} "))
                assert "<" in row, (path, row)  # its kind: <int>, <path>, <a|b|c> ...
    capsys.readouterr()
    assert run_app(["--help"]) == 0
    assert "<bool>" not in capsys.readouterr().out  # typer's own flags too (--help, --version)
