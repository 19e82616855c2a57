"""Builders of spec TOML text that the test modules share (not a test module), so that each
section's form is written once and a test states only its numbers: `spec_text` joins the
header, `[input]` and `[cluster]` with sections made by `table`, `procedure` (with `reads` and
`writes`), `stream` and `window`. A section's optional field left at None is left out, so
the reader's default applies.

The windowed specs several modules share: `recent_bids_spec` (Ingest writes Bids and feeds
Trend, which owns the tuple window RecentBids over Ingest's output) and `heavy_upstream_spec`
(the same window owned by a cheap SP downstream of two heavy ones). And `one_procedure_spec`:
the smallest spec with raw TOML lines where a test writes a value the builders cannot."""
from __future__ import annotations

from costmodel.spec_writer import toml_number, toml_string


def _toml(value: str | float | bool | list | tuple) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return toml_number(value)


def _fields(**fields) -> list[str]:
    """`key = value` lines of the fields that are not None, in the order given."""
    return [f"{key} = {_toml(value)}" for key, value in fields.items() if value is not None]


def spec_text(name: str, *sections: str, batch_size: int = 10, rate: float | None = None,
              fields: tuple[str, ...] | None = None, cost_unit_us: float | None = None,
              machines: int | None = None, partitions_per_machine: int | None = None,
              machine_memory_mb: float | None = None) -> str:
    """A whole spec: its name, `[input]`, `[cluster]` when any of its fields is given, then
    `sections` in order."""
    lines = [f"name = {toml_string(name)}", "[input]"]
    lines += _fields(batch_size=batch_size, rate=rate, fields=fields, cost_unit_us=cost_unit_us)
    cluster = _fields(machines=machines, partitions_per_machine=partitions_per_machine,
                      machine_memory_mb=machine_memory_mb)
    if cluster:
        lines += ["[cluster]", *cluster]
    return "\n".join(lines + list(sections)) + "\n"


def table(name: str, rows: int, row_bytes: int, key: str = "k") -> str:
    return "\n".join(["[[tables]]", *_fields(name=name, rows=rows, row_bytes=row_bytes, key=key)])


def _access(table_name: str, mode: str, rows: float, keys: str | None) -> str:
    return "{ " + ", ".join(_fields(table=table_name, mode=mode, rows=rows, keys=keys)) + " }"


def reads(table_name: str, rows: float, keys: str | None = None) -> str:
    """An access of `procedure`: `rows` rows of a table or window read per batch."""
    return _access(table_name, "read", rows, keys)


def writes(table_name: str, rows: float, keys: str | None = None) -> str:
    """An access of `procedure`: `rows` rows of a table written per batch."""
    return _access(table_name, "write", rows, keys)


def procedure(name: str, cost: float, *accesses: str, partition_key: str | None = None,
              oltp: bool = False) -> str:
    """A stored procedure; `accesses` are made by `reads` and `writes`."""
    lines = ["[[procedures]]", *_fields(name=name, cost=cost, partition_key=partition_key,
                                        oltp=oltp or None)]
    if accesses:
        lines.append("accesses = [ " + ", ".join(accesses) + " ]")
    return "\n".join(lines)


def stream(source: str, target: str, tuples: float) -> str:
    return "\n".join(["[[streams]]", *_fields(**{"from": source, "to": target, "tuples": tuples})])


def nested(*procedures: str) -> str:
    """A nested transaction: a group of SPs that commit together."""
    return "\n".join(["[[nested]]", *_fields(procedures=procedures)])


def window(name: str, owner: str, size: float, slide: float, kind: str | None = None,
           tuple_bytes: int | None = None, max_tuples: int | None = None) -> str:
    """A window that the SP `owner` alone reads and fills."""
    return "\n".join(["[[windows]]", *_fields(name=name, procedure=owner, size=size, slide=slide,
                                              kind=kind, tuple_bytes=tuple_bytes,
                                              max_tuples=max_tuples)])


def one_procedure_spec(input_toml: str = "", name_toml: str = '"P"', procedure_toml: str = "") -> str:
    """The smallest spec: SP P writes one row of table A per batch of 4. `input_toml` and
    `procedure_toml` are raw TOML lines added to `[input]` and to the procedure, and
    `name_toml` is P's name as TOML: for a test of how the reader takes a value the builders
    above cannot write (`"fast"`, `inf`, an escape in a name)."""
    return "\n".join(['name = "w"', "[input]", "batch_size = 4", input_toml, table("A", 100, 8),
                      "[[procedures]]", f"name = {name_toml}", "cost = 2.0", procedure_toml,
                      "accesses = [ " + writes("A", 1) + " ]"]) + "\n"


def recent_bids_spec(tuples: float = 4, size: float = 100, slide: float = 10) -> str:
    """The spec's TOML text: Ingest sends `tuples` per batch to Trend's window of `size`
    tuples sliding by `slide`."""
    return spec_text("w", table("Bids", rows=100, row_bytes=10),
                     procedure("Ingest", 3.0, writes("Bids", 1)),
                     procedure("Trend", 0.5, reads("RecentBids", 5)),
                     stream("Ingest", "Trend", tuples),
                     window("RecentBids", "Trend", size, slide))


def heavy_upstream_spec(machines: int = 3, ppm: int = 2, memory_mb: float | None = None,
                        size: int = 1000, windowed: bool = True, **input_fields) -> str:
    """A window owned by a cheap SP downstream of two heavy ones: Ingest writes Bids, Enrich
    reads Items, Trend reads its window RecentBids (`size` tuples sliding by 10).
    `windowed=False`: the same dataflow without the window and Trend's reads of it;
    `input_fields` (fields, cost_unit_us, ...) go to `[input]`."""
    window_reads = (reads("RecentBids", 20),) if windowed else ()
    windows = (window("RecentBids", "Trend", size=size, slide=10),) if windowed else ()
    return spec_text("window-owner",
                     table("Bids", rows=1000, row_bytes=100),
                     table("Items", rows=1000, row_bytes=100),
                     procedure("Ingest", 6.0, writes("Bids", 10)),
                     procedure("Enrich", 6.0, reads("Items", 10)),
                     procedure("Trend", 0.5, *window_reads),
                     stream("Ingest", "Enrich", 10), stream("Enrich", "Trend", 4), *windows,
                     machines=machines, partitions_per_machine=ppm, machine_memory_mb=memory_mb,
                     **input_fields)
