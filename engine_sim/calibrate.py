"""`advisor calibrate`: measure the engine's micro-benchmarks on this machine and fit the
simulator's parameters and the cost model's weights to them.

1. Run every probe of `engine_sim.sim.probes` on the engine, one batch in flight (so the
   latency is the sum of the step costs), and read its p50 latency and busy time.
2. Fit the simulator's parameter groups to those numbers (`engine_sim.sim.fit`).
3. Check the fit on loaded runs (16 batches in flight) it was not fitted to.
4. Derive alpha/beta/gamma from the fitted prices of a distributed transaction, a MOVE and
   an idle machine (`costmodel.calibration.prices`), and write it all with the machine.

The engine emulates a cluster on this one host: every partition is a process of its own and
they share the host's cores. The fitted parameters say so (`site_per_partition`,
`host_cores`) so the simulator predicts the engine here (validation, fidelity); predicting a
real cluster drops both (`Calibration` passed to `simulate`).
"""
from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

from engine_sim.engine import ClientOptions, CommandLogOptions, run_workload
from costmodel.calibration import MAX_PRICE_S, Calibration, CalibrationError, engine_serve_slice_s, this_machine
from engine_sim.sim.fit import FIT_BASE, fit_parameters, observe
from engine_sim.sim.probes import Probe, cost_scaling, driver_probe, probes, throughput_checks


# The simulator models no disk: the engine writes its command log without forcing it to disk
# (fsync off) in every run the simulator is compared with, so both measure the same engine.
ENGINE_COMMAND_LOG = CommandLogOptions(fsync=False)
MIN_MEASURED_S = 1e-9  # a probe's figure: a nanosecond is below anything an engine run measures


def _runnable_elsewhere() -> tuple[int, int]:
    """(threads, sessions) runnable right now outside the caller's session (/proc)."""
    mine = os.getsid(0)
    threads, sessions = 0, set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{pid}/task/{t}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] == "R" and int(fields[3]) != mine:
                threads += 1
                sessions.add(int(fields[3]))
    return threads, len(sessions)


def _autogroup() -> bool:
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def background_jobs(seconds: float = 0.5, samples: int = 10) -> float:
    """How many other jobs compete for this host's cores right now, on average: the sessions
    (Linux's autogroups, which share the CPU fairly among themselves) with a runnable thread,
    outside the caller's; where autogroup is off, the runnable threads. Taken just before an
    engine run, so none of the engine's processes (each partition a session of its own) is
    counted. 0 where /proc cannot be read (not Linux)."""
    if not os.path.isdir("/proc/self/task"):
        return 0.0
    by_session = _autogroup()
    counts = []
    for i in range(samples):
        threads, sessions = _runnable_elsewhere()
        counts.append(sessions if by_session else threads)
        if i + 1 < samples:
            time.sleep(seconds / samples)
    return sum(counts) / len(counts)


def _observable(p: Probe, r, batches: int) -> float:
    if p.observe == "latency":
        return r.latency_p50_ms / 1e3
    if p.observe == "busy":
        return r.partition_busy_s[p.partition] / batches
    if p.observe == "cycle":
        return 1.0 / r.throughput_bps
    if p.observe == "driver":
        return r.driver_cpu_s / batches
    return r.throughput_bps


def measure(probe_list: list[Probe], *, batches: int, in_process: bool, seed: int = 0,
            repeats: int = 1, progress: Callable[[str], None] | None = None,
            background: dict[str, float] | None = None) -> dict[str, float]:
    """Run each distinct probe setup on the engine `repeats` times; return every probe's
    observable, the best of the repeats (the least disturbed by whatever else the host runs:
    the smallest time, the highest throughput). If `background` is a dict, it receives per
    probe key the host's other runnable jobs sampled just before the run that gave it."""
    runs: dict[tuple, list] = {}
    out: dict[str, float] = {}
    for p in probe_list:
        setup = (p.name, p.scheduler, p.move, p.in_flight)
        if setup not in runs:
            if progress:
                progress(f"  engine: {p.name} ({p.scheduler}, {p.move} MOVE, {p.in_flight} in flight)")
            runs[setup] = []
            for i in range(repeats):
                others = (background_jobs(0.1, 3) if background is not None and not in_process
                          else 0.0)
                r = run_workload(p.workload, p.design, batches=batches, scheduler=p.scheduler,
                                 move=p.move, seed=seed + i, in_process=in_process,
                                 client=ClientOptions(in_flight=p.in_flight),
                                 command_log=ENGINE_COMMAND_LOG)
                if r.history_check != "ok":
                    raise CalibrationError(f"engine run {p.name} failed its history check: "
                                           f"{r.history_check}")
                runs[setup].append((r, others))
        values = [_observable(p, r, batches) for r, _ in runs[setup]]
        best = int(np.argmax(values)) if p.observe == "throughput" else int(np.argmin(values))
        out[p.key] = values[best]
        if background is not None:
            background[p.key] = runs[setup][best][1]
    return out


def calibrate(*, quick: bool = False, in_process: bool = False, seed: int = 0,
              progress: Callable[[str], None] | None = None, fit_background: bool = False) -> Calibration:
    """Measure the probes, fit, check. The host's other jobs are sampled before every run and
    recorded (`fit["background_jobs"]`); with `fit_background` each probe is also fitted beside
    them, so the costs come out as a quiet host's. Off by default: on this shared machine the
    figure sampled before a run did not predict the run's slow-down, and the fits with it
    predicted the fidelity designs worse (docs/simulator.md)."""
    say = progress or (lambda _msg: None)
    # each probe run lasts a few tenths of a second at least (150 batches lasted under one, and
    # two calibrations minutes apart measured a loaded check 1.7x apart); --quick is for tests
    batches = 40 if quick else 600
    plist = [p for p in probes() if not (in_process and driver_probe(p))]
    say(f"measuring {len(plist)} micro-benchmarks on the engine "
        f"({'in-process' if in_process else 'multi-process'}, {batches} batches each)")
    others: dict[str, float] = {}
    measured = measure(plist, batches=batches, in_process=in_process, seed=seed,
                       repeats=1 if quick else 3, progress=progress, background=others)
    scaling = cost_scaling(measured)
    if scaling is not None and scaling["ratio"] is not None:
        say(f"declared cost is CPU work: the 4x-cost probe's work measured {scaling['ratio']:.2f}x the "
            f"1x probe's ({scaling['work_4x_s'] * 1e6:.0f} vs {scaling['work_1x_s'] * 1e6:.0f} us per batch)")
    y = [measured[p.key] for p in plist]
    bad = [p.key for p, v in zip(plist, y) if not v > 0]
    if bad:
        raise CalibrationError(f"the engine measured nothing for {bad[0]} (zero time)")
    say("measuring loaded runs to check the fit on")
    checks = throughput_checks()
    check_others: dict[str, float] = {}
    engine_tp = measure(checks, batches=batches * 2, in_process=in_process, seed=seed,
                        repeats=1 if quick else 2, progress=progress, background=check_others)
    machine = this_machine()
    machine["engine_mode"] = "in-process" if in_process else "multi-process"
    say("fitting the simulator")
    return _fitted(measured, engine_tp, machine=machine, batches=batches, in_process=in_process,
                   others=others, check_others=check_others, scaling=scaling, fit_background=fit_background)


def refit(cal: Calibration, progress: Callable[[str], None] | None = None) -> Calibration:
    """Fit the current simulator to a calibration's stored engine measurements again, with no
    engine run: a calibration made before a change to the simulator's model stays usable."""
    if cal.source != "measured" or not cal.measurements:
        raise CalibrationError("only a measured calibration (from `advisor calibrate`) can be re-fitted")
    fit = cal.fit or {}
    present = [p for p in probes() if p.key in cal.measurements]
    if not present:
        raise CalibrationError("the calibration holds no measurement of a current micro-benchmark")
    for p in present:  # what the fit divides by: a zero, a denormal or 1e20 s breaks it
        v = cal.measurements[p.key]
        if not MIN_MEASURED_S <= v <= MAX_PRICE_S:
            raise CalibrationError(f"measurements.{p.key} must be between {MIN_MEASURED_S:g} and "
                                   f"{MAX_PRICE_S:g} seconds to be fitted, got {v:g}")
    checks = {k: row["engine_bps"] for k, row in (fit.get("throughput_checks") or {}).items()}
    if progress:
        progress(f"re-fitting {len(present)} stored measurements with the current simulator")
    return _fitted(cal.measurements, checks, machine=dict(cal.machine),
                   batches=int(fit.get("batches_per_probe", 600)),
                   in_process=cal.machine.get("engine_mode") == "in-process",
                   others=fit.get("background_jobs") or {},
                   check_others={k: row.get("background_jobs", 0.0)
                                 for k, row in (fit.get("throughput_checks") or {}).items()},
                   scaling=fit.get("cost_scaling"), fit_background=bool(fit.get("fitted_beside_background")))


def _fitted(measured: dict[str, float], engine_tp: dict[str, float], *, machine: dict, batches: int,
            in_process: bool, others: dict[str, float], check_others: dict[str, float], scaling,
            fit_background: bool) -> Calibration:
    """The calibration that the probes' measurements fit, with its loaded checks compared. A
    probe the measurements lack (a file from an older version) is left out and listed."""
    plist = [p for p in probes() if p.key in measured]
    y = [measured[p.key] for p in plist]
    cores = 1 if in_process else int(machine.get("cpus") or os.cpu_count() or 1)
    # in-process, one thread runs every partition in turn: the work simply adds up (the mean
    # field on one core); processes collide on the host's cores (occupancy)
    crowding = "mean" if in_process else "occupancy"
    result = fit_parameters(plist, y, base=FIT_BASE.with_(host_cores=cores, site_per_partition=True,
                                                          crowding=crowding),
                 background=[others.get(p.key, 0.0) for p in plist] if fit_background else None,
                 loaded_batches=batches)
    params = result.params.with_(service_cv=0.1, background_jobs=0.0, serve_slice_s=engine_serve_slice_s(in_process))
    check_rows = {}
    for p in throughput_checks():
        if p.key not in engine_tp:
            continue
        predicted = observe(p, params.with_(background_jobs=check_others.get(p.key, 0.0) if fit_background
                                            else 0.0), batches=batches * 2)
        check_rows[p.key] = {"engine_bps": engine_tp[p.key], "simulator_bps": predicted,
                             "relative_error": (predicted - engine_tp[p.key]) / engine_tp[p.key],
                             "background_jobs": check_others.get(p.key, 0.0)}
    fit_info = {"factors_vs_reference": result.factors, "probes": result.residuals,
                "median_relative_error": result.median_error, "throughput_checks": check_rows,
                "batches_per_probe": batches, "engine_options": {"fsync": ENGINE_COMMAND_LOG.fsync},
                "cost_scaling": scaling, "background_jobs": others, "fitted_beside_background": fit_background,
                "probes_not_measured": [p.key for p in probes() if p.key not in measured],
                "fitted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    return Calibration.from_params(params, measured, machine=machine, source="measured", fit=fit_info)
