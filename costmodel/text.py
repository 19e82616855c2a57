"""Names as every output shows them. A name (the workload's, an SP's, a table's, a stream
end's, a window's) may not hold a control or invisible character at all: `name_problem` says
why, for the spec reader and the trace and statistics checks alike. What else is printed or
written for a person (a trace's text comes from a system nobody here controls) shows control
characters as escapes, never raw: printed raw, an escape sequence acts on the user's terminal
(`ESC [2J` clears it), and a NUL makes an HTML report invalid (a browser's parser error, `grep`
calls the file binary).
"""
from __future__ import annotations

import re
import unicodedata

# C0 but the line break and tab's friends the document itself uses, DEL and C1
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_HTML_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029]")
# the bidirectional marks, embeddings, overrides and isolates: printed raw, U+202E shows the
# rest of its line reversed (a description or a trace's text cannot hold a name's check)
_REORDERING = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    return repr(match.group())[1:-1]


def visible(text: str) -> str:
    """`text` for a terminal: every control character but the line break shown as its escape
    (`\\x1b`, `\\t`), and the Unicode line and paragraph separators and the bidirectional
    controls too (`\\u2028`, `\\u202e`), as an error line's quoted names already are."""
    return _REORDERING.sub(_escape, _LINE_SEPARATORS.sub(_escape, _CONTROL.sub(_escape, text)))


def html_visible(document: str) -> str:
    """An HTML document with the control characters HTML forbids shown as their escapes
    (`\\x00`) and the Unicode line separators as character references; the document's own
    line breaks, tabs and carriage returns kept; the bidirectional controls shown as their
    escapes (`\\u202e`: as a character reference one still reorders the text)."""
    return _REORDERING.sub(_escape, _LINE_SEPARATORS.sub(lambda m: f"&#x{ord(m.group()):04X};",
                                                         _HTML_CONTROL.sub(_escape, document)))


# control (Cc), format (Cf: the bidi overrides and isolates, zero-width characters) and the line
# and paragraph separators (Zl, Zp): a character that prints as nothing, or reorders or breaks
# the text around it, so a name holding one does not read as what it is (public: the Spark
# trace checks match the same categories in a Java regex, `traces.spark_trace_checks.HIDDEN`)
HIDDEN_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp"))


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
