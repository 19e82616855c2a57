"""Key samplers for synthetic traces: uniform, bounded Zipf, sequential, input field.

Vectorized: each call draws all keys of one chunk of batches at once.
"""
from __future__ import annotations

import numpy as np

# Below this many items the bounded Zipf is sampled exactly from its CDF (32 MiB at most);
# above, from the continuous power law on [1, n+1), which is close for large tables.
EXACT_ZIPF_ITEMS = 1 << 22


class ZipfSampler:
    """P(rank i) proportional to 1 / (i + 1)**theta over ranks 0..n-1 (rank 0 is hottest)."""

    def __init__(self, n: int, theta: float):
        self.n = max(int(n), 1)
        self.theta = float(theta)
        self._cdf = None
        if self.n <= EXACT_ZIPF_ITEMS:
            weights = np.arange(1, self.n + 1, dtype=np.float64) ** -self.theta
            cdf = np.cumsum(weights)
            self._cdf = cdf / cdf[-1]

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        u = rng.random(size)
        if self._cdf is not None:
            return np.minimum(np.searchsorted(self._cdf, u, side="right"), self.n - 1)
        n1 = self.n + 1.0
        if abs(self.theta - 1.0) < 1e-9:
            x = n1 ** u
        else:
            e = 1.0 - self.theta
            x = ((n1 ** e - 1.0) * u + 1.0) ** (1.0 / e)
        return np.minimum(np.floor(x).astype(np.int64) - 1, self.n - 1).clip(0)


def parse_keys(keys: str) -> tuple[str, str | None]:
    """'zipf:0.7' -> ('zipf', '0.7'); 'uniform' -> ('uniform', None)."""
    kind, _, param = keys.partition(":")
    return kind, (param or None)
