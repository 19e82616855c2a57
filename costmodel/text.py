"""Names as every output shows them. A spec's names may hold any character (the spec
round-trips them), and a trace's come from a system nobody here controls, so what is printed
or written for a person shows their control characters as escapes, never raw: printed raw, an
escape sequence acts on the user's terminal (`ESC [2J` clears it), and a NUL makes an HTML
report invalid (a browser's parser error, `grep` calls the file binary).
"""
from __future__ import annotations

import re

# C0 but the line break and tab's friends the document itself uses, DEL and C1
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_HTML_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029]")


def _escape(match: re.Match) -> str:
    return repr(match.group())[1:-1]


def visible(text: str) -> str:
    """`text` for a terminal: every control character but the line break shown as its escape
    (`\\x1b`, `\\t`), and the Unicode line and paragraph separators too (`\\u2028`), as an
    error line's quoted names already are."""
    return _LINE_SEPARATORS.sub(_escape, _CONTROL.sub(_escape, text))


def html_visible(document: str) -> str:
    """An HTML document with the control characters HTML forbids shown as their escapes
    (`\\x00`) and the Unicode line separators as character references; the document's own
    line breaks, tabs and carriage returns kept."""
    return _LINE_SEPARATORS.sub(lambda m: f"&#x{ord(m.group()):04X};", _HTML_CONTROL.sub(_escape, document))
