"""The three weights of the design cost and their defaults."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, asdict

from costmodel.errors import UserError


MAX_WEIGHT = 1e9  # only the ratios matter, so a bigger weight is never needed


@dataclass(frozen=True)
class Weights:
    """alpha: state co-location (distributed transactions); beta: processing co-location
    (MOVEs); gamma: load balancing. Only their ratios matter to the ranking of designs."""

    alpha: float = 0.3
    beta: float = 0.1
    gamma: float = 0.6

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                raise UserError(f"weight {name} must be a number, got {value!r}")
            # a numpy scalar (a notebook's arithmetic) as the Python number it is: designs
            # write plain JSON, and 10**400 stays an int until the bound below refuses it
            value = int(value) if isinstance(value, numbers.Integral) else float(value)
            object.__setattr__(self, name, value)
            if not (isinstance(value, int) or math.isfinite(value)) or value < 0:
                raise UserError(f"weight {name} must be a finite number >= 0, got {value}")
            if value > MAX_WEIGHT:  # (their sum, and every cost, would overflow or print as 300 digits)
                # (an int past 1e308, 10**400 say, has no float to print)
                shown = f"{value:g}" if isinstance(value, float) or value < 10**308 else "over 1e308"
                raise UserError(f"weight {name} must be at most {MAX_WEIGHT:g} (only the weights' ratios "
                                 f"matter: give them on a smaller scale), got {shown}")
        if self.alpha + self.beta + self.gamma <= 0:  # every design would cost 0: no ranking at all
            raise UserError("at least one of the weights alpha, beta, gamma must be positive")

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> "Weights":
        """From a file's `weights` object; a missing weight takes its default. Anything but an
        object of alpha, beta and gamma is refused (ValueError): a list, or a misspelt key,
        would otherwise be the default weights without a word."""
        if not isinstance(data, dict):
            raise ValueError(f"must be an object of alpha, beta and gamma, got {data!r}")
        unknown = sorted(set(data) - {"alpha", "beta", "gamma"})
        if unknown:
            raise ValueError(f"unknown weight {unknown[0]!r} (the weights are alpha, beta and gamma)")
        return cls(**data)


# gamma > alpha > beta, the dissertation's typical ranking (section 6.3.4): an idle machine
# wastes the most, a distributed transaction (2PC) costs more than an asynchronous RPC MOVE.
# Only a fallback: the advisor prices the weights per workload from a calibration
# (advisor.priced_weights.default_weights), and uses these only when every price is zero.
DEFAULT_WEIGHTS = Weights(alpha=0.3, beta=0.1, gamma=0.6)


def check_weights(weights, error: type[UserError] = UserError) -> None:
    """Weights a caller gave (the Python API's `weights=`): None (the defaults) or Weights; a
    tuple or a string reached `.alpha` deep in the search (an AttributeError)."""
    if weights is not None and not isinstance(weights, Weights):
        raise error(f"weights must be costmodel.Weights(alpha, beta, gamma) or None, got {weights!r}")
