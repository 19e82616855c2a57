"""Real procedure code for bundled benchmarks, by the code names their specs declare
(`code = "voter.vote"`). A module may also seed its tables (`initial_rows`) and generate its
input (`generate_batch`); procedures are generators over `engine_sim.engine.procedures.Ctx`."""
from __future__ import annotations

import importlib

from costmodel.procedure_code import code_modules_problem, code_problem
from engine_sim.engine.errors import EngineError

# the code names' modules; which names each offers is `costmodel.procedure_code`'s (the spec
# reader's rule), checked before anything is imported
MODULES = {"voter": "engine_sim.workloads.voter", "naive_window": "engine_sim.workloads.naive_window"}


def resolve_code(code: str, procedure: str):
    """The body `code` names, after the spec reader's rule (an unknown name is never imported)."""
    problem = code_problem(code)
    if problem:
        raise EngineError(f"procedure {procedure!r}: {problem}")
    module, _, func = code.partition(".")
    return importlib.import_module(MODULES[module]).PROCEDURES.get(func)


def workload_module(codes: list[str]):
    """The one code module a workload's procedures use (None when they run as declared)."""
    problem = code_modules_problem(codes) or next(filter(None, map(code_problem, codes)), "")
    if problem:
        raise EngineError(problem)
    return importlib.import_module(MODULES[codes[0].partition(".")[0]]) if codes else None
