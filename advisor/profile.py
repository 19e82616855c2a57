"""A workload's profile: the figures a design was made for, kept in its provenance, so a later
drift check can say what changed (an SP whose work or rate moved, a state item that became
hot, a stream that grew) and not only that the design is now slower.

Per SP its processing load per batch; per state item its bytes and the rows accessed per
batch; per stream edge its tuples per batch. Graphs larger than MAX_PROFILE_ITEMS keep no
profile (the design file stays small); the check then compares with `--since` only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodel.graph import WorkloadGraph

MAX_PROFILE_ITEMS = 5_000  # SPs + state items + stream edges
CHANGE = 0.20  # a figure that moved by more than this share is a change worth naming
MAX_NAMED = 5  # changes a check's text names per kind (its JSON lists them all)


def workload_profile(graph: WorkloadGraph) -> dict | None:
    """The profile of `graph` as plain JSON data, or None when the graph is too large."""
    c = graph.cost
    if graph.n_proc + graph.n_state + c.pp_src.size > MAX_PROFILE_ITEMS:
        return None
    rows = np.bincount(c.ps_state, weights=c.ps_weight, minlength=c.n_state) if c.ps_state.size else np.zeros(c.n_state)
    streams: dict[str, float] = {}
    for s, t, w in zip(c.pp_src, c.pp_dst, c.pp_weight):
        key = f"{graph.proc_names[s]} -> {graph.proc_names[t]}"
        streams[key] = streams.get(key, 0.0) + float(w)
    return {"procedures": {n: float(x) for n, x in zip(graph.proc_names, c.proc_load)},
            "state": {n: [float(b), float(r)] for n, b, r in zip(graph.state_names, c.state_bytes, rows)},
            "streams": streams}


def check_profile(profile, where: str) -> None:
    """Refuse (one AdvisorError line) a profile that is not what `workload_profile` writes: a
    design file is the user's, and a hand-edited one reaches here."""
    from advisor.errors import AdvisorError
    from costmodel.errors import finite_float

    def amount(v) -> bool:
        """A figure `workload_profile` writes: a number >= 0 (an int past a float's range, 10**400,
        was an OverflowError comparing it; a negative load read as a change of -0.00x)."""
        return finite_float(v) and v >= 0

    shapes = {"procedures": amount, "streams": amount,
              "state": lambda v: isinstance(v, list) and len(v) == 2 and all(map(amount, v))}
    if not isinstance(profile, dict):
        raise AdvisorError(f"{where} must be an object, got {type(profile).__name__}")
    for key, fits in shapes.items():
        part = profile.get(key, {})
        if not isinstance(part, dict):
            raise AdvisorError(f"{where}.{key} must be an object")
        for name, value in part.items():
            if not fits(value):
                shape = "[bytes, rows per batch]" if key == "state" else "a finite number >= 0"
                raise AdvisorError(f"{where}.{key}.{name} must be {shape}, got {value!r:.80}")


@dataclass(frozen=True)
class Change:
    """One figure of the workload that moved: what, its name, before and after."""

    kind: str  # "procedure", "state", "state size", "stream"
    name: str
    before: float | None  # None: new
    after: float | None  # None: gone
    unit: str

    def describe(self) -> str:
        if self.before is None:
            return f"new {self.kind} {self.name} ({self.after:,.4g} {self.unit})"
        if self.after is None:
            return f"{self.kind} {self.name} is gone (was {self.before:,.4g} {self.unit})"
        ratio = f"{self.after / self.before:.2f}x" if self.before else "from 0"
        return f"{self.kind} {self.name}: {self.before:,.4g} -> {self.after:,.4g} {self.unit} ({ratio})"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "before": self.before, "after": self.after,
                "unit": self.unit}


def compare_profiles(before: dict, after: dict, threshold: float = CHANGE) -> list[Change]:
    """Every figure that moved by more than `threshold` (or appeared, or went), the largest
    moves of each kind first: SP load per batch, rows accessed per batch of each state item
    (heat), each state item's size (MB, 10^6 bytes; a new or gone item is said once, as state),
    tuples per batch of each stream."""
    out: list[Change] = []
    kinds = (("procedure", "procedures", None, "load/batch", 1.0), ("state", "state", 1, "rows/batch", 1.0),
             ("state size", "state", 0, "MB", 1e-6), ("stream", "streams", None, "tuples/batch", 1.0))
    for kind, key, column, unit, scale in kinds:
        old, new = before.get(key, {}), after.get(key, {})
        pick = (lambda v: v * scale) if column is None else (lambda v: v[column] * scale)
        found = []
        for name in sorted(set(old) | set(new)):
            a = pick(old[name]) if name in old else None
            b = pick(new[name]) if name in new else None
            if (a is None or b is None) and column == 0:
                continue  # new or gone: the "state" kind says it
            if a is not None and b is not None and abs(b - a) <= threshold * max(abs(a), 1e-12):
                continue
            size = abs((b or 0.0) - (a or 0.0)) / max(abs(a or 0.0), abs(b or 0.0), 1e-12)
            found.append((size, Change(kind, name, a, b, unit)))
        found.sort(key=lambda t: -t[0])
        out += [c for _, c in found]
    return out
