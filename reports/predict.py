"""Predicted throughput of a design, by the simulator: the one number suggestions, tuning and
the report rank designs by. Kept in one place so every part predicts the same way.

Why a cache: a report (and the demo around it) simulates the same design of the same
workload with the same settings several times (its candidate table, the scaling curve's
baselines on the design's own cluster, the demo's engine step and the scaling curve's point
on that cluster). The simulator is deterministic (seeded), so each such run is done once per
process and its result handed out again; `SimulationCache` holds them and `CachedSimulator`
offers the same to the pick inside `advisor.api.recommend`.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from advisor.selection import PREDICTION_BATCHES, PREDICTION_TOLERANCE

# the settings of `recommend`'s own figure for its pick, so a report of the recommended design
# shows that figure (and can take it from the recommendation instead of simulating again)
DEFAULT_BATCHES = PREDICTION_BATCHES
DEFAULT_TOLERANCE = PREDICTION_TOLERANCE


@dataclass(frozen=True)
class PredictOptions:
    """How the simulator is run for predictions (calibration: a SimParams or Calibration)."""

    batches: int = DEFAULT_BATCHES
    scheduler: str = "dls"
    move: str = "rpc"
    calibration: object | None = None
    seed: int = 0
    latency_bound_s: float = 1.0
    tolerance: float = DEFAULT_TOLERANCE  # of the rate search

    def as_the_pick(self, seed: int) -> bool:
        """Whether these are the settings of `recommend`'s own figure for its pick
        (`Recommendation.prediction`), for a pick made with `seed` and these options'
        calibration: then that figure is this prediction, and need not be simulated again."""
        return ((self.batches, self.tolerance, self.scheduler, self.move, self.latency_bound_s, self.seed)
                == (DEFAULT_BATCHES, DEFAULT_TOLERANCE, "dls", "rpc", 1.0, seed))


CACHED_RESULTS = 512  # simulation results kept per process (a report makes ~100)


def simulated_params(calibration) -> Any:
    """A calibration as a key: itself when it is a hashable record (SimParams, None), else its
    type and every field (a Calibration is a mutable record: its content at the time of the
    run, so a changed one is another key)."""
    try:
        hash(calibration)
        return calibration
    except TypeError:
        return type(calibration).__qualname__, repr(calibration)


def placement_key(design) -> tuple:
    """What the simulator reads of a design: its cluster and where every SP and state item is
    (in the design's own order); weights, cost, method and provenance play no part."""
    return (design.machines, design.partitions_per_machine, tuple(design.procedures.items()),
            tuple(design.state.items()))


@dataclass
class SimulationCache:
    """Simulation results of this process, keyed on (kind of run, workload, placement,
    settings): the same inputs give the same result, so it is computed once. A Workload is a
    frozen record compared by value, so a changed spec is a different key. Least recently
    used results go first beyond `size`."""

    size: int = CACHED_RESULTS
    hits: int = 0
    misses: int = 0
    _results: OrderedDict = field(default_factory=OrderedDict, repr=False)

    def get(self, key: tuple, simulate: Callable[[], Any]) -> Any:
        """The result for `key`, simulated by `simulate()` the first time (errors are not kept)."""
        try:
            result = self._results[key]
        except KeyError:
            self.misses += 1
            result = self._results[key] = simulate()
            if len(self._results) > self.size:
                self._results.popitem(last=False)
            return result
        except TypeError:  # something in the key cannot be hashed: simulate, keep nothing
            self.misses += 1
            return simulate()
        self.hits += 1
        self._results.move_to_end(key)
        return result

    def clear(self) -> None:
        self._results.clear()
        self.hits = self.misses = 0

    def keys(self) -> set:
        """The questions answered so far (to tell a worker's new answers from older ones)."""
        return set(self._results)

    def news(self, known: set, hits: int, misses: int) -> tuple[list, int, int]:
        """What this cache learnt since it held `known` and counted `hits`/`misses`: the new
        (key, result) pairs and the counts since, for `absorb` in another process."""
        return [(k, v) for k, v in self._results.items() if k not in known], self.hits - hits, self.misses - misses

    def absorb(self, news: tuple[list, int, int]) -> None:
        """Keep what a worker process simulated (`news`), as if it had been simulated here."""
        entries, hits, misses = news
        for key, result in entries:
            self._results.setdefault(key, result)
            self._results.move_to_end(key)
        while len(self._results) > self.size:
            self._results.popitem(last=False)
        self.hits += hits
        self.misses += misses


SIMULATIONS = SimulationCache()  # this process's: shared by predictions and the pick


@dataclass(frozen=True)
class CachedSimulator:
    """The pick's simulator (`advisor.judge.Simulator`, engine_sim's by default) with every
    run kept in `SIMULATIONS`, so recommending again for a workload the report already
    recommended for does not simulate the same candidates again."""

    inner: Any = None  # None: engine_sim's simulator

    @property
    def simulator(self):
        if self.inner is not None:
            return self.inner
        from engine_sim.sim.judge import ENGINE_SIMULATOR

        return ENGINE_SIMULATOR

    @property
    def error(self) -> type[Exception]:
        return self.simulator.error

    def reference_calibration(self) -> Any:
        return self.simulator.reference_calibration()

    def max_throughput(self, workload, design, **settings):
        """The inner simulator's `max_throughput` (calibration, batches, seed, tolerance,
        stop_below_tps: the protocol's), each distinct question simulated once."""
        return SIMULATIONS.get(self._key("pick-max", workload, design, settings),
                               lambda: self.simulator.max_throughput(workload, design, **settings))

    def run_once(self, workload, design, **settings):
        """The inner simulator's closed-loop `run_once`, each distinct question simulated once."""
        return SIMULATIONS.get(self._key("pick-once", workload, design, settings),
                               lambda: self.simulator.run_once(workload, design, **settings))

    def _key(self, kind: str, workload, design, settings: dict) -> tuple:
        resolved = {k: simulated_params(v) if k == "calibration" else v for k, v in settings.items()}
        return (kind, self.simulator, workload, placement_key(design), tuple(sorted(resolved.items())))


def predict(workload, design, options: PredictOptions | None = None):
    """The simulator's `max_throughput` result for `design` on `workload`, or None when there is
    no spec to simulate (a statistics-only source). The same question twice in one process is
    simulated once (`SIMULATIONS`): callers read the result, never change it."""
    if workload is None:
        return None
    from engine_sim.sim import max_throughput

    o = options or PredictOptions()
    key = ("predict", workload, placement_key(design), simulated_params(o.calibration), o.batches, o.scheduler,
           o.move, o.seed, o.latency_bound_s, o.tolerance)
    return SIMULATIONS.get(key, lambda: _kept_or_simulated(key, lambda: max_throughput(
        workload, design, latency_bound_s=o.latency_bound_s, scheduler=o.scheduler, move=o.move,
        calibration=o.calibration, batches=o.batches, seed=o.seed, tolerance=o.tolerance)))


PREDICTIONS = "predictions"  # their kind in the cache on disk (`reports.disk_cache`)


def _kept_or_simulated(key: tuple, simulate: Callable[[], Any]) -> Any:
    """The result an earlier run kept on disk for `key` (a `predict` key), else `simulate()`'s,
    kept for the next run."""
    import pickle

    from reports.disk_cache import read_entry, write_entry

    name = _disk_name(key)
    data = read_entry(PREDICTIONS, name)
    if data is not None:
        try:
            kept_key, result = pickle.loads(data)  # (our own folder, mode 0700: see disk_cache)
            if kept_key == name and hasattr(result, "throughput_tps"):
                return result
        except Exception:  # noqa: BLE001 - half-copied or another version's: simulated again
            pass
    result = simulate()
    try:
        write_entry(PREDICTIONS, name, pickle.dumps((name, result), protocol=pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        pass  # a result that does not pickle is not kept
    return result


def _disk_name(key: tuple) -> str | None:
    """A `predict` key as a file name: the code that simulates, the workload's content and the
    settings, hashed (None: no code to hash, so nothing to tell another version's by)."""
    import hashlib

    from advisor.pick_digest import code_fingerprint, workload_digest

    code = code_fingerprint()
    if not code:
        return None
    kind, workload, *settings = key
    return hashlib.sha256(repr((code, kind, workload_digest(workload), settings)).encode()).hexdigest()


def predicted_tps(workload, design, options: PredictOptions | None = None) -> float | None:
    result = predict(workload, design, options)
    return None if result is None else float(result.throughput_tps)


# A design its reference (the design a report is about, the advisor's line of a chart) outruns
# this many times over is screened, as `recommend`'s table screens its candidates
# (`advisor.selection`: SCREEN_BATCHES, searched to SCREEN_TOLERANCE), not simulated in full.
# Why: its figure then matters only as "far slower" (its line lies in a chart's bottom quarter,
# where a full run moves it by at most the screen's tolerance of that quarter), and on a
# fine-grained dataflow the full runs of such baselines were most of a report: round-robin and
# hash-by-table of a 150-SP dataflow at `fragment:8`, nearly every transaction distributed,
# 2.7-35 s each on 2-64 machines, 130 of the report's 245 CPU seconds.
SCREEN_BELOW = 0.25


@dataclass
class FarBelowScreen:
    """Predicts designs compared with a reference figure: each in full, or screened where the
    busy-time estimate puts it below `SCREEN_BELOW` of the reference and the screening run
    confirms it (the estimate only chooses which run goes first; the screened figure decides).
    A screened result is the screening run's (`screened(result)`: its `batches` are fewer)."""

    workload: Any
    graph: Any
    options: PredictOptions
    below_tps: float | None = None  # None: every design in full
    estimate: Any = None  # advisor.busy_estimate.BusyEstimate, built at the first design

    @classmethod
    def of(cls, workload, graph, reference_tps: float | None, options: PredictOptions | None = None,
           below: float | None = SCREEN_BELOW) -> "FarBelowScreen":
        """`below` None (or a reference without a figure, or options already as short as the
        screen's): every design in full."""
        from advisor.selection import SCREEN_BATCHES

        o = options or PredictOptions()
        on = workload is not None and bool(below) and bool(reference_tps) and o.batches > SCREEN_BATCHES
        return cls(workload, graph, o, below * float(reference_tps) if on else None)

    def predict(self, design, arrays: tuple | None = None):
        """`predict(workload, design)`, screened where it lies far below (`arrays`: the design's
        (proc, state) on the graph, where the caller has them)."""
        if self.below_tps is not None:
            proc, state = arrays if arrays is not None else design.arrays(self.graph)
            if self._estimate().throughput_tps(proc, state) < self.below_tps:
                screened = predict(self.workload, design, self.screening())
                if screened is not None and screened.throughput_tps < self.below_tps:
                    return screened
        return predict(self.workload, design, self.options)

    def screened(self, result) -> bool:
        return result is not None and result.batches < self.options.batches

    def screening(self) -> PredictOptions:
        """The options with the screen's shorter run and coarser search."""
        from dataclasses import replace

        from advisor.selection import SCREEN_BATCHES, SCREEN_TOLERANCE

        return replace(self.options, batches=SCREEN_BATCHES, tolerance=max(self.options.tolerance, SCREEN_TOLERANCE))

    def _estimate(self):
        if self.estimate is None:
            from advisor.busy_estimate import BusyEstimate
            from engine_sim.sim import sim_params_for

            self.estimate = BusyEstimate.of(self.graph, self.workload, sim_params_for(self.options.calibration))
        return self.estimate


def screening_text() -> str:
    """How a screened figure was run, in words (the report's notes)."""
    from advisor.selection import SCREEN_BATCHES, SCREEN_TOLERANCE

    return f"{SCREEN_BATCHES} batches, the rate searched to {SCREEN_TOLERANCE:.0%}"
