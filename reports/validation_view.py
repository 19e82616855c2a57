"""A validation result (engine measured, simulator predicted) as a notebook object and as
table rows for the report.

The result comes from `advisor validate --out RESULT.json` or from the Python API; this view
reads its dict form without importing the engine, so a report can be rebuilt anywhere from
the JSON file. It accepts one design (`{"engine": {...}, "simulator": {...}}`) or several
(`{"designs": [{"design": name, "engine": {...}, "simulator": {...}}, ...]}`).
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import AdvisorError

METRICS = (("throughput_tps", "throughput (tuples/s)", "{:,.0f}"),
           ("latency_p50_ms", "latency p50 (ms)", "{:.2f}"),
           ("latency_p99_ms", "latency p99 (ms)", "{:.2f}"),
           ("distributed_txns", "distributed txns", "{:,.0f}"),
           ("moves", "MOVEs", "{:,.0f}"))
SIM_KEYS = ("simulator", "sim", "simulation")
ENGINE_KEYS = ("engine", "measured")


class ValidationFormatError(AdvisorError):
    """A validation result this version cannot read."""


def _as_dict(x):
    if x is None or isinstance(x, dict):
        return x
    if hasattr(x, "to_dict"):
        return x.to_dict()
    raise ValidationFormatError(f"not a validation result: {type(x).__name__}")


def _pick(entry: dict, keys) -> dict | None:
    for k in keys:
        if entry.get(k) is not None:
            return _as_dict(entry[k])
    return None


@dataclass
class ValidationEntry:
    design: str
    engine: dict | None
    simulator: dict | None

    def value(self, side: str, metric: str) -> float | None:
        d = self.engine if side == "engine" else self.simulator
        v = None if d is None else d.get(metric)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


@dataclass
class ValidationView:
    entries: list[ValidationEntry] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # everything else the result carried (bottleneck, ...)

    @classmethod
    def from_any(cls, result) -> "ValidationView":
        if isinstance(result, ValidationView):
            return result
        if isinstance(result, (str, Path)):
            from reports.report import load_validation

            result = load_validation(result)
        data = _as_dict(result) if not isinstance(result, list) else {"designs": result}
        if not isinstance(data, dict):
            raise ValidationFormatError("a validation result must be a JSON object")
        listed = data.get("designs") or data.get("results")
        if isinstance(listed, dict):
            listed = [{"design": k, **_as_dict(v)} for k, v in listed.items()]
        entries = []
        if isinstance(listed, list):
            for i, e in enumerate(listed):
                e = _as_dict(e)
                entries.append(ValidationEntry(str(e.get("design") or e.get("name") or f"design {i}"),
                                               _pick(e, ENGINE_KEYS), _pick(e, SIM_KEYS)))
        else:
            engine, sim = _pick(data, ENGINE_KEYS), _pick(data, SIM_KEYS)
            if engine is None and sim is None:
                raise ValidationFormatError("validation result has neither engine nor simulator results")
            name = data.get("design")
            if isinstance(name, dict):
                name = name.get("method") or name.get("workload")
            entries.append(ValidationEntry(str(name or "design"), engine, sim))
        extra = {k: v for k, v in data.items() if k not in ("designs", "results", *ENGINE_KEYS, *SIM_KEYS)}
        return cls(entries, extra)

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
                ratio = f"{b / a:.2f}" if a and b is not None and math.isfinite(b / a) else ""
                out.append([e.design, title, "" if a is None else fmt.format(a),
                            "" if b is None else fmt.format(b), ratio])
        return out

    @property
    def notes(self) -> list[str]:
        notes = []
        for key in ("bottleneck", "note", "notes", "history_check"):
            v = self.extra.get(key)
            if isinstance(v, str):
                notes.append(f"{key.replace('_', ' ')}: {v}")
            elif isinstance(v, list):
                notes += [str(x) for x in v]
            elif isinstance(v, dict):  # engine_sim.validate: {"machine": {"text": ...}, ...}
                texts = [x["text"] for x in v.values() if isinstance(x, dict) and x.get("text")]
                notes += texts or [f"{key}: " + ", ".join(f"{k}={x}" for k, x in v.items())]
        for e in self.entries:
            check = (e.engine or {}).get("history_check")
            if check is not None:
                notes.append(f"{e.design}: engine history check {check}")
        return notes

    def to_frame(self):
        import pandas as pd

        rows = []
        for e in self.entries:
            row = {"design": e.design}
            for key, _, _ in METRICS:
                row[f"engine_{key}"] = e.value("engine", key)
                row[f"sim_{key}"] = e.value("simulator", key)
            rows.append(row)
        return pd.DataFrame(rows)

    def plot(self, ax=None, metric: str = "throughput_tps"):
        from reports.figures import plot_engine_vs_simulator

        return plot_engine_vs_simulator(self, ax=ax, metric=metric)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(f"<th>{e(h)}</th>" for h in self.header)
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        notes = "".join(f"<br>{e(n)}" for n in self.notes)
        return f"<b>Validation</b><table><tr>{head}</tr>{body}</table>{notes}"
