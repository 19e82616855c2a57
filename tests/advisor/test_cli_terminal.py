"""Human output fits the terminal (issue 21): at COLUMNS=80 no line of any command's output
is longer than 80 characters; piped output with no COLUMNS stays one line per record; shell
completion installs and completes commands, options and choices."""
from __future__ import annotations

import json
import shlex

import pytest

from advisor.cli import run_app
from advisor.cli.terminal import fit_lines, shorten

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def design_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("width") / "d.json"
    assert run_app(["recommend", "tpcdi-trade", "--machines", "4", "--out", str(path)]) == 0
    return path


def commands(design) -> list[list[str]]:
    d = str(design)
    return [["workloads"], ["--help"], ["recommend", "--help"], ["run", "--help"],
            ["recommend", "tpcdi-trade", "--machines", "4"],
            ["recommend", "linear-road", "--machines", "8"],
            ["evaluate", "--design", d, "tpcdi-trade"], ["simulate", "tpcdi-trade", "--design", d],
            ["diff", "--current", d, "--design", d, "tpcdi-trade"],
            ["report", "--design", d, "tpcdi-trade", "-o", str(design.with_suffix(".html")), "--no-sensitivity",
             "--no-scaling", "--no-suggestions"],
            ["run", "tpcdi-trade", "--design", d, "--batches", "20", "--in-process"]]


@pytest.mark.parametrize("width", [80, pytest.param(60, marks=pytest.mark.slow)])
def test_no_line_is_longer_than_the_terminal(design_file, width, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    for argv in commands(design_file):
        assert run_app(argv) == 0, argv
        out = capsys.readouterr()
        long = [ln for ln in (out.out + out.err).splitlines() if len(ln) > width]
        assert long == [], (argv, long[:2])


def test_piped_output_is_not_wrapped_and_json_never_is(design_file, monkeypatch, capsys):
    monkeypatch.delenv("COLUMNS", raising=False)
    capsys.readouterr()
    assert run_app(["recommend", "tpcdi-trade", "--machines", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    objective = next(ln for ln in lines if ln.startswith("objective:"))
    assert "tuples/s (simulator" in objective and len(objective) > 80  # one line, as written
    monkeypatch.setenv("COLUMNS", "40")
    assert run_app(["evaluate", "--design", str(design_file), "tpcdi-trade", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] >= 0  # not broken by wrapping


def test_wrapping_keeps_every_word_and_the_indent():
    line = "  total " + " ".join(f"word{i}" for i in range(30))
    wrapped = fit_lines(line, 30).splitlines()
    assert all(len(w) <= 30 for w in wrapped) and len(wrapped) > 1
    assert wrapped[0].startswith("  total") and all(w.startswith("      ") for w in wrapped[1:])
    assert " ".join(w.strip() for w in wrapped).split() == line.split()
    assert fit_lines(line, None) == line
    assert shorten("x" * 50, 20) == "x" * 17 + "..." and shorten("short", 20) == "short"


def _console_script() -> str:
    """The installed `advisor` command (completion is keyed to the program's name)."""
    import sys
    from pathlib import Path

    return str(Path(sys.executable).parent / "advisor")


def _complete(words: str) -> list[str]:
    import os
    import subprocess

    env = {**os.environ, "_ADVISOR_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
    done = subprocess.run([_console_script()], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_shell_completion_is_installable_and_completes_commands_options_and_choices():
    import subprocess

    # from a bash, as a user asks for it: the shell is found among the command's parents (a
    # bash that goes on after it, so it does not hand its process to the command), not left
    # to whatever runs the tests
    script = subprocess.run(["bash", "-c", f"{shlex.quote(_console_script())} --show-completion; exit $?"],
                            capture_output=True, text=True, timeout=120)
    assert script.returncode == 0 and "complete" in script.stdout and "advisor" in script.stdout
    assert _complete("advisor rec") == ["recommend"]
    assert _complete("advisor run x --sched") == ["--scheduler"]
    assert sorted(_complete("advisor recommend tpcdi-trade --objective ")) == ["cost", "throughput"]


class _Terminal:
    """A stand-in stderr that says it is a terminal and keeps what was written."""

    def __init__(self, tty: bool = True):
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        return None


def test_a_slow_step_shows_a_spinner_on_a_terminal_and_erases_it(monkeypatch):
    import time

    from advisor.cli import terminal

    screen = _Terminal()
    monkeypatch.setattr(terminal.sys, "stderr", screen)
    with terminal.working("recommending", after_s=0.05):
        time.sleep(0.4)
    frames = [f for f in screen.text.split("\r") if f.strip()]
    assert len(frames) >= 2 and all(f.startswith("recommending ") and f.endswith(" s") for f in frames)
    assert {f.split()[1] for f in frames} <= set(terminal.SPINNER_FRAMES)
    assert screen.text.endswith("\r") and screen.text.rsplit("\r", 2)[-2].strip() == ""  # erased
    fast = _Terminal()
    monkeypatch.setattr(terminal.sys, "stderr", fast)
    with terminal.working("recommending", after_s=5):
        pass
    assert fast.text == ""  # a fast step shows nothing
    piped = _Terminal(tty=False)
    monkeypatch.setattr(terminal.sys, "stderr", piped)
    with terminal.working("recommending", after_s=0.0):
        time.sleep(0.2)
    assert piped.text == ""  # nor does a pipe


def test_recommend_on_a_real_terminal_spins_on_stderr_and_prints_its_result_on_stdout():
    """stderr on a pseudo-terminal, stdout a pipe: the spinner goes to the terminal only."""
    import os
    import pty
    import subprocess

    primary, secondary = pty.openpty()
    env = {**os.environ, "ADVISOR_SPINNER_AFTER_S": "0"}  # at once: the step's speed does not matter
    done = subprocess.Popen([_console_script(), "recommend", "tpcdi-trade", "--machines", "4"],
                            stdout=subprocess.PIPE, stderr=secondary, text=True, env=env)
    os.close(secondary)
    out, _ = done.communicate(timeout=600)
    seen = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert done.returncode == 0
    assert "objective:" in out and "recommending" not in out
    assert b"recommending " in seen and seen.rstrip(b" ").endswith(b"\r")


def test_a_design_that_leaves_machines_idle_says_so_in_one_line():
    """`recommend` on a cluster larger than its pick needs lists the machines nothing runs on
    (the partition lines alone leave the user to notice what is missing)."""
    from advisor.cli.format import design_table
    from advisor.recommendation_text import idle_machines
    from costmodel.design import Design

    spread = Design("w", 4, 2, {"A": 0, "B": 7}, {"T": 2, "R": None})
    assert idle_machines(spread) == [2]  # machine 1 holds T; R's copies are everywhere
    assert design_table(spread, None).splitlines()[-1] == "uses 3 of 4 machines; idle: 2"
    full = Design("w", 2, 1, {"A": 0, "B": 1}, {"T": 0})
    assert idle_machines(full) == [] and "idle" not in design_table(full, None)
    many = Design("w", 16, 1, {"A": 0}, {})
    assert design_table(many, None).splitlines()[-1] == "uses 1 of 16 machines; idle: 1, 2, 3, 4, 5, 6, 7, 8, ..."


@pytest.mark.parametrize("argv", [["--help"], ["trace", "--help"]])
def test_the_command_list_gives_every_summary_on_one_line_when_it_fits(argv, monkeypatch, capsys):
    # the list used to keep a docstring's line breaks: a summary over two source lines broke
    # in the middle at any width
    monkeypatch.setenv("COLUMNS", "220")
    capsys.readouterr()
    assert run_app(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, ln in enumerate(lines) if "Commands" in ln and ln.lstrip().startswith("╭"))
    panel = lines[start + 1:next(i for i in range(start, len(lines)) if lines[i].lstrip().startswith("╰"))]
    names = [ln.strip("│ ").split()[0] for ln in panel if not ln.startswith("│  ")]
    continued = [ln for ln in panel if ln.startswith("│  ")]
    assert len(names) >= 3 and continued == [], continued


def test_a_name_with_control_characters_is_refused_and_shown_escaped_not_acted_on(tmp_path, capsys):
    """Printed raw, an escape sequence in an SP's name acted on the user's terminal (`ESC [2J`
    cleared it): such a name is refused as the spec is read, its character shown escaped, and
    what human output prints still shows control characters as escapes."""
    from costmodel.text import visible

    assert visible("a\x1b[2Jb\tc\nd\x7f é 中\u2028") == "a\\x1b[2Jb\\tc\nd\\x7f é 中\\u2028"
    # a bidirectional override reverses the rest of its line (a description, a trace's text)
    assert visible("Pay\u202eKcab \u2066x\u2069") == "Pay\\u202eKcab \\u2066x\\u2069"
    from costmodel.text import html_visible

    assert html_visible("<td>a\u202eb</td>") == "<td>a\\u202eb</td>"
    spec = tmp_path / "w.toml"
    spec.write_text('name = "w"\n[[tables]]\nname = "T"\nrows = 10\nrow_bytes = 10\nkey = "k"\n'
                    '[[procedures]]\nname = "Clear\\u001b[2J\\tScreen"\ncost = 1.0\n'
                    'accesses = [{table = "T", mode = "write", rows = 1}]\n')
    assert run_app(["recommend", str(spec), "--machines", "2", "--objective", "cost"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"error: {spec}: procedures[0]: name 'Clear\\x1b[2J\\tScreen' holds '\\x1b' (U+001B), an invisible "
        "or control character a name may not hold (it would not print as what it is)\n")


def _every_character_of(categories: tuple[str, ...]) -> list[str]:
    import sys
    import unicodedata

    return [c for c in map(chr, range(sys.maxunicode + 1)) if unicodedata.category(c) in categories]


def test_every_invisible_format_character_is_printed_as_its_escape(capsys, monkeypatch):
    """Invisible format characters (Unicode Cf) other than the bidirectional ones were printed
    raw in a description or a trace's text: "Trade\u200bInsert" (a zero-width space) read as
    "TradeInsert" on the terminal, as did U+2060 (word joiner) and U+FEFF."""
    import ast

    from advisor.cli.terminal import say
    from costmodel.text import visible

    hidden = _every_character_of(("Cf", "Cc"))
    assert {"\u200b", "\u2060", "\ufeff", "\u202e", "\x1b"} <= set(hidden)
    for c in hidden:
        shown = visible(f"a{c}b")
        if c == "\n":  # the one kept: the text's own line break
            assert shown == "a\nb"
            continue
        # an escape of printable ASCII that reads back as the very character
        assert shown.isascii() and shown.isprintable() and ast.literal_eval(f'"{shown}"') == f"a{c}b", repr(c)
    # what prints as itself stays as it is: letters, a non-breaking space, a combining accent, an emoji
    plain = "Trade é 中 a\u00a0b e\u0301 \U0001f600"
    assert visible(plain) == plain
    monkeypatch.delenv("COLUMNS", raising=False)  # (one line, not fitted to a width)
    say("Trade\u200bInsert \u2060\ufeff")
    assert capsys.readouterr().out == "Trade\\u200bInsert \\u2060\\ufeff\n"


def test_every_invisible_format_character_in_a_report_is_shown_as_its_escape(tmp_path):
    """As on the terminal: the HTML report printed a zero-width space (U+200B), a word joiner
    (U+2060) or U+FEFF raw (as a character reference one would print as nothing all the same);
    the document's own tabs, line breaks and carriage returns stay."""
    from costmodel.text import html_visible, visible
    from reports.report import write_report

    for c in _every_character_of(("Cf", "Cc")):
        page = html_visible(f"<td>a{c}b</td>")
        if c in "\t\n\r":
            assert page == f"<td>a{c}b</td>", repr(c)
        else:  # the terminal's escape, ASCII: nothing in it prints as nothing
            assert page == f"<td>{visible(f'a{c}b')}</td>" and page.isascii(), repr(c)
    plain = "<p>Trade é 中 a\u00a0b\te\u0301 \U0001f600</p>\r\n"
    assert html_visible(plain) == plain
    written = write_report(tmp_path / "r.html", "<p>Trade\u200bInsert\u2060 \ufeff</p>\n").read_text(encoding="utf-8")
    assert written == "<p>Trade\\u200bInsert\\u2060 \\ufeff</p>\n"


def test_the_estimates_moves_are_said_once_as_such():
    from advisor.recommendation_text import moves_text

    moves = ["start from 'x'", "A -> partition 1 (estimate)", "B -> partition 2 (estimate)",
             "partitions 0 and 1 trade places", "C -> partition 3 (estimate)"]
    assert moves_text(moves) == ("start from 'x'; by the estimate: A -> partition 1, B -> partition 2; "
                                 "partitions 0 and 1 trade places; C -> partition 3 (estimate)")
    assert moves_text([]) == ""
    climb = [f"SP{k} -> partition 0 (estimate)" for k in range(50)]  # a 150-SP climb's length
    line = moves_text(climb)
    assert line.startswith("by the estimate: SP0 -> partition 0, SP1 -> partition 0, ")
    assert "SP7 -> partition 0" in line and "SP8 -> partition 0" not in line
    assert line.endswith(" ... and 42 more moves (every one in the design file)") and len(line) < 400
    assert moves_text(climb[:8]) == "by the estimate: " + ", ".join(m[: -len(" (estimate)")] for m in climb[:8])


def test_long_candidate_names_stay_told_apart():
    """Cut at their ends, "search: metis 2 machines ufactor=30" and "... 4 machines ..." were
    one name twice in the candidate table."""
    from advisor.cli.format import shortened

    names = ["search: metis 2 machines ufactor=30", "search: metis 4 machines ufactor=30",
             "search: tabu from metis ufactor=1000 seed#0", "search: tabu from metis ufactor=1000 seed#1"]
    shown = [shortened(n, 32) for n in names]
    assert len(set(shown)) == len(names) and all(len(s) <= 32 for s in shown)
    assert shortened("recommended", 32) == "recommended"


def test_a_path_holding_a_line_break_stays_on_its_line_in_human_output(tmp_path, capsys):
    # `evaluate --design $'d\nx.json'` printed the path raw: its first line split in two, and
    # so did every command's "wrote PATH"
    out = tmp_path / "d\nx.json"
    assert run_app(["recommend", "tpcdi-trade", "-m", "2", "--objective", "cost", "-o", str(out)]) == 0
    wrote = [line for line in capsys.readouterr().out.splitlines() if line.startswith("wrote ")]
    assert wrote == [f"wrote {tmp_path}/d\\nx.json"]
    assert run_app(["evaluate", "tpcdi-trade", "--design", str(out)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"{tmp_path}/d\\nx.json: 2 machines x 1 partition"


def test_an_error_quoting_a_huge_name_keeps_its_head_and_its_advice(tmp_path, capsys):
    """A design naming a 100,000-character SP: the error stays one line, within MAX_LINE_CHARS,
    its start and its end (what the line advises) kept, and says how long it was."""
    from costmodel.text import MAX_LINE_CHARS, elided

    design = tmp_path / "d.json"
    assert run_app(["recommend", "tpcdi-trade", "--machines", "2", "--objective", "cost", "--out", str(design)]) == 0
    doc = json.loads(design.read_text())
    doc["procedures"]["X" * 100_000] = 0
    design.write_text(json.dumps(doc))
    capsys.readouterr()
    assert run_app(["evaluate", "--design", str(design), "tpcdi-trade"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) - 1 <= MAX_LINE_CHARS
    assert err.startswith("error: ") and "characters, its middle left out" in err
    line = "error: " + "y" * 5_000 + " give statistics of the design's own granularity"
    short = elided(line)
    assert len(short) == MAX_LINE_CHARS and short.startswith("error: yyy")
    assert short.endswith("yyy give statistics of the design's own granularity")
    assert elided("short line") == "short line"
