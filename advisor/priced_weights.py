"""The cost-model weights in real prices: measured costs of a distributed transaction, a MOVE
and a unit of SP work (a calibration file, `advisor calibrate` writes it), turned into
alpha, beta and gamma for one workload on one cluster.

Each term of the cost is a fraction; times its price it becomes seconds of work per batch:
- state co-location x (transactions per batch that touch state x distributed_txn_s): the
  extra time when that share of the workload's transactions runs as distributed ones;
- processing co-location x (stream edges per batch x move_s): the MOVEs between machines;
- load balancing x (total SP load per batch x cost_unit_s): the (max - min) machine work,
  the time the busiest machine works while the idlest waits.
alpha, beta, gamma are those three prices divided by their sum, so the dissertation's
formula (alpha S + beta P + gamma L) stays the objective, in units of the total.

Which calibration: the one given (a Calibration, or the path of its file), else
$ADVISOR_CALIBRATION, else the user's calibration
(`advisor calibrate` writes ~/.config/sstore-advisor/calibration.json, or under
$XDG_CONFIG_HOME), else the one shipped with the package (measured on a reference machine).
The file's format:
    {"format": "advisor.calibration/1", "machine": {...},
     "prices": {"single_txn_s", "distributed_txn_s", "move_s", "idle_machine_s",
                "cost_unit_s" (optional)}, "weights": {...}, "simulator": {...}}
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from costmodel import DEFAULT_WEIGHTS, CostGraph, Weights
from costmodel.calibration import Calibration, CalibrationError
from costmodel.workload import DEFAULT_COST_UNIT_US

PACKAGE_CALIBRATION = Path(__file__).parent / "data" / "calibration.json"
ENV_VARIABLE = "ADVISOR_CALIBRATION"
# CPU seconds per declared unit of SP cost: the engine does cost x 100 µs of work per SP
ENGINE_COST_UNIT_S = 100e-6


@dataclass(frozen=True)
class Prices:
    """Seconds of a distributed transaction beyond a single-partition one, of one MOVE,
    and of one unit of SP work; `source` is the file they came from."""

    distributed_txn_s: float
    move_s: float
    cost_unit_s: float = ENGINE_COST_UNIT_S
    single_txn_s: float = 0.0
    source: str = ""


def user_calibration_path() -> Path:
    """Where `advisor calibrate` installs a calibration for this user."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sstore-advisor" / "calibration.json"


def calibration_path() -> Path:
    """The calibration the advisor uses by default (see the module's docstring)."""
    env = os.environ.get(ENV_VARIABLE)
    if env:
        return Path(env)
    user = user_calibration_path()
    return user if user.is_file() else PACKAGE_CALIBRATION


CalibrationSource = Calibration | str | Path | None  # an object, its file, or the default file


def as_calibration(calibration: CalibrationSource = None) -> Calibration:
    """The calibration meant: an object as it is, a path read by the one reader
    (`costmodel.calibration`), None the default file (`calibration_path()`)."""
    if isinstance(calibration, Calibration):
        calibration.check_fields()  # built or changed in Python: as its file would be read
        return calibration
    return Calibration.load(calibration if calibration is not None else calibration_path())


def _where(calibration: CalibrationSource) -> str:
    """The calibration named in a message: its file, or what it stands for."""
    if isinstance(calibration, Calibration):
        return calibration.label()
    return str(calibration if calibration is not None else calibration_path())


def load_prices(calibration: CalibrationSource = None) -> Prices:
    """The prices of a calibration (default: the file at `calibration_path()`)."""
    p = as_calibration(calibration).prices
    where = _where(calibration)
    values = {}
    for key in ("distributed_txn_s", "move_s", "cost_unit_s", "single_txn_s"):
        if key not in p:
            if key in ("cost_unit_s", "single_txn_s"):
                continue
            raise CalibrationError(f"{where}: prices.{key} is missing")
        values[key] = float(p[key])  # the reader has checked each is a finite number >= 0
    return Prices(**values, source=where)


def price_scales(graph, prices: Prices) -> tuple[float, float, float]:
    """Seconds per batch of each term at its full value (fraction 1), for this graph."""
    cost: CostGraph = graph.cost if hasattr(graph, "cost") else graph
    txns = getattr(graph, "proc_txns", None)
    txns = np.ones(cost.n_proc) if txns is None else np.asarray(txns, dtype=np.float64)
    unit_s = getattr(graph, "load_unit_s", None) or (
        prices.cost_unit_s * getattr(graph, "cost_unit_us", DEFAULT_COST_UNIT_US) / DEFAULT_COST_UNIT_US)
    with_state = np.zeros(cost.n_proc, dtype=bool)
    with_state[cost.ps_proc[cost.ps_cost_weight > 0]] = True  # a window is never distributed
    stream = (cost.pp_src != cost.pp_dst) & (cost.pp_weight > 0)
    state_s = float(txns[with_state].sum()) * prices.distributed_txn_s
    move_s = float(txns[cost.pp_src[stream]].sum()) * prices.move_s
    balance_s = float(cost.proc_load.sum()) * unit_s
    return state_s, move_s, balance_s


def weights_from_prices(graph, prices: Prices) -> Weights:
    """alpha, beta, gamma: the price of each term's full value over the sum of the three."""
    a, b, g = price_scales(graph, prices)
    total = a + b + g
    if total <= 0:
        return DEFAULT_WEIGHTS
    return Weights(alpha=a / total, beta=b / total, gamma=g / total)


def default_weights(graph, calibration: CalibrationSource = None) -> Weights:
    """The weights the advisor uses for `graph` (a WorkloadGraph or CostGraph) when none
    are given: real prices from the calibration (see `calibration_path`)."""
    return weights_from_prices(graph, load_prices(calibration))


def local_move_ratio(calibration: CalibrationSource = None) -> float:
    """Price of a MOVE between partitions of one machine relative to one between machines
    (the calibration's local and remote message CPU costs; 1 when it has none)."""
    sim = calibration_simulator(calibration)
    try:
        ratio = float(sim["local_msg_cpu_s"]) / float(sim["msg_cpu_s"])
    except (TypeError, KeyError, ValueError, ZeroDivisionError):
        return 1.0
    return float(np.clip(ratio, 0.0, 1.0)) if np.isfinite(ratio) else 1.0


def calibration_simulator(calibration: CalibrationSource = None) -> dict:
    """The simulator prices of a calibration (default: the file at `calibration_path()`)."""
    return as_calibration(calibration).params.to_dict()


def partition_weights(weights: Weights, calibration: CalibrationSource = None) -> Weights:
    """Weights for placing SPs on the partitions inside one machine: a MOVE there is a local
    message, so beta shrinks by `local_move_ratio`; a distributed transaction still runs
    two-phase commit (alpha stays), and load balance over partitions is parallelism. Where
    beta is the only weight and a local MOVE is free, the weights would be all zero (refused):
    they stay as they are (beta's scale alone does not change the ranking)."""
    beta = weights.beta * local_move_ratio(calibration)
    if weights.alpha == weights.gamma == beta == 0:
        return weights
    return Weights(weights.alpha, beta, weights.gamma)


def weights_from_calibration(calibration: CalibrationSource) -> Weights:
    """The fixed weights stored in a calibration (workload-independent; the default is
    `default_weights`, which prices the workload's own costs and accesses)."""
    return as_calibration(calibration).weights
