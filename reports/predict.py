"""Predicted throughput of a design, by the simulator: the one number suggestions, tuning and
the report rank designs by. Kept in one place so every part predicts the same way."""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_BATCHES = 400  # enough for a stable steady state on small workloads; fast


@dataclass(frozen=True)
class PredictOptions:
    """How the simulator is run for predictions (calibration: a SimParams or Calibration)."""

    batches: int = DEFAULT_BATCHES
    scheduler: str = "dls"
    move: str = "rpc"
    calibration: object | None = None
    seed: int = 0
    latency_bound_s: float = 1.0


def predict(workload, design, options: PredictOptions | None = None):
    """The simulator's `max_throughput` result for `design` on `workload`, or None when there is
    no spec to simulate (a statistics-only source)."""
    if workload is None:
        return None
    from engine_sim.sim import max_throughput

    o = options or PredictOptions()
    return max_throughput(workload, design, latency_bound_s=o.latency_bound_s, scheduler=o.scheduler,
                          move=o.move, calibration=o.calibration, batches=o.batches, seed=o.seed)


def predicted_tps(workload, design, options: PredictOptions | None = None) -> float | None:
    result = predict(workload, design, options)
    return None if result is None else float(result.throughput_tps)
