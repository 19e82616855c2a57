"""Complete the statistics on the driver: ratios, the full list of state items, their sizes,
a stable order, and the manifest. The inputs are the small results of the Spark job (one row
per procedure, per procedure x state item, per stream edge), so pandas is the right tool here.
"""
from __future__ import annotations

from graphlib import CycleError, TopologicalSorter

import numpy as np
import pandas as pd
import pyarrow as pa

from costmodel.granularity import fragment_name, tuple_name
from traces.granularity import Granularity
from traces.statistics import DEFAULT_ROW_BYTES, TABLES, Statistics
from traces.errors import TraceError
from traces.trace_checks import TraceInfo

_KIND_ORDER = {"table": 0, "tuple": 1, "fragment": 2, "window": 3}


def tables_info(manifest: dict) -> dict[str, dict]:
    """Table name -> {rows, row_bytes, read_mostly} from a trace manifest, where given.

    Accepts {"tables": {name: {...}}} (what traces.synth writes) or a list of {"name": ...}.
    """
    tables = manifest.get("tables") or {}
    if isinstance(tables, list):
        tables = {t.get("name"): t for t in tables if isinstance(t, dict) and t.get("name")}
    out = {}
    for name, t in tables.items():
        if not isinstance(t, dict):
            continue
        out[str(name)] = {
            "rows": _int_or_none(t.get("rows")),
            "row_bytes": _int_or_none(t.get("row_bytes")),
            "read_mostly": t.get("read_mostly") if isinstance(t.get("read_mostly"), bool) else None,
        }
        if isinstance(t.get("key"), str) and t["key"].strip():
            out[str(name)]["key"] = t["key"]
    return out


def input_info(manifest: dict) -> dict:
    """What the trace manifest says of the input stream and of its durations, kept in the
    statistics so that a workload can be rebuilt from them (`advisor.statistics_workload`):
    `batch_size` (tuples per input batch), `rate` (batches/s), `fields`, `cost_unit_us` and
    `durations` ("work": a duration is the SP's own work, as traces.synth writes it;
    "execution", the default: the whole transaction, overheads and accesses included).
    Read from an `input` object or the top level; what is absent or malformed is left out."""
    given = manifest.get("input") if isinstance(manifest.get("input"), dict) else {}
    out: dict = {}
    for key in ("batch_size", "rate", "cost_unit_us"):
        value = given.get(key, manifest.get(key))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) \
                and value > 0:
            out[key] = int(value) if key == "batch_size" and float(value).is_integer() else float(value)
    fields = given.get("fields", manifest.get("fields"))
    if isinstance(fields, list) and all(isinstance(f, str) for f in fields):
        out["fields"] = list(fields)
    durations = given.get("durations", manifest.get("durations"))
    if durations in ("work", "execution"):
        out["durations"] = durations
    return out


def _int_or_none(value):
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and value >= 0 else None


def _ordered(names, preferred: list[str]) -> list[str]:
    """`preferred` order first (those present), then the rest by name."""
    names = set(names)
    head = [n for n in preferred if n in names]
    return head + sorted(names - set(head))


def inferred_nested(shared: pa.Table | None, order: list[str],
                    edges: list[tuple[str, str]] = ()) -> list[list[str]]:
    """Nested groups from procedures that shared transaction ids: sets that overlap are one
    group (a procedure commits in one group only), members in dataflow order (the stream
    `edges` between them; ties in the procedures' order)."""
    if shared is None or shared.num_rows == 0:
        return []
    group_of: dict[str, int] = {}
    groups: list[set[str]] = []
    for members in shared.column("procedures").to_pylist():
        touching = sorted({group_of[m] for m in members if m in group_of})
        merged = set(members).union(*(groups[g] for g in touching))
        for g in touching:
            groups[g] = set()
        groups.append(merged)
        for m in merged:
            group_of[m] = len(groups) - 1
    rank = {p: i for i, p in enumerate(order)}
    out = []
    for g in groups:
        if len(g) < 2:
            continue
        sorter = TopologicalSorter({m: () for m in g})
        for a, b in edges:
            if a in g and b in g:
                sorter.add(b, a)
        try:
            ranked = list(sorter.static_order())
        except CycleError:
            ranked = list(g)
        position = {m: i for i, m in enumerate(ranked)}
        out.append(sorted(g, key=lambda p: (position[p], rank.get(p, len(rank)))))
    return out


def finish_statistics(parts: dict[str, pa.Table], info: TraceInfo, gran: Granularity
                      ) -> Statistics:
    manifest = info.manifest
    procs = parts["procedures"].to_pandas()
    batches = int(parts["batches"].column("batches")[0].as_py())
    order = _ordered(procs["procedure"], list(manifest.get("procedures") or []))
    procs = procs.set_index("procedure").loc[order].reset_index()
    procs["abort_rate"] = procs["aborts"] / procs["invocations"]

    ps = parts["procedure_state"].to_pandas()
    unmatched = ps[ps["procedure"].isna()]
    ps = ps[ps["procedure"].notna()].copy()
    invocations = procs.set_index("procedure")["invocations"]
    ps["rows"] = ps["read_rows"] + ps["write_rows"]
    ps["probability"] = ps["txns"] / ps["procedure"].map(invocations)

    windows = info.windows
    _check_window_owners(ps, windows, info)
    known = {t: v for t, v in tables_info(manifest).items() if t not in windows}
    table_order = _ordered((set(known) | set(ps["table"])) - set(windows), list(known))
    hot = parts.get("hot")
    hot = hot.to_pandas() if hot is not None else pd.DataFrame(columns=["table", "key", "heat"])
    state = _state_items(ps, gran, table_order, hot, list(windows))
    state["estimated_bytes"] = _estimated_bytes(state, gran, known, parts.get("distinct_keys"),
                                                windows, ps)

    rank = {n: i for i, n in enumerate(state["state"])}
    p_rank = {n: i for i, n in enumerate(order)}
    ps = ps.assign(_p=ps["procedure"].map(p_rank), _s=ps["state"].map(rank)).sort_values(
        ["_p", "_s"]).drop(columns=["_p", "_s"])

    streams = parts["streams"].to_pandas()
    streams = streams.assign(_a=streams["from_procedure"].map(p_rank),
                             _b=streams["to_procedure"].map(p_rank)).sort_values(
        ["_a", "_b"]).drop(columns=["_a", "_b"])

    frames = {
        "procedures": procs, "procedure_state": ps, "streams": streams, "state": state,
    }
    for name, schema in TABLES.items():
        frames[name] = frames[name][schema.names].reset_index(drop=True)
    sized = {t: {**known.get(t, {"rows": None, "row_bytes": None, "read_mostly": None})}
             for t in table_order}
    stats_manifest = {
        "created_by": "traces.aggregate",
        **gran.to_dict(),
        "source_trace": info.source,
        "trace_format": manifest.get("format"),
        "workload": manifest.get("workload"),
        "workload_sha256": manifest.get("workload_sha256"),
        "batches": batches,
        "txns": int(procs["invocations"].sum()),
        "access_rows": int(info.rows["accesses"]),
        "flow_rows": int(info.rows["flows"]),
        "unmatched_access_rows": int(unmatched["reads"].sum() + unmatched["writes"].sum()),
        "procedures": order,
        "tables": sized,
        "default_row_bytes": DEFAULT_ROW_BYTES,
        "nested": manifest.get("nested") or inferred_nested(
            parts.get("shared"), order, list(zip(streams["from_procedure"], streams["to_procedure"]))),
        "cluster": manifest.get("cluster") or {},
        "input": input_info(manifest),
        "access_keys": manifest.get("access_keys") or {},
        "oltp": manifest.get("oltp") or [],
        "partition_keys": manifest.get("partition_keys") or {},
        "windows": {n: w.to_manifest() for n, w in windows.items()},
        "key_type": info.key_type,
    }
    return Statistics(**frames, manifest=stats_manifest, path=None)


def _check_window_owners(ps: pd.DataFrame, windows: dict, info: TraceInfo) -> None:
    """A window is private to its owner (dissertation 3.1.1): any other procedure touching it
    makes the trace inconsistent with its manifest."""
    for name, w in windows.items():
        others = sorted(set(ps.loc[ps["state"] == name, "procedure"]) - {w.procedure})
        if others:
            raise TraceError(f"{info.path}: window {name!r} is accessed by {others[0]!r}, but "
                             f"only its owner {w.procedure!r} may touch it")


def _state_items(ps: pd.DataFrame, gran: Granularity, table_order: list[str],
                 hot: pd.DataFrame, windows: list[str] = ()) -> pd.DataFrame:
    """Every state item of the granularity (touched or not), with its access totals; each
    window is one item (kind "window") after the tables, never fragmented."""
    if gran.kind == "table":
        items = pd.DataFrame({"state": table_order, "table": table_order, "kind": "table",
                              "fragment": -1, "key": None})
    else:
        frags = pd.DataFrame(
            [(fragment_name(t, i), t, "fragment", i, None)
             for t in table_order for i in range(gran.fragments)],
            columns=["state", "table", "kind", "fragment", "key"])
        tuples = pd.DataFrame(
            {"state": [tuple_name(t, k) for t, k in zip(hot["table"], hot["key"])],
             "table": hot["table"].astype(object), "kind": "tuple", "fragment": -1,
             "key": hot["key"].astype(object)})
        items = pd.concat([tuples, frags], ignore_index=True) if len(tuples) else frags
    if windows:
        whole = pd.DataFrame({"state": list(windows), "table": list(windows), "kind": "window",
                              "fragment": -1, "key": None})
        items = pd.concat([items, whole], ignore_index=True)
        table_order = list(table_order) + list(windows)
    totals = ps.groupby("state")[["reads", "writes", "read_rows", "write_rows"]].sum()
    items = items.join(totals, on="state")
    for c in ("reads", "writes", "read_rows", "write_rows"):
        items[c] = items[c].fillna(0).astype(np.int64)
    items["heat"] = items["read_rows"] + items["write_rows"]
    t_rank = {t: i for i, t in enumerate(table_order)}
    items = items.assign(_t=items["table"].map(t_rank), _k=items["kind"].map(_KIND_ORDER))
    items = items.sort_values(["_t", "_k", "fragment", "key"], na_position="last",
                              kind="stable").drop(columns=["_t", "_k"])
    items["fragment"] = items["fragment"].astype(np.int64)
    return items.reset_index(drop=True)


def _estimated_bytes(state: pd.DataFrame, gran: Granularity, known: dict[str, dict],
                     distinct_keys: pa.Table | None, windows: dict | None = None,
                     ps: pd.DataFrame | None = None) -> np.ndarray:
    """Table size from the manifest (rows x row_bytes) split evenly over fragments (hashing
    spreads all keys, touched or not), a hot tuple is one row; without a row count, the
    distinct keys seen in the trace x row_bytes. A window: its tuples when full x
    tuple_bytes (a time window the manifest does not size: every tuple its owner inserted,
    an upper bound)."""
    windows = windows or {}
    dk = {}
    if distinct_keys is not None:
        d = distinct_keys.to_pandas()
        dk = dict(zip(d["state"], d["distinct_keys"]))
    hot_count = state[state["kind"] == "tuple"].groupby("table").size()
    out = np.zeros(len(state))
    for i, (name, table, kind) in enumerate(zip(state["state"], state["table"], state["kind"])):
        info = known.get(table, {})
        row_bytes = info.get("row_bytes") or DEFAULT_ROW_BYTES
        rows = info.get("rows")
        if kind == "window":
            w = windows[name]
            full = w.full_tuples()
            if full is None and ps is not None:
                full = float(ps.loc[ps["state"] == name, "write_rows"].sum())
            out[i] = (full or 0.0) * w.tuple_bytes
        elif kind == "tuple":
            out[i] = row_bytes
        elif rows is None:
            out[i] = dk.get(name, 0) * row_bytes
        elif kind == "table":
            out[i] = rows * row_bytes
        else:
            rest = max(rows - int(hot_count.get(table, 0)), 0)
            out[i] = rest * row_bytes / gran.fragments
    return out
