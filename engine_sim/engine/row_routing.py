"""Which partition every row of a run lives on (`RowRouter`): a design places whole tables, hash fragments (`T#i`, crc32 of the
key text mod N, as the trace aggregation names them) or hot tuples (`T@KEY`) on partitions,
or replicates them (None). In data-parallel mode the tables that data-parallel procedures
touch are hash-partitioned on the sub-batch key over every partition instead.
"""
from __future__ import annotations

import zlib

from engine_sim.engine.errors import EngineError
from costmodel.granularity import fragment_of, fragment_parts, tuple_parts


class RowRouter:
    """Row -> partition routing for one run (None means: replicated on every partition)."""

    def __init__(self, tables: dict[str, int], state: dict[str, int | None], n_partitions: int,
                 dp_tables: frozenset[str] = frozenset(), windows: dict[str, int] | None = None):
        self.n = n_partitions
        self.all = tuple(range(n_partitions))
        self.whole: dict[str, int | None] = {}
        self.fragments: dict[str, list[int | None]] = {}
        self.hot: dict[str, dict[str, int | None]] = {}
        self.dp_tables = frozenset(dp_tables)
        frag_seen: dict[str, dict[int, int | None]] = {}
        for name, part in state.items():
            if part is not None and not (isinstance(part, int) and 0 <= part < n_partitions):
                raise EngineError(f"design places {name!r} on partition {part!r}, outside 0..{n_partitions - 1}")
            if name in tables:
                self.whole[name] = part
                continue
            fragment = fragment_parts(name, tables)  # (`Trades@k#3`: key `k#3` of `Trades`)
            if fragment is not None:
                frag_seen.setdefault(fragment[0], {})[fragment[1]] = part
                continue
            hot = tuple_parts(name, tables)  # (`Trades@2026@7`: key 7 of a table `Trades@2026`)
            if hot is not None:
                self.hot.setdefault(hot[0], {})[hot[1]] = part
                continue
            raise EngineError(f"design places {name!r}, which is not a table of the workload "
                              f"(nor a fragment TABLE#i or a tuple TABLE@KEY of one)")
        for name, part in (windows or {}).items():  # a window: whole, on its owner's partition
            self.whole[name] = part
        for table, frags in frag_seen.items():
            n = max(frags) + 1
            missing = [i for i in range(n) if i not in frags]
            if missing:
                raise EngineError(f"design places fragments of {table!r} but not {table}#{missing[0]} "
                                  f"(fragments must be {table}#0..{table}#{n - 1})")
            self.fragments[table] = [frags[i] for i in range(n)]
        for table in tables:
            if table not in self.whole and table not in self.fragments and table not in self.dp_tables:
                raise EngineError(f"design does not place table {table!r}")

    # -- routing ------------------------------------------------------------------------------
    def row_partition(self, table: str, key, pk_value: int | None = None) -> int | None:
        """The partition of one row; None when the row is replicated everywhere."""
        if table in self.dp_tables:
            return (pk_value if pk_value is not None else hash_key(key)) % self.n
        hot = self.hot.get(table)
        if hot is not None:
            part = hot.get(str(key), _MISSING)
            if part is not _MISSING:
                return part
        frags = self.fragments.get(table)
        if frags is not None:
            return frags[fragment_of(key, len(frags))]
        return self.whole[table]

    def table_partitions(self, table: str) -> tuple[int, ...]:
        """Every partition holding some row of the table (all of them when replicated)."""
        if table in self.dp_tables:
            return self.all
        parts: set[int] = set()
        places = list(self.fragments.get(table, [self.whole.get(table)]))
        places += list(self.hot.get(table, {}).values())
        for p in places:
            if p is None:
                return self.all
            parts.add(p)
        return tuple(sorted(parts))

    def replicated(self, table: str) -> bool:
        return table not in self.dp_tables and table not in self.fragments \
            and not self.hot.get(table) and self.whole.get(table, 0) is None

    def holds(self, partition: int, table: str) -> bool:
        return partition in self.table_partitions(table)


_MISSING = object()


def hash_key(key) -> int:
    return key if isinstance(key, int) and key >= 0 else zlib.crc32(str(key).encode())
