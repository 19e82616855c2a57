"""Real procedure code for bundled benchmarks, by the code names their specs declare
(`code = "voter.vote"`). A module may also seed its tables (`initial_rows`) and generate its
input (`generate_batch`); procedures are generators over `engine_sim.engine.procedures.Ctx`."""
from __future__ import annotations

import importlib

from engine_sim.engine.errors import EngineError

MODULES = {"voter": "engine_sim.workloads.voter", "naive_window": "engine_sim.workloads.naive_window"}


def _split(code: str) -> tuple[str, str]:
    module, _, func = code.partition(".")
    if module not in MODULES or not func:
        raise EngineError(f"unknown procedure code {code!r} (bundled code: "
                          f"{', '.join(sorted(f'{m}.*' for m in MODULES))})")
    return module, func


def resolve_code(code: str, procedure: str):
    module, func = _split(code)
    mod = importlib.import_module(MODULES[module])
    fn = getattr(mod, "PROCEDURES", {}).get(func)
    if fn is None:
        raise EngineError(f"procedure {procedure!r}: code {code!r} does not exist in {MODULES[module]} "
                          f"(it has: {', '.join(sorted(getattr(mod, 'PROCEDURES', {})))})")
    return fn


def workload_module(codes: list[str]):
    """The one code module a workload's procedures use (None when they run as declared)."""
    names = sorted({_split(c)[0] for c in codes})
    if not names:
        return None
    if len(names) > 1:
        raise EngineError(f"procedures use code from several modules ({', '.join(names)}); one per workload")
    return importlib.import_module(MODULES[names[0]])
