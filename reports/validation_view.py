"""A validation result (engine measured, simulator predicted) as a notebook object and as
table rows for the report.

The result is a validation file (`advisor.validation/1`, docs/formats.md), written by
`advisor validate --out` and `advisor demo`, or a `ValidationResult` of the Python API. It is
read exactly: another format or version, a missing or unknown field is one clear error, never
a guess; each side is the engine's `RunResult` or the simulator's `SimResult` as written by
its `to_dict`, checked against that type's own fields (the only part of the engine this view
imports), so a report can be rebuilt from the JSON file without running anything.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path

from costmodel.errors import UserError, finite_float
from costmodel.workload import cluster_text
from reports.validation import FORMAT
from costmodel.user_files import read_user_json

# what a validation shows of each side; counts per batch, since the engine and the simulator
# run different numbers of batches (the demo: 200 and 300, so 200 MOVEs against 300 were one
# a batch on both sides)
METRICS = (("throughput_tps", "throughput (tuples/s)", "{:,.0f}"),
           ("latency_p50_ms", "latency p50 (ms)", "{:.2f}"),
           ("latency_p99_ms", "latency p99 (ms)", "{:.2f}"),
           ("distributed_txns_per_batch", "distributed txns per batch", "{:.2f}"),
           ("moves_per_batch", "MOVEs per batch", "{:.2f}"),
           # each side's length: a validation's simulator runs as many batches as its engine
           # (`--batches`), so its figure may differ from recommend's 300-batch one
           ("batches", "batches run", "{:,.0f}"))
NO_RATIO = {"batches"}
PER_BATCH = {"distributed_txns_per_batch": "distributed_txns", "moves_per_batch": "moves"}
# the fields those are read from (checked finite and >= 0 when a file is read)
SHOWN_FIELDS = ("throughput_tps", "latency_p50_ms", "latency_p99_ms", "distributed_txns", "moves",
                "batches", "completed_batches")
DOCUMENT_KEYS = {"format", "workload", "designs", "notes"}
ENTRY_KEYS = {"design", "machines", "partitions_per_machine", "predicted_cost", "engine",
              "simulator", "bottleneck", "notes"}


class ValidationFormatError(UserError):
    """A validation result this version cannot read."""


@dataclass
class ValidationEntry:
    design: str
    engine: dict | None
    simulator: dict | None
    bottleneck: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    machines: int | None = None  # the cluster it ran on, where the file says
    partitions_per_machine: int | None = None

    def value(self, side: str, metric: str) -> float | None:
        return side_value(self.engine if side == "engine" else self.simulator, metric)


def side_value(result: dict | None, metric: str) -> float | None:
    """One of METRICS of one side's result (its `to_dict`): a field, or a count per batch
    the side completed (the simulator's `completed_batches`, the engine's `batches`)."""
    if result is None:
        return None
    count = PER_BATCH.get(metric)
    if count is None:
        return _float(result.get(metric))
    n = _float(result.get("completed_batches")) or _float(result.get("batches"))
    c = _float(result.get(count))
    return c / n if c is not None and n else None


def _float(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _finite_non_negative(value) -> bool:
    return finite_float(value) and value >= 0


def _number(value, null: bool = False) -> bool:
    """A finite JSON number (`to_dict` writes a non-finite float as null: `null` allows it)."""
    if value is None:
        return null
    return finite_float(value)


# what a field of RunResult or SimResult holds, by its annotation, as JSON (`to_dict`)
_FIELD_TYPES = {
    "bool": ("a boolean", lambda v: isinstance(v, bool)),
    "int": ("a number", _number),
    "int | None": ("a number or null", lambda v: _number(v, null=True)),
    "float": ("a number or null", lambda v: _number(v, null=True)),
    "float | None": ("a number or null", lambda v: _number(v, null=True)),
    "str": ("a string", lambda v: isinstance(v, str)),
    "str | None": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "list[int]": ("a list of numbers", lambda v: isinstance(v, list) and all(_number(x) for x in v)),
    "list[float]": ("a list of numbers", lambda v: isinstance(v, list) and all(_number(x, null=True) for x in v)),
    "list[str]": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "list[dict]": ("a list of objects", lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v)),
    "dict[str, dict]": ("an object of objects",
                        lambda v: isinstance(v, dict) and all(isinstance(x, dict) for x in v.values())),
    "dict | None": ("an object or null", lambda v: v is None or isinstance(v, dict)),
    "object": ("anything", lambda v: True),  # RunResult.migration: MigrationResult's fields, or null
}


def result_fields(side: str) -> dict:
    """The fields of one side's result type (`RunResult` for "engine", `SimResult` for
    "simulator"): the file holds what its `to_dict` wrote, so its fields are the format."""
    from dataclasses import fields

    if side == "engine":
        from engine_sim.engine.metrics import RunResult as result
    else:
        from engine_sim.sim.result import SimResult as result
    return {f.name: f for f in fields(result)}


def _check_result(side: str, result: dict, fail) -> None:
    """One side's result read exactly: no unknown field, every field its type cannot do
    without, each of the type its annotation says."""
    from dataclasses import MISSING

    known = result_fields(side)
    unknown = sorted(set(result) - set(known))
    if unknown:
        raise fail(f"{side}: unknown field {unknown[0]!r}")
    missing = [n for n, f in known.items()
               if f.default is MISSING and f.default_factory is MISSING and n not in result]
    if missing:
        raise fail(f"{side}: missing field {missing[0]!r}")
    for name, value in result.items():
        what, ok = _FIELD_TYPES.get(str(known[name].type), ("", None))
        if ok is not None and not ok(value):
            raise fail(f"{side}.{name} must be {what}, got {value!r}")


def _check_cost(cost, fail) -> None:
    """The predicted cost's terms: `feasible` a boolean, every other term a finite number >= 0."""
    if not isinstance(cost, dict):
        raise fail("\"predicted_cost\" must be an object")
    for name, value in cost.items():
        ok = isinstance(value, bool) if name == "feasible" else _finite_non_negative(value)
        if not ok:
            must = "a boolean" if name == "feasible" else "a finite number >= 0"
            raise fail(f"predicted_cost.{name} must be {must}, got {value!r}")


def _entry(e, where: str) -> ValidationEntry:
    def fail(problem: str) -> ValidationFormatError:
        return ValidationFormatError(f"{where}: {problem}")

    if not isinstance(e, dict):
        raise fail("must be an object")
    unknown = sorted(set(e) - ENTRY_KEYS)
    if unknown:
        raise fail(f"unknown field {unknown[0]!r}")
    missing = [k for k in ("design", "engine", "simulator") if k not in e]
    if missing:
        raise fail(f"missing field {missing[0]!r}")
    if not isinstance(e["design"], str):
        raise fail("\"design\" must be a string")
    for side in ("engine", "simulator"):
        if e[side] is not None and not isinstance(e[side], dict):
            raise fail(f"\"{side}\" must be an object or null")
    if e["engine"] is None and e["simulator"] is None:
        raise fail("neither engine nor simulator results")
    bottleneck, notes = e.get("bottleneck", {}), e.get("notes", [])
    if not isinstance(bottleneck, dict):
        raise fail("\"bottleneck\" must be an object")
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise fail("\"notes\" must be a list of strings")
    for name in ("machines", "partitions_per_machine"):
        value = e.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise fail(f"\"{name}\" must be an integer >= 1, got {value!r}")
    _check_cost(e.get("predicted_cost", {}), fail)
    for side in ("engine", "simulator"):
        if e[side] is not None:
            _check_result(side, e[side], fail)
        for metric in SHOWN_FIELDS:  # what the report shows of each side
            value = (e[side] or {}).get(metric)
            if value is not None and not _finite_non_negative(value):
                raise fail(f"{side}.{metric} must be a finite number >= 0, got {value!r}")
    for name, item in bottleneck.items():  # the report shows each one's text line
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise fail(f"bottleneck.{name} must be an object whose \"text\" is a string")
    return ValidationEntry(e["design"], e["engine"], e["simulator"], bottleneck, notes,
                           e.get("machines"), e.get("partitions_per_machine"))


def parse_validation(data, source: str = "validation result", workload: str | None = None
                     ) -> "ValidationView":
    """A validation file's JSON, read exactly (`advisor.validation/1`); one-line errors.
    `workload`: the name of the workload it must be a validation of (a report's design's), so
    that one workload's measurements never appear in another's report."""
    if not isinstance(data, dict):
        raise ValidationFormatError(f"{source}: not a validation result (a JSON object with "
                                    f"\"format\": \"{FORMAT}\" expected)")
    version = data.get("format")
    if version != FORMAT:
        found = "no \"format\"" if version is None else f"format {version!r}"
        raise ValidationFormatError(f"{source}: {found}; this version reads \"format\": \"{FORMAT}\" "
                                    "(write it again with `advisor validate --out`)")
    unknown = sorted(set(data) - DOCUMENT_KEYS)
    if unknown:
        raise ValidationFormatError(f"{source}: unknown field {unknown[0]!r}")
    designs = data.get("designs")
    if not isinstance(designs, list) or not designs:
        raise ValidationFormatError(f"{source}: \"designs\" must be a non-empty list")
    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise ValidationFormatError(f"{source}: \"notes\" must be a list of strings")
    validated = data.get("workload", "")
    if not isinstance(validated, str):
        raise ValidationFormatError(f"{source}: \"workload\" must be a string")
    if workload is not None and validated and validated != workload:  # one naming none: unchecked
        raise ValidationFormatError(f"{source}: a validation of workload {validated!r}, not of "
                                    f"{workload!r} (the design's); validate this design with "
                                    "`advisor validate --out`")
    entries = [_entry(e, f"{source}: designs[{i}]") for i, e in enumerate(designs)]
    return ValidationView(entries, validated, notes)


def read_validation(path: str | Path, workload: str | None = None) -> "ValidationView":
    """A validation file (`advisor validate --out`), of `workload` when given; one-line errors."""
    path = Path(path)
    return parse_validation(read_user_json(path, ValidationFormatError), str(path), workload)


@dataclass
class ValidationView:
    entries: list[ValidationEntry] = field(default_factory=list)
    workload: str = ""
    document_notes: list[str] = field(default_factory=list)

    @classmethod
    def from_any(cls, result) -> "ValidationView":
        """A view of a validation file (path), its JSON (dict) or a `ValidationResult`."""
        if isinstance(result, ValidationView):
            return result
        if isinstance(result, (str, Path)):
            return read_validation(result)
        if hasattr(result, "to_document"):
            return parse_validation(result.to_document())
        return parse_validation(result)

    @property
    def has_both(self) -> bool:
        return any(e.engine is not None and e.simulator is not None for e in self.entries)

    # -- tables -------------------------------------------------------------------------
    @property
    def header(self) -> list[str]:
        return ["design", "metric", "engine (measured)", "simulator (predicted)", "simulator / engine"]

    @property
    def rows(self) -> list[list[str]]:
        out = []
        for e in self.entries:
            for key, title, fmt in METRICS:
                a, b = e.value("engine", key), e.value("simulator", key)
                if a is None and b is None:
                    continue
                ratio = f"{b / a:.2f}" if a and b is not None and math.isfinite(b / a) and key not in NO_RATIO else ""
                out.append([e.design, title, "" if a is None else fmt.format(a),
                            "" if b is None else fmt.format(b), ratio])
        return out

    @property
    def speedups(self) -> list[str]:
        """Each later design's throughput over the first's, on each side: the comparison that
        holds where the absolute figures cannot (the engine on this host, the simulator on
        the cluster it predicts)."""
        first = self.entries[0] if self.entries else None
        base = [None if first is None else first.value(side, "throughput_tps") for side in ("engine", "simulator")]
        lines = []
        for e in self.entries[1:]:
            cells = []
            for side, b in zip(("engine", "simulator"), base):
                v = e.value(side, "throughput_tps")
                cells.append(f"{side} {v / b:.2f}x" if v is not None and b else f"{side} -")
            if any(not c.endswith(" -") for c in cells):
                lines.append(f"{e.design} over {first.design}: {', '.join(cells)} (throughput)")
        return lines

    @property
    def notes(self) -> list[str]:
        """Each later design's speed-up over the first, each design's bottleneck and notes,
        the notes about the whole comparison, and the engine's history checks."""
        notes = list(self.speedups)
        several = len(self.entries) > 1
        for e in self.entries:
            texts = [x["text"] for x in e.bottleneck.values() if isinstance(x, dict) and x.get("text")]
            notes += [f"{e.design}: {t}" if several else t for t in texts + e.notes]
        notes += [f"note: {n}" for n in self.document_notes]
        for e in self.entries:
            check = (e.engine or {}).get("history_check")
            if check is not None:
                notes.append(f"{e.design}: engine history check {check}")
        return notes

    def cluster_notes(self, machines: int, partitions_per_machine: int) -> list[str]:
        """A line for each design validated on another cluster than `machines` x
        `partitions_per_machine` (the design a report is of): its figures are that cluster's,
        shown beside the design's own predictions for its own (a 2-machine validation in the
        report of a 4-machine design gave the same design name two throughputs, unexplained)."""
        lines = []
        for e in self.entries:
            m = e.machines if e.machines is not None else machines
            p = e.partitions_per_machine if e.partitions_per_machine is not None else partitions_per_machine
            if (m, p) != (machines, partitions_per_machine):
                lines.append(f"{e.design}: validated on {cluster_text(m, p)}, not this design's "
                             f"{cluster_text(machines, partitions_per_machine)}: its figures are that cluster's")
        return lines

    def to_frame(self):
        import pandas as pd

        rows = []
        for e in self.entries:
            row = {"design": e.design}
            for key, _, _ in METRICS:
                row[f"engine_{key}"] = e.value("engine", key)
                row[f"sim_{key}"] = e.value("simulator", key)
            rows.append(row)
        frame = pd.DataFrame(rows)
        figures = [c for c in frame.columns if c != "design"]  # a side not run: NaN, not an object column of None
        frame[figures] = frame[figures].astype(float)
        return frame

    def plot(self, ax=None, metric: str = "throughput_tps"):
        from reports.figures import plot_engine_vs_simulator

        return plot_engine_vs_simulator(self, ax=ax, metric=metric)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(f"<th>{e(h)}</th>" for h in self.header)
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        notes = "".join(f"<br>{e(n)}" for n in self.notes)
        return f"<b>Validation</b><table><tr>{head}</tr>{body}</table>{notes}"
