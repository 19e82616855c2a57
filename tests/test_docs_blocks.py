"""The code blocks of README.md and docs/*.md work as written.

Every fenced block names its language, and the language says how it is checked:

- `python`: runs, in document order with the document's commands, in a temporary directory
  holding what a reader is assumed to have (`prepared`: a trace, designs, a calibration);
- `sh`: every `advisor ...` command (also after `&&` or `;`) parses with the real CLI, and a
  cheap one also runs for real, in document order, and must exit 0; other programs (pip,
  pytest, benches) are not run;
- `console`: the same for the lines after a `$ ` prompt (the other lines are output);
- `usage`: a synopsis: every `--option` it names is an option of that command, and a choice it
  lists (`a|b|c`) is exactly the option's set of choices;
- `json`, `toml`: parse;
- `text`: illustrative (output samples, layouts, formulas): not checked.

Every relative link (`[text](path)`, images too) names a file that exists.

Which commands are only parsed, never run here: EXPENSIVE, whose own tests run them, and
SPARK_COMMANDS in the default run (they run in the slow one). A command that reads what an
only-parsed command would have written is only parsed too; a Python block that reads it makes
its document slow (SLOW_DOCUMENTS).
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
CHECKED = ("python", "sh", "console", "usage", "json", "toml")
ILLUSTRATIVE = ("text",)

# parsed only, always: each takes from half a minute to minutes, and has its own tests
EXPENSIVE = {
    ("demo",): "the whole loop, Spark included (tests/reports/test_demo.py)",
    ("tune",): "rounds of recommendations and simulations (tests/reports/test_tune.py)",
    ("calibrate",): "micro-benchmarks of the engine (tests/sim/test_sim_calibration.py)",
}
# parsed only in the default run; run for real in the slow one
SPARK_COMMANDS = {("trace", "aggregate"): "starts Spark"}
# run in the slow tier only: their Python reads what Spark writes
SLOW_DOCUMENTS = {"docs/python-api.md": "its Python block reads statistics, which only Spark makes"}


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language and its text."""

    document: str
    line: int  # of the opening fence, 1-based
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"


def fenced_blocks(document: str) -> list[Block]:
    """The fenced blocks of a Markdown file (a fence may be indented, inside a list item)."""
    blocks, opened, body = [], None, []
    for number, line in enumerate((ROOT / document).read_text().split("\n"), 1):
        fence = re.match(r"^(\s*)```(.*)$", line)
        if opened is None and fence:
            opened, body = (number, fence.group(2).strip(), len(fence.group(1))), []
        elif opened is not None and fence:
            first, language, indent = opened
            blocks.append(Block(document, first, language, "\n".join(l[indent:] for l in body)))
            opened = None
        elif opened is not None:
            body.append(line)
    assert opened is None, f"{document}:{opened[0]}: a fence that never closes"
    return blocks


def all_blocks() -> list[Block]:
    return [b for d in DOCUMENTS for b in fenced_blocks(d)]


def command_lines(block: Block) -> list[list[str]]:
    """The `advisor` commands of an sh or console block, as argv lists without `advisor`."""
    lines = block.text.split("\n")
    if block.language == "console":
        lines = [l[2:] for l in lines if l.startswith("$ ")]
    joined = "\n".join(lines).replace("\\\n", " ")
    commands = []
    for line in joined.split("\n"):
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", ";", "||"):
                if command[:1] == ["advisor"]:
                    commands.append(command[1:])
                command = []
            else:
                command.append(word)
    return commands


def usage_lines(block: Block) -> list[list[str]]:
    """The synopses of a usage block: a line starting with `advisor`, with its indented
    continuation lines, as words without `advisor`."""
    synopses: list[list[str]] = []
    for line in block.text.split("\n"):
        if line.startswith("advisor "):
            synopses.append(line.split()[1:])
        elif line.strip():
            assert synopses and line.startswith(" "), f"{block.where}: not a synopsis: {line!r}"
            synopses[-1] += line.split()
    return synopses


def cli_command(argv: list[str]):
    """The command an argv names (walking groups such as `trace`), its path and the rest."""
    import typer.main

    import advisor.cli  # noqa: F401  registers every command
    from advisor.cli.app import app

    command, path, rest = typer.main.get_command(app), [], list(argv)
    while hasattr(command, "commands"):
        assert rest and rest[0] in command.commands, f"no such command: advisor {' '.join(argv)}"
        path.append(rest[0])
        command = command.commands[rest.pop(0)]
    return command, tuple(path), rest


def parse(argv: list[str]) -> None:
    """Parse a command line with the real CLI (options, types, choices), running nothing."""
    command, path, rest = cli_command(argv)
    command.make_context(" ".join(["advisor", *path]), rest)


def _normal(path: str) -> str:
    return path.rstrip("/")


def outputs(argv: list[str]) -> set[str]:
    """The paths a command writes (its --out, -o, --trace-out)."""
    written = set()
    for flag, value in zip(argv, argv[1:]):
        if flag in ("--out", "-o", "--trace-out"):
            written.add(_normal(value))
    return written


# -- the blocks, without running anything -------------------------------------------------------

def test_every_fence_names_a_language_the_test_knows():
    unknown = [f"{b.where}: {b.language or '(none)'}" for b in all_blocks()
               if b.language not in CHECKED + ILLUSTRATIVE]
    assert unknown == []


def test_no_command_or_python_hides_in_an_indented_block():
    """An indented (unfenced) code block is not checked: commands and Python go in fences.
    (The README's two setup lines stay indented: CI extracts them as they are.)"""
    hidden = []
    for document in DOCUMENTS:
        text = re.sub(r"^\s*```.*?^\s*```", "", (ROOT / document).read_text(), flags=re.M | re.S)
        previous = ""
        for line in text.split("\n"):
            code = re.match(r"^ {4,}(\$ )?(advisor |from \w|import \w)", line)
            if code and previous.strip() == "":
                hidden.append(f"{document}: {line.strip()}")
            previous = line
    assert hidden == []


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(document: str, text: str) -> list[str]:
    """The relative links of a Markdown text (outside code fences) whose file does not exist,
    resolved from the document's folder; web and mail links and in-page anchors are skipped."""
    prose = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.M | re.S)
    folder = (ROOT / document).parent
    broken = []
    for target in LINK.findall(prose):
        path = target.split("#")[0]
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path):
            continue
        if not (folder / path).exists():
            broken.append(f"{document}: {target}")
    return broken


def test_every_relative_link_names_a_file_that_exists():
    links = [t for d in DOCUMENTS for t in LINK.findall((ROOT / d).read_text())]
    assert len(links) >= 10  # the pattern finds the README's links to the docs pages
    assert [b for d in DOCUMENTS for b in broken_links(d, (ROOT / d).read_text())] == []


def test_the_link_check_finds_a_missing_file_and_resolves_from_the_document():
    text = ("[ok](engine.md) [up](../README.md#two-commands) [web](https://example.org/x.md)\n"
            "![gone](missing.png) [wrong folder](docs/engine.md)\n```text\n[in a fence](nowhere.md)\n```\n")
    assert broken_links("docs/made-up.md", text) == ["docs/made-up.md: missing.png",
                                                     "docs/made-up.md: docs/engine.md"]


def test_json_and_toml_blocks_parse():
    for b in all_blocks():
        if b.language == "json":
            json.loads(b.text)
        elif b.language == "toml":
            tomllib.loads(b.text)


def test_every_advisor_command_line_parses():
    import typer

    commands = [(b, argv) for b in all_blocks() if b.language in ("sh", "console")
                for argv in command_lines(b)]
    assert len(commands) >= 10  # the extraction finds the docs' commands
    bad = []
    for block, argv in commands:
        try:
            parse(argv)
        except (typer.TyperException, AssertionError) as exc:
            message = exc.format_message() if isinstance(exc, typer.TyperException) else str(exc)
            bad.append(f"{block.where}: advisor {' '.join(argv)}: {message}")
    assert bad == []


def synopsis_problems(block: Block) -> list[str]:
    """What a usage block gets wrong: options the command lacks, choices it does not take."""
    problems = []
    for words in usage_lines(block):
        command, path, rest = cli_command(words)
        options = {o: p for p in command.params for o in [*p.opts, *p.secondary_opts]}
        rest = [w.strip("[]") for w in rest]
        for word, following in zip(rest, [*rest[1:], ""]):
            if not word.startswith("--"):
                continue
            option = options.get(word.split("=")[0])
            if option is None:
                problems.append(f"{block.where}: advisor {' '.join(path)} has no option {word}")
            elif re.fullmatch(r"[a-z]+(\|[a-z]+)+", following):
                choices = tuple(getattr(option.type_descriptor, "choices", None) or ())
                if set(following.split("|")) != set(choices):
                    problems.append(f"{block.where}: {word} {following}: the choices are {choices}")
    return problems


def test_synopses_name_real_options_and_their_choices():
    usage = [b for b in all_blocks() if b.language == "usage"]
    assert usage
    assert [p for b in usage for p in synopsis_problems(b)] == []


def test_the_synopsis_check_finds_a_wrong_option_and_a_wrong_choice():
    wrong = Block("made-up.md", 1, "usage", "advisor run SOURCE --design D.json --bogus 3\n"
                                            "            [--scheduler dls|fifo] [--move rpc|txn]")
    problems = synopsis_problems(wrong)
    assert len(problems) == 2
    assert "no option --bogus" in problems[0] and "dls|fifo" in problems[1]


# -- the blocks, run ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """What the docs assume a reader has: a trace (trace/), a design (design.json, B.json),
    a deployed one (deployed.json, A.json: round-robin, so moving from it moves state) and a
    calibration file (the reference cluster's)."""
    from advisor.api import recommend
    from advisor.sources import load_workload
    from costmodel.workload import workload_as_plain
    from costmodel.simple_designs import round_robin_design
    from engine_sim.sim import Calibration
    from traces.synth import synthesize

    root = tmp_path_factory.mktemp("docs-prepared")
    workload = load_workload("tpcdi-trade")
    synthesize(workload_as_plain(workload), root / "trace", 40, seed=1)
    design = recommend("tpcdi-trade", objective="cost", baselines=False).design
    for name in ("design.json", "B.json"):
        design.save(root / name)
    for name in ("deployed.json", "A.json"):
        round_robin_design(workload).save(root / name)
    Calibration.reference().save(root / "calibration.json")
    return root


def runs_for_real(path: tuple[str, ...], slow: bool) -> bool:
    return path not in EXPENSIVE and (slow or path not in SPARK_COMMANDS)


def run_document(document: str, slow: bool, capsys) -> list[str]:
    """Run a document's python blocks and its commands in order; return what only parsed."""
    from advisor.cli import run_app

    unmade: set[str] = set()
    parsed_only = []
    for block in fenced_blocks(document):
        if block.language == "python":
            reads = sorted(p for p in unmade if re.search(rf"[\"']{re.escape(p)}/?[\"']", block.text))
            assert not reads, (f"{block.where} reads {reads}, which only a parsed command makes: "
                               f"list {document} in SLOW_DOCUMENTS")
            exec(compile(block.text, block.where, "exec"), {"__name__": "__docs__"})
            continue
        if block.language not in ("sh", "console"):
            continue
        for argv in command_lines(block):
            _, path, _ = cli_command(argv)
            needs_unmade = any(_normal(w) in unmade for w in argv)
            if runs_for_real(path, slow) and not needs_unmade:
                status = run_app(argv)
                captured = capsys.readouterr()
                assert status == 0, f"{block.where}: advisor {' '.join(argv)}: exit {status}\n{captured.err}"
            else:
                parse(argv)
                unmade |= outputs(argv)
                parsed_only.append(" ".join(argv))
    return parsed_only


def _documents(slow: bool):
    for document in DOCUMENTS:
        blocks = fenced_blocks(document)
        if not any(b.language == "python" or (b.language in ("sh", "console") and command_lines(b))
                   for b in blocks):
            continue
        has_spark = any(cli_command(argv)[1] in SPARK_COMMANDS for b in blocks
                        if b.language in ("sh", "console") for argv in command_lines(b))
        if slow and (has_spark or document in SLOW_DOCUMENTS):
            yield pytest.param(document, marks=[pytest.mark.slow, pytest.mark.spark],
                               id=f"{document}-with-spark")
        elif not slow and document not in SLOW_DOCUMENTS:
            yield pytest.param(document, id=document)


@pytest.mark.process  # the docs' engine runs start a process per partition
@pytest.mark.parametrize("document", [*_documents(slow=False), *_documents(slow=True)])
def test_document_runs(document, request, prepared, tmp_path, monkeypatch, capsys):
    slow = request.node.get_closest_marker("slow") is not None
    workdir = tmp_path / "work"
    shutil.copytree(prepared, workdir)
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    parsed_only = run_document(document, slow, capsys)
    if slow:  # only EXPENSIVE commands are left unrun
        assert all(cli_command(c.split())[1] in EXPENSIVE for c in parsed_only), parsed_only
