"""METIS k-way partitioning through pymetis, on integer weights scaled from real ones."""
from __future__ import annotations

import contextlib
import os
import sys
import threading

import numpy as np
import pymetis

from advisor.sigterm import held as sigterm_held
from costmodel.graph import Adjacency

# Keep every weight sum well inside a signed 32-bit integer, whatever idx_t width the
# METIS inside pymetis was built with.
_MAX_TOTAL = 2**31 - 1
_MAX_WEIGHT = 2**20


def integer_weights(weights: np.ndarray, max_total: int = _MAX_TOTAL,
                    max_weight: int = _MAX_WEIGHT) -> np.ndarray:
    """Scale positive real weights to integers >= 1 keeping their ratios as far as possible.

    A real edge never gets weight 0 (METIS would treat it as absent), huge weights do not
    overflow, and tiny ones are not all rounded to the same value when they differ.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.size == 0:
        return np.zeros(0, dtype=np.int64)
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    top = w.max()
    if top <= 0:
        return np.ones(w.size, dtype=np.int64)
    rel = w / top  # in [0, 1] first: tiny weights must not overflow the scale
    scale = min(max_weight, max_total / max(rel.sum(), 1.0))
    return np.maximum(1, np.rint(rel * scale)).astype(np.int64)


def vertex_weights(load: np.ndarray, max_total: int = _MAX_TOTAL) -> np.ndarray | None:
    """Vertex weights from processing load; zero-load nodes (state) keep weight 0."""
    load = np.asarray(load, dtype=np.float64)
    if load.size == 0 or load.max() <= 0:
        return None
    rel = load / load.max()  # in [0, 1] first: tiny loads must not overflow the scale
    out = np.rint(rel * min(_MAX_WEIGHT, max_total / rel.sum())).astype(np.int64)
    out[(load > 0) & (out == 0)] = 1
    return out


def kway(adjacency: Adjacency, vweights: np.ndarray | None, nparts: int, *,
         ufactor: int = 30, seed: int = 0, tpwgts: np.ndarray | None = None) -> np.ndarray:
    """One METIS k-way call on a symmetric CSR matrix with positive integer data (a
    `costmodel.graph.Adjacency` or a scipy.sparse CSR matrix: shape, indptr, indices, data)."""
    n = adjacency.shape[0]
    if nparts <= 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    if n <= nparts:
        return np.arange(n, dtype=np.int64)
    options = pymetis.Options(ufactor=int(ufactor), seed=int(seed))
    csr = pymetis.CSRAdjacency(adj_starts=adjacency.indptr.astype(np.int64),
                               adjacent=adjacency.indices.astype(np.int64))
    eweights = adjacency.data.astype(np.int64) if adjacency.data.size else None
    with _quiet_c_stdout(), sigterm_held():  # METIS traps SIGTERM while it runs: `advisor.sigterm`
        _, parts = pymetis.part_graph(
            nparts, adjacency=csr, vweights=vweights, eweights=eweights,
            tpwgts=None if tpwgts is None else [float(x) for x in tpwgts],
            recursive=False, options=options,
        )
    return np.frombuffer(parts, dtype=np.int64).copy() if not isinstance(parts, np.ndarray) \
        else parts.astype(np.int64)


_quiet_lock = threading.Lock()
_quiet_depth = 0  # calls inside `_quiet_c_stdout`, across threads
_quiet_saved: int | None = None  # the real C stdout, kept while any is


@contextlib.contextmanager
def _quiet_c_stdout():
    """METIS prints notes such as '***Cannot bisect a graph with 0 vertices' on C stdout
    when a graph has fewer weighted vertices than parts; the result is still valid, so the
    note is dropped rather than shown to users.

    File descriptor 1 is the process's, so threads that partition at once (two
    `advisor.recommend` calls in a notebook or a server) share one redirection: the first in
    saves the real stdout, the last out puts it back. Each saving its own, the second saved
    /dev/null, and putting it back last left the process's stdout there for good."""
    global _quiet_depth, _quiet_saved
    try:
        fd = sys.__stdout__.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    with _quiet_lock:
        if _quiet_depth == 0:
            sys.__stdout__.flush()
            saved = os.dup(fd)
            try:
                with open(os.devnull, "w") as devnull:
                    os.dup2(devnull.fileno(), fd)
            except BaseException:
                os.close(saved)
                raise
            _quiet_saved = saved
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0 and _quiet_saved is not None:
                os.dup2(_quiet_saved, fd)
                os.close(_quiet_saved)
                _quiet_saved = None
