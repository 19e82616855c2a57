"""Read the cost-model weights out of a calibration file (`advisor calibrate` writes it).

Only the `weights` object is read here, so the advisor does not depend on the simulator
that fits the rest of the file:
    {"format": "advisor.calibration/1", "machine": {...},
     "weights": {"alpha": a, "beta": b, "gamma": g}, "simulator": {...}}
"""
from __future__ import annotations

import json
from pathlib import Path

from costmodel import Weights
from advisor.atomic import read_user_text
from advisor.errors import AdvisorError

CALIBRATION_FORMAT = "advisor.calibration/1"


def weights_from_calibration(path: str | Path) -> Weights:
    path = Path(path)
    try:
        data = json.loads(read_user_text(path, AdvisorError))
    except json.JSONDecodeError as exc:
        raise AdvisorError(f"{path}: not a readable calibration file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
        raise AdvisorError(f"{path}: not a calibration file (expected \"format\": \"{CALIBRATION_FORMAT}\")")
    w = data.get("weights")
    if not isinstance(w, dict):
        raise AdvisorError(f"{path}: calibration has no \"weights\" object")
    try:
        return Weights(alpha=w["alpha"], beta=w["beta"], gamma=w["gamma"])
    except KeyError as exc:
        raise AdvisorError(f"{path}: weights.{exc.args[0]} is missing") from None
    except (TypeError, ValueError) as exc:
        raise AdvisorError(f"{path}: weights: {exc}") from None
