"""Windows in traces: how a trace names them, and which tuples each batch touches.

A window access is an ordinary access row whose `table` is the window's name and whose `key`
is the sequence number of a tuple in the window (0 for the first tuple the owner ever
inserted); a row with `rows` = n covers the n consecutive tuples from that key. The owner's
inserts are writes, its reads of the active window are reads. The trace manifest lists the
windows, `{"windows": {name: {procedure, size, slide, kind, tuple_bytes[, max_tuples,
tuples]}}}`, so the aggregation keeps each one whole, as its own state item, with its owner.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping

from costmodel.errors import finite_number  # noqa: F401 - also read from here (traces.statistics, manifest_fields)
from traces.errors import TraceError

KINDS = ("tuple", "time")
INT64_MAX = 2**63 - 1  # past this no count of a trace or its statistics can be stored


@dataclass(frozen=True)
class WindowInfo:
    name: str
    procedure: str  # the owner: the only procedure that may touch it
    size: float  # tuples, or seconds for kind "time"
    slide: float
    kind: str = "tuple"
    tuple_bytes: int = 32
    max_tuples: int | None = None
    tuples: float | None = None  # tuples when full, where the writer knew it

    def to_manifest(self) -> dict:
        entry = {"procedure": self.procedure, "size": self.size, "slide": self.slide,
                 "kind": self.kind, "tuple_bytes": self.tuple_bytes}
        if self.max_tuples is not None:
            entry["max_tuples"] = self.max_tuples
        if self.tuples is not None:
            entry["tuples"] = self.tuples
        return entry

    def full_tuples(self) -> float | None:
        """Tuples the window holds when full, if the manifest says enough to know."""
        if self.tuples is not None:
            return float(self.tuples)
        if self.kind == "tuple":
            return float(self.size)
        return None if self.max_tuples is None else float(self.max_tuples)


def _number(value, what: str) -> float:
    if not finite_number(value):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if abs(value) > INT64_MAX:
        raise ValueError(f"{what} must be at most {INT64_MAX:,}, got {value!r}")
    return float(value)


def manifest_windows(manifest: Mapping[str, Any], where: str = "trace") -> dict[str, WindowInfo]:
    """The windows a trace (or statistics) manifest declares; one-line TraceError if malformed."""
    raw = manifest.get("windows") or {}
    if not isinstance(raw, dict):
        raise TraceError(f"{where}: manifest 'windows' must be an object of name -> window")
    tables = manifest.get("tables") or {}
    table_names = set(tables) if isinstance(tables, dict) else {
        t.get("name") for t in tables if isinstance(t, dict)}
    out = {}
    for name, entry in raw.items():
        label = f"{where}: manifest window {name!r}"
        if not isinstance(entry, dict):
            raise TraceError(f"{label}: must be an object")
        if name in table_names:
            raise TraceError(f"{label}: clashes with a table of the same name")
        owner = entry.get("procedure")
        if not isinstance(owner, str) or not owner:
            raise TraceError(f"{label}: 'procedure' (its owner) must be a procedure name")
        kind = entry.get("kind", "tuple")
        if kind not in KINDS:
            raise TraceError(f"{label}: kind must be 'tuple' or 'time', got {kind!r}")
        try:
            size = _number(entry.get("size"), "size")
            slide = _number(entry.get("slide"), "slide")
            tuple_bytes = int(_number(entry.get("tuple_bytes", 32), "tuple_bytes"))
            max_tuples = entry.get("max_tuples")
            max_tuples = None if max_tuples is None else int(_number(max_tuples, "max_tuples"))
            tuples = entry.get("tuples")
            tuples = None if tuples is None else _number(tuples, "tuples")
        except ValueError as exc:
            raise TraceError(f"{label}: {exc}") from None
        if not 0 < slide <= size:
            raise TraceError(f"{label}: slide must be > 0 and <= size ({size:g}), got {slide:g}")
        out[str(name)] = WindowInfo(str(name), owner, size, slide, kind, tuple_bytes,
                                    max_tuples, tuples)
    return out


def spec_windows(spec: Mapping[str, Any]) -> list[WindowInfo]:
    """The windows of a plain workload spec (`dataclasses.asdict(Workload)`), with the tuples
    each holds when full (as `Workload.window_tuples` computes it)."""
    procs = [p["name"] for p in spec.get("procedures", [])]
    inp = spec.get("input") or {}
    out = []
    for w in spec.get("windows") or []:
        if w["procedure"] not in procs:
            raise TraceError(f"window {w['name']!r}: unknown owner procedure {w['procedure']!r}")
        info = WindowInfo(w["name"], w["procedure"], float(w["size"]), float(w["slide"]),
                          w.get("kind", "tuple"), int(w.get("tuple_bytes", 32)),
                          w.get("max_tuples"))
        full = info.full_tuples()
        if full is None:
            incoming = [s["tuples"] for s in spec.get("streams", []) if s["target"] == info.procedure]
            per_batch = float(sum(incoming)) if incoming else float(inp.get("batch_size", 10))
            full = info.size * float(inp.get("rate") or 0.0) * per_batch
        out.append(WindowInfo(info.name, info.procedure, info.size, info.slide, info.kind,
                              info.tuple_bytes, info.max_tuples, full))
    return out


class WindowReplay:
    """The sequence numbers of one window's tuples, batch after batch (dissertation 3.3.5).

    Tuples `[active_from, staged_from)` are active, `[staged_from, next_seq)` staged. A tuple
    window slides once `slide` tuples are staged (by whole slides), a time window once the
    batch time is `slide` seconds past its last slide; the oldest tuples then expire (beyond
    `size` tuples, or older than `size` seconds) and the staged ones become active.
    """

    def __init__(self, window: WindowInfo):
        self.window = window
        self.next_seq = self.staged_from = self.active_from = 0
        self.last_slide_s: float | None = None
        self._times: deque[tuple[float, int]] = deque()  # (batch time, its first sequence)

    def step(self, time_s: float, tuples: int) -> tuple[int, int]:
        """Insert one batch's tuples at `time_s`; returns (first sequence inserted, tuples of
        the active window read after a slide, 0 when it did not slide)."""
        w = self.window
        first = self.next_seq
        self.next_seq += tuples
        if w.kind == "tuple":
            slide, size = max(int(w.slide), 1), max(int(w.size), 1)
            moved = (self.next_seq - self.staged_from) // slide * slide
            if not moved:
                return first, 0
            self.staged_from += moved
            self.active_from = max(self.active_from, self.staged_from - size)
        else:
            if tuples:
                self._times.append((time_s, first))
            if self.last_slide_s is None:
                self.last_slide_s = time_s
            if time_s - self.last_slide_s < w.slide:
                return first, 0
            self.last_slide_s = time_s
            self.staged_from = self.next_seq
            while self._times and self._times[0][0] <= time_s - w.size:
                self._times.popleft()
            self.active_from = self._times[0][1] if self._times else self.next_seq
        return first, self.staged_from - self.active_from
