"""The manifest fields a workload is rebuilt from, checked by type and range: one line naming
the field. Shared by the trace's validation (before Spark starts) and the statistics' reading."""
from __future__ import annotations

from typing import Iterator

from costmodel.text import name_problem
from costmodel.workload import (MAX_BATCH_SIZE, MAX_COST_UNIT_US, MAX_MACHINES, MAX_PARTITIONS_PER_MACHINE,
                                MAX_PER_BATCH, MAX_ROW_BYTES, MAX_TABLE_ROWS)
from traces.errors import TraceError
from traces.windows import INT64_MAX, finite_number, manifest_windows


CLUSTER_KEYS = frozenset({"machines", "partitions_per_machine", "machine_memory_mb", "machine_capacity"})


def check_manifest_fields(manifest: dict, where: str) -> None:
    """The manifest fields a workload is rebuilt from, where given, have the types they must
    (absent or null is fine): one TraceError line naming the field otherwise."""
    def fail(field_: str, must: str, value) -> TraceError:
        return TraceError(f"{where}: {field_!r} must be {must}, got {value!r}")

    def number(value, field_: str, *, integer: bool = False, zero: bool = False,
               at_most: int = INT64_MAX) -> None:
        if value is None:
            return
        ok = finite_number(value) and (value >= 0 if zero else value > 0) and (
            value > at_most or not integer or float(value).is_integer())
        if not ok:
            raise fail(field_, f"{'an integer' if integer else 'a number'} {'>= 0' if zero else '> 0'}", value)
        if value > at_most:
            raise fail(field_, f"at most {at_most:,}", value)

    def mapping(value, field_: str) -> dict:
        if value is not None and not isinstance(value, dict):
            raise fail(field_, "an object", value)
        return value or {}

    manifest_windows(manifest, where)
    if manifest.get("workload") is not None and not isinstance(manifest["workload"], str):
        raise fail("workload", "a name", manifest["workload"])
    number(manifest.get("default_row_bytes"), "default_row_bytes", integer=True, at_most=MAX_ROW_BYTES)
    for name, info in mapping(manifest.get("tables"), "tables").items():
        info = mapping(info, f"tables.{name}")
        number(info.get("rows"), f"tables.{name}.rows", integer=True, zero=True, at_most=MAX_TABLE_ROWS)
        number(info.get("row_bytes"), f"tables.{name}.row_bytes", integer=True, at_most=MAX_ROW_BYTES)
        if info.get("read_mostly") is not None and not isinstance(info["read_mostly"], bool):
            raise fail(f"tables.{name}.read_mostly", "true or false", info["read_mostly"])
    cluster = mapping(manifest.get("cluster"), "cluster")
    unknown = sorted(set(cluster) - CLUSTER_KEYS)
    if unknown:  # a spec's [cluster] refuses it: a misspelt key was read as absent
        raise TraceError(f"{where}: 'cluster.{unknown[0]}': not a cluster field (those are "
                         f"{', '.join(sorted(CLUSTER_KEYS))})")
    for key, most in (("machines", MAX_MACHINES), ("partitions_per_machine", MAX_PARTITIONS_PER_MACHINE)):
        number(cluster.get(key), f"cluster.{key}", integer=True, at_most=most)
    number(cluster.get("machine_memory_mb"), "cluster.machine_memory_mb")
    capacity = cluster.get("machine_capacity")
    if capacity is not None:
        if not isinstance(capacity, list):
            raise fail("cluster.machine_capacity", "a list of numbers", capacity)
        for i, c in enumerate(capacity):
            number(c, f"cluster.machine_capacity[{i}]")
        machines = cluster.get("machines") or 1
        if len(capacity) != machines:  # (it was dropped without a word: every machine read as equal)
            raise fail("cluster.machine_capacity", f"a list of {machines:,} numbers, one per machine", capacity)
    inp = mapping(manifest.get("input"), "input")
    number(inp.get("batch_size"), "input.batch_size", integer=True, at_most=MAX_BATCH_SIZE)
    number(inp.get("rate"), "input.rate")
    number(inp.get("cost_unit_us"), "input.cost_unit_us", at_most=MAX_COST_UNIT_US)
    if inp.get("durations") not in (None, "work", "execution"):
        raise fail("input.durations", "'work' or 'execution'", inp["durations"])
    fields = inp.get("fields")
    if fields is not None and not (isinstance(fields, list) and all(isinstance(f, str) for f in fields)):
        raise fail("input.fields", "a list of names", fields)
    for proc, keyed in mapping(manifest.get("access_keys"), "access_keys").items():
        for table, keys in mapping(keyed, f"access_keys.{proc}").items():
            kind, _, field_ = keys.partition(":") if isinstance(keys, str) else ("", "", "")
            if kind != "input" or not field_ or (fields is not None and field_ not in fields):
                raise fail(f"access_keys.{proc}.{table}", "'input:FIELD' naming a field of input.fields", keys)
            if fields is None:  # (the workload rebuilt from it would name a field no input declares)
                raise fail(f"access_keys.{proc}.{table}", "an input field the manifest declares, but it has "
                           "no input.fields", keys)
    oltp = manifest.get("oltp")
    if oltp is not None and not (isinstance(oltp, list) and all(isinstance(n, str) for n in oltp)):
        raise fail("oltp", "a list of procedure names", oltp)
    names = manifest.get("spec_tables")
    if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise fail("spec_tables", "a list of table names", names)
    for proc, key in mapping(manifest.get("partition_keys"), "partition_keys").items():
        if not isinstance(key, str) or (fields is not None and key not in fields) or fields is None:
            raise fail(f"partition_keys.{proc}", "a field of input.fields", key)
    number(manifest.get("batches"), "batches", integer=True)  # a trace's own (top level)
    number(manifest.get("batch_size"), "batch_size", integer=True, at_most=MAX_BATCH_SIZE)
    streams = manifest.get("streams")
    if streams is not None:
        if not isinstance(streams, list):
            raise fail("streams", "a list of {from, to, tuples, tuple_bytes}", streams)
        for i, st in enumerate(streams):
            st = mapping(st, f"streams[{i}]")
            for end_ in ("from", "to"):
                if not isinstance(st.get(end_), str):
                    raise fail(f"streams[{i}].{end_}", "a procedure name", st.get(end_))
            number(st.get("tuples"), f"streams[{i}].tuples", zero=True, at_most=MAX_PER_BATCH)
            number(st.get("tuple_bytes"), f"streams[{i}].tuple_bytes", zero=True, at_most=MAX_ROW_BYTES)
    procedures = manifest.get("procedures")
    if procedures is not None and not (isinstance(procedures, list) and all(isinstance(p, str) for p in procedures)):
        raise fail("procedures", "a list of procedure names", procedures)
    named: set[str] = set()
    for i, name in enumerate(procedures or ()):  # aggregated, a twice-named SP was an internal error
        if name in named:
            raise TraceError(f"{where}: 'procedures[{i}]': procedure {name!r} is named twice")
        named.add(name)
    for key in ("key",):
        for name, info in (manifest.get("tables") or {}).items():
            if isinstance(info, dict) and info.get(key) is not None and not isinstance(info[key], str):
                raise fail(f"tables.{name}.{key}", "a field name", info[key])
    nested = manifest.get("nested")
    if nested is not None and not (isinstance(nested, list) and all(
            isinstance(g, list) and all(isinstance(m, str) for m in g) for g in nested)):
        raise fail("nested", "a list of lists of procedure names", nested)
    seen: dict[str, int] = {}  # an SP commits with one group: the spec reader refuses it in two
    for i, group in enumerate(nested or ()):
        for m in group:
            if m in seen:
                raise TraceError(f"{where}: 'nested[{i}]': procedure {m!r} is already in nested[{seen[m]}]")
            if procedures is not None and m not in procedures:  # every later command would refuse it
                raise TraceError(f"{where}: 'nested[{i}]': procedure {m!r} is not in 'procedures'")
            seen[m] = i
        if len(group) < 2:  # the spec's rule: a group of one (or none) was dropped unsaid
            raise TraceError(f"{where}: 'nested[{i}]': a nested group must list at least two procedure "
                             f"names, got {group!r}")
    for field_, name in _names(manifest):  # the spec's rule: the rebuilt workload refused them after Spark
        if isinstance(name, str) and name_problem(name):
            raise TraceError(f"{where}: {field_!r}: name {name!r} {name_problem(name)}")


def spec_tables(manifest: dict) -> frozenset[str]:
    """The tables the trace's spec declares (`spec_tables`, written by the engine and by
    `trace synth`): a name among them is a table of its own whatever it reads as, such as the
    `T#0` that `advisor tune` writes when it splits a table (empty for other traces)."""
    return frozenset(manifest.get("spec_tables") or ())


def _names(manifest: dict) -> Iterator[tuple[str, object]]:
    """(field, name) for each name the manifest carries (of the types checked above)."""
    inp = manifest.get("input") or {}
    yield "workload", manifest.get("workload")
    yield from ((f"procedures[{i}]", n) for i, n in enumerate(manifest.get("procedures") or ()))
    for table, info in (manifest.get("tables") or {}).items():
        yield from (("tables", table), (f"tables.{table}.key", (info or {}).get("key")))
    for window, info in (manifest.get("windows") or {}).items():
        yield from (("windows", window), (f"windows.{window}.procedure", info.get("procedure")))
    for i, st in enumerate(manifest.get("streams") or ()):
        yield from ((f"streams[{i}].{end}", st.get(end)) for end in ("from", "to"))
    yield from ((f"nested[{i}]", m) for i, group in enumerate(manifest.get("nested") or ()) for m in group)
    yield from (("oltp", n) for n in manifest.get("oltp") or ())
    yield from (("spec_tables", n) for n in manifest.get("spec_tables") or ())
    yield from (("partition_keys", n) for n in manifest.get("partition_keys") or {})
    for proc, keyed in (manifest.get("access_keys") or {}).items():
        yield from (("access_keys", n) for n in (proc, *keyed))
    yield from (("input.fields", f) for f in inp.get("fields") or ())
