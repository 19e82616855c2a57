"""The referential integrity of a trace: what the per-row checks cannot see.

- A `txn_id` names one execution: a procedure appears at most once under it (the members
  of a nested transaction share the id, one row each), and all its rows belong to one batch.
- Every access belongs to a transaction of `txns`: up to 1 % of the access rows may not (a
  trace cut out of a running system can catch accesses whose transaction it does not hold);
  those are counted and left out (`unmatched_access_rows` in the statistics), more is refused.
- Every flow belongs to a batch some transaction of `txns` ran in: up to 1 % of the flow rows
  may not (the same cut), more is refused (their tuples would count in batches that never ran).

Without these, a trace whose rows all share one id, or whose accesses match no transaction,
would aggregate into a workload that never ran. The check holds three small columns of
`txns` in memory (20 bytes a transaction) and streams `accesses` one record batch at a time.
"""
from __future__ import annotations

from bisect import bisect_right
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from traces.errors import TraceError

MAX_UNMATCHED_FRACTION = 0.01

# (first row number in the dataset, file, batch) over a dataset's files, reading some columns
BatchReader = Callable[[str, str, list, list], Iterator[tuple[int, Path, pa.RecordBatch]]]


class _Rows:
    """Maps a row number of the dataset back to its file, for the message."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.files: list[Path] = []

    def add(self, offset: int, file: Path) -> None:
        if not self.files or self.files[-1] != file:
            self.starts.append(offset)
            self.files.append(file)

    def file_of(self, row: int) -> str:
        return self.files[bisect_right(self.starts, row) - 1].name


def check_integrity(where: str, txn_files: list, access_files: list, batches: BatchReader,
                    flow_files: list = ()) -> None:
    """Raise TraceError (one line naming the row and its file) on the first broken reference."""
    ids, procs, batch_ids = [], [], []
    names: dict[str, int] = {}
    rows = _Rows()
    for offset, file, batch in batches(where, "txns", txn_files, ["txn_id", "procedure", "batch_id"]):
        rows.add(offset, file)
        ids.append(batch.column("txn_id").to_numpy())
        proc = batch.column("procedure")
        if not pa.types.is_dictionary(proc.type):
            proc = proc.dictionary_encode()
        codes = np.array([names.setdefault(v, len(names)) for v in proc.dictionary.to_pylist()],
                         dtype=np.int32)
        procs.append(codes[proc.indices.to_numpy()] if len(codes) else np.zeros(0, np.int32))
        batch_ids.append(batch.column("batch_id").to_numpy())
    txn = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    proc = np.concatenate(procs) if procs else np.zeros(0, np.int32)
    bid = np.concatenate(batch_ids) if batch_ids else np.zeros(0, np.int64)
    order = np.lexsort((proc, txn))
    ordered = txn[order]
    same_txn = ordered[1:] == ordered[:-1]
    procedure_of = {code: name for name, code in names.items()}

    def fail(row: int, first: int, problem: str) -> TraceError:
        return TraceError(f"{where}: txns: column 'txn_id', row {row} (in {rows.file_of(row)}): "
                          f"{problem} (first at row {first}); a txn_id names one execution")

    twice = same_txn & (proc[order][1:] == proc[order][:-1])
    if twice.any():
        first, row = _first_pair(order, twice)
        raise fail(row, first, f"transaction {txn[row]} of {procedure_of[proc[row]]!r} appears twice")
    other_batch = same_txn & (bid[order][1:] != bid[order][:-1])
    if other_batch.any():
        first, row = _first_pair(order, other_batch)
        raise fail(row, first, f"transaction {txn[row]} is in batch {bid[row]} and in batch {bid[first]}")
    known = ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered
    _references(where, batches, "accesses", access_files, "txn_id", _membership(known), unmatched_message)
    _references(where, batches, "flows", list(flow_files), "batch_id", _membership(np.unique(bid)),
                unmatched_flows_message)


def _references(where: str, batches: BatchReader, dataset: str, files: list, column: str,
                is_known: Callable[[np.ndarray], np.ndarray], message: Callable[..., str]) -> None:
    """Stream `column` of `dataset` and refuse it (`message`) where more than
    MAX_UNMATCHED_FRACTION of its rows name nothing `is_known` knows."""
    unmatched, total, first = 0, 0, None
    for offset, file, batch in batches(where, dataset, files, [column]):
        refs = batch.column(column).to_numpy()
        missing = ~is_known(refs)
        total += len(refs)
        if missing.any():
            unmatched += int(missing.sum())
            if first is None:
                i = int(np.argmax(missing))
                first = (offset + i, file.name, int(refs[i]))
    if first is not None and unmatched > MAX_UNMATCHED_FRACTION * total:
        raise TraceError(message(where, unmatched, total, *first))


def unmatched_message(where: str, unmatched: int, total: int, row: int | None, file: str,
                      txn: int) -> str:
    return _unmatched(where, "accesses", "txn_id", row, file, f"transaction {txn} has no row in txns",
                      f"{unmatched:,} of {total:,} access rows", "an access belongs to an execution")


def unmatched_flows_message(where: str, unmatched: int, total: int, row: int | None, file: str,
                            batch: int) -> str:
    return _unmatched(where, "flows", "batch_id", row, file, f"batch {batch} has no transaction in txns",
                      f"{unmatched:,} of {total:,} flow rows", "a flow belongs to a batch that ran")


def _unmatched(where: str, dataset: str, column: str, row: int | None, file: str, first: str,
               how_many: str, why: str) -> str:
    at = f"row {row} " if row is not None else ""
    return (f"{where}: {dataset}: column '{column}', {at}(in {file}): {first}, and {how_many} have "
            f"none (more than {MAX_UNMATCHED_FRACTION:.0%}; {why})")


def _membership(known: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A vectorised `x in known` for a sorted, distinct id array: a dense mask when the ids
    fill their range (ids handed out in order: one lookup each), else a binary search."""
    if not len(known):
        return lambda refs: np.zeros(len(refs), dtype=bool)
    low, span = int(known[0]), int(known[-1]) - int(known[0]) + 1
    if span <= 4 * len(known) + 4096:
        mask = np.zeros(span, dtype=bool)
        mask[known - low] = True

        def dense(refs: np.ndarray) -> np.ndarray:
            at = refs - low
            inside = (at >= 0) & (at < span)
            out = np.zeros(len(refs), dtype=bool)
            out[inside] = mask[at[inside]]
            return out
        return dense

    def search(refs: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(known, refs), len(known) - 1)
        return known[at] == refs
    return search


def _first_pair(order: np.ndarray, hits: np.ndarray) -> tuple[int, int]:
    """(the earlier row, the later row) of the pair that repeats first in the dataset."""
    at = np.flatnonzero(hits)
    a, b = order[at], order[at + 1]
    later = np.maximum(a, b)
    k = int(np.argmin(later))
    return int(min(a[k], b[k])), int(later[k])
