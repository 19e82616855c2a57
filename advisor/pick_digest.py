"""What a recommendation answered, as a digest kept in its design's provenance, so a later
command can tell that searching again would give the very same design.

The pick is deterministic: the same code, input, cluster, weights, seed, calibration and
options give the same design. `request_digest` hashes all of them (the code as the text of
the packages the pick runs: a changed line is another request); `placement_digest` hashes
where the design puts everything, so an edited file no longer passes as the pick. A report
of a design `recommend` wrote then skips the search it would only repeat
(`reports.compared.compared_designs`). Where a part of the request has no stable identity (an
input with no digest, a caller's own search or simulator, a migration) there is no digest and
nothing is skipped.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from advisor.priced_weights import as_calibration
from costmodel import Weights
from costmodel.calibration import Calibration
from costmodel.design_file import placement_digest  # (re-exported: the pick's digests are here)
from costmodel.sim_params import SimParams
from costmodel.object_memo import ObjectMemo

# the packages a pick runs (the search, the cost model, the simulator)
PICK_PACKAGES = ("advisor", "costmodel", "engine_sim")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of every Python file of the packages a pick runs (about a hundred small files:
    a few milliseconds, once per process)."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    read = 0
    for package in PICK_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
            read += 1
    return digest.hexdigest() if read else ""  # no sources to read (a frozen install): no identity


def _calibration_identity(calibration) -> object:
    if calibration is None:
        return "reference"
    if isinstance(calibration, SimParams):
        return {"params": calibration.to_dict()}
    if isinstance(calibration, Calibration):
        return {**calibration.to_dict(), "target": calibration.target}
    return None


def request_digest(*, input_sha256: str, spec_sha256: str, machines: int, partitions_per_machine: int,
                   weights: Weights, seed: int, calibration, objective: str, replicate: bool,
                   data_parallel: bool) -> str | None:
    """The digest of one `recommend` request; None where the input or the calibration has no
    stable identity."""
    calibration_id = _calibration_identity(calibration)
    code = code_fingerprint()
    if not input_sha256 or calibration_id is None or not code:
        return None
    request = {"code": code, "input": input_sha256, "spec": spec_sha256,
               "cluster": [machines, partitions_per_machine], "weights": [repr(float(x)) for x in (weights.alpha, weights.beta, weights.gamma)],
               "seed": seed, "calibration": calibration_id, "objective": objective,
               "replicate": bool(replicate), "data_parallel": bool(data_parallel)}
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()


def pick_request(graph, spec, weights: Weights, seed: int, calibration=None, objective: str = "throughput",
                 replicate: bool = False, data_parallel: bool = False) -> str | None:
    """`request_digest` of `recommend` on `graph` (on its cluster) with `spec` to simulate: the
    one place both `recommend` and a report that would repeat it name the request."""
    if calibration is not None and not isinstance(calibration, (SimParams, Calibration)):
        calibration = as_calibration(calibration)  # a path, read as `recommend` reads it
    return request_digest(input_sha256=graph.source_sha256, spec_sha256=getattr(spec, "sha256", "") or "",
                          machines=graph.cost.machines, partitions_per_machine=graph.cost.partitions_per_machine,
                          weights=weights, seed=seed, calibration=calibration, objective=objective,
                          replicate=replicate, data_parallel=data_parallel)


def workload_digest(workload) -> str:
    """The workload's content as a digest: where it was read from, and its description, left
    out (a changed copy of a spec keeps its file's `sha256`, so that field cannot say it).
    Every field, as `content_digest` feeds it: the workload's `repr` is one line of counts,
    which two different workloads share."""
    return DIGESTS.get(workload, lambda: content_digest(replace(workload, source="", sha256="", description="")))


DIGESTS = ObjectMemo(64)  # `workload_digest` by workload (a report digests the same one for every run it keeps)


def content_digest(value) -> str:
    """A digest of a record's content (a graph, its cost arrays): every public dataclass field,
    arrays by type, shape and bytes, floats exactly. Why not `repr`: numpy elides the middle of
    a long array there, so two different graphs could print alike."""
    digest = hashlib.sha256()
    _feed(digest, value)
    return digest.hexdigest()


def _feed(digest, value) -> None:
    import dataclasses

    import numpy as np

    if isinstance(value, np.ndarray):
        digest.update(f"array {value.dtype.str} {value.shape}|".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(f"{type(value).__qualname__}(".encode())
        for f in dataclasses.fields(value):
            if not f.name.startswith("_"):
                digest.update(f"{f.name}=".encode())
                _feed(digest, getattr(value, f.name))
        digest.update(b")")
    elif isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__}[{len(value)}](".encode())
        for item in value:
            _feed(digest, item)
        digest.update(b")")
    elif isinstance(value, dict):
        digest.update(f"dict[{len(value)}](".encode())
        for key in sorted(value, key=repr):
            _feed(digest, key)
            _feed(digest, value[key])
        digest.update(b")")
    else:
        digest.update(f"{type(value).__name__}:{value!r}|".encode())


def is_the_pick(design, request: str | None) -> bool:
    """Whether `design` is, unedited, what a `recommend` answering `request` gives."""
    made = design.provenance or {}
    return (request is not None and made.get("request_sha256") == request
            and made.get("placement_sha256") == placement_digest(design))
