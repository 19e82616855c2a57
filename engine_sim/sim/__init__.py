"""Discrete-event simulator of the partitioned S-Store-style engine.

Answers "what will this design do on that cluster" for clusters larger than this machine:
the same engine model (partitions, DLS or central schedulers, 2PC, RPC or transactional
MOVEs, local and cross-machine messages) driven by a tiny event core (`core.py`).

    simulate(workload, design)          one run at an input rate (default: the best one)
    max_throughput(workload, design)    the highest input rate within the latency bound

`calibration=` takes a Calibration, which predicts its target (a real cluster by default,
the measuring host for `cal.on_host()`), or bare SimParams, taken exactly as they are.
The run logic lives in `run.py`; this package only re-exports it.
"""
from __future__ import annotations

from costmodel.calibration import Calibration, CalibrationError
from costmodel.sim_params import SimParams
from engine_sim.sim.errors import SimError
from engine_sim.sim.result import SimResult
from engine_sim.sim.run import max_throughput, run_once, sim_params_for, simulate
from engine_sim.sim.scale import spread_design

__all__ = ["Calibration", "CalibrationError", "SimError", "SimParams", "SimResult",
           "max_throughput", "run_once", "sim_params_for", "spread_design", "simulate"]
