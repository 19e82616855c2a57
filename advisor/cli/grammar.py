"""The grammar every command shares (issue 21), so that a user who learns one command knows
them all: a design is `--design/-d PATH` wherever a command takes one, the workload is the
positional WORKLOAD (optional where the design file names a bundled workload), and `--json`,
`--calibration` and `--seed` mean the same thing in every command that has them. A command
that lacks one of those three says why with `not_applicable`; tests/advisor/test_cli_grammar.py
walks the app and holds every command to it.

Kept free of heavy imports: `advisor --help` loads this module.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional, Sequence

import typer
from typer.core import TyperCommand

from advisor.cli.app import JSON_HELP, SEED_HELP, WEIGHT_HELP
from costmodel.text import visible_line

DESIGN_HELP = "design JSON (`advisor recommend --out`, or hand-written)"
WORKLOAD_HELP = "bundled workload name, spec .toml, or statistics directory"
WORKLOAD_FROM_DESIGN_HELP = f"{WORKLOAD_HELP} (default: the bundled workload the design names)"

SHARED_OPTIONS = ("--json", "--calibration", "--seed")
"""The options every command takes where they apply: where it prints a result, where it
simulates or prices, where anything is random."""


def file_path(typed: str) -> Path:
    """An output file's path as typed (the `parser` of every file output option): one that
    ends in a slash is refused, which a Path would drop (`costmodel.files.check_file_name`)."""
    from costmodel.files import check_file_name, check_not_a_uri

    check_not_a_uri(typed, typer.BadParameter)
    check_file_name(typed, typer.BadParameter)
    return Path(typed)


def dir_path(typed: str) -> Path:
    """An output folder's path as typed (the `parser` of every folder output option): a URI
    is refused here, where the `//` a Path folds is still seen (`check_not_a_uri`)."""
    from costmodel.files import check_not_a_uri

    check_not_a_uri(typed, typer.BadParameter)
    return Path(typed)


def file_out_option(default, text: str):
    """`--out/-o PATH`: the file a command writes (see `file_path`)."""
    return typer.Option(default, "--out", "-o", parser=file_path, metavar="<path>", help=text)


def design_option(text: str = DESIGN_HELP):
    """`--design/-d PATH`, required: the one way every command is given its design."""
    return typer.Option(..., "--design", "-d", help=text)


def workload_argument(optional: bool = True, text: str | None = None):
    """The positional WORKLOAD: optional where the command also takes a design (the design
    file names its workload), required where the command needs a source of its own."""
    if optional:
        return typer.Argument(None, metavar="WORKLOAD", help=text or WORKLOAD_FROM_DESIGN_HELP,
                              show_default=False)
    return typer.Argument(..., metavar="WORKLOAD", help=text or WORKLOAD_HELP)


def json_option(text: str = JSON_HELP):
    return typer.Option(False, "--json", help=text)


def seed_option(text: str = SEED_HELP):
    return typer.Option(0, "--seed", min=0, help=text)


def design_seed_option():
    """`--seed` of a command about a design file: None (not given) is the seed the design
    was recommended with, so the command repeats `recommend`'s figure for it."""
    return typer.Option(None, "--seed", min=0, help="seed of the simulated input (default: the one "
                        "the design was recommended with, in its provenance, else 0)")


def jobs_option(what: str):
    """`--jobs/-j N`: processes for `what`, run side by side; None (not given): the cores this
    process may use. The answer is the same for any N."""
    return typer.Option(None, "--jobs", "-j", min=1,
                        help=f"processes for {what}, side by side (1: all in this one; default: the "
                             "cores this process may use); the same result for any value")


def weight_option(name: str):
    """`--alpha`, `--beta` or `--gamma`: one weight of the cost model, None when not given."""
    return typer.Option(None, f"--{name}", help=WEIGHT_HELP[name])


def calibration_option(text: str):
    """`--calibration PATH`; `text` says what the command prices or simulates with it."""
    return typer.Option(None, "--calibration", help=text)


def not_applicable(**reasons: str) -> Callable:
    """Mark a command that has no `--json`, `--calibration` or `--seed`, with the reason
    for each (`not_applicable(seed="nothing in it is random")`): the grammar test accepts
    a missing shared option only with its reason stated here, beside the command."""
    unknown = sorted(set(reasons) - {o.removeprefix("--") for o in SHARED_OPTIONS})
    if unknown or not all(isinstance(r, str) and r.strip() for r in reasons.values()):
        raise TypeError(f"not_applicable takes json=, calibration=, seed= with a reason each, got {unknown or reasons}")

    def mark(command: Callable) -> Callable:
        command.not_applicable = {f"--{name}": reason for name, reason in reasons.items()}
        return command
    return mark


# -- the design as an option: the old positional form is refused in one line ----------------------

def _is_design_file(word: str) -> bool:
    """A word that names a design file: a `.json` path, or a file whose text says it is one."""
    path = Path(word)
    if path.suffix.lower() == ".json":
        return not path.is_dir()
    try:
        with path.open("rb") as f:
            return b'"advisor.design/' in f.read(4096)
    except OSError:
        return False


def positional_designs(args: Sequence[str], params: Sequence) -> list[str]:
    """The words of a command line that stand where a positional argument stands (not an
    option's value) and name a design file."""
    flags = {o for p in params if p.param_type_name == "option"
             and (getattr(p, "is_flag", False) or getattr(p, "count", False))
             for o in [*p.opts, *p.secondary_opts]}
    known = {o for p in params if p.param_type_name == "option" for o in [*p.opts, *p.secondary_opts]}
    found, value_next, options_over = [], "", False
    for word in args:
        if value_next == "known" or (value_next == "unknown" and word.split("=", 1)[0] not in known):
            value_next = ""  # an option's value (an option the command knows is never one: below)
        elif word == "--" and not options_over:
            value_next = ""
            options_over = True
        elif word.startswith("-") and word != "-" and not options_over:
            # an option the command does not know is taken to have a value (`--current d.json`
            # where the command says --design): its own error then says what is wrong; but not
            # an option it knows (`--in-process --out v.json`: v.json is --out's, no design)
            value_next = ("" if "=" in word or word in flags else
                          "known" if word in known else "unknown")
        elif _is_design_file(word):
            found.append(word)
    return found


class DesignCommand(TyperCommand):
    """A command whose designs are options. A design given where a positional argument
    stands (the old `advisor evaluate d.json tpcdi-trade`) is a one-line usage error that
    names the option to use, never a design file read as a workload."""

    design_options: tuple[str, ...] = ("--design",)

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        designs = positional_designs(args, self.params)
        try:
            rest = super().parse_args(ctx, args)
        except typer.TyperException:
            if designs:
                ctx.fail(self.old_form(designs))
            raise
        if designs:
            ctx.fail(self.old_form(designs))
        return rest

    def old_form(self, designs: list[str]) -> str:
        given = " ".join(f"{option} {design}" for option, design in zip(self.design_options, designs))
        what = "is a design" if len(designs) == 1 else "are designs"
        return (f"{' and '.join(designs)} {what}: give {'it' if len(designs) == 1 else 'them'} as {given} "
                f"(WORKLOAD is the only positional argument)")


class DeployedAndNewCommand(DesignCommand):
    """`advisor diff`: the deployed design is `--current`, as in `recommend` and `report`."""

    design_options = ("--current", "--design")


def workload_for(design: Path, workload: Optional[str]) -> str:
    """The WORKLOAD a command reads: the one given, else the bundled workload the design file
    names. A design made from another source under that name (a trace's statistics, an edited
    spec: its recorded input digest differs) is refused in one line rather than judged on the
    bundled spec."""
    if workload is not None:
        return workload
    from advisor.errors import AdvisorError
    from costmodel.design import Design
    from costmodel.spec_reader import bundled_workloads, read_spec

    d = Design.load(design)
    if d.workload not in bundled_workloads():
        raise AdvisorError(f"{design}: a design of workload {d.workload!r}, which is not bundled: "
                           f"give its spec or statistics directory as WORKLOAD")
    made_from = d.provenance.get("input_sha256")
    if made_from and made_from != read_spec(d.workload).sha256:
        raise AdvisorError(f"{design}: made from a source other than the bundled {d.workload!r} "
                           f"(a trace's statistics or an edited spec): give that source as WORKLOAD")
    return d.workload


# -- what the shared options do ---------------------------------------------------------------------

def load_calibration(path: Optional[Path]):
    """The calibration file a user named, or None: each command's own default then applies."""
    if path is None:
        return None
    from engine_sim.sim import Calibration

    return Calibration.load(path)


def print_result(data: dict, lines: Callable[[], list[str]], as_json: bool, out: Optional[Path] = None) -> None:
    """A command's result: written to `out` as JSON when given, then printed as one JSON
    object (`--json`: nothing else on stdout) or as the human lines, with where it went."""
    from advisor.cli.terminal import say

    if out is not None:
        from costmodel.files import atomic_write_text

        atomic_write_text(out, json.dumps(data, indent=2) + "\n")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for line in lines():
        say(line)
    if out is not None:
        say(f"wrote {visible_line(str(out))}")
