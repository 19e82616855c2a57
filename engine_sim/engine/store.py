"""A partition's state: its tables (in-memory dicts), stream tables (output batches kept for
recovery, and moved batches), per-lane progress (the last batch each SP lane committed here)
and the OLTP requests it has applied. Every change a transaction makes is undo-logged, so an
abort (or a 2PC abort vote) restores the partition exactly; every row access is recorded for
the history and the trace.

Declared workloads use virtual rows: a row that was never written holds a value derived from
(table, key), so a million-row table costs nothing until it is touched.
"""
from __future__ import annotations

import hashlib
import pickle

from engine_sim.engine import windows as win
from engine_sim.engine.keys import MASK, mix64, stable_seed
from engine_sim.engine.txn import Batch

_ABSENT = object()


class Store:
    def __init__(self, tables: dict[str, dict], virtual: frozenset[str], windows: dict | None = None):
        self.tables = tables  # name -> {key: value}; a window is a table too (windows.py)
        self.virtual = virtual  # tables whose missing rows read as a derived default
        self.windows: dict[str, win.WindowSpec] = dict(windows or {})  # windows held here
        for name in self.windows:
            self.tables.setdefault(name, {})
        self._salt = {t: stable_seed("table", t) for t in tables}
        # stream tables: one row per tuple, (batch key, i) -> tuple, plus a head row per batch
        # key (from SP, to SP, batch, lane) -> (tuples, carry)
        self.stream_heads: dict[tuple, tuple] = {}
        self.stream_rows: dict[tuple, tuple] = {}
        self.progress: dict[tuple[str, int], int] = {}  # (unit, lane) -> last committed batch
        self.oltp_done: set[tuple[str, int]] = set()
        self.undo: list = []
        self.accesses: list = []  # (child, table, key, mode) of the running txn

    # -- transactions -------------------------------------------------------------------------
    def begin(self) -> None:
        self.undo = []
        self.accesses = []

    def commit(self) -> list:
        acc, self.undo, self.accesses = self.accesses, [], []
        return acc

    def rollback(self) -> None:
        for container, key, old in reversed(self.undo):
            if old is _ABSENT:
                container.pop(key, None)
            else:
                container[key] = old
        self.undo = []
        self.accesses = []

    def _set(self, container: dict, key, value) -> None:
        self.undo.append((container, key, container.get(key, _ABSENT)))
        container[key] = value

    def _delete(self, container: dict, key) -> bool:
        old = container.pop(key, _ABSENT)
        if old is _ABSENT:
            return False
        self.undo.append((container, key, old))
        return True

    def add_table(self, name: str, virtual: bool) -> dict:
        """A table this partition starts to hold (a migration): its rows, empty if new."""
        if name not in self.tables:
            self.tables[name] = {}
            self._salt[name] = stable_seed("table", name)
            if virtual:
                self.virtual = self.virtual | {name}
        return self.tables[name]

    def drop_table(self, name: str) -> None:
        """A table this partition no longer holds (a migration moved its rows away)."""
        self.tables.pop(name, None)
        self.virtual = self.virtual - {name}

    def default(self, table: str, key):
        return mix64(self._salt[table] ^ (key if isinstance(key, int) else stable_seed(key))) >> 16

    # -- operations -----------------------------------------------------------------------------
    def apply(self, op: tuple):
        """Execute one operation of the running transaction and return its result.

        ('r', child, table, key)         declared read -> value
        ('w', child, table, key, tag)    declared write: value := mix(value, tag)
        ('get', child, table, key)       -> value or None
        ('put', child, table, key, v)
        ('incr', child, table, key, d, limit)  value += d unless it would pass limit -> new value | None
        ('del', child, table, key)       -> deleted?
        ('scan', child, table)           -> [(key, value)] held here
        ('delwhere', child, table, i, v) delete rows whose value[i] == v -> count
        ('win', child, window, batch, tuples)  the owner's window step -> aggregate | None
        ('wread', child, window, n)      read the newest n active tuples -> aggregate
        ('spush', key, batch) / ('spop', key) / ('prog', unit, lane, batch) / ('oltp', proc, batch)
        """
        kind = op[0]
        if kind == "r":
            _, child, table, key = op
            self.accesses.append((child, table, key, "read"))
            rows = self.tables[table]
            v = rows.get(key, _ABSENT)
            return self.default(table, key) if v is _ABSENT else v
        if kind == "w":
            _, child, table, key, tag = op
            self.accesses.append((child, table, key, "write"))
            rows = self.tables[table]
            v = rows.get(key, _ABSENT)
            if v is _ABSENT:
                v = self.default(table, key)
            self._set(rows, key, (v * 6364136223846793005 + tag) & MASK)
            return None
        if kind == "get":
            _, child, table, key = op
            self.accesses.append((child, table, key, "read"))
            v = self.tables[table].get(key)
            if v is None and table in self.virtual:
                return self.default(table, key)
            return v
        if kind == "put":
            _, child, table, key, value = op
            self.accesses.append((child, table, key, "write"))
            self._set(self.tables[table], key, value)
            return None
        if kind == "incr":
            _, child, table, key, delta, limit = op
            self.accesses.append((child, table, key, "write"))
            rows = self.tables[table]
            v = rows.get(key) or 0
            if limit is not None and v + delta > limit:
                return None
            self._set(rows, key, v + delta)
            return v + delta
        if kind == "del":
            _, child, table, key = op
            self.accesses.append((child, table, key, "write"))
            return self._delete(self.tables[table], key)
        if kind == "scan":
            _, child, table = op
            rows = sorted(self.tables[table].items())
            self.accesses.extend((child, table, k, "read") for k, _ in rows)
            return rows
        if kind == "delwhere":
            _, child, table, index, value = op
            rows = self.tables[table]
            gone = sorted(k for k, v in rows.items() if v[index] == value)
            for k in gone:
                self.accesses.append((child, table, k, "write"))
                self._delete(rows, k)
            return len(gone)
        if kind == "win":
            _, child, name, batch_id, tuples = op
            return win.step(self, child, self.windows[name], batch_id, tuples)
        if kind == "wread":
            _, child, name, n = op
            return win.read_newest(self, child, name, n)
        if kind == "spush":  # append an atomic batch to a stream table, a row per tuple
            key, batch = op[1], op[2]
            rows = self.stream_rows
            for i, t in enumerate(batch.tuples):
                self._set(rows, (key, i), t)
            self._set(self.stream_heads, key, (len(batch.tuples), batch.carry))
            return None
        if kind == "spop":  # consume it: the rows leave the stream table
            key = op[1]
            head = self.stream_heads.get(key)
            if head is None:
                return None
            rows = self.stream_rows
            tuples = tuple(rows[(key, i)] for i in range(head[0]))
            for i in range(head[0]):
                self._delete(rows, (key, i))
            self._delete(self.stream_heads, key)
            return Batch(tuples, head[1])
        if kind == "prog":
            _, unit, lane, batch = op
            if self.progress.get((unit, lane), -1) < batch:
                self._set(self.progress, (unit, lane), batch)
            return None
        if kind == "oltp":
            key = (op[1], op[2])
            if key not in self.oltp_done:
                self.undo.append((_SetUndo(self.oltp_done), key, _ABSENT))
                self.oltp_done.add(key)
            return None
        raise ValueError(f"unknown operation {kind!r}")

    # -- snapshots and digests ------------------------------------------------------------------
    def stream_batch(self, key):
        """A batch in this partition's stream table (read, not consumed), or None."""
        head = self.stream_heads.get(key)
        if head is None:
            return None
        return Batch(tuple(self.stream_rows[(key, i)] for i in range(head[0])), head[1])

    def stream_batches(self) -> dict:
        return {key: self.stream_batch(key) for key in self.stream_heads}

    def snapshot_bytes(self) -> bytes:
        return pickle.dumps((self.tables, self.stream_heads, self.stream_rows, self.progress,
                             self.oltp_done), protocol=pickle.HIGHEST_PROTOCOL)

    def restore_bytes(self, data: bytes) -> None:
        (self.tables, self.stream_heads, self.stream_rows, self.progress,
         self.oltp_done) = pickle.loads(data)
        self.undo, self.accesses = [], []

    def gc_streams(self, completed_below: int) -> int:
        """Drop stream batches of batches every SP has finished (outside any transaction)."""
        gone = [k for k in self.stream_heads if k[2] < completed_below]
        for k in gone:
            n, _ = self.stream_heads.pop(k)
            for i in range(n):
                self.stream_rows.pop((k, i), None)
        return len(gone)

    def table_digest(self, table: str) -> int:
        """Order-independent 128-bit sum of row hashes: the same rows give the same digest
        however they are spread over partitions."""
        total = 0
        for key, value in self.tables[table].items():
            h = hashlib.blake2b(repr((table, key, value)).encode(), digest_size=16).digest()
            total += int.from_bytes(h, "little")
        return total % (1 << 128)


class _SetUndo:
    """Lets a set take part in the dict-shaped undo log (pop = discard)."""

    def __init__(self, target: set):
        self.target = target

    def pop(self, key, default=None):
        self.target.discard(key)

    def __setitem__(self, key, value):
        self.target.add(key)
