"""The design file, format `advisor.design/1`: a Design to JSON and back, every field checked.

    {"format": "advisor.design/1", "workload": NAME,
     "cluster": {"machines": M, "partitions_per_machine": P},
     "weights": {"alpha", "beta", "gamma"}, "method": TEXT,
     "procedures": {SP: {"machine": m, "partition": p}},
     "state": {ITEM: {"machine": m, "partition": p} | {"replicated": true}},
     "cost": {...} | null, "provenance": {...}, "data_parallel": {SP: TABLE}}   (optional)

`partition` is the global partition index and `machine = partition // P`. A hand-written
file may give `machine` alone when P is 1. The reader returns the constructor's fields rather
than a Design, so this module sits below `design.py` and the Design's `load`/`save` are thin.
"""
from __future__ import annotations

import hashlib
import json
import numbers

from costmodel import CostBreakdown, Weights
from costmodel.errors import DesignError, finite_float
from costmodel.workload import MAX_MACHINES, MAX_PARTITIONS, MAX_PARTITIONS_PER_MACHINE

FORMAT = "advisor.design/1"

_COST_NUMBERS = ("state_colocation", "processing_colocation", "load_balance", "total",
                 "partition_load_balance", "machines_used")


# what a design's provenance claims of the placement it was made with: dropped from a design
# edited since (`edited_since_made`), whose figures they no longer are
PLACEMENT_CLAIMS = ("placement_sha256", "request_sha256", "picked", "predicted_tuples_per_s",
                    "table_level_predicted_tuples_per_s", "simulator", "simulated_search", "migration")


def placement_digest(design) -> str:
    """Where `design` puts every SP and state item, on its cluster, as a digest (numpy's
    integers as Python's: a design built from arrays digests as its file does)."""
    placed = {"workload": design.workload, "cluster": [int(design.machines), int(design.partitions_per_machine)],
              "procedures": {n: int(p) for n, p in design.procedures.items()},
              "state": {n: None if p is None else int(p) for n, p in design.state.items()},
              "data_parallel": dict(design.data_parallel)}
    return hashlib.sha256(json.dumps(placed, sort_keys=True).encode()).hexdigest()


def edited_since_made(design) -> bool:
    """Whether `design` places anything otherwise than when the advisor made it (its
    provenance's `placement_sha256`): a design changed in Python (`dataclasses.replace`)
    keeps the cost and the figures of the one it was made from."""
    made = (design.provenance or {}).get("placement_sha256")
    return made is not None and made != placement_digest(design)


def design_to_dict(design) -> dict:
    """The file's JSON object for `design` (a costmodel.design.Design). An edited design
    (`edited_since_made`) is written without the cost and the figures it no longer has, its
    provenance saying `"edited": true`."""
    ppm = int(design.partitions_per_machine)

    def place(p):
        return {"replicated": True} if p is None else {"machine": int(p) // ppm, "partition": int(p)}

    edited = edited_since_made(design)
    provenance = design.provenance
    if edited:
        provenance = {k: v for k, v in provenance.items() if k not in PLACEMENT_CLAIMS} | {"edited": True}
    return {
        "format": FORMAT,
        "workload": design.workload,
        "cluster": {"machines": int(design.machines), "partitions_per_machine": ppm},
        "weights": design.weights.to_dict(),
        "method": design.method,
        "procedures": {n: place(p) for n, p in design.procedures.items()},
        "state": {n: place(p) for n, p in design.state.items()},
        "cost": design.cost.to_dict() if design.cost is not None and not edited else None,
        "provenance": provenance,
    } | ({"data_parallel": dict(design.data_parallel)} if design.data_parallel else {})


def is_count(v) -> bool:
    """A machine count or partitions per machine: an integer >= 1 (a bool is no count)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1


def is_partition(p, n: int) -> bool:
    """A placement on one of `n` partitions: an integer in 0..n-1."""
    return isinstance(p, numbers.Integral) and not isinstance(p, bool) and 0 <= p < n


def design_fields(data: dict, source: str = "<design>") -> dict:
    """The Design constructor's keyword arguments read from a file's JSON object; a field that
    is missing, mistyped or out of range is one DesignError naming `source` and the field."""
    def fail(problem: str) -> DesignError:
        return DesignError(f"{source}: {problem}")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise fail(f"not a design file (expected \"format\": \"{FORMAT}\")")
    _known_keys(data, TOP_KEYS, "", "a design", fail)
    machines, ppm = _cluster(data, fail)
    n = machines * ppm

    def partition_of(kind: str, name: str, entry) -> int | None:
        where = f"{kind}.{name}"
        if not isinstance(entry, dict):
            raise fail(f"{where}: must be an object with \"partition\" or \"replicated\"")
        _known_keys(entry, ENTRY_KEYS, f"{where}.", "a placement", fail)
        if not isinstance(entry.get("replicated", False), bool):
            raise fail(f"{where}: replicated must be true or false, got {entry['replicated']!r}")
        if entry.get("replicated") is True:
            if kind == "procedures":
                raise fail(f"{where}: a procedure cannot be replicated")
            if "partition" in entry or "machine" in entry:  # (both: it was taken as replicated)
                raise fail(f"{where}: replicated and placed on a partition too: give one of them")
            return None
        p = entry.get("partition")
        if p is None and "machine" in entry and ppm == 1:
            p = entry["machine"]
        if p is None and "machine" in entry:
            raise fail(f"{where}: a machine of {ppm} partitions needs \"partition\" too (which of "
                       f"its partitions), got only \"machine\"")
        if p is None:
            raise fail(f"{where}: needs \"partition\" (or \"replicated\": true)" + (
                ", and \"replicated\": false places it nowhere" if "replicated" in entry else ""))
        if not is_partition(p, n):
            raise fail(f"{where}: partition must be an integer in 0..{n - 1}, got {p!r}")
        m = entry.get("machine")
        if m is not None and (isinstance(m, bool) or not isinstance(m, int)):
            raise fail(f"{where}: machine must be an integer, got {m!r}")
        if m is not None and m != p // ppm:
            raise fail(f"{where}: machine {m!r} does not hold partition {p} "
                       f"({ppm} partitions per machine)")
        return p

    procs, state = data.get("procedures"), data.get("state")
    if not isinstance(procs, dict) or not isinstance(state, dict):
        raise fail("\"procedures\" and \"state\" must be objects")
    try:
        weights = Weights.from_dict({} if data.get("weights") is None else data["weights"])
    except (TypeError, ValueError) as exc:
        raise fail(f"weights: {exc}") from None
    dp = {} if data.get("data_parallel") is None else data["data_parallel"]  # ([], false: no object)
    if not isinstance(dp, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in dp.items()):
        raise fail("data_parallel must be an object of procedure -> table names")
    for proc in dp:
        if proc not in procs:
            raise fail(f"data_parallel.{proc}: not a procedure of the design")
    for key in ("workload", "method"):
        if not isinstance(data.get(key, ""), str):
            raise fail(f"{key} must be a name, got {data[key]!r}")
    provenance = {} if data.get("provenance") is None else data["provenance"]
    if not isinstance(provenance, dict):
        raise fail(f"provenance must be an object, got {data['provenance']!r}")
    return dict(
        workload=str(data.get("workload", "")), machines=machines, partitions_per_machine=ppm,
        procedures={k: partition_of("procedures", k, v) for k, v in procs.items()},
        state={k: partition_of("state", k, v) for k, v in state.items()},
        weights=weights, cost=_cost(data.get("cost"), weights, fail), method=str(data.get("method", "")),
        provenance=provenance, data_parallel=dict(dp),
        weights_stated=bool(data.get("weights")),
    )


# the keys a design file may hold: any other is a typo (`"partiton"`) that would have been
# dropped without a word, the entry then read without what the user meant
TOP_KEYS = ("format", "workload", "cluster", "weights", "method", "procedures", "state", "cost",
            "provenance", "data_parallel")
CLUSTER_KEYS = ("machines", "partitions_per_machine")
ENTRY_KEYS = ("machine", "partition", "replicated")


def _known_keys(obj: dict, known: tuple[str, ...], where: str, what: str, fail) -> None:
    stray = [k for k in obj if k not in known]
    if stray:
        raise fail(f"{where}{stray[0]}: not a field of a design file ({what} has {', '.join(known)})")


def _cluster(data: dict, fail) -> tuple[int, int]:
    try:
        cluster = data["cluster"]
        machines = cluster["machines"]
        ppm = cluster["partitions_per_machine"]
    except (KeyError, TypeError):
        raise fail("missing cluster.machines or cluster.partitions_per_machine") from None
    _known_keys(cluster, CLUSTER_KEYS, "cluster.", "a cluster", fail)
    for label, v in (("cluster.machines", machines), ("cluster.partitions_per_machine", ppm)):
        if not is_count(v):
            raise fail(f"{label} must be an integer >= 1, got {v!r}")
    if machines > MAX_MACHINES or ppm > MAX_PARTITIONS_PER_MACHINE or machines * ppm > MAX_PARTITIONS:
        raise fail(f"cluster: at most {MAX_MACHINES:,} machines, {MAX_PARTITIONS_PER_MACHINE:,} partitions "
                   f"per machine and {MAX_PARTITIONS:,} partitions in all, got {machines} x {ppm}")
    return machines, ppm


def _cost(cost, weights: Weights, fail) -> CostBreakdown | None:
    """The recorded cost breakdown, when the file has a whole one (a hand-written file may not)."""
    if cost is not None and not isinstance(cost, dict):
        raise fail(f"cost must be an object, got {cost!r}")
    for key, v in (cost or {}).items():
        if key in _COST_NUMBERS and not finite_float(v):
            raise fail(f"cost.{key} must be a finite number, got {v!r}")
    over = (cost or {}).get("memory_overflow_mb", [])
    if not isinstance(over, list) or not all(
            finite_float(x) and x >= 0 for x in over):
        raise fail(f"cost.memory_overflow_mb must be a list of megabytes >= 0 per machine, got {over!r}")
    if not isinstance((cost or {}).get("feasible", True), bool):
        raise fail(f"cost.feasible must be true or false, got {cost['feasible']!r}")
    if not isinstance(cost, dict) or not all(
            k in cost for k in ("state_colocation", "processing_colocation", "load_balance", "total")):
        return None
    return CostBreakdown(float(cost["state_colocation"]), float(cost["processing_colocation"]),
                         float(cost["load_balance"]), float(cost["total"]), weights,
                         tuple(cost.get("memory_overflow_mb", ())),
                         float(cost.get("partition_load_balance", 0.0)),
                         int(cost.get("machines_used", 0)))
