"""The calibration file: fitted simulator parameters, the machine they were measured on, the
raw micro-benchmark figures, and the cost-model weights derived from the same prices.

Format `advisor.calibration/1` (JSON), read only here: the simulator predicts with its
parameters, the advisor prices its weights from its prices (advisor/priced_weights.py):

    {"format": "advisor.calibration/1",
     "source": "measured" | "reference",
     "machine": {"hostname", "platform", "processor", "cpus", "python", "measured_at"},
     "weights": {"alpha", "beta", "gamma"},
     "prices": {"distributed_txn_s", "move_s", "idle_machine_s", "single_txn_s"},
     "simulator": {<SimParams field>: seconds | bytes | bytes/s, ...},
     "measurements": {<micro-benchmark>: value, ...},
     "fit": {<how each parameter was obtained>}}

Weights. The three cost terms are fractions (of access weight cut, of stream weight cut, of
load spread); each weight is the price of one unit of its term, in partition-seconds per
transaction: alpha the extra cost of a distributed transaction over the same work
single-sited (two partitions held through lock, fragment and 2PC round trips), beta the
cost of one MOVE (serialising, sending, receiving, keeping the batch in the stream table),
gamma the work an idle machine leaves undone while another runs one more transaction.
Normalised to sum to 1; only their ratios matter.
"""
from __future__ import annotations

import json
import os
import platform
import socket
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from costmodel.files import atomic_write_text
from costmodel.user_files import read_user_json
from costmodel.errors import UserError, finite_float
from costmodel import Weights
from costmodel.sim_params import ENGINE_SERVE_SLICE_S, IN_PROCESS_SERVE_SLICE_S, MAX_SECONDS, SimParams

FORMAT = "advisor.calibration/1"
FILE_KEYS = ("format", "source", "machine", "weights", "prices", "simulator", "measurements", "fit")
SOURCES = ("measured", "reference")
MAX_PRICE_S = MAX_SECONDS  # seconds a price may say (a transaction, a MOVE): the simulator's own bound


class CalibrationError(UserError):
    """A calibration file that cannot be read, or a calibration that cannot be measured."""


def this_machine() -> dict:
    """What the measurements were taken on (recorded in the file)."""
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def prices(params: SimParams, tuples: float = 10, tuple_bytes: float = 64) -> dict[str, float]:
    """Partition-seconds of a distributed transaction, a MOVE, an idle machine and one unit of
    declared SP cost (what the advisor's default weights are priced in)."""
    single = params.single_site_txn_s(cost=1.0, rows_read=tuples, tuples_in=tuples, tuples_out=tuples)
    hold = params.two_pc_hold_s(single, remote_rounds=0, participants=2, same_machine=False,
                                fragment_rows=tuples)
    nbytes = tuples * tuple_bytes
    move = (2 * (params.msg_cpu_s + nbytes * params.ser_byte_s) + nbytes / params.bandwidth_Bps
            + tuples * params.tuple_out_s)
    return {"single_txn_s": single, "distributed_txn_s": max(2 * hold - single, 0.0),
            "move_s": move, "idle_machine_s": single, "cost_unit_s": params.cost_unit_s}


def normalised_weights(p: dict[str, float]) -> Weights:
    """The three prices as weights summing to 1 (workload-independent; the advisor's default
    weights price a workload's own terms, `advisor.priced_weights.weights_from_prices`)."""
    a, b, g = p["distributed_txn_s"], p["move_s"], p["idle_machine_s"]
    total = a + b + g
    if total <= 0:
        return Weights()
    return Weights(alpha=round(a / total, 6), beta=round(b / total, 6), gamma=round(g / total, 6))


TARGETS = ("cluster", "host")


@dataclass
class Calibration:
    """Fitted parameters and what a prediction with them stands for (`target`): "cluster", a
    real cluster of the measured machines (a site per machine, a core per thread: the
    measuring host's emulation is dropped), or "host", the engine as it ran on the measuring
    host (its cores shared by every emulated machine). The target is not stored in the file:
    a loaded calibration predicts a cluster until `on_host()` says otherwise."""
    params: SimParams = field(default_factory=SimParams)
    machine: dict = field(default_factory=dict)
    measurements: dict = field(default_factory=dict)
    prices: dict = field(default_factory=dict)
    weights: Weights = field(default_factory=Weights)
    source: str = "reference"  # "reference" (built-in model of the paper's cluster) or "measured"
    fit: dict = field(default_factory=dict)  # how each parameter was obtained
    target: str = "cluster"  # what the simulator predicts with it: "cluster" or "host"

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise CalibrationError(f"calibration target must be one of {', '.join(TARGETS)}, "
                                   f"got {self.target!r}")

    def check_fields(self) -> None:
        """One built or changed in Python (`dataclasses.replace`) is held to what a calibration
        file may say: written as the file's JSON and read back, one CalibrationError line where
        it could not be (`prices=None` was a TypeError in the weights' pricing, `params=None`
        an AttributeError in the simulator)."""
        try:
            data = json.loads(json.dumps(self.to_dict()))
        except (AttributeError, TypeError, ValueError) as exc:
            raise CalibrationError(f"calibration: not one a calibration file could hold: {exc}") from None
        Calibration.from_dict(data, "calibration")

    def on_host(self) -> "Calibration":
        """A copy that predicts the engine on the measuring host, emulation included."""
        return replace(self, target="host")

    def on_cluster(self) -> "Calibration":
        """A copy that predicts a real cluster of the measured machines."""
        return replace(self, target="cluster")

    def sim_params(self) -> SimParams:
        """The simulator parameters for this calibration's target: as measured for "host";
        for "cluster", without the host's core sharing, background jobs and site per partition."""
        if self.target == "host":
            return self.params
        return self.params.with_(host_cores=0, background_jobs=0.0, site_per_partition=False)

    @classmethod
    def reference(cls) -> "Calibration":
        """The built-in parameters (the dissertation's cluster, not measured here)."""
        params = SimParams()
        pr = prices(params)
        return cls(params, {"hostname": "reference-cluster",
                            "platform": "model of the dissertation's 64-core Xeon cluster"},
                   {}, pr, normalised_weights(pr), "reference")

    @classmethod
    def from_params(cls, params: SimParams, measurements: dict, machine: dict | None = None,
                    source: str = "measured", fit: dict | None = None) -> "Calibration":
        pr = prices(params)
        return cls(params, machine or this_machine(), dict(measurements), pr,
                   normalised_weights(pr), source, dict(fit or {}))

    def to_dict(self) -> dict:
        return {"format": FORMAT, "source": self.source, "machine": self.machine,
                "weights": self.weights.to_dict(), "prices": self.prices,
                "simulator": self.params.to_dict(), "measurements": self.measurements,
                "fit": self.fit}

    def label(self) -> str:
        """What a prediction with this calibration stands for, in a few words."""
        if self.source == "reference":
            return ("reference-cluster parameters" if self.target == "cluster"
                    else "reference-cluster parameters, as one host runs the engine")
        return (f"calibrated on {self.machine.get('hostname', '?')}"
                + (", as that host runs the engine" if self.target == "host" else ", as a cluster"))

    def save(self, path: str | Path) -> Path:
        """Written only as a file could hold it: one changed in Python into what no reader takes
        (`prices=[1]`) was saved, and every command then refused the file."""
        self.check_fields()
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def from_dict(cls, data: dict, source: str = "<calibration>") -> "Calibration":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise CalibrationError(f"{source}: not a calibration file (expected \"format\": \"{FORMAT}\")")
        for key in ("machine", "measurements", "prices", "fit"):  # (read below)
            if not isinstance(data.get(key, {}), dict):
                raise CalibrationError(f"{source}: {key} must be an object")
        simulator = data.get("simulator")
        if not isinstance(simulator, dict) or not simulator:  # ([], {} or none: the reference
            # cluster's parameters were used, labelled as this calibration's)
            raise CalibrationError(f"{source}: simulator must be the object of fitted simulator parameters "
                                   f"`advisor calibrate` writes, got {simulator!r}")
        if simulator.get("host_cores") and "crowding" not in simulator:
            # measured before `crowding` existed: fitted with the mean field, so it predicts with it
            simulator = {**simulator, "crowding": "mean"}
        if "serve_slice_s" not in simulator:
            # measured before the slice was modelled: the engine it measured served as it does now
            in_process = (data.get("machine") or {}).get("engine_mode") == "in-process"
            simulator = {**simulator, "serve_slice_s": engine_serve_slice_s(in_process)}
        try:
            params = SimParams.from_dict(simulator)
        except (TypeError, ValueError) as exc:
            raise CalibrationError(f"{source}: {exc}") from None
        try:
            weights = Weights.from_dict({} if data.get("weights") is None else data["weights"])
        except (TypeError, ValueError) as exc:
            raise CalibrationError(f"{source}: weights: {exc}") from None
        stray = [k for k in data if k not in FILE_KEYS]
        if stray:  # as a design file's: a misspelt key was read as absent
            raise CalibrationError(f"{source}: {stray[0]}: not a field of a calibration file "
                                   f"(it has {', '.join(FILE_KEYS)})")
        if data.get("source", "measured") not in SOURCES:  # any other name was taken for "measured"
            raise CalibrationError(f"{source}: source must be one of {', '.join(SOURCES)}, got {data['source']!r}")
        for key in ("measurements", "prices"):  # prices weigh the cost model; --refit refits measurements
            for name, v in (data.get(key) or {}).items():
                if not finite_float(v) or v < 0:
                    raise CalibrationError(f"{source}: {key}.{name} must be a finite number >= 0, got {v!r}")
                if key == "prices" and v > MAX_PRICE_S:  # priced by the batch, they would overflow
                    raise CalibrationError(f"{source}: prices.{name} must be at most {MAX_PRICE_S:g} "
                                           f"seconds, got {v:g}")
        cpus = (data.get("machine") or {}).get("cpus")
        if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 1):
            raise CalibrationError(f"{source}: machine.cpus must be an integer >= 1, got {cpus!r}")
        checks = (data.get("fit") or {}).get("throughput_checks") or {}
        rows = checks.values() if isinstance(checks, dict) else [None]
        if any(not isinstance(r, dict) or not _positive(r.get("engine_bps")) for r in rows):
            raise CalibrationError(f"{source}: fit.throughput_checks must map each check to "
                                   f"{{\"engine_bps\": a number > 0, ...}}")
        return cls(params, data.get("machine", {}), data.get("measurements", {}),
                   data.get("prices", {}) or prices(params), weights,
                   str(data.get("source", "measured")), data.get("fit", {}))

    @classmethod
    def load(cls, path: str | Path) -> "Calibration":
        return cls.from_dict(read_user_json(path, CalibrationError), str(path))


def engine_serve_slice_s(in_process: bool) -> float:
    """The serving slice of the bundled engine as measured: multi-process or in-process."""
    return IN_PROCESS_SERVE_SLICE_S if in_process else ENGINE_SERVE_SLICE_S


def _positive(v) -> bool:
    return finite_float(v) and v > 0
