"""Predicted throughput against the number of machines: the advisor's design for each cluster
size beside simple baselines, all simulated. Answers "how far does this dataflow scale"."""
from __future__ import annotations

import html
import os
from dataclasses import dataclass, field

from advisor.errors import AdvisorError
from advisor.sources import load_workload
from costmodel.errors import as_python_int, as_python_number, finite_number

from costmodel import Weights
from costmodel.design import Design
from costmodel.workload import Workload
from engine_sim.sim import SimError, spread_design
from reports.predict import (SCREEN_BELOW, CachedSimulator, FarBelowScreen, PredictOptions, predicted_tps,
                             screening_text)

DEFAULT_BASELINES = ("round-robin", "hash-by-table")


def default_machine_counts(machines: int, upto: int | None = None) -> list[int]:
    """1, 2, 4, ... up to twice the design's cluster (at least 4), plus the design's own."""
    top = upto or max(4, 2 * machines)
    counts, m = set(), 1
    while m <= top:
        counts.add(m)
        m *= 2
    counts.add(machines)
    return sorted(counts)


SLOWER_BY = 0.02  # a larger cluster's pick this far below a smaller one's is worth a line


@dataclass
class ScalingDip:
    """The advisor's design on `machines` predicted slower than its design for `fewer`."""

    machines: int
    tps: float
    fewer: int
    fewer_tps: float

    def describe(self) -> str:
        return (f"On {self.machines} machines the advisor's line is at {self.tps:,.0f} tuples/s, below "
                f"{self.fewer_tps:,.0f} on {self.fewer}: the design for {self.fewer} machines runs on "
                f"{self.machines} too (the others idle) and is the better choice there. Each cluster's search "
                f"starts afresh and can miss a design a smaller cluster's search found.")


@dataclass
class ScalingCurve:
    rows: list[dict] = field(default_factory=list)

    def dips(self, design: str = "advisor") -> list[ScalingDip]:
        """Where `design`'s predicted throughput on a larger cluster falls more than SLOWER_BY
        below its best on a smaller one (a design on fewer machines is one on more, so the
        curve of the best design never falls): one per larger cluster, against the best
        smaller one."""
        points = sorted((r["machines"], r["throughput_tps"]) for r in self.rows
                        if r["design"] == design and r["throughput_tps"] is not None)
        out, best = [], None
        for m, tps in points:
            if best is not None and tps < (1 - SLOWER_BY) * best[1]:
                out.append(ScalingDip(m, float(tps), best[0], float(best[1])))
            if best is None or tps > best[1]:
                best = (m, tps)
        return out

    def screened(self) -> dict[str, list[int]]:
        """The machine counts where each design's figure is screened, not simulated in full
        (`SCREEN_BELOW`), by design in the rows' order."""
        out: dict[str, list[int]] = {}
        for r in self.rows:
            if r.get("screened"):
                out.setdefault(r["design"], []).append(r["machines"])
        return out

    def screened_note(self) -> str:
        """One line saying which figures are screened and how ('' where none is)."""
        screened = self.screened()
        if not screened:
            return ""
        where = "; ".join(f"{name} on {', '.join(map(str, sorted(counts)))}" for name, counts in screened.items())
        return (f"Screened, as recommend's table screens (hollow markers: {screening_text()}, not the full "
                f"run): {where} machines, each below {SCREEN_BELOW:.0%} of the advisor's line there.")

    def __repr__(self) -> str:
        """One line (the dataclass printed every row: 1.3 KB for four machine counts)."""
        counts = sorted({r["machines"] for r in self.rows})
        designs = list(dict.fromkeys(r["design"] for r in self.rows))
        best = max((r for r in self.rows if r["design"] == "advisor" and r["throughput_tps"] is not None),
                   key=lambda r: r["throughput_tps"], default=None)
        top = "" if best is None else f"; advisor at most {best['throughput_tps']:,.0f} tuples/s, on {best['machines']}"
        screened = sum(1 for r in self.rows if r.get("screened"))
        return (f"ScalingCurve({', '.join(designs)} on {', '.join(map(str, counts))} machines{top}"
                + (f"; {screened} screened" if screened else "") + ")")

    def _repr_html_(self) -> str:
        return f"<b>{html.escape(repr(self))}</b>" + self.to_frame().to_html(
            index=False, formatters={"throughput_tps": lambda x: f"{x:,.0f}", "cost": lambda x: f"{x:.4f}"},
            na_rep="-")

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([{"screened": False, **r} for r in self.rows],
                            columns=["machines", "design", "throughput_tps", "cost", "screened"])

    def plot(self, ax=None):
        from reports.figures import plot_throughput_vs_machines

        return plot_throughput_vs_machines(self, ax=ax)


def scaling_curve(workload, machine_counts: list[int], weights: Weights | None = None,
                  partitions_per_machine: int | None = None, seed: int = 0,
                  baselines: tuple[str, ...] = DEFAULT_BASELINES,
                  options: PredictOptions | None = None, objective: str = "throughput",
                  fixed: dict | None = None, screen_below: float | None = SCREEN_BELOW) -> ScalingCurve:
    """Recommend (as `advisor recommend` does: `objective`) and simulate on every machine count
    (needs a workload: the simulator runs it). `fixed` maps a machine count to the advisor's
    design already made for it and, optionally, its predicted tuples/s (`(design, tps)`), so a
    report's chart shows the very design its headline shows (no search runs for that count).
    A baseline below `screen_below` of the advisor's figure is screened (its row says so;
    None: every baseline simulated in full). Every simulation goes through
    `reports.predict`'s cache: a design the report simulated already is not simulated again."""
    fixed = fixed or {}
    curve = ScalingCurve()
    if isinstance(workload, (str, os.PathLike)):  # (as every verb reads a source)
        workload = load_workload(workload)
    screen_below = check_screen_below(screen_below)
    for m in check_machine_counts(machine_counts):
        curve.rows += scaling_rows(workload, m, weights, partitions_per_machine, seed, baselines, options,
                                   objective, fixed.get(m), screen_below)
    return curve


def check_machine_counts(machine_counts) -> list[int]:
    """A list of machine counts from Python (numpy's too), each an int >= 1; else one line (4
    for [4] was "'int' object is not iterable", a 0 the simulator's error further in)."""
    said = f"machine_counts must be a list of machine counts (integers >= 1), got {machine_counts!r:.80}"
    if isinstance(machine_counts, (str, bytes)) or not hasattr(machine_counts, "__iter__"):
        raise AdvisorError(said)
    counts = [as_python_int(m) for m in machine_counts]
    if not all(isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in counts):
        raise AdvisorError(said)
    return counts


def check_screen_below(screen_below) -> float | None:
    """None (every baseline in full) or a share of the advisor's figure in (0, 1]; else one
    line (a string or -1 reached the comparison inside)."""
    value = as_python_number(screen_below)
    if value is None:
        return None
    if isinstance(value, bool) or not finite_number(value) or not 0 < value <= 1:
        raise AdvisorError(f"screen_below must be None or a share of the advisor's figure in (0, 1], "
                           f"got {screen_below!r:.80}")
    return float(value)


def scaling_rows(workload, machines: int, weights: Weights | None = None,
                 partitions_per_machine: int | None = None, seed: int = 0,
                 baselines: tuple[str, ...] = DEFAULT_BASELINES,
                 options: PredictOptions | None = None, objective: str = "throughput",
                 fixed: tuple | None = None, screen_below: float | None = SCREEN_BELOW) -> list[dict]:
    """One machine count's rows of `scaling_curve` (`fixed`: that count's `(design, tps)`):
    on its own, so that a report can work out the counts side by side."""
    from advisor.baselines import BASELINE_FUNCTIONS
    from reports.pick_cache import recommend_cached

    screen_below = check_screen_below(screen_below)
    from advisor.sources import load_graph
    from costmodel.design import Design

    w = workload.with_cluster(machines=machines, partitions_per_machine=partitions_per_machine)
    graph = load_graph(w)  # the graph `recommend` searches on
    if weights is None:  # what `recommend` prices for this cluster's graph (not the old fixed ones)
        from advisor.priced_weights import default_weights

        weights = default_weights(graph, (options or PredictOptions()).calibration)
    if fixed is not None:
        own, own_tps = fixed
    else:
        o = options or PredictOptions()
        pick = recommend_cached(w, weights, seed, o.calibration, objective, simulator=CachedSimulator(),
                                simulator_name="report")
        # the pick's own figure is the prediction where the settings are its own
        own, own_tps = pick.design, pick.prediction if o.as_the_pick(seed) else None
    if own_tps is None:
        own_tps = predicted_tps(w, own, options)
    rows = [{"machines": machines, "design": "advisor", "throughput_tps": own_tps, "cost": own.cost.total,
             "screened": False}]
    screen = FarBelowScreen.of(w, graph, own_tps, options, screen_below)
    for name in baselines:
        placed = BASELINE_FUNCTIONS[name](graph, weights, seed)
        if placed is None:
            continue
        d = Design.from_arrays(graph, placed[0], placed[1], weights, method=name)
        sim = screen.predict(d, placed[:2])
        rows.append({"machines": machines, "design": name, "throughput_tps": None if sim is None else float(sim.throughput_tps),
                     "cost": d.cost.total, "screened": screen.screened(sim)})
    return rows


def scale_design(design: Design, machines: int, *, workload: Workload | None = None,
                 method: str = "spread") -> Design:
    """The design on `machines` machines (same partitions per machine): spread over them
    (`engine_sim.sim.spread_design`) or recommended afresh for that cluster."""
    if machines == design.machines:
        return design
    if method == "spread":
        return spread_design(design, machines)
    if method == "recommend":
        if workload is None:
            raise SimError("rescaling by recommendation needs the workload")
        from advisor.api import recommend

        return recommend(workload, machines=machines,
                         partitions_per_machine=design.partitions_per_machine).design
    raise SimError(f"unknown rescale method {method!r} (choose spread or recommend)")
