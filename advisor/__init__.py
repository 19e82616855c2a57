"""Workload-driven design advisor for transactional streaming deployments.

One import for a notebook session (every object it returns renders itself):

    import advisor
    workload = advisor.load_workload("tpcdi-trade")
    rec = advisor.recommend(workload, machines=4)
    rec.plot(); rec.plot_design()
    advisor.simulate(workload, rec.design)
    advisor.validate(workload, rec.design)        # engine and simulator side by side
    advisor.tune(workload, machines=8, rounds=3)
    advisor.check("design.json", "stats/")         # the deployed design against a newer workload
    rec.design.save("design.json")

`import advisor` stays cheap (every submodule and `advisor --help` import it): the verbs and
types below are looked up on first use (PEP 562), so Spark, the engine, the simulator, the
reports and matplotlib load only when a session reaches for them.
"""
from __future__ import annotations

from importlib import import_module

# `typing.TYPE_CHECKING` without importing typing: this module runs before the console script
# can catch a Ctrl-C (`advisor.command`), so it imports nothing it does not need at once
TYPE_CHECKING = False
if TYPE_CHECKING:  # for the annotations only: at run time these load on first use
    from pathlib import Path
    from typing import Callable

    from costmodel import Weights
    from costmodel.calibration import Calibration
    from costmodel.design import Design
    from advisor.sources import Source
    from engine_sim.sim.result import SimResult
    from reports.tuning import TuningRound, TuningStudy

# name -> (home module, name there): the existing functions and types, imported on first use
_FACADE_HOMES: dict[str, tuple[str, str]] = {
    "load_workload": ("advisor.sources", "load_workload"),
    "recommend": ("advisor.api", "recommend"),
    "evaluate": ("advisor.api", "evaluate"),
    "diff": ("advisor.api", "diff"),  # what `advisor diff` runs
    "check": ("reports.drift", "check_drift"),  # what `advisor check` runs
    "validate": ("reports.validation", "validate_design"),  # what `advisor validate` runs
    "Calibration": ("costmodel.calibration", "Calibration"),
    "Design": ("costmodel.design", "Design"),
    "Workload": ("costmodel.workload", "Workload"),
    "Recommendation": ("advisor.recommendation", "Recommendation"),
}

__all__ = sorted([*_FACADE_HOMES, "simulate", "tune", "plot_graph", "plot_workload"])


def _installed_version() -> str:
    """One place for the version: pyproject.toml, read back from the installed metadata. Read
    when asked for: importing importlib.metadata took most of `import advisor`, and a Ctrl-C
    then, before `advisor.command` could catch it, was a Python traceback."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sstore-advisor")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> object:
    """Import a facade name's home module (or read `__version__`) on first use, and keep the
    name here after."""
    if name == "__version__":
        globals()[name] = value = _installed_version()
        return value
    if name not in _FACADE_HOMES:
        raise AttributeError(f"module 'advisor' has no attribute {name!r}")
    module, attribute = _FACADE_HOMES[name]
    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})


def simulate(workload: Source, design: Design | str | Path, **options) -> SimResult:
    """What `advisor simulate` runs: `engine_sim.sim.simulate(workload, design, **options)`
    (its options: scheduler, move, calibration, input_rate, batches, seed, latency_bound_s,
    batch_size, tolerance), with `workload` read as every verb reads a source, a statistics
    directory included (the simulator's own reader takes a name or a spec only; the command
    and `validate` took the directory, this did not)."""
    import os

    from advisor.sources import check_argument_order, load_workload
    from engine_sim.sim import simulate as run

    check_argument_order("simulate", design, workload, "workload, design")
    if isinstance(workload, (str, os.PathLike)):
        workload = load_workload(workload)
    return run(workload, design, **options)


def tune(source: Source, machines: int | None = None, rounds: int = 5, *,
         partitions_per_machine: int | None = None, weights: Weights | None = None,
         seed: int = 0, calibration: Calibration | str | Path | None = None, min_gain: float = 0.01,
         jobs: int | None = None, progress: Callable[[TuningRound], None] | None = None) -> TuningStudy:
    """What `advisor tune` does, in one call: `reports.tuning.TuningStudy(...).run(rounds)`
    (the study renders itself; `.best`, `.to_frame()`, `.plot()`). `calibration` (an object or
    its file) prices every round's pick and prediction, and `seed` their simulated input, as
    `advisor tune --calibration --seed` do. `jobs`: processes trying a round's changes side by
    side (default: the usable cores; the same rounds for any value)."""
    import os

    from reports.parallel import usable_cores
    from reports.predict import PredictOptions
    from reports.tuning import TuningStudy

    if isinstance(calibration, (str, os.PathLike)):
        from costmodel.calibration import Calibration as _Calibration

        calibration = _Calibration.load(calibration)
    study = TuningStudy(source, machines=machines, partitions_per_machine=partitions_per_machine,
                        weights=weights, seed=seed, min_gain=min_gain,
                        options=PredictOptions(calibration=calibration, seed=seed),
                        jobs=usable_cores() if jobs is None else jobs)
    return study.run(rounds=rounds, progress=progress)


def plot_workload(source: Source, ax=None):
    """Draw a workload's dataflow, before any design (matplotlib Axes). Takes what
    `load_workload` takes (a bundled name, a spec, statistics) or the Workload itself, as the
    other verbs do; `reports.figures.plot_workload` draws a Workload only."""
    from advisor.sources import load_workload
    from reports.figures import plot_workload as draw

    return draw(load_workload(source), ax=ax)


def plot_graph(design: Design | str | Path, source: Source, ax=None, max_nodes: int = 80):
    """Draw a design on its workload's state/processing graph (matplotlib Axes). A bare
    `Design` is plain data below the figures and cannot draw itself; this reads the graph
    from any source (a bundled name, a spec, statistics, a Workload or a WorkloadGraph), at
    the design's granularity. A recommendation draws its own: `rec.plot_design()`."""
    from advisor.sources import check_argument_order, load_source_for
    from costmodel.design import Design
    from costmodel.errors import is_a
    from reports.figures import plot_graph as draw

    check_argument_order("plot_graph", design, source, "design, source")
    if not is_a(design, Design):
        design = Design.load(design)
    _, graph = load_source_for(design, source)
    return draw(design, graph, ax=ax, max_nodes=max_nodes)
