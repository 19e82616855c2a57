"""Write a Workload back as a TOML spec that `costmodel.spec_reader.parse_workload` reads unchanged.

The standard library reads TOML but does not write it; the spec's shape is small and fixed,
so a dedicated writer is shorter (and safer about quoting) than a general one. Used by
`advisor tune`, which writes each round's changed dataflow as a spec a user can edit and run.
"""
from __future__ import annotations

import math
import numbers
from pathlib import Path

from costmodel.files import atomic_write_text
from costmodel.workload import DEFAULT_COST_UNIT_US, Access, Workload

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}


def toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and every control character escaped."""
    if not isinstance(text, str):
        raise TypeError(f"a string is needed here, got {text!r:.40}")
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_number(value: int | float) -> str:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"a number is needed here, got {value!r:.40}")
    if isinstance(value, numbers.Integral):  # a numpy integer too
        return str(int(value))
    if not math.isfinite(value):
        raise ValueError(f"a spec number must be finite, got {value}")
    text = repr(float(value))
    return text if any(c in text for c in ".eE") else text + ".0"


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Real):
        return toml_number(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _access(a: Access) -> str:
    fields = [("table", a.table), ("mode", a.mode), ("rows", a.rows), ("keys", a.keys)]
    if a.probability != 1.0:
        fields.append(("probability", a.probability))
    return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in fields) + " }"


def workload_to_toml(workload: Workload) -> str:
    """The spec text of a workload (everything but where it was read from)."""
    w = workload
    lines = [f"name = {toml_string(w.name)}"]
    if w.description:
        lines.append(f"description = {toml_string(w.description)}")
    lines += ["", "[input]", f"batch_size = {toml_number(w.input.batch_size)}"]
    if w.input.rate is not None:
        lines.append(f"rate = {toml_number(w.input.rate)}")
    if w.input.fields:
        lines.append(f"fields = {_value(list(w.input.fields))}")
    if w.input.cost_unit_us != DEFAULT_COST_UNIT_US:
        lines.append(f"cost_unit_us = {toml_number(w.input.cost_unit_us)}")
    c = w.cluster
    lines += ["", "[cluster]", f"machines = {toml_number(c.machines)}",
              f"partitions_per_machine = {toml_number(c.partitions_per_machine)}"]
    if c.machine_memory_mb is not None:
        lines.append(f"machine_memory_mb = {toml_number(c.machine_memory_mb)}")
    if c.machine_capacity is not None:
        lines.append(f"machine_capacity = {_value(list(c.machine_capacity))}")
    for t in w.tables:
        lines += ["", "[[tables]]", f"name = {toml_string(t.name)}", f"rows = {toml_number(t.rows)}",
                  f"row_bytes = {toml_number(t.row_bytes)}", f"key = {toml_string(t.key)}",
                  f"read_mostly = {_value(t.read_mostly)}"]
    for p in w.procedures:
        lines += ["", "[[procedures]]", f"name = {toml_string(p.name)}", f"cost = {_value(p.cost)}"]
        if p.partition_key is not None:
            lines.append(f"partition_key = {toml_string(p.partition_key)}")
        if p.code is not None:
            lines.append(f"code = {toml_string(p.code)}")
        if p.oltp:
            lines.append("oltp = true")
        if p.accesses:
            lines.append("accesses = [")
            lines += [f"  {_access(a)}," for a in p.accesses]
            lines.append("]")
    for s in w.streams:
        lines += ["", "[[streams]]", f"from = {toml_string(s.source)}", f"to = {toml_string(s.target)}",
                  f"tuples = {_value(s.tuples)}", f"tuple_bytes = {toml_number(s.tuple_bytes)}"]
    for group in w.nested:
        lines += ["", "[[nested]]", f"procedures = {_value(list(group))}"]
    for win in w.windows:
        lines += ["", "[[windows]]", f"name = {toml_string(win.name)}",
                  f"procedure = {toml_string(win.procedure)}", f"size = {_value(win.size)}",
                  f"slide = {_value(win.slide)}", f"kind = {toml_string(win.kind)}",
                  f"tuple_bytes = {toml_number(win.tuple_bytes)}"]
        if win.max_tuples is not None:
            lines.append(f"max_tuples = {toml_number(win.max_tuples)}")
    return "\n".join(lines) + "\n"


def write_workload(workload: Workload, path: str | Path) -> Path:
    """Write the spec atomically (a reader never sees half a file)."""
    return atomic_write_text(path, workload_to_toml(workload))
