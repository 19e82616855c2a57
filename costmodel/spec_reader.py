"""Read and check a workload spec (TOML), by path or by the name of a bundled one
(`costmodel/workloads/`). Every problem names the file, the entry and what is wrong, in one
line, so the CLI can print it without a traceback. The spec's writer is `spec_writer`; a
statistics directory is read as a workload by `advisor.sources.load_workload`."""
from __future__ import annotations

import hashlib
import math
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from costmodel.files import as_path
from costmodel.user_files import read_user_text
from costmodel.errors import SpecError, finite_number
from costmodel.procedure_code import code_modules_problem, code_problem
from costmodel.spec_writer import workload_to_toml
from costmodel.text import name_problem
from costmodel.object_memo import ObjectMemo
from costmodel.workload import (DEFAULT_COST_UNIT_US, MAX_BATCH_SIZE, MAX_COST_UNIT_US, MAX_PER_BATCH,
                              MAX_RATE_BPS, MAX_ROW_BYTES, MAX_TABLE_ROWS, MIN_RATE_BPS, Access, Cluster, InputSpec, Procedure, Stream, Table, Window,
                              Workload, dataflow_cycle)

_KEYS = re.compile(r"^(uniform|sequential|zipf:(?P<theta>[^:]+)|input:(?P<field>[A-Za-z_][\w]*))$")
# a procedure's cost per batch, in units of cost_unit_us: 1,000,000 units is 100 s of work a
# batch at the default unit, past anything the engine or the simulator can run in its bound
MAX_PROCEDURE_COST = 1_000_000
MAX_CAPACITY_RATIO = 1e6  # the largest machine_capacity over the smallest
MIN_TIME_WINDOW_S = 1e-6  # a time window's size and slide, at least one engine clock tick
MIN_MEMORY_MB = 2 ** -20  # a machine's memory, at least a byte


class _Reader:
    """Pulls typed fields out of TOML tables and reports problems with their location."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, entry: str, problem: str) -> SpecError:
        return SpecError(f"{self.source}: {entry}: {problem}")

    def table(self, data: Any, entry: str) -> dict:
        if not isinstance(data, dict):
            raise self.fail(entry, f"must be a table, got {type(data).__name__}")
        return data

    def unknown(self, data: dict, allowed: set[str], entry: str) -> None:
        extra = sorted(set(data) - allowed)
        if extra:
            raise self.fail(entry, f"unknown field {extra[0]!r} (allowed: {', '.join(sorted(allowed))})")

    def required(self, data: dict, key: str, entry: str) -> Any:
        if key not in data:
            raise self.fail(entry, f"missing required field {key!r}")
        return data[key]

    def string(self, data: dict, key: str, entry: str, default: Any = ...) -> Any:
        value = self.required(data, key, entry) if default is ... else data.get(key, default)
        if value is not default and (not isinstance(value, str) or not value.strip()):
            raise self.fail(entry, f"{key} must be a non-empty string, got {value!r}")
        if value is not default and "\n" in value:  # a name holding one broke each listing's lines
            raise self.fail(entry, f"{key} must be one line, got {value!r}")
        if value is not default and name_problem(value):  # U+202E made a listing lie about a name
            raise self.fail(entry, f"{key} {value!r} {name_problem(value)}")
        return value

    def number(self, data: dict, key: str, entry: str, default: Any = ..., *,
               integer: bool = False, positive: bool = False, at_most: float | None = None) -> Any:
        value = self.required(data, key, entry) if default is ... else data.get(key, default)
        if value is default:
            return value
        kind = "an integer" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            integer and not isinstance(value, int)
        ):
            raise self.fail(entry, f"{key} must be {kind}, got {value!r}")
        if not math.isfinite(value):
            raise self.fail(entry, f"{key} must be finite, got {value}")
        if value < 0 or (positive and value == 0):
            raise self.fail(entry, f"{key} must be {'> 0' if positive else '>= 0'}, got {value}")
        if at_most is not None and value > at_most:
            raise self.fail(entry, f"{key} must be <= {at_most}, got {value}")
        return value

    def boolean(self, data: dict, key: str, entry: str, default: bool = False) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(entry, f"{key} must be true or false, got {value!r}")
        return value

    def array(self, data: dict, key: str, entry: str) -> list:
        value = data.get(key, [])
        if not isinstance(value, list):
            raise self.fail(entry, f"{key} must be an array, got {type(value).__name__}")
        return value


def parse_workload(text: str, source: str = "<spec>") -> Workload:
    """Parse and validate spec text; raise SpecError naming source, entry and problem."""
    r = _Reader(source)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        looks = text.lstrip().startswith("{") or source.lower().endswith(".json")
        hint = " (a spec is TOML; this looks like JSON: docs/formats.md shows the format)" if looks else ""
        raise SpecError(f"{source}: not valid TOML: {exc}{hint}") from None
    except RecursionError:  # arrays nested thousands deep: no spec has them
        raise SpecError(f"{source}: not valid TOML: arrays or tables nested too deeply") from None
    r.unknown(doc, {"name", "description", "input", "cluster", "tables", "procedures",
                    "streams", "nested", "windows"}, "top level")
    name = r.string(doc, "name", "top level")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise r.fail("top level", "description must be a string")

    inp = r.table(doc.get("input", {}), "[input]")
    r.unknown(inp, {"batch_size", "rate", "fields", "cost_unit_us"}, "[input]")
    fields = inp.get("fields", [])
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise r.fail("[input]", "fields must be an array of strings")
    for f in fields:
        if name_problem(f):
            raise r.fail("[input]", f"field {f!r} {name_problem(f)}")
    input_spec = InputSpec(
        batch_size=r.number(inp, "batch_size", "[input]", 10, integer=True, positive=True, at_most=MAX_BATCH_SIZE),
        rate=_rate(r, inp),
        fields=tuple(fields),
        cost_unit_us=_cost_unit_us(r, inp),
    )

    cl = r.table(doc.get("cluster", {}), "[cluster]")
    r.unknown(cl, {"machines", "partitions_per_machine", "machine_memory_mb", "machine_capacity"},
              "[cluster]")
    machines = r.number(cl, "machines", "[cluster]", 1, integer=True, positive=True)
    capacity = cl.get("machine_capacity")
    if capacity is not None:
        if not isinstance(capacity, list) or len(capacity) != machines:
            raise r.fail("[cluster]", f"machine_capacity must list {machines} numbers, one per machine")
        for i, _ in enumerate(capacity):
            r.number({"c": capacity[i]}, "c", f"[cluster].machine_capacity[{i}]", positive=True)
        capacity = tuple(float(c) for c in capacity)
        if max(capacity) > MAX_CAPACITY_RATIO * min(capacity):  # METIS's target shares are float32
            raise r.fail("[cluster]", f"machine_capacity: the smallest ({min(capacity):g}) must be at least "
                                      f"1/{MAX_CAPACITY_RATIO:,.0f} of the largest ({max(capacity):g}); "
                                      "they are the machines' relative speeds")
    cluster = Cluster(
        machines=machines,
        partitions_per_machine=r.number(cl, "partitions_per_machine", "[cluster]", 1,
                                        integer=True, positive=True),
        machine_memory_mb=_memory_mb(r, cl),
        machine_capacity=capacity,
    )

    tables = [_table(r, t, i) for i, t in enumerate(r.array(doc, "tables", "top level"))]
    _unique(r, [t.name for t in tables], "tables")
    table_names = {t.name for t in tables}
    windows = [_window(r, w, i, table_names) for i, w in enumerate(r.array(doc, "windows", "top level"))]
    _unique(r, [w.name for w in windows], "windows")
    procedures = [_procedure(r, p, i, table_names | {w.name for w in windows}, set(input_spec.fields))
                  for i, p in enumerate(r.array(doc, "procedures", "top level"))]
    if not procedures:
        raise r.fail("top level", "a workload needs at least one [[procedures]] entry")
    _unique(r, [p.name for p in procedures], "procedures")
    proc_names = {p.name for p in procedures}
    for i, p in enumerate(procedures):  # the graph, its drawings and its exports key nodes by name
        if p.name in table_names or p.name in {w.name for w in windows}:
            kind = "table" if p.name in table_names else "window"
            raise r.fail(f"procedures[{i}] {p.name!r}", f"the name is also a {kind}'s; an SP, a table and a "
                                                        "window each need a name of their own")
    _check_window_owners(r, windows, procedures, input_spec)
    modules = code_modules_problem([p.code for p in procedures if p.code])
    if modules:  # the engine seeds tables and input from that one module
        raise r.fail("procedures", modules)
    streams = [_stream(r, s, i, proc_names) for i, s in enumerate(r.array(doc, "streams", "top level"))]
    _check_acyclic(r, streams)
    oltp = {p.name for p in procedures if p.oltp}
    for i, s in enumerate(streams):
        if s.target in oltp:  # it would wait for batches no client sends it (the engine stalls)
            raise r.fail(f"streams[{i}]", f"{s.target!r} is an OLTP procedure (oltp = true): its "
                                          f"clients invoke it, so no stream can feed it")
        if s.source in oltp:  # its requests are not batches: the SP downstream would wait for ever
            raise r.fail(f"streams[{i}]", f"{s.source!r} is an OLTP procedure (oltp = true): it "
                                          f"answers its clients' requests, so it feeds no stream")
    nested = []
    for i, n in enumerate(r.array(doc, "nested", "top level")):
        entry = f"nested[{i}]"
        n = r.table(n, entry)
        r.unknown(n, {"procedures"}, entry)
        members = r.required(n, "procedures", entry)
        if not isinstance(members, list) or len(members) < 2 or not all(isinstance(m, str) for m in members):
            raise r.fail(entry, "procedures must list at least two procedure names")
        for m in members:
            if m not in proc_names:
                raise r.fail(entry, f"unknown procedure {m!r}")
        nested.append(tuple(members))
    seen: dict[str, int] = {}
    for i, group in enumerate(nested):
        for m in group:
            if m in seen:
                raise r.fail(f"nested[{i}]", f"procedure {m!r} is already in nested[{seen[m]}]")
            seen[m] = i

    workload = Workload(
        name=name, tables=tuple(tables), procedures=tuple(procedures), streams=tuple(streams),
        nested=tuple(nested), windows=tuple(windows), input=input_spec, cluster=cluster, description=description,
        source=source, sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
    _check_window_sizes(r, workload)
    return workload


def _rate(r: _Reader, inp: dict) -> float | None:
    """`[input] rate`, in batches per second, where declared: in the range a simulation can be
    offered (`simulate --rate`). Why: 1e300 printed a 300-digit rate beside every prediction,
    and 1e-300 made the time windows' timestamps of `trace synth` overflow (a numpy warning and
    a trace of wrapped-around times)."""
    rate = r.number(inp, "rate", "[input]", None, positive=True)  # its type, finiteness and sign
    if rate is not None and not MIN_RATE_BPS <= rate <= MAX_RATE_BPS:
        raise r.fail("[input]", f"rate must be from {MIN_RATE_BPS:g} to {MAX_RATE_BPS:g} batches per second, "
                                f"got {rate:g}")
    return rate


def _memory_mb(r: _Reader, cl: dict) -> float | None:
    """`[cluster] machine_memory_mb`, where declared: at least a byte (MIN_MEMORY_MB). Why: 5e-324
    MB is a limit of 5e-318 bytes, and the machines a state needs (its bytes over the limit) were
    infinitely many: recommend was an internal OverflowError."""
    memory = r.number(cl, "machine_memory_mb", "[cluster]", None, positive=True)  # its type, finiteness and sign
    if memory is not None and memory < MIN_MEMORY_MB:
        raise r.fail("[cluster]", f"machine_memory_mb must be at least {MIN_MEMORY_MB:.3g} (a byte), got {memory:g}")
    return memory


def _cost_unit_us(r: _Reader, inp: dict) -> float:
    """`[input] cost_unit_us`, in (0, MAX_COST_UNIT_US]. Why not 0: every SP would be free (the
    weights dropped load balancing), and the trace of such a spec was refused only when it was
    aggregated (a duration cannot be said in units of 0 us), as `trace synth` refuses 0."""
    value = inp.get("cost_unit_us", DEFAULT_COST_UNIT_US)
    if finite_number(value) and not 0 < value <= MAX_COST_UNIT_US:
        raise r.fail("[input]", f"cost_unit_us must be a number > 0 and <= {MAX_COST_UNIT_US} (engine CPU "
                                f"microseconds per unit of SP cost), got {value}")
    return float(r.number(inp, "cost_unit_us", "[input]", DEFAULT_COST_UNIT_US))  # its type, finiteness


def _table(r: _Reader, data: Any, i: int) -> Table:
    entry = f"tables[{i}]"
    data = r.table(data, entry)
    name = r.string(data, "name", entry)
    entry = f"tables[{i}] {name!r}"
    r.unknown(data, {"name", "rows", "row_bytes", "key", "read_mostly"}, entry)
    return Table(
        name=name,
        rows=r.number(data, "rows", entry, integer=True),
        row_bytes=r.number(data, "row_bytes", entry, integer=True, positive=True),
        key=r.string(data, "key", entry),
        read_mostly=r.boolean(data, "read_mostly", entry),
    )


def _procedure(r: _Reader, data: Any, i: int, tables: set[str], fields: set[str]) -> Procedure:
    entry = f"procedures[{i}]"
    data = r.table(data, entry)
    name = r.string(data, "name", entry)
    entry = f"procedures[{i}] {name!r}"
    r.unknown(data, {"name", "cost", "accesses", "partition_key", "code", "oltp"}, entry)
    accesses = []
    for j, a in enumerate(r.array(data, "accesses", entry)):
        aentry = f"{entry}.accesses[{j}]"
        a = r.table(a, aentry)
        r.unknown(a, {"table", "mode", "rows", "keys", "probability"}, aentry)
        table = r.string(a, "table", aentry)
        if table not in tables:
            raise r.fail(aentry, f"unknown table or window {table!r}")
        mode = r.string(a, "mode", aentry)
        if mode not in ("read", "write"):
            raise r.fail(aentry, f"mode must be 'read' or 'write', got {mode!r}")
        keys = r.string(a, "keys", aentry, "uniform")
        match = _KEYS.match(keys)
        if not match:
            raise r.fail(aentry, f"keys must be uniform, sequential, zipf:<theta> or input:<field>, got {keys!r}")
        if match.group("theta") is not None:
            try:
                theta = float(match.group("theta"))
            except ValueError:
                raise r.fail(aentry, f"zipf theta must be a number, got {match.group('theta')!r}") from None
            if not (0 <= theta < 10):
                raise r.fail(aentry, f"zipf theta must be in [0, 10), got {theta}")
        if match.group("field") not in (None, *fields):  # the engine draws these keys from that field
            raise r.fail(aentry, f"keys {keys!r} name a field the input does not declare "
                                 f"([input] fields: {', '.join(sorted(fields)) or 'none'})")
        accesses.append(Access(
            table=table, mode=mode, rows=r.number(a, "rows", aentry, positive=True, at_most=MAX_PER_BATCH), keys=keys,
            probability=r.number(a, "probability", aentry, 1.0, at_most=1.0),
        ))
    partition_key = r.string(data, "partition_key", entry, None)
    if partition_key is not None and partition_key not in fields:  # its lanes split on that field
        raise r.fail(entry, f"partition_key {partition_key!r} is not a field the input declares "
                            f"([input] fields: {', '.join(sorted(fields)) or 'none'})")
    code = r.string(data, "code", entry, None)
    if code is not None and code_problem(code):  # looked up, never imported: the engine's own rule
        raise r.fail(entry, code_problem(code))
    return Procedure(
        name=name, cost=r.number(data, "cost", entry, at_most=MAX_PROCEDURE_COST), accesses=tuple(accesses),
        partition_key=partition_key, code=code, oltp=r.boolean(data, "oltp", entry),
    )


def _window(r: _Reader, data: Any, i: int, tables: set[str]) -> Window:
    entry = f"windows[{i}]"
    data = r.table(data, entry)
    name = r.string(data, "name", entry)
    entry = f"windows[{i}] {name!r}"
    r.unknown(data, {"name", "procedure", "size", "slide", "kind", "tuple_bytes", "max_tuples"}, entry)
    if name in tables:
        raise r.fail(entry, f"window name {name!r} clashes with a table of the same name")
    kind = r.string(data, "kind", entry, "tuple")
    if kind not in ("tuple", "time"):
        raise r.fail(entry, f"kind must be 'tuple' or 'time', got {kind!r}")
    size = r.number(data, "size", entry, integer=kind == "tuple", positive=True)
    slide = r.required(data, "slide", entry)
    if isinstance(slide, (int, float)) and not isinstance(slide, bool) and math.isfinite(slide) \
            and not (0 < slide <= size):
        raise r.fail(entry, f"slide must be > 0 and <= size ({size:g}), got {slide:g}")
    slide = r.number(data, "slide", entry, integer=kind == "tuple", positive=True)
    if kind == "time" and min(size, slide) < MIN_TIME_WINDOW_S:  # the engine counts whole microseconds
        raise r.fail(entry, f"a time window's size and slide are seconds, at least {MIN_TIME_WINDOW_S:g} "
                            f"(the engine keeps time in microseconds), got size {size:g}, slide {slide:g}")
    max_tuples = r.number(data, "max_tuples", entry, None, integer=True, positive=True)
    if max_tuples is not None and kind == "tuple":
        raise r.fail(entry, "max_tuples is for time windows (a tuple window holds size tuples)")
    return Window(
        name=name, procedure=r.string(data, "procedure", entry), size=size, slide=slide, kind=kind,
        tuple_bytes=r.number(data, "tuple_bytes", entry, 32, integer=True, positive=True, at_most=MAX_ROW_BYTES),
        max_tuples=max_tuples,
    )


def _check_window_owners(r: _Reader, windows: list[Window], procedures: list[Procedure],
                         input_spec: InputSpec) -> None:
    """A window's owner exists, is the only SP that names it, and names it only to read it;
    a time window's memory can be sized."""
    owner = {w.name: w.procedure for w in windows}
    names = {p.name for p in procedures}
    for i, w in enumerate(windows):
        if w.procedure not in names:
            raise r.fail(f"windows[{i}] {w.name!r}", f"unknown owner procedure {w.procedure!r}")
        if w.kind == "time" and w.max_tuples is None and input_spec.rate is None:
            raise r.fail(f"windows[{i}] {w.name!r}",
                         "a time window needs max_tuples or an [input] rate to size its memory")
    for i, p in enumerate(procedures):
        for j, a in enumerate(p.accesses):
            if a.table not in owner:
                continue
            entry = f"procedures[{i}] {p.name!r}.accesses[{j}]"
            if owner[a.table] != p.name:
                raise r.fail(entry, f"window {a.table!r} is private to its owner "
                                    f"{owner[a.table]!r}; no other procedure may access it")
            if a.mode != "read":
                raise r.fail(entry, f"window {a.table!r}: its owner inserts each batch's tuples "
                                    "itself; an access to it may only read")


def _check_window_sizes(r: _Reader, workload: Workload) -> None:
    """A full window holds at most as many tuples as a table has rows (MAX_TABLE_ROWS). Why: a
    time window's tuples are its size x [input] rate x its owner's tuples a batch, and size 1e300
    at rate 1e9 held infinitely many bytes (`diff`'s renaming of machines: an internal
    ValueError from scipy)."""
    for i, w in enumerate(workload.windows):
        tuples = workload.window_tuples(w)
        if not tuples <= MAX_TABLE_ROWS:
            how = ("its size" if w.kind == "tuple" else "max_tuples" if w.max_tuples is not None
                   else "size seconds x [input] rate x the tuples its owner receives a batch")
            raise r.fail(f"windows[{i}] {w.name!r}", f"holds {tuples:.3g} tuples when full ({how}), more than "
                                                    f"the {MAX_TABLE_ROWS:.0e} a window may hold")


def _stream(r: _Reader, data: Any, i: int, procs: set[str]) -> Stream:
    entry = f"streams[{i}]"
    data = r.table(data, entry)
    r.unknown(data, {"from", "to", "tuples", "tuple_bytes"}, entry)
    source = r.string(data, "from", entry)
    target = r.string(data, "to", entry)
    entry = f"streams[{i}] {source}->{target}"
    for end in (source, target):
        if end not in procs:
            raise r.fail(entry, f"unknown procedure {end!r}")
    if source == target:
        raise r.fail(entry, "a stream cannot connect a procedure to itself")
    return Stream(source, target, r.number(data, "tuples", entry, positive=True, at_most=MAX_PER_BATCH),
                  r.number(data, "tuple_bytes", entry, 64, integer=True, positive=True, at_most=MAX_ROW_BYTES))


def _unique(r: _Reader, names: list[str], what: str) -> None:
    seen = set()
    for i, n in enumerate(names):
        if n in seen:
            raise r.fail(f"{what}[{i}]", f"duplicate name {n!r}")
        seen.add(n)


def _check_acyclic(r: _Reader, streams: list[Stream]) -> None:
    cycle = dataflow_cycle([(s.source, s.target) for s in streams])
    if cycle is not None:
        raise r.fail("streams", f"cycle in the dataflow: {' -> '.join(cycle)}")


# -- loading by name or path ---------------------------------------------------------------

def bundled_workloads() -> dict[str, str]:
    """Name -> one-line description of every workload shipped with the tool."""
    out = {}
    for entry in sorted(resources.files("costmodel.workloads").iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            doc = tomllib.loads(entry.read_text())
            out[entry.name[:-5]] = doc.get("description", "").strip().splitlines()[0] if doc.get("description") else ""
    return out


def check_workload(workload: Workload) -> None:
    """Refuse, in one line, a Workload built or changed in Python (`dataclasses.replace`) that
    no spec file could say: an unknown table or SP, a negative count, a name given twice, a
    string where a number goes. Why: a spec file is checked as it is read, an object never
    was, and reached a KeyError deep in the graph or ran with negative rows.

    One set of rules for both: the object is written as its spec text and read back (a few
    milliseconds; the result is discarded, so nothing of the object changes)."""
    if not isinstance(workload, Workload):
        raise SpecError(f"a Workload is needed, got {type(workload).__name__}")
    CHECKED.get(workload, lambda: _check_workload(workload))  # this very record passed: it passes


CHECKED = ObjectMemo(64)  # the workloads that passed `check_workload` (a refusal is not kept)


def _check_workload(workload: Workload) -> bool:
    label = f"workload {getattr(workload, 'name', '?')!r:.80}"
    shape = _not_a_sequence(workload)  # the writer leaves an empty (or None) list out
    if shape:
        raise SpecError(f"{label}: not a workload a spec could hold: {shape}")
    try:
        text = workload_to_toml(workload)
    except (TypeError, ValueError, AttributeError) as exc:
        raise SpecError(f"{label}: not a workload a spec could hold: {exc}") from None
    parse_workload(text, label)
    return True


def _not_a_sequence(workload: Workload) -> str:
    """What of the workload's lists is no tuple or list ("" where none): `accesses=None` was
    written as no accesses, so it passed, and every verb then failed iterating it."""
    parts = [(name, getattr(workload, name, None)) for name in ("tables", "procedures", "streams", "windows", "nested")]
    parts += [(f"procedures[{i}].accesses", getattr(p, "accesses", None))
              for i, p in enumerate(workload.procedures if isinstance(workload.procedures, (tuple, list)) else ())]
    for name, value in parts:
        if not isinstance(value, (tuple, list)):
            return f"{name} must be a tuple, got {value!r:.60}"
    return ""


def read_spec(source: str | Path) -> Workload:
    """A bundled workload by name or a spec file by path."""
    text_source = str(source)
    path = as_path(text_source, SpecError)
    if path.is_dir():
        raise SpecError(f"{path}: a directory, not a spec file")
    if path.suffix == ".toml" or path.exists():
        return parse_workload(read_user_text(path, SpecError), str(path))
    resource = resources.files("costmodel.workloads").joinpath(f"{text_source}.toml")
    if not resource.is_file():
        names = ", ".join(bundled_workloads())
        raise SpecError(f"{text_source}: not a spec file or a bundled workload (bundled: {names})")
    return parse_workload(resource.read_text(), f"bundled:{text_source}")
