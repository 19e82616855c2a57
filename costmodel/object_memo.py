"""A bounded memo of a pure function of a frozen record, by the record itself (identity).

Why: a report hands the same Workload object to several steps in turn (the scaling chart's
graph, its pick and its runs on each cluster), and each checked it as a spec (written as TOML
and parsed back: 0.17 s at 150 SPs) or digested it (0.04 s) again: 13 checks and 30 digests
of one 150-SP report. By identity, not by equality: `1 == 1.0`, so two equal records can still
differ in what a check or a digest reads of them. Only hashable records are kept: hashing
fails on a list or dict inside, the parts a caller could still change in place.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable


class ObjectMemo:
    """`get(record, compute)`: `compute()`'s result, kept for this very `record` (the `limit`
    most recently used, each held so its id stays its own). An exception is not kept (the
    next call computes again), nor is anything for a record that cannot be hashed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.computed = 0  # calls that computed (what a test counts)
        self._kept: OrderedDict[int, tuple[Any, Any]] = OrderedDict()

    def get(self, record: Any, compute: Callable[[], Any]) -> Any:
        kept = self._kept.get(id(record))
        if kept is not None and kept[0] is record:
            self._kept.move_to_end(id(record))
            return kept[1]
        self.computed += 1
        value = compute()
        try:
            hash(record)
        except TypeError:  # something inside may change in place: keep nothing
            return value
        self._kept[id(record)] = (record, value)
        self._kept.move_to_end(id(record))
        while len(self._kept) > self.limit:
            self._kept.popitem(last=False)
        return value

    def clear(self) -> None:
        self._kept.clear()
