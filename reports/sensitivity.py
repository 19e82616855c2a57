"""How the recommended design and its cost move when alpha, beta or gamma moves.

The weights are uncertain (they depend on the cluster), so a design worth deploying should
not flip with a small change of them. One sweep per weight: its share of the total goes over
a grid while the other two keep their ratio; at every point the advisor recommends again.
Distinct designs get letters (A = the one chosen at the given weights) so a reader sees
where the choice changes.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field

import numpy as np

from advisor.errors import AdvisorError
from costmodel import Weights
from costmodel.errors import finite_number
from costmodel.weights import check_weights

TERMS = ("alpha", "beta", "gamma")
DEFAULT_SHARES = (0.05, 0.2, 0.4, 0.6, 0.8, 0.95)


def sweep_weights(base: Weights, term: str, share: float) -> Weights:
    """`base` with `term` set to `share` of the total and the other two scaled to the rest."""
    values = {t: float(getattr(base, t)) for t in TERMS}
    others = [t for t in TERMS if t != term]
    rest = sum(values[t] for t in others)
    out = {term: share}
    for t in others:
        out[t] = (1 - share) * (values[t] / rest if rest > 0 else 0.5)
    return Weights(**out)


def design_signature(design) -> tuple:
    """What makes two designs the same: which SPs and state items share a machine (machine
    numbers themselves are arbitrary) and which items are replicated."""
    groups: dict[int, list[str]] = {}
    ppm = design.partitions_per_machine
    for n, p in design.procedures.items():
        groups.setdefault(p // ppm, []).append("p:" + n)
    for n, p in design.state.items():
        if p is not None:
            groups.setdefault(p // ppm, []).append("s:" + n)
    replicated = tuple(sorted(n for n, p in design.state.items() if p is None))
    return tuple(sorted(tuple(sorted(g)) for g in groups.values())), replicated


def placement_signature(design) -> tuple:
    """What makes two designs run alike: what shares each partition, the partitions of each
    machine in their order (a distributed transaction locks partitions in ascending order, so
    their order is part of the design; machine numbers are arbitrary) and what is replicated.
    Two designs `design_signature` calls the same may differ here, and run at different
    speeds (a single-machine baseline at 0.75x of a design with the same machine grouping)."""
    ppm = design.partitions_per_machine
    parts: dict[int, list[str]] = {}
    for n, p in design.procedures.items():
        parts.setdefault(p, []).append("p:" + n)
    for n, p in design.state.items():
        if p is not None:
            parts.setdefault(p, []).append("s:" + n)
    machines = {p // ppm for p in parts}
    layout = sorted(tuple(tuple(sorted(parts.get(m * ppm + k, []))) for k in range(ppm)) for m in machines)
    return tuple(layout), tuple(sorted(n for n, p in design.state.items() if p is None))


def machine_changes(base, other, graph) -> list[str]:
    """What `other` places on another machine than `base` does (`SP3 m2->m5`, `T1 m0->all`),
    SPs first, once `other`'s machines are renamed to keep the most of `base` in place. Why:
    on a dataflow of realistic size each design's full grouping is a wall of names in which a
    reader cannot find the two SPs that differ."""
    from advisor.migration import align, moves_between

    where = lambda p, ppm=base.partitions_per_machine: "all" if p is None else f"m{p // ppm}"  # noqa: E731
    return [f"{m.name} {where(m.from_partition)}->{where(m.to_partition)}"
            for m in moves_between(base, align(base, other, graph), graph)
            if where(m.from_partition) != where(m.to_partition)]


@dataclass
class Sensitivity:
    """The sweep's results: one row per (term, share) with the chosen design's letter, its
    cost terms, and what the base design would cost at those weights."""

    base: Weights
    rows: list[dict] = field(default_factory=list)
    designs: dict[str, object] = field(default_factory=dict)  # letter -> Design

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows)

    @property
    def stable(self) -> bool:
        """True when every point of the sweep chose the base design."""
        return all(r["design"] == "A" for r in self.rows)

    def plot(self, ax=None):
        from reports.figures import plot_sensitivity

        return plot_sensitivity(self, ax=ax)

    def verdict(self) -> str:
        """Whether the sweeps kept the base design, else which designs they chose."""
        letters = sorted({r["design"] for r in self.rows})
        return ("stable: every point of the sweeps chose design A, the one at these weights" if self.stable
                else f"the sweeps chose designs {', '.join(letters)} (A: the one at these weights)")

    def __repr__(self) -> str:
        """One line (the dataclass's printed every row of the sweeps and every design: 8 KB
        at 100 SPs); `to_frame()` and the notebook list the rows."""
        b = self.base
        return (f"Sensitivity(alpha={b.alpha:.3g} beta={b.beta:.3g} gamma={b.gamma:.3g}, "
                f"{len(self.rows)} points: {self.verdict()})")

    def _repr_html_(self) -> str:
        """As the other notebook results render (`TuningStudy`): a bold line, then `to_frame`."""
        b = self.base
        head = (f"<b>Sensitivity to the weights</b> alpha={b.alpha:g} beta={b.beta:g} gamma={b.gamma:g}: "
                f"{self.verdict()}")
        return head + self.to_frame().to_html(index=False, float_format=lambda x: f"{x:.4g}")


def check_shares(shares) -> tuple[float, ...]:
    """The sweep's grid as the user gave it: numbers in [0, 1] (a share of alpha + beta +
    gamma) in an order (a list, tuple, range, 1-D array, pandas Series...; not a set or a
    mapping), at least one. A string or one number failed deep in the sweep (a TypeError);
    1.5 reached Weights as a negative weight, naming neither option nor value."""
    ordered = (isinstance(shares, Iterable) and not isinstance(shares, (str, bytes, Set, Mapping))
               and getattr(shares, "ndim", 1) == 1)
    values = [s.item() if isinstance(s, np.generic) else s for s in shares] if ordered else []
    if not values or not all(finite_number(s) and 0 <= s <= 1 for s in values):
        raise AdvisorError(f"shares must be a non-empty list of numbers in [0, 1] (each a weight's share "
                           f"of alpha + beta + gamma), got {' '.join(repr(shares).split()):.200}")
    return tuple(values)


def sensitivity(source, machines: int | None = None, partitions_per_machine: int | None = None,
                weights: Weights | None = None, shares: tuple[float, ...] = DEFAULT_SHARES,
                seed: int = 0, base_design=None) -> Sensitivity:
    """Recommend at every point of the three sweeps (baselines skipped: only the choice matters),
    around `weights` (None: those `recommend` prices for the graph, so design A is its pick)."""
    from advisor.priced_weights import default_weights
    from advisor.sources import load_graph
    from advisor.api import recommend

    shares = check_shares(shares)
    check_weights(weights, AdvisorError)
    graph = load_graph(source, machines, partitions_per_machine)
    base = weights or default_weights(graph)
    if base_design is None:
        base_design = recommend(graph, weights=base, seed=seed, baselines=False).design
    swept = {term: sweep_term(graph, base, term, shares, seed) for term in TERMS}
    return sensitivity_of(graph, base, base_design, shares, swept)


def sweep_term(graph, base: Weights, term: str, shares: tuple[float, ...] = DEFAULT_SHARES,
               seed: int = 0) -> list:
    """The design `recommend` chooses at each share of one weight: one sweep, on its own so
    that the three can run in separate processes (`reports.sections`); each point read from the
    cache on disk when it was asked before (`reports.pick_cache`)."""
    from reports.pick_cache import recommend_by_cost_cached

    return [recommend_by_cost_cached(graph, sweep_weights(base, term, share), seed) for share in shares]


def sensitivity_of(graph, base: Weights, base_design, shares: tuple[float, ...],
                   swept: dict[str, list]) -> Sensitivity:
    """The sweeps' designs (`swept`: term -> one design per share, as `sweep_term` gives) as
    rows, letters given in sweep order (A: `base_design`)."""
    out = Sensitivity(base=base)
    letters: dict[tuple, str] = {design_signature(base_design): "A"}
    out.designs["A"] = base_design
    for term in TERMS:
        for share, d in zip(shares, swept[term]):
            w = sweep_weights(base, term, share)
            sig = design_signature(d)
            if sig not in letters:
                letters[sig] = chr(ord("A") + len(letters)) if len(letters) < 26 else f"D{len(letters)}"
                out.designs[letters[sig]] = d
            base_cost = base_design.score(graph, w)
            out.rows.append({
                "term": term, "share": share, "alpha": w.alpha, "beta": w.beta, "gamma": w.gamma,
                "design": letters[sig], "total": d.cost.total,
                "state_colocation": d.cost.state_colocation,
                "processing_colocation": d.cost.processing_colocation,
                "load_balance": d.cost.load_balance, "base_design_total": base_cost.total,
                "regret": float(np.maximum(base_cost.total - d.cost.total, 0.0)),
            })
    return out
