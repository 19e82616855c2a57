"""The three weights of the design cost and their defaults."""
from __future__ import annotations

import math
from dataclasses import dataclass, asdict


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
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"weight {name} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"weight {name} must be a finite number >= 0, got {value}")
            if value > MAX_WEIGHT:  # (their sum, and every cost, would overflow or print as 300 digits)
                raise ValueError(f"weight {name} must be at most {MAX_WEIGHT:g} (only the weights' ratios "
                                 f"matter: give them on a smaller scale), got {value:g}")

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> "Weights":
        return cls(**{k: data[k] for k in ("alpha", "beta", "gamma") if k in data})


# gamma > alpha > beta, the dissertation's typical ranking (section 6.3.4): an idle machine
# wastes the most, a distributed transaction (2PC) costs more than an asynchronous RPC MOVE.
# Only a fallback: the advisor prices the weights per workload from a calibration
# (advisor.priced_weights.default_weights), and uses these only when every price is zero.
DEFAULT_WEIGHTS = Weights(alpha=0.3, beta=0.1, gamma=0.6)
