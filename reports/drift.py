"""Is a deployed design still right for this week's workload?

Why: a design lives for months while its workload drifts. `check_drift` recommends anew for
the source a user brings now (a statistics directory from a new trace, or a spec), on the
deployed design's cluster and from it (`recommend(current=...)`), so the deployed design and
the best design are predicted by the same simulator in the same run, and their ratio says how
far the deployed design has fallen behind. What changed in the workload is read against the
profile kept in the design's provenance (or against `since`, the source it was made from).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field, replace

from advisor.sources import Source, check_argument_order, check_same_granularity, load_source
from advisor.api import check_table_level, recommend
from advisor.selection import TIE_TOLERANCE
from costmodel.design import Design
from costmodel.errors import DesignError, as_python_number
from costmodel.granularity import with_hot_set
from advisor.profile import MAX_NAMED, Change, check_profile, compare_profiles, workload_profile

DEFAULT_TOLERANCE = 0.10


@dataclass
class DriftCheck:
    """The deployed design against the best design for the workload now."""

    design: Design
    tolerance: float
    deployed_tps: float | None = None  # predicted (or estimated, see `judged_by`)
    best_tps: float | None = None
    judged_by: str = "simulator"
    best: Design | None = None  # renamed to move least from the deployed design
    megabytes_to_best: float = 0.0
    changes: list[Change] = field(default_factory=list)
    compared_with: str | None = None  # where the changes were read against, None: nothing to compare
    unplaced: list[str] = field(default_factory=list)  # SPs or state of the workload the design lacks
    gone: list[str] = field(default_factory=list)  # what the design places that the workload no longer has
    note: str = ""  # where the figures are for other parameters than the design's recorded ones
    hot_set: str = ""  # how the hot tuples changed, where the design was carried over to the new ones
    over_memory_mb: float = 0.0  # the deployed design's worst machine over memory, where a design that fits exists

    @property
    def ratio(self) -> float | None:
        """Deployed over best; 0 when the deployed design cannot run the workload at all (it
        lacks an SP or state item, or its state no longer fits where a design's would)."""
        if self.unplaced or self.over_memory_mb > 0:
            return 0.0
        if self.deployed_tps is None or not self.best_tps:
            return None
        return self.deployed_tps / self.best_tps

    @property
    def within(self) -> bool:
        """Whether the deployed design is within the tolerance of the best (exit 0, else 3)."""
        if self.unplaced or self.over_memory_mb > 0:
            return False
        if self.judged_by == "cost":
            return self.deployed_tps is not None and self.deployed_tps <= (self.best_tps or 0) + 1e-12
        return self.ratio is not None and self.ratio >= 1.0 - self.tolerance - 1e-12

    def describe(self) -> list[str]:
        if self.unplaced:
            lines = [f"OUT OF DATE: the workload now has {len(self.unplaced)} SP(s) or state item(s) the "
                     f"deployed design does not place ({', '.join(self.unplaced[:5])}"
                     f"{' ...' if len(self.unplaced) > 5 else ''}): recommend anew"]
        elif self.over_memory_mb > 0:
            form = ".4f" if self.judged_by == "cost" else ",.0f"
            lines = [f"OUT OF DATE: the deployed design no longer fits memory (its worst machine is "
                     f"{self.over_memory_mb:,.1f} MB over); the best design that fits: {self.best_tps:{form}} "
                     f"{'cost' if self.judged_by == 'cost' else 'tuples/s'} ({self.judged_by}), reaching it moves "
                     f"{self.megabytes_to_best:,.2f} MB"]
        elif self.judged_by == "cost":
            lines = [f"deployed design cost {self.deployed_tps:.4f}, best {self.best_tps:.4f} (cost model: "
                     f"nothing simulated)", "OK" if self.within else "OUT OF DATE: a cheaper design exists"]
        else:
            verdict = "OK" if self.within else "OUT OF DATE"
            lines = [f"deployed design: {self.deployed_tps:,.0f} tuples/s, best now: {self.best_tps:,.0f} "
                     f"tuples/s ({self.judged_by}): {self.ratio:.3f} of the best",
                     f"{verdict}: tolerance {self.tolerance:.0%}; reaching the best moves "
                     f"{self.megabytes_to_best:,.2f} MB"]
        if self.judged_by in ("simulator", "estimate") and self.tolerance < TIE_TOLERANCE and not self.unplaced:
            lines.append(f"note: a tolerance under {TIE_TOLERANCE:.0%} acts as {TIE_TOLERANCE:.0%}: the best is the "
                         f"pick, which keeps the deployed design where it is within {TIE_TOLERANCE:.0%} of the "
                         "fastest (fewer megabytes first; short simulations tell such designs apart no better)")
        if self.hot_set:
            lines.append(self.hot_set)
        if self.note:
            lines.append(f"note: {self.note}")
        if self.gone:
            lines.append(f"judged without {len(self.gone)} SP(s) or state item(s) the design places and the "
                         f"workload no longer has ({', '.join(self.gone[:5])}{', ...' if len(self.gone) > 5 else ''})")
        if self.compared_with is None:
            lines.append("what changed: unknown (the design keeps no workload profile; give --since SOURCE)")
        elif not self.changes:
            lines.append(f"what changed since {self.compared_with}: nothing beyond 20 %")
        else:
            lines.append(f"what changed since {self.compared_with}:")
            for kind in dict.fromkeys(c.kind for c in self.changes):
                of_kind = [c for c in self.changes if c.kind == kind]
                lines += [f"  {c.describe()}" for c in of_kind[:MAX_NAMED]]
                if len(of_kind) > MAX_NAMED:
                    lines.append(f"  ... and {len(of_kind) - MAX_NAMED} more {kind} change(s) (--json lists every one)")
        return lines

    def __repr__(self) -> str:
        """One line (the dataclass's held both designs' whole provenance: 9 KB)."""
        verdict = "OUT OF DATE" if not self.within else "OK"
        form = ".4f" if self.judged_by == "cost" else ",.0f"  # a cost, else tuples/s
        figures = ("" if self.unplaced or self.deployed_tps is None or self.best_tps is None
                   else f", deployed {self.deployed_tps:{form}} against best {self.best_tps:{form}} ({self.judged_by})")
        return f"DriftCheck({self.design.workload!r}: {verdict}{figures}, {len(self.changes)} change(s))"

    def _repr_html_(self) -> str:
        """What `advisor check` prints, in a notebook."""
        return f"<pre>{html.escape(chr(10).join(self.describe()))}</pre>"

    def to_dict(self) -> dict:
        return {"workload": self.design.workload, "within_tolerance": self.within,
                "tolerance": self.tolerance, "judged_by": self.judged_by,
                "deployed": self.deployed_tps, "best": self.best_tps, "ratio": self.ratio,
                "megabytes_to_best": self.megabytes_to_best, "unplaced": list(self.unplaced),
                "gone": list(self.gone), "over_memory_mb": self.over_memory_mb, "note": self.note, "hot_set": self.hot_set,
                "compared_with": self.compared_with, "changes": [c.to_dict() for c in self.changes]}


def check_drift(design: Design | str, source: Source, tolerance: float = DEFAULT_TOLERANCE,
                since: Source | None = None, calibration=None, seed: int | None = None) -> DriftCheck:
    """How far `design` is from the best design for `source` now, and what changed. `seed`
    None: the one the design was recommended with (`Design.recorded_seed`)."""
    from advisor.errors import AdvisorError

    tolerance = as_python_number(tolerance)  # (numpy's too)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise AdvisorError(f"the tolerance must be a fraction in [0, 1), got {tolerance!r}")
    check_argument_order("check", design, source, "design, source")
    design = design if isinstance(design, Design) else Design.load(design)
    design.check_fields()  # changed in Python: as a file would be read (its provenance gives the seed)
    seed = design.seed_or_recorded(seed)
    _, graph = load_source(source)
    if graph.name != design.workload:
        raise AdvisorError(f"the design is of workload {design.workload!r}, the source is {graph.name!r}")
    check_table_level(design)
    out = DriftCheck(design, tolerance)
    before, out.compared_with = _profile_before(design, since, graph)
    if before is not None:
        after = workload_profile(graph)
        out.changes = compare_profiles(before, after) if after is not None else []
    design, out.hot_set = _carried_to_hot_set(design, graph)
    # a granularity mismatch, not drift
    check_same_granularity(design, graph, source, "the design",
                           "check a design against statistics of its own granularity")
    windows = graph.window_owners()  # a window the design leaves out lives with its owner
    out.unplaced = ([n for n in graph.proc_names if n not in design.procedures]
                    + [n for n in graph.state_names if n not in design.state and n not in windows])
    if out.unplaced:
        return out
    # SPs or state the design places that the workload no longer has: the design still runs
    # the rest, so it is judged without them (as `recommend --current` does)
    design, out.gone = design.without_gone(graph)
    try:  # what is left must fit (a window moved off its owner, say): said as this command's
        design.arrays(graph.with_cluster(design.machines, design.partitions_per_machine))
    except DesignError as exc:
        raise AdvisorError(f"the deployed design does not fit the workload as it is now: {exc}") from None
    rec = recommend(source, current=design,
                    calibration=calibration, seed=seed)
    plan = rec.migration
    out.judged_by = plan.judged_by
    if rec.selection is not None and rec.selection.calibration_label:
        out.note = design.calibration_note(rec.selection.calibration_label)
    deployed, best = plan.reachable[0], plan.best
    if plan.judged_by == "cost":
        out.deployed_tps, out.best_tps = deployed.cost, best.cost
    else:
        out.deployed_tps, out.best_tps = deployed.speed(plan.judged_by), best.speed(plan.judged_by)
    out.best, out.megabytes_to_best = best.design, best.megabytes
    if not deployed.design.cost.feasible and best.design.cost.feasible:  # (the pick takes one that fits first)
        out.over_memory_mb = deployed.design.cost.worst_overflow_mb
    return out


def _profile_before(design: Design, since: Source | None, graph) -> tuple[dict | None, str | None]:
    if since is not None:
        from advisor.errors import AdvisorError

        _, old = load_source(since)
        if old.name != graph.name:  # another workload's profile: every difference would be noise
            raise AdvisorError(f"the earlier source (--since) is workload {old.name!r}, the source now is "
                               f"{graph.name!r}: compare a workload with its own earlier statistics or spec")
        # (each item's table as its graph reads it, `table_of`: a spec's `Trade@Type` is a table)
        tables = [[(n, g.table_of(j)) for j, n in enumerate(g.state_names)] for g in (old, graph)]
        whole = [{n for n, t in g if t == n} for g in tables]
        split = [{t for n, t in g if t != n} for g in tables]
        mixed = sorted((whole[0] & split[1]) | (split[0] & whole[1]))
        if mixed:  # compared by name, a split table read as gone and its fragments as new
            raise AdvisorError(f"the earlier source (--since) holds state at another granularity than the "
                               f"source now ({mixed[0]!r} is whole in one and split in the other): compare "
                               f"statistics of one granularity")
        return workload_profile(old), (since if isinstance(since, str) else getattr(since, "name", str(since)))
    profile = design.provenance.get("workload_profile")
    if profile is None:
        return None, None
    check_profile(profile, "the design's provenance.workload_profile")
    return profile, "the design was made"


def _carried_to_hot_set(design: Design, graph) -> tuple[Design, str]:
    """`design` carried over to the source's hot tuples where both are at tuple granularity
    and only the hot set differs (`costmodel.granularity.with_hot_set`), with a line saying
    how it changed; else `design` as it is and ""."""
    state = with_hot_set(design.state, graph.state_names)
    if state is None or state == design.state:
        return design, ""
    new = sum(1 for n in state if n not in design.state)
    gone = sum(1 for n in design.state if n not in state)
    return (replace(design, state=state),
            f"hot tuples changed: {new} new (judged where their fragments are), {gone} no longer hot "
            "(their rows are in their fragments)")
