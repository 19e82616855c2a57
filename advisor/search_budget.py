"""The simulator's answers to the simulated search (`advisor.sim_local_search`), within its
budget of simulated events.

Why an object of its own: every decision of the search asks the same kind of question ("does
this design beat that figure?"), and each answer is charged to one budget in events, so the
same input gives the same design on any host. Here a question is asked, charged, counted,
answered again without charge when asked twice, and confirmed on a longer run where a design
that would win collapses when overloaded; the search itself only decides what to ask.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from advisor.judge import overload_collapse
from advisor.selection import PREDICTION_BATCHES, PREDICTION_TOLERANCE
from advisor.simulation_runs import SimulationRuns

BATCHES = PREDICTION_BATCHES  # per simulation: the recommendation's figure is one of these
# a design that would beat the best, but whose rate search's overloaded probes delivered less
# than this share of what it sustained (`advisor.judge.overload_collapse`), beats it only on
# a run of COLLAPSE_BATCHES: its short run's figure lasts until a queue forms (the picks of 72
# generated dataflows collapse to 0.85 at the least; generated-3102's design on 2 machines,
# 8,655 tuples/s on 300 batches and 7,854 on 2,000, to 0.78: docs/measurements.md, Stop 62)
COLLAPSE_CONFIRMED = 0.85
COLLAPSE_BATCHES = 4 * PREDICTION_BATCHES


@dataclass
class BudgetedJudge:
    """Predicted tuples/s of the designs the search asks about, each charged `per_run`
    simulated events (a maximum-throughput search of the pick: its events x the rate probes)
    against `event_budget`. `fits(state)`: whether a design is within the machines' memory
    (one that is not is 0, never simulated). Counts: `spent` (events charged), `simulated`
    (designs simulated), `collapse_checked` / `collapse_kept_out` (designs that would have won
    but collapse when overloaded, judged again on COLLAPSE_BATCHES, and those the longer run
    kept from winning)."""

    runs: SimulationRuns
    fits: Callable[[np.ndarray], bool]
    per_run: float
    event_budget: float
    spent: float = 0.0
    simulated: int = 0
    collapse_checked: int = 0
    collapse_kept_out: int = 0
    # a collapsing design's own figure, where the longer run judged it by less
    figure: dict[tuple[bytes, bytes], float] = field(default_factory=dict)
    _answers: dict[tuple, float] = field(default_factory=dict)  # (proc, state, to_beat) -> tuples/s

    def affords(self, events: float) -> bool:
        """Whether `events` more are within the budget."""
        return self.spent + events <= self.event_budget

    def affordable(self) -> int:
        """How many more simulations the budget covers."""
        return int((self.event_budget - self.spent) // self.per_run)

    def simulate(self, proc: np.ndarray, state: np.ndarray, to_beat: float | None = None) -> float:
        """Predicted tuples/s. With `to_beat`, a design that cannot beat it is not searched to
        the end: the figure is then below `to_beat` but not its own maximum. The same question
        asked again is answered as before, its budget not charged again (a step's moves can
        make one design twice: shared25#9403 counted 9 simulations, 7 distinct)."""
        key = (proc.tobytes(), state.tobytes(), to_beat)
        if key not in self._answers:
            self._answers[key] = self._simulate(proc, state, to_beat)
        return self._answers[key]

    def _simulate(self, proc: np.ndarray, state: np.ndarray, to_beat: float | None) -> float:
        if not self.fits(state):
            return 0.0
        self.spent += self.per_run
        self.simulated += 1
        error = self.runs.simulator.error
        try:
            r = self.runs.max_throughput(proc, state, BATCHES, PREDICTION_TOLERANCE, label="simulated search",
                                         stop_below_tps=to_beat)
        except error:
            return 0.0
        tps = float(r.throughput_tps)
        if to_beat is None or tps <= to_beat or overload_collapse(r) >= COLLAPSE_CONFIRMED:
            return tps
        # it would beat the best, but collapses when overloaded: its short run's figure holds
        # only until a queue forms, so it beats the best on a longer run's, within the budget
        # (its own figure, as `figure` tells it, stays what the recommendation says of it)
        self.figure[proc.tobytes(), state.tobytes()] = tps
        longer = self.per_run * COLLAPSE_BATCHES / BATCHES
        if self.spent + longer > self.event_budget:
            judged = tps * overload_collapse(r)  # what it delivered overloaded (never above the figure)
        else:
            self.spent += longer
            self.simulated += 1
            try:
                judged = min(tps, float(self.runs.max_throughput(
                    proc, state, COLLAPSE_BATCHES, PREDICTION_TOLERANCE,
                    label="simulated search, collapse").throughput_tps))
            except error:
                judged = 0.0
        self.collapse_checked += 1
        self.collapse_kept_out += judged <= to_beat
        return judged

    def ahead(self, designs: Iterable[tuple[np.ndarray, np.ndarray]], to_beat: float | None) -> None:
        """Simulate these side by side where the pick has workers (`SimulationRuns.prefetch`):
        `simulate` then finds them done (a design over memory is never simulated)."""
        self.runs.prefetch([self.runs.ask_max(p, s, BATCHES, PREDICTION_TOLERANCE, label="simulated search",
                                              stop_below_tps=to_beat) for p, s in designs if self.fits(s)],
                           self.per_run)

    def longer_runs(self, designs: list[tuple[np.ndarray, np.ndarray]], batches: int, tolerance: float,
                    cost: float) -> list[float]:
        """Tuples/s of each design on a longer run (`batches`, `tolerance`), side by side where
        there are workers, all of them charged `cost` together; 0 for all where one fails."""
        self.spent += cost
        self.simulated += len(designs)
        label = "simulated search, tie"
        self.runs.prefetch([self.runs.ask_max(p, s, batches, tolerance, label=label) for p, s in designs],
                           cost / len(designs))
        try:
            return [float(self.runs.max_throughput(p, s, batches, tolerance, label=label).throughput_tps)
                    for p, s in designs]
        except self.runs.simulator.error:
            return [0.0] * len(designs)
