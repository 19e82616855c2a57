"""Data-parallel procedures (S-Store, dissertation chapter 4): an SP whose every access to a
table is keyed by a field of its input tuple can run as one lane per partition that holds a
fragment of that table. Each batch is split into sub-batches by the fragment of each tuple's
key (`crc32(str(key mod rows)) mod N`, as rows are routed), and each lane runs its
sub-batch as its own transaction, atomic per sub-batch, against the fragments it holds.

A design says which SPs run this way in `data_parallel` (SP -> the table whose fragments set
its lanes). `lane_routes` checks that against the workload once, for the engine, the
simulator and the advisor (whose `advisor.data_parallel` builds such designs).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from costmodel.design import Design
from costmodel.errors import DesignError
from costmodel.granularity import fragment_of, placed_fragments, tables_among
from costmodel.workload import Workload

_ROUTE_MEMO_ROWS = 1 << 16  # rows whose lane a route remembers (the hash is the cost)


@dataclass(frozen=True)
class LaneRoute:
    """How one data-parallel SP splits a batch: the tuple field that keys its accesses to
    `table`, the partition of each of the table's fragments, and its lanes (the distinct
    partitions among them, in fragment order)."""

    procedure: str
    table: str
    field: str
    table_rows: int
    fragment_partitions: tuple[int, ...]
    co_tables: tuple[str, ...] = ()  # keyed by the same field, as many rows, fragmented alike: local too

    @cached_property
    def lanes(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(self.fragment_partitions))

    @cached_property
    def _fragment_lane(self) -> tuple[int, ...]:
        return tuple(self.lanes.index(p) for p in self.fragment_partitions)

    @cached_property
    def _lane_of_row(self) -> dict[int, int]:
        return {}  # filled as keys are routed: a hash per distinct row, not per tuple

    def lane_of_key(self, value: int) -> int:
        """The lane (index into `lanes`) of a tuple whose key field holds `value`."""
        row = int(value) % self.table_rows
        lane = self._lane_of_row.get(row)
        if lane is None:
            lane = self._fragment_lane[fragment_of(row, len(self.fragment_partitions))]
            if len(self._lane_of_row) < _ROUTE_MEMO_ROWS:
                self._lane_of_row[row] = lane
        return lane

    def split(self, tuples, key_index: int) -> list[list]:
        """`tuples` dealt to the lanes by the key at `key_index`, in their order."""
        out: list[list] = [[] for _ in self.lanes]
        lane_of = self.lane_of_key
        for t in tuples:
            out[lane_of(t[key_index])].append(t)
        return out

    def lane_fragments(self, lane: int) -> tuple[int, ...]:
        part = self.lanes[lane]
        return tuple(i for i, p in enumerate(self.fragment_partitions) if p == part)


def _tables_of(workload: Workload) -> dict[str, str]:
    """Each table name of `workload` -> the table it belongs to (itself, or the table of a
    fragment or hot tuple in a workload split at a design's granularity), read against the
    workload's names: a spec's table `Trade@Type` and its hot tuple `Trade@Type@7` are not
    `Trade`'s."""
    return tables_among(workload.table_names)


def keyed_field(workload: Workload, procedure: str, table: str,
                tables: dict[str, str] | None = None) -> str | None:
    """The input field that keys every access of `procedure` to `table` (or to its fragments,
    in a workload already split at a design's granularity), or None. `tables`: `_tables_of`
    the workload, where the caller has it."""
    tables = _tables_of(workload) if tables is None else tables
    keys = {a.keys for a in workload.procedure(procedure).accesses if tables.get(a.table, a.table) == table}
    if len(keys) != 1:
        return None
    kind, _, param = next(iter(keys)).partition(":")
    return param if kind == "input" and param in workload.input.fields else None


def data_parallel_blocker(workload: Workload, procedure: str,
                          tables: dict[str, str] | None = None) -> str | None:
    """Why `procedure` cannot run data-parallel, or None when it can (on some table).
    `tables`: `_tables_of` the workload, where the caller has it."""
    p = workload.procedure(procedure)
    if p.oltp:
        return "it is an OLTP procedure (not stream-triggered)"
    if p.code:
        return "it runs bundled code, which does not split by key"
    if workload.windows_of(procedure):
        return "it owns a window, which lives on one partition"
    if any(procedure in g for g in workload.nested):
        return "it belongs to a nested transaction"
    tables = _tables_of(workload) if tables is None else tables
    if not any(keyed_field(workload, procedure, tables.get(a.table, a.table), tables) for a in p.accesses):
        return "none of its tables is accessed by a key taken from the input tuple"
    return None


def lane_routes(workload: Workload, design: Design) -> dict[str, LaneRoute]:
    """The lanes of every data-parallel SP of `design` (DesignError, one line, when the
    design asks for something the workload cannot do)."""
    routes: dict[str, LaneRoute] = {}
    table_of = _tables_of(workload)
    tables = _table_rows(workload, table_of)
    for proc, table in design.data_parallel.items():
        if proc not in workload.procedure_names:
            raise DesignError(f"data_parallel names {proc!r}, which workload {workload.name!r} does not have")
        why = data_parallel_blocker(workload, proc, table_of)
        if why:
            raise DesignError(f"data_parallel: {proc!r} cannot run data-parallel: {why}")
        if table not in tables:
            raise DesignError(f"data_parallel: {proc!r} splits on {table!r}, which is not a table "
                              f"of workload {workload.name!r}")
        field = keyed_field(workload, proc, table, table_of)
        if field is None:
            raise DesignError(f"data_parallel: {proc!r} does not access {table!r} by a key from its "
                              f"input tuple (keys = \"input:FIELD\"), so it cannot split on it")
        fragments = _fragment_partitions(design, table)
        if not fragments:
            raise DesignError(f"data_parallel: {proc!r} splits on {table!r}, but the design places "
                              f"{table!r} whole (place its fragments {table}#0..{table}#N-1)")
        co = tuple(t for t in dict.fromkeys(table_of.get(a.table, a.table) for a in workload.procedure(proc).accesses)
                   if t != table and keyed_field(workload, proc, t, table_of) == field
                   and tables[t] == tables[table] and _fragment_partitions(design, t) == fragments)
        routes[proc] = LaneRoute(proc, table, field, tables[table], fragments, co)
    return routes


def _table_rows(workload: Workload, tables: dict[str, str]) -> dict[str, int]:
    """Rows of every table, also of a workload already split at a design's granularity (the
    sum of its items' rows: `T#i`, `T@KEY`); `tables`: `_tables_of` the workload."""
    rows: dict[str, int] = {}
    for t in workload.tables:
        rows[tables[t.name]] = rows.get(tables[t.name], 0) + int(t.rows)
    return rows


def _fragment_partitions(design: Design, table: str) -> tuple[int, ...]:
    found = placed_fragments(design.state, table)
    if not found:
        return ()
    n = max(found) + 1
    if sorted(found) != list(range(n)):
        missing = next(i for i in range(n) if i not in found)
        raise DesignError(f"design places fragments of {table!r} but not {table}#{missing}")
    if any(found[i] is None for i in range(n)):
        raise DesignError(f"data_parallel: a fragment of {table!r} is replicated; its lanes need "
                          f"each fragment on one partition")
    return tuple(int(found[i]) for i in range(n))


def lane_tables(workload: Workload) -> dict[str, str]:
    """SP -> the table it would split on, for every SP that can run data-parallel: the table
    it touches most rows of by an input key (ties: the first declared)."""
    out = {}
    tables = _tables_of(workload)
    for p in workload.procedures:
        if data_parallel_blocker(workload, p.name, tables):
            continue
        keyed = {}
        for a in p.accesses:
            table = tables.get(a.table, a.table)
            if keyed_field(workload, p.name, table, tables):
                keyed[table] = keyed.get(table, 0.0) + a.expected_rows
        out[p.name] = max(keyed, key=lambda t: (keyed[t], -list(keyed).index(t)))
    return out
