"""A spec seen at a design's granularity: when a design places hash fragments (`T#i`) or hot
tuples (`T@KEY`) of a spec's tables (a design recommended from statistics at that
granularity), the spec is rewritten with those items as its tables, so the simulator and the
cost model judge the design against the very workload the engine runs it on.

The engine routes a row of key k to fragment `crc32(str(k)) mod N` (and a hot tuple's key to
its own item), so an access of `rows` rows per batch to table T, with keys from its declared
distribution, becomes one access per item: the item's share s of the key mass gives
`rows x s` expected rows, touched with probability `1 - (1 - s) ** rows`. Key masses are
exact for tables up to `EXACT_KEYS` rows (uniform, sequential and input keys count as
uniform; zipf keys as the engine draws them); the keys past that are spread evenly.
"""
from __future__ import annotations

import re
import zlib

from dataclasses import replace
from functools import lru_cache
from typing import Container, Iterable

import numpy as np

from costmodel.errors import DesignError
from costmodel.workload import Access, Table, Workload

FRAGMENT_HASH = "crc32(utf8(key)) mod fragments"  # how a key finds its fragment (the only one)


def fragment_of(key: str | int, fragments: int) -> int:
    """The fragment a key hashes to: the same function Spark's crc32 computes in the job."""
    return zlib.crc32(str(key).encode("utf-8")) % fragments


# the names above, read back: `T#i` (a hash fragment) and `T@KEY` (a hot tuple)
FRAGMENT_NAME = re.compile(r"^(?P<table>.+)#(?P<index>\d+)$")
TUPLE_NAME = re.compile(r"^(?P<table>[^@]+)@(?P<key>.+)$")



def placed_fragments(placements: dict, table: str) -> dict[int, int | None]:
    """Fragment index -> partition (None: replicated) of every `table#i` a design places."""
    found = {}
    for name, part in placements.items():
        m = FRAGMENT_NAME.match(name)
        if m and m.group("table") == table:
            found[int(m.group("index"))] = part
    return found

def fragment_name(table: str, index: int) -> str:
    return f"{table}#{index}"


def tuple_name(table: str, key: str | int) -> str:
    return f"{table}@{key}"


EXACT_KEYS = 1_000_000


def with_hot_set(state: dict, names: Iterable[str]) -> dict | None:
    """A tuple-granularity placement (`state`: item -> partition) carried over to another set
    of hot tuples (`names`: the state items now, of the same tables and fragment counts): a
    hot tuple no longer hot is gone (its rows are in its fragment, placed already), and a new
    one goes where its fragment is (`crc32(key) mod N`, as the engine routes its rows). None
    where `state` and `names` are not both at tuple granularity over the same fragments.
    Why: two traces of one workload hold different hot keys, and a design of the first looked
    like another granularity to the second ("different granularities", exit 2)."""
    def fragments(items) -> dict[str, str]:  # fragment -> its table, read among `items`
        split = _SplitAmong(items)
        return {n: parts[0] for n in items if (parts := fragment_parts(n, split)) is not None}

    def hot(items) -> bool:  # a hot tuple of a table whose fragments are there (`Trades@2026` is none)
        frags = fragments(items)
        split = set(frags.values())
        return any(n not in frags and tuple_parts(n, split) for n in items)

    names = list(names)
    frags = fragments(names)
    if not (hot(state) and hot(names)) or fragments(state) != frags:
        return None
    counts: dict[str, int] = {}
    for table in frags.values():
        counts[table] = counts.get(table, 0) + 1
    out = {}
    for n in names:
        if n in state:
            out[n] = state[n]
            continue
        parts = None if n in frags else tuple_parts(n, counts)
        if parts is None:
            continue  # another item the design lacks (a window left with its owner, say): as it was
        table, key = parts
        out[n] = state[fragment_name(table, fragment_of(key, counts[table]))]
    return out


def fragment_parts(item: str, tables: Container[str]) -> tuple[str, int] | None:
    """(table, index) of `item` read as a fragment `T#i` of one of `tables` (None when T is
    none of them). Why: the fragment marker follows a table's name, never a hot tuple's key:
    `Trade@order#12` is the tuple of key `order#12` of a table `Trade`, not fragment 12 of a
    table `Trade@order`."""
    m = FRAGMENT_NAME.match(item)
    if m is None or m.group("table") not in tables:
        return None
    return m.group("table"), int(m.group("index"))


def tuple_parts(item: str, tables: Container[str]) -> tuple[str, str] | None:
    """(table, key) of `item` read as a hot tuple `T@KEY` of one of `tables`: T is the longest
    part before an '@' that is one of them (None when none is). Why: a spec may name a table
    `Trades@2026` (its trace's `spec_tables` list it), and TUPLE_NAME, cut at the first '@',
    read its hot tuple `Trades@2026@7` as key `2026@7` of a table `Trades`; FRAGMENT_NAME, cut
    at the last '#', already reads `T#0#3` as fragment 3 of the spec's table `T#0`."""
    at = len(item)
    while (at := item.rfind("@", 0, at)) > 0:
        if at + 1 < len(item) and item[:at] in tables:
            return item[:at], item[at + 1:]
    return None


def base_table(item: str, tables: Container[str] | None = None) -> str:
    """The table a state item belongs to: `T` for `T`, `T#i` and `T@KEY`. Given the workload's
    `tables`, a name among them is a table whatever it reads as, and a hot tuple's table is the
    one of them it starts with (`tuple_parts`); without, the name alone says (`T@KEY` cut at
    the first '@', its key whole: `T@order#12` is no fragment, a key keeps its '#')."""
    if tables is None:
        m = TUPLE_NAME.match(item) or FRAGMENT_NAME.match(item)
        return m.group("table") if m else item
    if item in tables:
        return item
    parts = fragment_parts(item, tables) or tuple_parts(item, tables)
    return parts[0] if parts is not None else item


class _SplitAmong:
    """The tables whose items the state `names` hold: T where its fragment `T#0` is among them
    and T is not (at tuple granularity every table is split into fragments, its hot tuples
    beside them). A T that reads as a hot tuple `P@KEY` of a table P split among them is one
    only with as many fragments as P, none missing: else its `T#i` are P's hot tuples whose
    keys end in '#' and digits. Why: hot keys `order#0` and `order#12` of `Trade` made a split
    table `Trade@order` of `Trade@order#0` and `Trade@order#12`; a spec's table `Trade@Type`
    beside `Trade` is split into as many fragments as `Trade` at a design's granularity."""

    def __init__(self, names: Container[str]):
        self.names = names

    def __contains__(self, table: object) -> bool:
        if not (isinstance(table, str) and fragment_name(table, 0) in self.names and table not in self.names):
            return False
        parts = tuple_parts(table, self)  # (a shorter table before an '@': the recursion ends)
        return parts is None or self._count(table) == self._count(parts[0])

    def _count(self, table: str) -> int:
        """How many fragments `T#0..` of `table` are among the names, from 0 to the first missing."""
        n = 0
        while fragment_name(table, n) in self.names:
            n += 1
        return n


def table_among(item: str, names: Container[str]) -> str:
    """The table a state item belongs to, given the state `names` beside it: T for a fragment
    `T#i`, unless a table T is among them (a workload at a design's granularity holds a
    table's items or the table, never both: then `T#0` is a table of its own, a name `advisor
    tune` writes); T for a hot tuple `T@KEY` where T's fragments are among them (a hot tuple
    never comes without them), T the longest such part before an '@' (`tuple_parts`). Any
    other name is a table, whatever it reads as: a spec's `Trades@2026` (was read as a hot
    tuple of a table `Trades`), and its hot tuple `Trades@2026@7` is one of it. A hot tuple's
    key keeps its '#': `Trade@order#12` is key `order#12` of `Trade` (`fragment_parts`), also
    beside a hot tuple `Trade@order#0` (`_SplitAmong`)."""
    split = _SplitAmong(names)
    parts = fragment_parts(item, split) or tuple_parts(item, split)
    if parts is not None:
        return parts[0]
    m = FRAGMENT_NAME.match(item)  # (a fragment without its `T#0` beside it: names in part)
    return m.group("table") if m is not None and m.group("table") not in names else item


def tables_among(names: Iterable[str]) -> dict[str, str]:
    """Each of the state `names` -> the table it belongs to (`table_among` them). Why: callers
    holding a workload's (possibly split) table names read them all; `base_table` without
    the tables cut a spec's `Trade@Type@7` at the first '@' and gave it to a table `Trade`."""
    known = set(names)
    return {n: table_among(n, known) for n in known}


def other_granularity(state: Iterable[str], graph, from_statistics: bool) -> bool:
    """Whether a design placing the state items `state` places fragments or tuples of a table
    `graph` holds whole, or the reverse: a granularity mismatch, not a changed workload.

    Statistics at fragment or tuple granularity name their items `T#i` and `T@KEY`; a spec's
    names are its own (`advisor tune` splits a table into tables `T#0`..., new to a design made
    before the split: drift, not another granularity), unless its graph says they belong to a
    table; names are read among their own (`table_of`, `tables_among`), as a spec's table
    `Trade@Type` is no hot tuple of `Trade`."""
    state = list(state)
    ours = {n for n in state if not graph.has_state(n)}
    items = ((n for j, n in enumerate(graph.state_names) if graph.table_of(j) != n) if from_statistics
             else (n for n, t in zip(graph.state_names, graph.state_tables) if t != n))
    table_of = tables_among(state)
    placed = set(state)
    return any(table_of[n] != n for n in ours) or any(n not in placed for n in items)


def workload_at(workload: Workload, state_names: Iterable[str]) -> Workload:
    """`workload` with its tables replaced by the items a design names (`state_names`);
    the workload itself when the design places whole tables."""
    names = list(state_names)
    tables = set(workload.table_names)
    if not any(base_table(n, tables) != n for n in names):
        return workload  # whole tables (or another workload's names: the caller's check says so)
    items = _items_by_table(workload, names)
    tables, shares = [], {}
    for t in workload.tables:
        if t.name not in items:
            tables.append(t)
            continue
        fragments, hot = items[t.name]
        kinds = {a.keys for p in workload.procedures for a in p.accesses if a.table == t.name}
        for kind in kinds | {"uniform"}:
            shares[(t.name, kind)] = _item_shares(t.name, t.rows, kind, fragments, hot)
        for name, share in shares[(t.name, "uniform")].items():  # a row's share of the table
            rows = 1 if name.startswith(f"{t.name}@") else max(1, int(round(t.rows * share)))
            tables.append(Table(name, rows, t.row_bytes, t.key, t.read_mostly))
    procedures = []
    for p in workload.procedures:
        accesses = []
        for a in p.accesses:
            if a.table not in items:
                accesses.append(a)
                continue
            for name, s in shares[(a.table, a.keys)].items():
                if s <= 0:
                    continue
                touched = 1.0 - (1.0 - s) ** a.rows
                if touched > 0:
                    accesses.append(Access(name, a.mode, a.rows * s / touched, a.keys,
                                           a.probability * touched))
                else:  # rows so few (5e-324) the chance underflows: a row, as often as the expected rows
                    accesses.append(Access(name, a.mode, 1.0, a.keys, a.probability * a.rows * s))
        procedures.append(replace(p, accesses=tuple(accesses)))
    return replace(workload, tables=tuple(tables), procedures=tuple(procedures))


def fragment_shares(rows: int, keys: str, fragments: int) -> list[float]:
    """Each of `fragments` hash fragments' share of the key mass of accesses keyed `keys`."""
    shares = _item_shares("T", rows, keys, fragments, [])
    return [shares[f"T#{i}"] for i in range(fragments)]


def _items_by_table(workload: Workload, names: list[str]) -> dict[str, tuple[int, list[str]]]:
    """Table -> (number of fragments, hot keys) for every table the design splits; a name that
    is no table, fragment or tuple of the workload, or fragments with a gap, are refused."""
    tables = set(workload.table_names)
    frags: dict[str, set[int]] = {}
    hot: dict[str, list[str]] = {}
    for name in names:
        if name in tables or name in workload.window_names:
            continue
        fragment = fragment_parts(name, tables)
        if fragment is not None:
            frags.setdefault(fragment[0], set()).add(fragment[1])
            continue
        parts = tuple_parts(name, tables)  # (a table of the spec may hold '@': `Trades@2026@7`)
        if parts is not None:
            hot.setdefault(parts[0], []).append(parts[1])
            continue
        raise DesignError(f"design places {name!r}, which is not a table of workload "
                          f"{workload.name!r} (nor a fragment TABLE#i or a tuple TABLE@KEY of one)")
    out = {}
    for table in sorted(set(frags) | set(hot), key=workload.table_names.index):
        indices = frags.get(table, set())
        n = max(indices) + 1 if indices else 0
        missing = [i for i in range(n) if i not in indices]
        if missing:
            raise DesignError(f"design places fragments of {table!r} but not {table}#{missing[0]}")
        if table in names:
            raise DesignError(f"design places {table!r} both whole and in parts")
        if n == 0 and hot.get(table):
            raise DesignError(f"design places hot tuples of {table!r} but not its other rows "
                              f"(fragments {table}#0..)")
        out[table] = (n, hot.get(table, []))
    return out


def _item_shares(table: str, rows: int, keys: str, fragments: int, hot: list[str]) -> dict[str, float]:
    """Each item's share of an access's key mass: the hot tuples (by their key text), then the
    fragments (the rest of the keys, hashed)."""
    n = max(1, min(int(rows), EXACT_KEYS))
    tail = 1.0 - n / max(int(rows), 1)  # the share of keys past EXACT_KEYS, spread evenly
    mass = _key_mass(n, keys) * (1.0 - tail)
    out: dict[str, float] = {}
    taken = np.zeros(n, dtype=bool)
    for key in hot:
        k = int(key) if key.isdigit() and int(key) < n else None
        out[f"{table}@{key}"] = float(mass[k]) if k is not None else 0.0
        if k is not None:
            taken[k] = True
    per_fragment = np.bincount(_fragment_of_keys(n, fragments), weights=np.where(taken, 0.0, mass),
                               minlength=fragments)
    for i in range(fragments):
        out[f"{table}#{i}"] = float(per_fragment[i]) + tail / fragments
    return out


@lru_cache(maxsize=16)
def _fragment_of_keys(n: int, fragments: int) -> np.ndarray:
    """crc32 of each key's decimal text mod `fragments`, as the engine and the aggregation hash."""
    return np.fromiter((fragment_of(k, fragments) for k in range(n)), dtype=np.int64, count=n)


def _key_mass(n: int, keys: str) -> np.ndarray:
    kind, _, param = keys.partition(":")
    if kind == "zipf":
        w = np.arange(1, n + 1, dtype=np.float64) ** -float(param)
        return w / w.sum()
    return np.full(n, 1.0 / n)
