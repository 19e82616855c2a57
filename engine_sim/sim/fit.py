"""Fit the simulator's parameters to measurements of the calibration probes.

With one batch in flight nothing queues, so every probe's latency and every partition's busy
time per batch is a sum of step costs: linear in the parameters. The parameters are fitted in
groups (each group scaled by one factor from its reference values, e.g. every local-hop cost
together), so the model is y = A f with A[k, g] the share of group g in probe k at the
reference values (read off the simulator itself: run it with group g doubled and subtract).
The factors are the non-negative least-squares solution on relative errors.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import nnls

from costmodel.sim_params import SimParams
from engine_sim.sim.probes import Probe

GROUPS: dict[str, tuple[str, ...]] = {
    "txn_overhead": ("txn_overhead_s",),
    "cost_unit": ("cost_unit_s",),
    "row_read": ("row_read_s",),
    "row_write": ("row_write_s",),
    "tuple_in": ("tuple_in_s",),
    "tuple_out": ("tuple_out_s",),
    "local_hop": ("sched_s", "ack_s", "local_msg_cpu_s", "local_latency_s"),
    "network_latency": ("net_latency_s",),
    "message_cpu": ("msg_cpu_s",),
    "bytes": ("ser_byte_s", "bandwidth_Bps"),  # per byte: (de)serialising and the link
    "two_pc": ("fragment_s", "prepare_s", "commit_s"),
    "after_commit": ("txn_after_commit_s",),
    "after_commit_rows": ("row_after_commit_s",),
    "client": ("client_latency_s",),
    "client_turnaround": ("client_turnaround_s",),
    "client_cpu": ("client_s",),
    "client_txns": ("client_txn_s",),
    "client_rows": ("client_row_s",),
    "window_insert": ("window_insert_s",),
    "window_slide": ("window_slide_s", "window_expire_s", "window_read_s"),
}
# the reference cluster's client sits next to the coordinator; give the fit a starting share
# and partitions some work after each commit (history, log)
FIT_BASE = SimParams(service_cv=0.0, client_latency_s=20e-6, client_turnaround_s=10e-6,
                     client_s=10e-6, client_txn_s=5e-6, client_row_s=0.5e-6, txn_after_commit_s=5e-6,
                     row_after_commit_s=0.5e-6)
# window costs start where the row costs put them (unset, they follow the row costs), so the
# window probes can scale them
FIT_BASE = FIT_BASE.with_(**dict(zip(("window_insert_s", "window_slide_s", "window_expire_s",
                                      "window_read_s"), FIT_BASE.window_costs())))


LOADED_WEIGHT = 2.0
# a pull of every factor toward 1 (the base value): a group the probes barely see (message
# CPU is a few percent of every probe once a cost unit is 100 us) keeps its base value instead
# of collapsing to 0 or exploding; a group the probes do see is not moved by it. At 0.05 the
# secant fit of the occupancy model got caught between groups that trade for each other (on
# one set of probes: message CPU to 0 and per-transaction client CPU to 39x, median error
# 8.8 %); at 0.3 the same probes fit better (7.7 %) with no group past 42x
PRIOR_WEIGHT = 0.3


def scale_group(params: SimParams, group: str, factor: float) -> SimParams:
    changes = {}
    for name in GROUPS[group]:
        value = getattr(params, name)
        changes[name] = value / max(factor, 1e-6) if name == "bandwidth_Bps" else value * factor
    return replace(params, **changes)


def observe(probe: Probe, params: SimParams, batches: int | None = None) -> float:
    """What the simulator says the probe measures (seconds; batches/s for "throughput")."""
    batches = _batches(probe, batches)
    return _read(probe, _simulate(probe, params, batches), batches)


def _batches(probe: Probe, batches: int | None) -> int:
    return batches if batches is not None else (30 if probe.in_flight == 1 else 8 * probe.in_flight)


def _simulate(probe: Probe, params: SimParams, batches: int):
    from engine_sim.sim import run_once

    return run_once(probe.workload, probe.design, in_flight=probe.in_flight, scheduler=probe.scheduler,
                    move=probe.move, calibration=params, batches=batches)


def _read(probe: Probe, r, batches: int) -> float:
    if probe.observe == "latency":
        return r.latency_p50_ms / 1e3
    if probe.observe == "busy":
        return r.partition_busy_s[probe.partition] / batches
    if probe.observe == "cycle":  # seconds per batch, one batch in flight
        return 1.0 / r.throughput_bps
    if probe.observe == "driver":  # CPU seconds, not stretched by crowded cores
        return r.driver_busy_s / r.cpu_dilation / batches
    if probe.observe == "throughput":
        return r.throughput_bps
    raise ValueError(f"unknown observable {probe.observe!r}")


def design_matrix(probes: list[Probe], base: SimParams = FIT_BASE,
                  background: list[float] | None = None,
                  loaded_batches: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(A, y0): A[k, g] is what group g adds to probe k when doubled from `base`, y0 the
    probes at `base`. Where nothing queues, A[k] sums to y0[k] exactly. `background`: per
    probe, the host's other runnable jobs when it was measured (`background_jobs`)."""
    others = background if background is not None else [base.background_jobs] * len(probes)

    def at(params: SimParams) -> np.ndarray:
        return _observe_all(probes, params, others, loaded_batches)

    y0 = at(base)
    A = np.zeros((len(probes), len(GROUPS)))
    for g, group in enumerate(GROUPS):
        A[:, g] = at(scale_group(base, group, 2.0)) - y0
    return A, y0


@dataclass
class FitResult:
    params: SimParams
    factors: dict[str, float]  # per group, relative to the base values
    residuals: dict[str, dict]  # per probe: measured, fitted, relative error
    median_error: float


def fit_parameters(probes: list[Probe], measured: list[float], base: SimParams = FIT_BASE,
        iterations: int = 4, background: list[float] | None = None,
        loaded_batches: int | None = None) -> FitResult:
    """Scale each group so the simulator reproduces the measurements (relative least squares,
    factors >= 0). The model is linear where nothing queues; where a partition's work after a
    commit delays the next batch it is not, so the linear step is repeated from the current
    point (a secant Gauss-Newton) until the factors settle. `background`, per probe: the
    host's other runnable jobs when it was measured; each probe is simulated with them, so
    the fitted costs are a quiet host's.

    On a shared host (`host_cores`) with the occupancy model of crowded cores the loaded
    probes are far from linear in the costs, and a secant fit started from the reference
    values can settle on costs that reproduce the probes but not the engine (message costs
    traded for per-transaction client costs). So the fit runs twice: with the mean field
    first (near-linear), then with the occupancy model from there, its prior pulling toward
    the first fit's values.

    `loaded_batches`: the batches of each engine run behind a loaded probe (window > 1). Its
    throughput counts the whole run, filling the window included, as the engine's does, so
    it is simulated at the same length (default: 8 windows)."""
    if background is not None and len(background) != len(probes):
        raise ValueError("one background figure per probe")
    y = np.asarray(measured, dtype=float)
    if y.shape != (len(probes),) or not np.all(np.isfinite(y)) or np.any(y <= 0):
        raise ValueError("every probe needs one positive, finite measurement")
    if base.host_cores > 0 and base.crowding != "mean":
        first = _fit(probes, y, base.with_(crowding="mean"), iterations, background, loaded_batches)
        second = _fit(probes, y, first.params.with_(crowding=base.crowding), iterations, background,
                      loaded_batches)
        second.factors = {g: first.factors[g] * second.factors[g] for g in GROUPS}
        return second
    return _fit(probes, y, base, iterations, background, loaded_batches)


def _observe_all(probes: list[Probe], params: SimParams, others: list[float],
                 loaded_batches: int | None) -> np.ndarray:
    """Every probe's observable; probes of one setup (the same engine run: latency, busy time,
    driver CPU) are read off one simulation, as the calibration reads them off one run."""
    runs: dict[tuple, tuple] = {}
    out = []
    for p, o in zip(probes, others):
        batches = _batches(p, loaded_batches if p.in_flight > 1 else None)
        setup = (p.name, p.scheduler, p.move, p.in_flight, o)
        if setup not in runs:
            runs[setup] = (_simulate(p, params.with_(background_jobs=o), batches), batches)
        out.append(_read(p, *runs[setup]))
    return np.array(out)


def _fit(probes: list[Probe], y: np.ndarray, base: SimParams, iterations: int,
         background: list[float] | None, loaded_batches: int | None) -> FitResult:
    params = base
    total = np.ones(len(GROUPS))
    for _ in range(iterations):
        A, y_now = design_matrix(probes, params, background, loaded_batches)
        # y ~ y_now + A (m - 1): solve for the multipliers m >= 0 on relative errors, the
        # loaded probes (what limits throughput, the number predictions are about) counted twice
        weight = np.array([LOADED_WEIGHT if p.in_flight > 1 else 1.0 for p in probes])
        scaled = A / y[:, None] * weight[:, None]
        target = (y - y_now + A.sum(axis=1)) / y * weight
        identifiable = np.linalg.norm(scaled, axis=0) > 1e-9
        k = int(identifiable.sum())
        if k == 0:  # (nnls aborts the process on a matrix of no columns)
            raise ValueError("no simulator parameter moves these measurements: nothing to fit")
        prior = PRIOR_WEIGHT * np.eye(k)
        m = np.ones(len(GROUPS))
        m[identifiable], _ = nnls(np.vstack([scaled[:, identifiable], prior]),
                                  np.concatenate([target, PRIOR_WEIGHT * np.ones(k)]))
        for g, group in enumerate(GROUPS):
            params = scale_group(params, group, float(m[g]))
        total *= m
        if np.all(np.abs(m - 1) < 0.01):
            break
    others = background if background is not None else [params.background_jobs] * len(probes)
    fitted = _observe_all(probes, params, others, loaded_batches)
    residuals = {p.key: {"measured_s": float(v), "fitted_s": float(f),
                         "relative_error": float((f - v) / v)}
                 for p, v, f in zip(probes, y, fitted)}
    return FitResult(params, {g: float(x) for g, x in zip(GROUPS, total)}, residuals,
                     float(np.median(np.abs((fitted - y) / y))))
