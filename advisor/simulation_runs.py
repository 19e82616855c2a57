"""Every simulation of one pick, asked once: the designs the pick and its simulated search
judge, kept by design and settings, and the rounds run ahead in worker processes.

Why a module of its own: the pick (`advisor.selection`), the simulated local search
(`advisor.sim_local_search`) and their tests all ask the simulator through one cache, so a
design simulated the same way twice runs once and the counts they report are one pick's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from costmodel import Weights
from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from costmodel.workload import Workload
from advisor.judge import SimOutcome, Simulator, need_simulator

# a question is simulated ahead in a worker (`SimulationRuns.prefetch`) only where it is about
# this many simulated events or more (~50 ms here): below, the hand-over costs more than it saves
AHEAD_MIN_EVENTS = 20_000


@dataclass
class SimulationRuns:
    """Every simulation of one pick, kept by design and settings, so that a design simulated
    the same way twice runs once. Why: the simulated local search starts by simulating the
    pool's pick again on the final round's batches (and with the pilot's), which the pick
    may just have done; the simulator is deterministic, so the same design, batches, rate
    tolerance, seed and calibration give the same result. `runs` counts the simulations
    actually run, `reused` those answered from an earlier one, `probes` the simulated runs
    of the rate searches (the work: each runs every batch). `simulator` is the judge the
    pick was given (`advisor.judge`)."""

    workload: Workload
    graph: WorkloadGraph
    weights: Weights
    simulator: Simulator
    calibration: object  # the simulator's calibration or parameters (what every run predicts with)
    seed: int = 0
    jobs: int = 1  # processes that simulate side by side (`prefetch`): this one and jobs - 1 workers
    runs: int = 0
    reused: int = 0
    probes: int = 0
    _done: dict = field(default_factory=dict, init=False, repr=False)
    _ready: dict = field(default_factory=dict, init=False, repr=False)  # prefetched, not yet asked for
    _pool: object = field(default=None, init=False, repr=False)

    @classmethod
    def of(cls, workload: Workload, graph: WorkloadGraph, weights: Weights, calibration=None,
           seed: int = 0, *, simulator: Simulator, jobs: int = 1) -> "SimulationRuns":
        """The runs of a pick by `simulator`; no calibration: its reference cluster. `jobs`:
        processes for prefetched rounds (`advisor.parallel_runs`); close the runs after."""
        simulator = need_simulator(simulator, "the pick's simulations")
        if calibration is None:
            calibration = simulator.reference_calibration()
        return cls(workload, graph, weights, simulator, calibration, seed, jobs)

    def design(self, proc_part: np.ndarray, state_part: np.ndarray, label: str = "") -> Design:
        """The design the simulator runs (the arrays are what identify it here)."""
        return Design.from_arrays(self.graph, proc_part, state_part, self.weights, method=label)

    def ask_max(self, proc_part: np.ndarray, state_part: np.ndarray, batches: int, tolerance: float,
                label: str = "", stop_below_tps: float | None = None) -> tuple:
        """(key, request) of `max_throughput`'s question, for `prefetch`."""
        settings = ("max", batches, tolerance)
        if stop_below_tps is not None and self._key(settings, proc_part, state_part) not in self._done:
            settings += (stop_below_tps,)  # a shortened search answers only this question
        return self._key(settings, proc_part, state_part), (
            "max", proc_part, state_part, label,
            dict(batches=batches, tolerance=tolerance, stop_below_tps=stop_below_tps))

    def ask_pilot(self, proc_part: np.ndarray, state_part: np.ndarray, batches: int, in_flight: int = 8,
                  label: str = "") -> tuple:
        """(key, request) of `pilot`'s question, for `prefetch`."""
        return self._key(("closed", batches, in_flight), proc_part, state_part), (
            "closed", proc_part, state_part, label, dict(in_flight=in_flight, batches=batches))

    def max_throughput(self, proc_part: np.ndarray, state_part: np.ndarray, batches: int,
                       tolerance: float, label: str = "", stop_below_tps: float | None = None
                       ) -> SimOutcome:
        """The simulator's `max_throughput` of the design (raises its `error`). With
        `stop_below_tps`, for a caller that only asks whether the design beats that figure,
        the rate search stops once it cannot (the full search's result answers too)."""
        return self._run(*self.ask_max(proc_part, state_part, batches, tolerance, label, stop_below_tps))

    def pilot(self, proc_part: np.ndarray, state_part: np.ndarray, batches: int, in_flight: int = 8,
              label: str = "") -> SimOutcome:
        """A closed-loop `run_once` of the design by the simulator (raises its `error`)."""
        return self._run(*self.ask_pilot(proc_part, state_part, batches, in_flight, label))

    def prefetch(self, asked: list[tuple], events_each: float, here_first: bool = True) -> None:
        """Start the questions (`ask_max`, `ask_pilot`) not answered yet in the workers, ahead
        of the pick asking them one by one, but this process's share: the first and every
        `jobs`-th after it, which the pick runs here when it asks them, in turn with the
        workers' (`here_first=False`: all of them in the workers, for a caller that does
        other work meanwhile). With one job, or where each is about `events_each` simulated
        events, fewer than AHEAD_MIN_EVENTS, nothing (the hand-over would cost more than it
        saves). What is run ahead counts only once asked for (asking waits for it), so counts
        and answers are those of a serial pick; a question never asked costs only the
        worker's time, or none where it was this process's."""
        if self.jobs < 2 or events_each < AHEAD_MIN_EVENTS:
            return
        missing: dict = {}
        for key, request in asked:
            if key not in self._done and key not in self._ready:
                missing.setdefault(key, request)
        handed = [item for k, item in enumerate(missing.items()) if not here_first or k % self.jobs]
        if not handed:
            return
        if self._pool is None:
            from advisor.parallel_runs import RunPool

            self._pool = RunPool(self._simulate, self.jobs - 1)  # and this process: `jobs` in all
        later = self._pool.submit([request for _, request in handed])
        self._ready.update(zip((key for key, _ in handed), later))

    def close(self) -> None:
        """Ends the workers, if any were started."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self._ready.clear()

    def _simulate(self, request: tuple) -> SimOutcome:
        kind, proc_part, state_part, label, settings = request
        design = self.design(proc_part, state_part, label)
        run = self.simulator.max_throughput if kind == "max" else self.simulator.run_once
        return run(self.workload, design, calibration=self.calibration, seed=self.seed, **settings)

    def _answer(self, key: tuple, request: tuple):
        """The outcome, or the simulator's error, of one question: from the workers where
        they ran it (another exception there: run here again, to raise it here), else here."""
        if key in self._ready:
            ok, outcome = self._ready.pop(key).get()
            if ok or isinstance(outcome, self.simulator.error):
                return outcome
        try:
            return self._simulate(request)
        except self.simulator.error as exc:
            return exc

    @staticmethod
    def _key(settings: tuple, proc_part, state_part) -> tuple:
        return (settings, np.asarray(proc_part, dtype=np.int64).tobytes(),
                np.asarray(state_part, dtype=np.int64).tobytes())

    def _run(self, key: tuple, request: tuple) -> SimOutcome:
        if key in self._done:
            self.reused += 1
        else:
            self.runs += 1
            self._done[key] = self._answer(key, request)
            if not isinstance(self._done[key], self.simulator.error):
                self.probes += max(len(self._done[key].search), 1)
        done = self._done[key]
        if isinstance(done, self.simulator.error):
            raise done
        return done
