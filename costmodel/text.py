"""Names as every output shows them. A name (the workload's, an SP's, a table's, a stream
end's, a window's) may not hold a control or invisible character at all: `name_problem` says
why, for the spec reader and the trace and statistics checks alike. What else is printed or
written for a person (a trace's text comes from a system nobody here controls) shows control
characters and invisible format characters as escapes, never raw: printed raw, an escape
sequence acts on the user's terminal (`ESC [2J` clears it), a NUL makes an HTML report invalid
(a browser's parser error, `grep` calls the file binary), and a zero-width space makes two
different texts read alike.
"""
from __future__ import annotations

import re
import unicodedata

# control (Cc), format (Cf: the bidi overrides and isolates, zero-width characters) and the line
# and paragraph separators (Zl, Zp): a character that prints as nothing, or reorders or breaks
# the text around it, so a name holding one does not read as what it is (public: the Spark
# trace checks match the same categories in a Java regex, `traces.spark_trace_checks.HIDDEN`)
HIDDEN_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp"))
# what may be one of them: anything but printable ASCII and the line break (the document's own
# tab and carriage return too, in HTML), each then told by its category (Unicode's, so a format
# character a later Unicode adds is escaped too, with no list here to fall behind)
_MAYBE_HIDDEN = re.compile(r"[^\n\x20-\x7e]")
_HTML_MAYBE_HIDDEN = re.compile(r"[^\t\n\r\x20-\x7e]")
_LINE_SEPARATORS = frozenset("\u2028\u2029")


def _escape(c: str) -> str:
    return repr(c)[1:-1]  # (`\x1b`, `\t`, `\u200b`: a hidden character is never printable to repr)


def _shown(match: re.Match) -> str:
    c = match.group()
    return _escape(c) if unicodedata.category(c) in HIDDEN_CATEGORIES else c


def _html_shown(match: re.Match) -> str:
    c = match.group()
    if c in _LINE_SEPARATORS:
        return f"&#x{ord(c):04X};"
    return _escape(c) if unicodedata.category(c) in HIDDEN_CATEGORIES else c


def visible(text: str) -> str:
    """`text` for a terminal: every character a name may not hold (`hidden_character`) but the
    line break shown as its escape: the control characters (`\\x1b`, `\\t`), the line and
    paragraph separators (`\\u2028`) and the invisible format characters (the bidirectional
    controls `\\u202e`, the zero-width `\\u200b`, `\\u2060`, `\\ufeff`), as an error line's
    quoted names already are."""
    return _MAYBE_HIDDEN.sub(_shown, text)


def visible_line(text: str) -> str:
    """`text` as one line for a terminal: `visible`, and the line break shown as its escape
    (`\\n`) too. An error line is one line whatever it quotes: a path the user typed may hold a
    line break (`recommend $'bad\\nname.toml'`), and printed by `visible` it split the line in two."""
    return visible(text).replace("\n", "\\n")


MAX_LINE_CHARS = 2_000  # an error line past this keeps its head and its tail (`elided`)


def elided(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """`line` within `limit` characters: its head and its tail (what to do is often said last),
    the middle replaced by a note of the line's length. Why: an error that quoted a design's
    100,000-character name was one line that long, the advice at its end out of sight."""
    if len(line) <= limit:
        return line
    marker = f" ... (a line of {len(line):,} characters, its middle left out) ... "
    tail = limit // 4
    return line[:limit - tail - len(marker)] + marker + line[len(line) - tail:]


def html_visible(document: str) -> str:
    """An HTML document with the control characters and the invisible format characters shown
    as their escapes (`\\x00`, `\\u200b`: HTML forbids the first, and as a character reference
    one still prints as nothing or reorders the text) and the Unicode line separators as
    character references; the document's own line breaks, tabs and carriage returns kept."""
    return _HTML_MAYBE_HIDDEN.sub(_html_shown, document)


def hidden_character(text: str) -> str | None:
    """The first character of `text` that does not print as itself (None when none does)."""
    return next((c for c in text if unicodedata.category(c) in HIDDEN_CATEGORIES), None)


def name_problem(name: str) -> str:
    """Why `name` cannot be a name, as words to follow the quoted name ("" when it can). Why:
    printed raw, U+202E (right-to-left override) made `recommend` show `Pay\\u202eKcab` as
    "PaybacK", and an escape sequence acts on the terminal; a line break splits each listing."""
    if "\n" in name:
        return "holds a line break"
    c = hidden_character(name)
    if c is None:
        return ""
    label = unicodedata.name(c, "")
    return (f"holds {c!r} (U+{ord(c):04X}{' ' + label if label else ''}), an invisible or control "
            "character a name may not hold (it would not print as what it is)")


PER_PART_SHOWN = 16  # partitions or machines named on one line of a command's summary


def first_of(items: list[str], sep: str = ", ", shown: int = PER_PART_SHOWN) -> str:
    """The first `shown` of `items` joined, and how many more there are. Why: a summary line per
    partition was 2,000 characters at 100 partitions; `--json` gives every one."""
    more = f"{sep}... ({len(items) - shown:,} more; --json has every one)" if len(items) > shown else ""
    return sep.join(items[:shown]) + more
