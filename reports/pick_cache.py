"""A report's picks kept on disk (`reports.disk_cache`), so that asking the same question again
costs a file read, not a search.

A report asks `recommend` for the design of every machine count of its scaling chart and of
every changed dataflow it suggests (six picks or more, most of its time), and for a pick by
cost at every point of its sensitivity sweep (18). A pick is deterministic: the same code of
the packages it runs, workload (or graph) content, cluster, weights, seed, calibration,
objective and simulator give the same design and prediction (`advisor.pick_digest` names such
a request). Each is kept as a small JSON file named by that digest.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Callable

from costmodel import Weights
from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from costmodel.workload import Workload
from reports.disk_cache import read_entry, write_entry

KIND = "picks"
FORMAT = 1


@dataclass(frozen=True)
class CachedPick:
    """What a report takes from a pick: the design, and `Recommendation.prediction`."""

    design: Design
    prediction: float | None


def pick_key(workload: Workload, weights: Weights | None, seed: int, calibration, objective: str,
             simulator: str) -> str | None:
    """The request's digest (None: the calibration has no stable identity, or there is no code
    to hash); `simulator` names what judges ("default", or the report's caching simulator,
    which answers the same but leaves other marks in the design's provenance)."""
    from advisor.pick_digest import request_digest, workload_digest
    from advisor.priced_weights import as_calibration
    from costmodel.calibration import Calibration
    from costmodel.sim_params import SimParams

    if weights is None:
        return None  # the default weights are priced inside the pick: not a request to name here
    if calibration is not None and not isinstance(calibration, (SimParams, Calibration)):
        calibration = as_calibration(calibration)
    digest = workload_digest(workload)
    request = request_digest(input_sha256=digest, spec_sha256=digest, machines=workload.cluster.machines,
                             partitions_per_machine=workload.cluster.partitions_per_machine, weights=weights,
                             seed=seed, calibration=calibration, objective=objective, replicate=False,
                             data_parallel=False)
    return None if request is None else hashlib.sha256(f"{request}:{simulator}".encode()).hexdigest()


def recommend_cached(workload: Workload, weights: Weights | None, seed: int = 0, calibration=None,
                     objective: str = "throughput", simulator=None, simulator_name: str = "default") -> CachedPick:
    """`recommend(workload, ...)` on the workload's own cluster, as a report asks it (no
    baselines), read from the cache when it was asked before."""
    from advisor.api import recommend
    from advisor.sources import load_graph

    key = pick_key(workload, weights, seed, calibration, objective, simulator_name)
    kept = read_pick(key, lambda: load_graph(workload))
    if kept is not None:
        return kept
    rec = recommend(workload, weights=weights, seed=seed, baselines=False, objective=objective,
                    simulator=simulator, calibration=calibration)
    pick = CachedPick(rec.design, rec.prediction)
    write_pick(key, pick)
    return pick


def recommend_by_cost_cached(graph: WorkloadGraph, weights: Weights, seed: int = 0) -> Design:
    """`recommend(graph, weights=weights, seed=seed, baselines=False).design` (a graph alone: the
    pick by cost, as the sensitivity sweep asks it at every point), read from the cache when
    it was asked before. Named by the graph's whole content, as no file names it."""
    from advisor.api import recommend
    from advisor.pick_digest import code_fingerprint, content_digest

    code = code_fingerprint()
    key = None if not code else hashlib.sha256(repr(
        (code, "graph", content_digest(graph), [repr(float(x)) for x in (weights.alpha, weights.beta, weights.gamma)],
         seed)).encode()).hexdigest()
    kept = read_pick(key, lambda: graph)
    if kept is not None:
        return kept.design
    design = recommend(graph, weights=weights, seed=seed, baselines=False).design
    write_pick(key, CachedPick(design, None))
    return design


def read_pick(key: str | None, graph_of: Callable[[], WorkloadGraph]) -> CachedPick | None:
    """The pick kept for `key`, its cost scored again on the graph it was picked on
    (`graph_of()`: the file keeps 12 digits); None on a miss, or where the cache is off or not
    this user's own."""
    data = read_entry(KIND, key)
    if data is None:
        return None
    try:
        kept = json.loads(data)
        if kept.get("format") != FORMAT or kept.get("key") != key:
            return None
        design = Design.from_dict(kept["design"], f"{KIND}/{key}")
        prediction = kept["prediction"]
        if prediction is not None and (isinstance(prediction, bool) or not isinstance(prediction, (int, float))):
            return None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # half-copied or not ours: searched again
    design.cost = design.score(graph_of(), design.weights)
    return CachedPick(design, None if prediction is None else float(prediction))


def write_pick(key: str | None, pick: CachedPick) -> None:
    """Keep `pick` for `key`."""
    if key is None:
        return
    write_entry(KIND, key, json.dumps({"format": FORMAT, "key": key, "design": pick.design.to_dict(),
                                       "prediction": pick.prediction}).encode())
