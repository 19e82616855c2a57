"""The procedure code a spec may name (`code = "voter.vote"`): the engine's bundled SP bodies
(`engine_sim.workloads`), by name. Here, below the engine, so that the spec reader refuses any
other name as it reads the spec (`code = "os.system"` passed every command but `run`), and the
engine resolves by the same rule. A name is looked up in these tables, never imported: what a
spec names is not run, or even loaded, to find out whether it exists."""
from __future__ import annotations

import re

# module -> its procedures, as `engine_sim.workloads.MODULES` and each module's PROCEDURES hold them
BUNDLED_CODE: dict[str, tuple[str, ...]] = {
    "voter": ("vote", "update_leaderboard", "delete_contestant"),
    "naive_window": ("insert",),
}
# and the procedures named with their constants (`naive_window.maintain:100:10`)
PARAMETERISED_CODE: dict[str, str] = {"naive_window": "maintain:SIZE:SLIDE"}
_WINDOW_STEP = re.compile(r"maintain:([0-9]{1,18}):([0-9]{1,18})")


def window_step(func: str) -> tuple[int, int] | None:
    """SIZE and SLIDE of `maintain:SIZE:SLIDE` (whole numbers, 0 < SLIDE <= SIZE), else None."""
    match = _WINDOW_STEP.fullmatch(func)
    if match is None:
        return None
    size, slide = int(match.group(1)), int(match.group(2))
    return (size, slide) if 0 < slide <= size else None


def code_names(module: str) -> list[str]:
    """What `module` offers, as a message lists it."""
    return sorted((*BUNDLED_CODE.get(module, ()), *filter(None, [PARAMETERISED_CODE.get(module)])))


def code_problem(code: str) -> str:
    """Why the engine would not run `code` ("" when it would), in one line that lists what it runs."""
    module, _, func = code.partition(".")
    if module not in BUNDLED_CODE or not func:
        return (f"unknown procedure code {code!r} (bundled code: "
                f"{', '.join(sorted(f'{m}.*' for m in BUNDLED_CODE))})")
    if func in BUNDLED_CODE[module] or (module in PARAMETERISED_CODE and window_step(func) is not None):
        return ""
    return f"code {code!r} does not exist in {module} (it has: {', '.join(code_names(module))})"


def code_modules_problem(codes: list[str]) -> str:
    """Why the engine would not run a workload whose procedures name `codes` ("" when it would):
    a workload's code comes from one module (its tables' seeds and input come from it)."""
    modules = sorted({c.partition(".")[0] for c in codes})
    if len(modules) > 1:
        return f"procedures use code from several modules ({', '.join(modules)}); one per workload"
    return ""
