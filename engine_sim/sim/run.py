"""How one simulation runs: a compiled plan driven at a rate (or closed loop), the rate
search for the maximum throughput, and which SimParams a calibration stands for."""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

from costmodel.calibration import Calibration
from costmodel.design import Design
from costmodel.errors import as_python_number, check_latency_bound, check_seed, finite_number
from costmodel.sim_params import SimParams
from costmodel.spec_reader import check_workload, read_spec
from costmodel.workload import MAX_RATE_BPS, MIN_RATE_BPS, Workload
from engine_sim.sim.compiled import compile_plan
from engine_sim.sim.errors import SimError
from engine_sim.sim.host_sharing import run_host_shared
from engine_sim.sim.model import EngineModel
from engine_sim.sim.rate_search import search_rate
from engine_sim.sim.result import SimResult, summarise


# a rate a user offers outside MIN_RATE_BPS..MAX_RATE_BPS is no run (1e300 printed a 300-digit
# rate; 1e-300 "0 batches/s"); a spec's declared [input] rate is held to the same range


def check_offered_rate(rate) -> None:
    """Refuse (SimError, one line) an offered rate no run can be made at."""
    if not (finite_number(rate) and MIN_RATE_BPS <= rate <= MAX_RATE_BPS):
        raise SimError(f"input rate must be from {MIN_RATE_BPS:g} to {MAX_RATE_BPS:g} batches per second, got {rate}")


def sim_params_for(calibration: Calibration | SimParams | None) -> SimParams:
    """A Calibration predicts what its target says (`Calibration.sim_params`): a real cluster
    by default, the measuring host for `cal.on_host()`. Bare SimParams are exactly these
    parameters; None the built-in ones."""
    if calibration is None:
        return SimParams()
    if isinstance(calibration, SimParams):
        return calibration
    return calibration.sim_params()


def _plan(workload, design, *, scheduler, move, calibration, batches, seed, batch_size):
    check_seed(seed, SimError)
    design.check_windows(workload)  # a window away from its owner: refused, one line
    return compile_plan(workload, design, params=sim_params_for(calibration), scheduler=scheduler,
                        move=move, batches=batches, batch_size=batch_size, seed=seed)


def _run_plan(plan, rate: float | None, latency_bound_s: float, in_flight: int | None = None
              ) -> SimResult:
    if in_flight is not None:
        if not isinstance(in_flight, int) or isinstance(in_flight, bool) or in_flight < 1:
            raise SimError(f"in_flight must be an integer >= 1, got {in_flight!r}")
        rate = None
    elif not (rate is not None and rate > 0 and math.isfinite(rate)):
        raise SimError(f"input rate must be a positive number of batches per second, got {rate}")
    check_latency_bound(latency_bound_s, SimError)
    started = time.perf_counter()
    model = EngineModel(plan, rate, in_flight)
    model.run()
    return summarise(model, latency_bound_s=latency_bound_s,
                     wall_s=time.perf_counter() - started)


def run_once(workload: Workload, design: Design, *, input_rate: float | None = None,
             in_flight: int | None = None, scheduler: str = "dls", move: str = "rpc",
             calibration: Calibration | SimParams | None = None, batches: int = 2000,
             seed: int = 0, latency_bound_s: float = 1.0, batch_size: int | None = None
             ) -> SimResult:
    """One simulation at a fixed offered input rate (batches per second), or closed loop with
    `in_flight` batches in flight (the engine's driver)."""
    if (input_rate is None) == (in_flight is None):
        raise SimError("give either an input rate or the batches in flight")
    if input_rate is not None:
        check_offered_rate(input_rate)

    def attempt(params: SimParams) -> SimResult:
        plan = _plan(workload, design, scheduler=scheduler, move=move, calibration=params,
                     batches=batches, seed=seed, batch_size=batch_size)
        return _run_plan(plan, input_rate, latency_bound_s, in_flight)

    return run_host_shared(sim_params_for(calibration), attempt)


def _serial_rate(plan) -> float:
    """Batches/s if every step of a batch ran one after the other: a rate any sane design
    sustains, where the search starts."""
    P = plan.params
    hop = 2 * P.net_latency_s
    total = 0.0
    for u in plan.units:
        total += sum(u.service) / len(u.service) + (hop if u.machine != u.sched else 0.0)
        if u.dist is not None:
            for spec in u.dist:
                if spec is not None:
                    total += (len(spec.rounds) + len(spec.parts) + 1) * hop / len(u.dist)
    for e in plan.edges:
        total += hop if e.crosses_machine else 0.0
        for spec in e.move_txns or ():
            total += 4 * hop + spec.exec_s
    return 1.0 / max(total, 1e-9)


# the settings of the advisor's figure for its pick (`advisor.selection.PREDICTION_BATCHES` and
# `PREDICTION_TOLERANCE`, equal by a test): `simulate` defaults to them, so it repeats that figure
PREDICTION_BATCHES, PREDICTION_TOLERANCE = 300, 0.01


def max_throughput(workload: Workload, design: Design, *, latency_bound_s: float = 1.0,
                   tolerance: float = 0.02, stop_below_tps: float | None = None, **kw) -> SimResult:
    """The highest offered input rate the design sustains with a mean batch latency within
    the bound (the dissertation's metric, section 4.6); see `rate_search.py`.

    `stop_below_tps` (tuples/s) is for a caller that only asks whether the design beats that
    figure: the search stops once it is known not to (the result is then the best rate
    found so far, below the figure)."""
    check_latency_bound(latency_bound_s, SimError)
    if not finite_number(tolerance) or not 0 < tolerance < 1:  # -1 or nan searched on without a bracket
        raise SimError(f"tolerance must be a fraction in (0, 1), got {tolerance!r}")
    kw.pop("input_rate", None)
    opts = dict(scheduler="dls", move="rpc", calibration=None, batches=2000, seed=0,
                batch_size=None)
    unknown = set(kw) - set(opts)
    if unknown:
        raise TypeError(f"max_throughput() got unexpected keyword {sorted(unknown)[0]!r}")
    opts.update(kw)
    params = sim_params_for(opts.pop("calibration"))

    def attempt(p: SimParams) -> SimResult:
        plan = _plan(workload, design, calibration=p, **opts)
        stop = None if stop_below_tps is None else stop_below_tps / plan.batch_size
        return search_rate(lambda rate: _run_plan(plan, rate, latency_bound_s), _serial_rate(plan),
                           tolerance=tolerance, stop_below_bps=stop)

    return run_host_shared(params, attempt)


def api_inputs(workload, design, calibration) -> tuple[Workload, Design, Calibration | SimParams | None]:
    """What the Python API's `simulate` takes, as the CLI takes it: a Workload, a bundled name
    or a spec file; a Design or its file; a Calibration, SimParams or its file. Anything else
    is one SimError line (a path where an object goes reached `.input` or `.sim_params`)."""
    if isinstance(workload, (str, os.PathLike)):
        workload = read_spec(workload)
    elif isinstance(workload, Workload):
        check_workload(workload)  # built or changed in Python: held to what a spec may say
    else:
        raise SimError(f"workload must be a Workload, a bundled name or a spec file, got {workload!r:.80}")
    if isinstance(design, (str, os.PathLike)):
        design = Design.load(design)
    if not isinstance(design, Design):
        raise SimError(f"design must be a Design or its JSON file, got {design!r:.80}")
    design.check_fields()  # built or changed in Python: its provenance is read for the seed first
    if isinstance(calibration, (str, os.PathLike)):
        calibration = Calibration.load(calibration)
    if calibration is not None and not isinstance(calibration, (Calibration, SimParams)):
        raise SimError(f"calibration must be a Calibration, SimParams or its file, got {calibration!r:.80}")
    if isinstance(calibration, Calibration):
        calibration.check_fields()  # built or changed in Python: as its file would be read
    return workload, design, calibration


def simulate(workload: Workload | str | Path, design: Design | str | Path, *, scheduler: str = "dls",
             move: str = "rpc", calibration: Calibration | SimParams | str | Path | None = None,
             input_rate: float | None = None, batches: int = PREDICTION_BATCHES,
             seed: int | None = None, latency_bound_s: float = 1.0, batch_size: int | None = None,
             tolerance: float = PREDICTION_TOLERANCE) -> SimResult:
    """Simulate `design` running `workload`.

    At `input_rate` (batches/s) if given, else at the maximum throughput within
    `latency_bound_s` (what the dissertation reports, and what `recommend` predicts), searched
    to `tolerance`. A workload's declared `input.rate` is its offered load, not the rate
    simulated: `sustains_declared_rate` compares the result with it. A `calibration` predicts its target (a real cluster, or the measuring host
    after `on_host()`); bare SimParams are used exactly as given. The defaults are those of the
    advisor's figure for its pick, so this repeats it (`seed` None: the one the design was
    recommended with, `Design.recorded_seed`).
    """
    workload, design, calibration = api_inputs(workload, design, calibration)
    seed = design.seed_or_recorded(seed)
    input_rate, latency_bound_s, tolerance = map(as_python_number, (input_rate, latency_bound_s, tolerance))
    if input_rate is not None:
        check_offered_rate(input_rate)
    kw = dict(scheduler=scheduler, move=move, calibration=calibration, batches=batches,
              seed=seed, latency_bound_s=latency_bound_s, batch_size=batch_size)
    if input_rate is None:
        return max_throughput(workload, design, tolerance=tolerance, **kw)
    return run_once(workload, design, input_rate=input_rate, **kw)


def sustains_declared_rate(workload: Workload, max_batches_per_s: float) -> bool | None:
    """Whether a design whose maximum is `max_batches_per_s` sustains the offered load the
    workload declares (`[input] rate`); None where it declares none."""
    rate = workload.input.rate
    return None if not rate else max_batches_per_s >= rate * (1 - 1e-9)


def declared_rate_line(workload: Workload, max_batches_per_s: float, batch_size: int) -> str | None:
    """`sustains_declared_rate` in a line (None where the workload declares no rate)."""
    sustained = sustains_declared_rate(workload, max_batches_per_s)
    if sustained is None:
        return None
    rate = workload.input.rate
    said = f"the workload declares {rate:,.6g} batches/s ({rate * batch_size:,.0f} tuples/s)"
    if sustained:
        return (f"{said}: this design sustains it, with {max_batches_per_s / rate:.2f}x to spare "
                f"(`simulate --rate {rate:g}` runs it at that rate)")
    return (f"{said}: this design does NOT sustain it within the latency bound (at most "
            f"{max_batches_per_s:,.0f} batches/s)")
