"""The evaluation-and-iteration loop of the dissertation's section 6.4.3, made automatic.

Each round: recommend a design for the current dataflow, predict its throughput with the
simulator, find the bottleneck, try every proposed change (split a hot SP over its key,
replicate a read-mostly table read across machines, merge two SPs that always run
together) on a copy of the spec, and keep the best one if it raises the predicted
throughput. Stop when no change helps or after the given number of rounds.

    study = TuningStudy("tpcdi-trade", machines=8).run(rounds=4)
    study.best, study.to_frame(), study.plot()
"""
from __future__ import annotations

import hashlib
import html
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from costmodel.files import atomic_write_text, discard_dir, publish_dir, staging_dir
from costmodel import Weights
from costmodel.design import Design
from advisor.errors import AdvisorError
from costmodel.errors import as_python_int, check_seed
from costmodel.weights import check_weights
from costmodel.workload import Workload, cluster_text
from advisor.api import check_jobs
from advisor.parallel_runs import serial_picks
from reports.parallel import section_pool, usable_cores
from reports.predict import PredictOptions, predict
from reports.suggestions import (MIN_GAIN, Suggestion, Suggestions, check_min_gain, design_for,  # noqa: F401  (check_min_gain: also read from here)
                                 gain_threshold_text, suggest)


SAVED_MARKER = "tuning.json"  # the manifest that marks a directory `TuningStudy.save` wrote


@dataclass
class TuningRound:
    index: int
    change: str | None  # what was changed to get here (None: the starting dataflow)
    workload: Workload
    design: Design
    replicated: tuple[str, ...]
    predicted_tps: float
    sim: object = None
    suggestions: Suggestions | None = None  # what was tried from here

    @property
    def cost(self) -> float:
        return self.design.cost.total

    def __repr__(self) -> str:
        """One line (the dataclass's printed its workload, design, simulation and suggestions,
        1.1 KB a round, in a print of `study.best` or of `study.rounds`)."""
        return (f"TuningRound({self.index}: {self.change or '(start)'!s:.120}, {self.predicted_tps:,.0f} tuples/s "
                f"predicted, cost {self.cost:.4f}, bottleneck {self.bottleneck or '-'})")

    def to_dict(self) -> dict:
        return {"round": self.index, "change": self.change or "", "procedures": len(self.workload.procedures),
                "tables": len(self.workload.tables), "cost": self.cost, "predicted_tps": self.predicted_tps,
                "bottleneck": self.bottleneck}

    @property
    def bottleneck(self) -> str:
        """The busiest resource of this round's design: what its suggestions were tried
        against, or its own simulation's where none were (the last round's was empty)."""
        if self.suggestions is not None:  # (Suggestions of which none helps are empty, and still name it)
            return self.suggestions.bottleneck.resource
        return str(getattr(self.sim, "bottleneck", "") or "")


@dataclass
class TuningStudy:
    """The tuning loop as an object: `.run()` adds rounds; `.rounds`, `.best`."""

    source: object
    machines: int | None = None
    partitions_per_machine: int | None = None
    weights: Weights | None = None  # None: priced from the calibration for each round's graph
    seed: int = 0
    options: PredictOptions = field(default_factory=PredictOptions)
    min_gain: float = MIN_GAIN  # a change must raise predicted throughput by at least this fraction
    # processes trying a round's changes side by side (`reports.parallel`; default: the usable
    # cores; 1: all here); the rounds are the same for any value
    jobs: int = field(default_factory=usable_cores)
    rounds: list[TuningRound] = field(default_factory=list)
    stopped: str = ""  # why the loop stopped

    def __post_init__(self) -> None:
        from advisor.sources import check_cluster, load_source

        self.machines, self.partitions_per_machine = check_cluster(self.machines, self.partitions_per_machine)
        check_seed(self.seed, AdvisorError)
        check_weights(self.weights, AdvisorError)
        self.min_gain = check_min_gain(self.min_gain)
        jobs = check_jobs(self.jobs)  # (numpy's too: np.int64(1) was refused here, taken by recommend)
        self.jobs = usable_cores() if jobs is None else jobs
        workload, _ = load_source(self.source)  # statistics: the workload rebuilt from them
        if workload is None:
            raise AdvisorError("tuning changes the dataflow, so it needs a workload (a bundled name, "
                               "a .toml or a statistics directory), not a bare graph")
        self.workload = workload.with_cluster(self.machines, self.partitions_per_machine)

    # -- the loop -----------------------------------------------------------------------
    def _round(self, index: int, change: str | None, workload: Workload, replicated: tuple[str, ...],
               design: Design | None = None) -> TuningRound:
        c = workload.cluster
        if design is None:
            design = design_for(workload, c.machines, c.partitions_per_machine, self.weights, replicated, self.seed,
                                calibration=self.options.calibration)
        sim = predict(workload, design, self.options)
        return TuningRound(index, change, workload, design, replicated, float(sim.throughput_tps), sim)

    def run(self, rounds: int = 5, progress: Callable[[TuningRound], None] | None = None) -> "TuningStudy":
        """Run up to `rounds` more changes (round 0, the starting design, comes first)."""
        rounds = as_python_int(rounds)  # (numpy's too)
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0:
            raise AdvisorError(f"rounds must be an integer >= 0, got {rounds!r}")
        if progress is not None and not callable(progress):
            raise AdvisorError(f"progress must be a function of a round, got {progress!r}")
        if not self.rounds:
            self.rounds.append(self._round(0, None, self.workload, ()))
            if progress:
                progress(self.rounds[-1])
        # one set of workers for every round; the changes are what runs side by side, the
        # picks serially (`advisor.parallel_runs.serial_picks`)
        with serial_picks(), section_pool(self.jobs if rounds else 1) as pool:
            self._rounds(rounds, pool, progress)
        return self

    def _rounds(self, rounds: int, pool, progress: Callable[[TuningRound], None] | None) -> None:
        for _ in range(rounds):
            current = self.rounds[-1]
            tried = suggest(current.workload, current.design, weights=self.weights,
                            replicated=current.replicated, options=self.options, sim=current.sim,
                            seed=self.seed, pool=pool, min_gain=self.min_gain)
            current.suggestions = tried
            best = _best_gain(tried)
            if best is None or best.gain < self.min_gain:
                # none predicted to help (how many were tried and the best of them), or none to try
                self.stopped = ("no change raises predicted throughput by "
                                f"{gain_threshold_text(self.min_gain)} or more" if tried.items
                                else _sentence_part(tried.note))
                break
            self.rounds.append(self._round(len(self.rounds), best.text, best.workload or current.workload,
                                           best.replicated, best.design))
            if progress:
                progress(self.rounds[-1])
        else:  # (all the study's rounds: a second `run(1)` after a first said "reached 1 rounds")
            changed = len(self.rounds) - 1
            self.stopped = f"reached {changed} round{'' if changed == 1 else 's'}"

    @property
    def best(self) -> TuningRound:
        if not self.rounds:
            raise AdvisorError("the study has no rounds yet: call .run()")
        return max(self.rounds, key=lambda r: r.predicted_tps)

    # -- output -------------------------------------------------------------------------
    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rounds],
                            columns=["round", "change", "procedures", "tables", "cost", "predicted_tps", "bottleneck"])

    def plot(self, ax=None):
        from reports.figures import plot_tuning

        return plot_tuning(self, ax=ax)

    def table(self) -> str:
        """The rounds as a plain-text table (what `advisor tune` prints)."""
        head = f"{'round':>5}  {'predicted tuples/s':>18}  {'gain':>7}  {'cost':>7}  {'SPs':>4}  change"
        lines = [head, "-" * len(head)]
        first = self.rounds[0].predicted_tps if self.rounds else 0.0
        for r in self.rounds:
            gain = f"{r.predicted_tps / first - 1:+.0%}" if first > 0 else ""
            lines.append(f"{r.index:>5}  {r.predicted_tps:>18,.0f}  {gain:>7}  {r.cost:>7.4f}  "
                         f"{len(r.workload.procedures):>4}  {r.change or '(start)'}")
        return "\n".join(lines)

    def save(self, out: str | Path) -> list[Path]:
        """Each round's spec (TOML) and design (JSON) into `out` (round-NN.toml,
        round-NN.design.json) and a manifest (`tuning.json`). The set is built beside `out` and
        renamed into place whole, so a failure (a full disk) leaves no partial set; `out` may be
        missing, empty, or a previous tuning output (anything else is refused)."""
        from costmodel.spec_writer import write_workload

        out = Path(out)
        staged = staging_dir(out, SAVED_MARKER, "a previous `advisor tune` output")
        try:
            names = []
            for r in self.rounds:
                spec = write_workload(r.workload, staged / f"round-{r.index:02d}.toml")
                names.append(spec.name)
                names.append(_made_from(r.design, spec).save(staged / f"round-{r.index:02d}.design.json").name)
            best = self.best if self.rounds else None
            # ("rounds" as `advisor tune --json` gives them: a list, where a count stood)
            manifest = {"rounds": [r.to_dict() for r in self.rounds], "stopped": self.stopped, "files": names,
                        "best_round": None if best is None else best.index,
                        "best_predicted_tuples_per_s": None if best is None else best.predicted_tps}
            atomic_write_text(staged / SAVED_MARKER, json.dumps(manifest, indent=2) + "\n")
            publish_dir(staged, out, SAVED_MARKER, "a previous `advisor tune` output")
        except BaseException:
            discard_dir(staged)
            raise
        return [out / n for n in names]

    def summary(self) -> str:
        """The rounds in one sentence: how many, the best, why the loop stopped."""
        best = self.best if self.rounds else None
        # (round 0 is the starting dataflow: "4 rounds" beside "reached 3 rounds" read as a miscount)
        changed = max(len(self.rounds) - 1, 0)
        return (f"the starting dataflow and {changed} round{'' if changed == 1 else 's'} of changes"
                + (f", best round {best.index} at {best.predicted_tps:,.0f} tuples/s predicted" if best else "")
                + (f"; stopped: {self.stopped}" if self.stopped else ""))

    def __repr__(self) -> str:
        """One line (the dataclass's printed every round whole, 1.1 KB a round, and the
        options); `to_frame()`, `table()` and the notebook list the rounds."""
        return (f"TuningStudy({self.workload.name!r:.80} on "
                f"{cluster_text(self.workload.cluster.machines, self.workload.cluster.partitions_per_machine)}: "
                f"{self.summary()})")

    def _repr_html_(self) -> str:
        frame = self.to_frame()
        head = f"<b>Tuning study</b>: {html.escape(self.summary())}"
        formats = {"predicted_tps": lambda x: f"{x:,.0f}", "cost": lambda x: f"{x:.4f}"}
        return head + frame.to_html(index=False, formatters=formats, na_rep="-")


def _best_gain(tried: Suggestions) -> Suggestion | None:
    scored = [s for s in tried if s.gain is not None]
    return max(scored, key=lambda s: s.gain) if scored else None


def _sentence_part(note: str) -> str:
    """'No change to try: ...' as part of a sentence: 'no change to try: ...'."""
    note = note.rstrip(".")
    return note[:1].lower() + note[1:]


def _made_from(design: Design, spec: Path) -> Design:
    """`design` recording the digest of the round's spec file it was picked for, where its own
    workload (changed in Python) had none: without it, `simulate -d round-02.design.json` took
    the bundled spec of the same name and failed on an SP the change had split."""
    if design.provenance.get("input_sha256"):
        return design
    digest = hashlib.sha256(spec.read_text().encode()).hexdigest()
    return replace(design, provenance={**design.provenance, "input_sha256": digest})
