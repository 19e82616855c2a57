"""Bottlenecks and concrete changes, each with its predicted gain.

A suggestion is only worth showing with a number beside it, so every candidate change is
applied to a copy of the spec (or of the design, for replication), the advisor recommends
again for the changed dataflow on the same cluster, and the simulator predicts its
throughput; the gain is against the current design's prediction. Without a spec (a
statistics-only source) there is nothing to simulate, and the gain is the change in design
cost instead.

The candidates are in `reports.candidates`, the bottleneck in `reports.bottleneck`; the
changes themselves in `reports.transforms`.
"""
from __future__ import annotations

import html
import os
from dataclasses import dataclass, field

from advisor.errors import AdvisorError
from advisor.sources import load_workload
from costmodel.design import Design
from costmodel.errors import as_python_number, is_a
from costmodel.workload import Workload
from costmodel import Bottleneck
from reports.bottleneck import simulated_bottleneck
from reports.candidates import candidate_changes, design_for, picked_for
from reports.parallel import InlinePool
from reports.predict import PredictOptions, predict
from reports.transforms import ChangeError, replicate_design

__all__ = ["Bottleneck", "ChangeToTry", "Suggestion", "Suggestions", "SuggestionsStart", "design_for",
           "simulated_bottleneck", "suggest", "try_change"]


@dataclass
class Suggestion:
    kind: str  # split | partition | replicate | merge
    target: str
    text: str
    reason: str
    workload: Workload | None  # the changed spec (None: the change is to the design only)
    design: Design
    replicated: tuple[str, ...] = ()  # tables forced to be replicated in `design`
    cost_before: float = 0.0
    cost_after: float = 0.0
    tps_before: float | None = None
    tps_after: float | None = None

    @property
    def gain(self) -> float | None:
        """Predicted throughput gain as a fraction (0.25 = 25 % more), None without a simulator."""
        if self.tps_before is None or self.tps_after is None or self.tps_before <= 0:
            return None
        return self.tps_after / self.tps_before - 1.0

    @property
    def gain_text(self) -> str:
        g = self.gain
        if g is not None:
            return f"{g:+.0%} predicted throughput ({self.tps_before:,.0f} -> {self.tps_after:,.0f} tuples/s)"
        return f"design cost {self.cost_before:.3f} -> {self.cost_after:.3f}"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "target": self.target, "change": self.text, "reason": self.reason,
                "cost_before": self.cost_before, "cost_after": self.cost_after,
                "tps_before": self.tps_before, "tps_after": self.tps_after, "gain": self.gain}


MIN_GAIN = 0.01  # a change predicted to raise throughput by less helps nobody (`advisor tune`'s default too)


def gain_threshold_text(min_gain: float) -> str:
    """A smallest gain as a percentage, as asked: 0.005 is "0.5%" (`:.0%` said "0%" or "1%")."""
    return f"{min_gain * 100:g}%"

# kind of change -> why there was none of that kind to try, where none was skipped
_NONE_OF_KIND = {"split": "no SP has a key to split on",
                 "replicate": "no read-mostly table is accessed across machines",
                 "merge": "no cut stream joins a mergeable pair"}


@dataclass
class Suggestions:
    """The changes predicted to help (`items`, best first) and those tried that are predicted
    to gain less than `min_gain` (MIN_GAIN unless asked) over the design they start from
    (`not_helping`): a change is only suggested when the same pick as `recommend`, on the
    changed dataflow, is predicted faster by that much, as `advisor tune` takes one."""

    bottleneck: Bottleneck
    items: list[Suggestion] = field(default_factory=list)
    not_helping: list[Suggestion] = field(default_factory=list)
    tried: int = 0  # changes tried (every copy count of a split counted), 0: as many as listed
    skipped: list[tuple[str, str, str, str]] = field(default_factory=list)  # (kind, target, text, why not)
    min_gain: float = MIN_GAIN  # what a change must gain to be in `items`

    def __iter__(self):
        return iter(self.items)

    def __repr__(self) -> str:
        """One line (the dataclass printed every change tried with its changed workload and
        design: 1.6 KB for tpcdi-trade's one); `to_frame()` and the notebook list them."""
        where = getattr(self.bottleneck, "resource", "") or "?"
        head = (f"{len(self.items)} predicted to help, the best: {self.items[0].text!s:.100} ({self.items[0].gain_text})"
                if self.items else self.note)
        return f"Suggestions(bottleneck {where}: {head!s:.240})"

    def __len__(self) -> int:
        return len(self.items)

    @property
    def best(self) -> Suggestion | None:
        """The change predicted to help most; None when none is predicted to (without a
        simulator, the first by cost)."""
        return self.items[0] if self.items else None

    @property
    def note(self) -> str:
        """One line on why nothing is suggested ('' when something is)."""
        if self.items:
            return ""
        if self.not_helping:
            top = self.not_helping[0]
            tried = max(self.tried, len(self.not_helping))
            return (f"No change is predicted to help by {gain_threshold_text(self.min_gain)} or more: "
                    f"{tried} tried, the best "
                    f"({top.text}) is predicted at {top.gain:+.1%}.")
        return f"No change to try: {_why_none(self.skipped)}."

    def to_frame(self):
        import pandas as pd

        frame = pd.DataFrame([s.to_dict() for s in self.items],
                             columns=["kind", "target", "change", "reason", "cost_before", "cost_after",
                                      "tps_before", "tps_after", "gain"])
        figures = ["cost_before", "cost_after", "tps_before", "tps_after", "gain"]
        frame[figures] = frame[figures].astype(float)  # (None, or no rows at all: NaN, float columns)
        return frame

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(f"<tr><td>{e(s.text)}</td><td>{e(s.reason)}</td><td>{e(s.gain_text)}</td></tr>"
                       for s in self.items)
        return ("<b>Bottleneck</b><ul>" + "".join(f"<li>{e(x)}</li>" for x in self.bottleneck.describe())
                + "</ul><table><tr><th>change</th><th>why</th><th>predicted effect</th></tr>"
                + rows + "</table>")


@dataclass
class ChangeToTry:
    """A candidate change already applied: what `try_change` needs to price it (plain records,
    so it can run in another process)."""

    kind: str
    target: str
    text: str
    reason: str
    workload: Workload | None  # the changed spec (None: the design only)
    replicated: tuple[str, ...]


def suggest(workload: Workload | None, design: Design, graph=None, weights=None,
            replicated: tuple[str, ...] = (), options: PredictOptions | None = None,
            sim=None, seed: int = 0, limit: int = 6, pool=None, min_gain: float = MIN_GAIN) -> Suggestions:
    """Bottleneck of `design` and the candidate changes ranked by predicted gain (best first),
    those predicted to gain less than `min_gain` kept apart (`advisor tune --min-gain`).

    `sim` is the simulator result of `design` if already known (saves one simulation); `pool`
    (`reports.parallel.section_pool`) tries the changes side by side (default: one by one,
    here), with the same result.
    """
    workload, design = _suggest_inputs(workload, design)
    min_gain = check_min_gain(min_gain)
    start = SuggestionsStart.of(workload, design, graph, weights, replicated, options, sim)
    if workload is None:
        return start.by_cost(limit)
    pool = pool or InlinePool()
    futures = [pool.submit(try_change, workload, design, start.weights, change, seed, options,
                           start.tps_before is not None) for change in start.changes]
    pool.work_here()
    return start.finish([f.result() for f in futures], limit, min_gain)


def _suggest_inputs(workload, design) -> tuple[Workload | None, Design]:
    """The workload (None: statistics only, a name, a spec, statistics or a Workload) and the
    design (a Design or its file) as the verbs read them; the wrong kind is one AdvisorError
    line (a string design was an AttributeError on `.weights` deep in the start)."""
    if isinstance(design, (str, os.PathLike)) and not isinstance(design, bytes):
        design = Design.load(design)
    elif not is_a(design, Design):
        raise AdvisorError(f"design must be a Design or its JSON file, got {design!r:.80}")
    if workload is not None and not (is_a(workload, Workload) or isinstance(workload, (str, os.PathLike))):
        raise AdvisorError(f"workload must be a Workload, a bundled name, a spec file, statistics or None, "
                           f"got {workload!r:.80}")
    return (None if workload is None else load_workload(workload)), design


def check_min_gain(value, name: str = "min_gain") -> float:
    """The smallest gain a change must bring: a number in [0, 10) (nan, a string or -1 ran the
    whole round first, or took every change), returned as a Python number (numpy's too)."""
    number = as_python_number(value)
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 <= number < 10:
        raise AdvisorError(f"{name} must be a number in [0, 10), got {value!r}")
    return number


def try_change(workload: Workload, design: Design, weights, change: ChangeToTry, seed: int = 0,
               options: PredictOptions | None = None, simulate: bool = True) -> tuple[Design, float | None]:
    """The pick `recommend` makes for the changed dataflow on the same cluster, and its
    predicted tuples/s (None without a prediction, or unless `simulate`: the design it starts
    from has none to compare with): one suggestion's work, on its own so a report can run the
    changes side by side (`reports.parallel`)."""
    spec = change.workload or workload
    o = options or PredictOptions()
    new_design, picked_tps = picked_for(spec, design.machines, design.partitions_per_machine, weights,
                                        change.replicated, seed, calibration=o.calibration)
    if not simulate:
        return new_design, None
    if picked_tps is not None and o.as_the_pick(seed):  # the pick's own figure is this prediction
        return new_design, picked_tps
    return new_design, float(predict(spec, new_design, o).throughput_tps)


@dataclass
class SuggestionsStart:
    """What the changes start from: the design's bottleneck and prediction, and the changes
    to try, applied (`changes`); `finish` ranks them once each is tried."""

    design: Design
    graph: object
    weights: object
    bottleneck: Bottleneck
    cost_before: float
    tps_before: float | None
    changes: list[ChangeToTry]
    skipped: list[tuple[str, str, str, str]] = field(default_factory=list)  # (kind, target, text, why not)

    @classmethod
    def of(cls, workload: Workload | None, design: Design, graph=None, weights=None,
           replicated: tuple[str, ...] = (), options: PredictOptions | None = None,
           sim=None) -> "SuggestionsStart":
        from costmodel.graph import WorkloadGraph

        if graph is None:
            graph = WorkloadGraph.from_workload(workload)
        weights = weights or design.weights
        if sim is None:
            sim = predict(workload, design, options)
        bottleneck = simulated_bottleneck(design, graph, sim)
        changes, skipped = [], []
        if workload is not None:
            for kind, target, text, reason, apply in candidate_changes(workload, design, graph, bottleneck,
                                                                       replicated):
                try:
                    changed, forced = apply()
                except ChangeError as refused:  # (the note then says why, not that there was none)
                    skipped.append((kind, target, text, str(refused)))
                    continue
                changes.append(ChangeToTry(kind, target, text, reason, changed, forced))
        return cls(design, graph, weights, bottleneck, design.score(graph, weights).total,
                   None if sim is None else float(sim.throughput_tps), changes, skipped)

    def by_cost(self, limit: int = 6) -> Suggestions:
        """Statistics only: the design-level change is all there is, scored by the cost model."""
        result = Suggestions(self.bottleneck, skipped=self.skipped)
        for table in _cut_read_mostly(self.design, self.graph):
            changed = replicate_design(self.design, self.graph, table)
            result.items.append(Suggestion("replicate", table, f"replicate read-mostly table {table} on every machine",
                                           "it is read across machines", None, changed, (table,),
                                           self.cost_before, changed.score(self.graph, self.weights).total))
        result.items.sort(key=lambda s: s.cost_after - s.cost_before)
        result.items = result.items[:limit]
        return result

    def finish(self, tried: list[tuple[Design, float | None]], limit: int = 6,
               min_gain: float = MIN_GAIN) -> Suggestions:
        """The changes with what `try_change` gave for each (in `changes` order), best first;
        those predicted to gain less than `min_gain`, or nothing, kept apart."""
        result = Suggestions(self.bottleneck, tried=len(tried), skipped=self.skipped, min_gain=min_gain)
        for change, (new_design, tps) in zip(self.changes, tried):
            result.items.append(Suggestion(change.kind, change.target, change.text, change.reason, change.workload,
                                           new_design, change.replicated, self.cost_before, new_design.cost.total,
                                           self.tps_before, tps))
        _keep_best_split(result)
        result.items.sort(key=lambda s: -(s.gain if s.gain is not None else (s.cost_before - s.cost_after)))
        helps = [s.gain is None or (s.gain >= min_gain and s.gain > 0) for s in result.items]  # (0: no help
        # even at --min-gain 0, or tune takes a change for nothing, round after round)
        result.not_helping = [s for s, h in zip(result.items, helps) if not h]
        result.items = [s for s, h in zip(result.items, helps) if h][:limit]
        return result


def _why_none(skipped: list[tuple[str, str, str, str]]) -> str:
    """Why there was no change of each kind to try: the changes of that kind that did not apply
    and why (the first of each target's), else that there was none ("no cut stream joins a
    mergeable pair" was said of a merge refused for its summed cost)."""
    parts = []
    for kind, none in _NONE_OF_KIND.items():
        refused: dict[str, str] = {}
        for k, target, text, why in skipped:
            if {"partition": "split"}.get(k, k) == kind:
                refused.setdefault(target, f"{text} does not apply ({why})")
        parts.extend(refused.values() or [none])
    return ", ".join(parts[:-1]) + f", and {parts[-1]}"


def _keep_best_split(result: Suggestions) -> None:
    """Of the several copy counts tried for one SP, keep the best only."""
    best: dict[str, Suggestion] = {}
    rest = []
    for s in result.items:
        if s.kind not in ("split", "partition"):
            rest.append(s)
            continue
        score = s.gain if s.gain is not None else s.cost_before - s.cost_after
        old = best.get(s.target)
        old_score = None if old is None else (old.gain if old.gain is not None else old.cost_before - old.cost_after)
        if old is None or score > old_score + 1e-12:
            best[s.target] = s
    result.items = list(best.values()) + rest


def _cut_read_mostly(design: Design, graph) -> list[str]:
    g = graph.with_cluster(design.machines, design.partitions_per_machine)
    proc, state = design.arrays(g)
    c, ppm = g.cost, design.partitions_per_machine
    tables = []
    for p, s in zip(c.ps_proc, c.ps_state):
        if g.state_read_mostly[s] and state[s] >= 0 and state[s] // ppm != proc[p] // ppm:
            tables.append(g.state_tables[s])
    return list(dict.fromkeys(tables))
