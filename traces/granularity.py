"""State item granularity: whole tables, hash fragments, or hot tuples plus fragments.

State item names are the same in the statistics and in the design JSON:
`TABLE` (a table), `TABLE#i` (fragment i of N: crc32 of the key's UTF-8 text, mod N) and
`TABLE@KEY` (one hot tuple). Integer keys hash as their decimal text, so a table keyed by
int64 and the same table keyed by strings land in the same fragments.
"""
from __future__ import annotations

from dataclasses import dataclass

from costmodel.granularity import FRAGMENT_HASH, FRAGMENT_NAME, TUPLE_NAME, fragment_name, fragment_of, tuple_name  # noqa: F401  (the names a granularity option produces)
from traces.errors import TraceError

DEFAULT_TUPLE_FRAGMENTS = 8
DEFAULT_HOT_TUPLES = 100
# every fragment of every table is a named state item of the graph: past this a job spends
# minutes naming items no search could place (fragment:100000000)
MAX_FRAGMENTS = 65_536
# the hot tuples are collected on the driver and broadcast to every task: a billion kill the JVM
MAX_HOT_TUPLES = 1_000_000


@dataclass(frozen=True)
class Granularity:
    kind: str  # "table" | "fragment" | "tuple"
    fragments: int = 0  # N of fragment:N, or the fragments the non-hot tuples coalesce into
    hot_tuples: int = 0  # K of tuple granularity

    @property
    def label(self) -> str:
        if self.kind == "table":
            return "table"
        if self.kind == "fragment":
            return f"fragment:{self.fragments}"
        return f"tuple:{self.fragments}"

    def to_dict(self) -> dict:
        return {"granularity": self.label, "kind": self.kind, "fragments": self.fragments,
                "hot_tuples": self.hot_tuples,
                "hash": FRAGMENT_HASH if self.fragments else None}


def parse_granularity(text: str, hot_tuples: int = DEFAULT_HOT_TUPLES) -> Granularity:
    """'table', 'fragment:N', 'tuple' or 'tuple:N' (N fragments for the non-hot tuples)."""
    kind, _, param = str(text).strip().partition(":")
    if kind == "table" and not param:
        return Granularity("table")
    if kind in ("fragment", "tuple"):
        if kind == "fragment" and not param:
            raise TraceError("granularity fragment needs a count, e.g. fragment:8")
        n = DEFAULT_TUPLE_FRAGMENTS if not param else _positive(param, text)
        if kind == "fragment":
            return Granularity("fragment", n)
        if isinstance(hot_tuples, bool) or not isinstance(hot_tuples, int) \
                or not 1 <= hot_tuples <= MAX_HOT_TUPLES:  # 0 hot tuples is fragment granularity
            raise TraceError(f"--hot-tuples must be an integer from 1 to {MAX_HOT_TUPLES:,} with tuple "
                             f"granularity (without hot tuples, use fragment:N), got {hot_tuples!r}")
        return Granularity("tuple", n, hot_tuples)
    raise TraceError(f"granularity must be table, fragment:N or tuple[:N], got {text!r}")


def _positive(param: str, text: str) -> int:
    try:
        n = int(param)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_FRAGMENTS:
        raise TraceError(f"granularity {text!r}: the fragment count (per table) must be an integer "
                         f"from 1 to {MAX_FRAGMENTS:,}")
    return n
