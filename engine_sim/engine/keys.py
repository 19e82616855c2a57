"""Deterministic randomness and key generators for declared accesses.

Every random choice of a transaction (which keys, whether an access happens, injected aborts)
comes from an `Rng` seeded by (run seed, procedure, batch, sub-batch), never from the wall
clock or the process: a restarted, replayed or recovered transaction draws the same keys, so
command-log replay reproduces the state exactly (strong recovery needs determinism).
"""
from __future__ import annotations

import bisect
import zlib

import numpy as np

MASK = (1 << 64) - 1


def stable_seed(*parts) -> int:
    """A 64-bit seed from any printable parts (independent of PYTHONHASHSEED)."""
    text = "\x1f".join(str(p) for p in parts).encode()
    return (zlib.crc32(text) << 32) ^ zlib.adler32(text) ^ (len(text) * 0x9E3779B97F4A7C15 & MASK)


def mix64(x: int) -> int:
    """splitmix64 finalizer: a cheap, well-spread 64-bit hash of an integer."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


class Rng:
    """splitmix64 stream: tiny, fast in pure Python, identical in every process."""

    __slots__ = ("state",)

    def __init__(self, seed: int):
        self.state = seed & MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def random(self) -> float:
        return (self.next() >> 11) * (1.0 / (1 << 53))

    def below(self, n: int) -> int:
        return self.next() % n if n > 0 else 0

    def round(self, x: float) -> int:
        """Stochastic rounding: 7.5 is 7 or 8 with equal chance, so means are exact."""
        whole = int(x)
        return whole + (1 if self.random() < x - whole else 0)


class ZipfKeys:
    """Bounded Zipf over 0..n-1 (key 0 hottest), P(i) ~ 1/(i+1)**theta, by CDF bisection."""

    def __init__(self, n: int, theta: float):
        self.n = max(int(n), 1)
        weights = np.arange(1, self.n + 1, dtype=np.float64) ** -float(theta)
        cdf = np.cumsum(weights)
        self.cdf = (cdf / cdf[-1]).tolist()

    def draw(self, rng: Rng) -> int:
        return min(bisect.bisect_right(self.cdf, rng.random()), self.n - 1)


class KeyGen:
    """The keys of one declared access: uniform | zipf:<theta> | sequential | input:<field>."""

    def __init__(self, keys: str, table_rows: int, field_index: int | None, zipf_cache: dict):
        self.kind, _, param = keys.partition(":")
        self.rows = max(int(table_rows), 1)
        self.field_index = field_index
        self.zipf = None
        if self.kind == "zipf":
            key = (self.rows, float(param))
            if key not in zipf_cache:
                zipf_cache[key] = ZipfKeys(self.rows, float(param))
            self.zipf = zipf_cache[key]

    def draw(self, rng: Rng, n: int, tuples, batch_id: int, sub: int) -> list[int]:
        rows = self.rows
        if self.kind == "input" and tuples and self.field_index is not None:
            f = self.field_index
            m = len(tuples)
            return [tuples[i % m][f] % rows for i in range(n)]
        if self.kind == "sequential":
            start = batch_id * n + sub * 7919
            return [(start + i) % rows for i in range(n)]
        if self.zipf is not None:
            return [self.zipf.draw(rng) for _ in range(n)]
        return [rng.below(rows) for _ in range(n)]
