"""The layers of DESIGN.md, read off the source: every import of ours points down or sideways,
module-level or inside a function alike, with no exemptions.

    data     costmodel: the cost model and the plain data every part reads (workload model,
             design, graph, granularity, lanes, spec reader and writer, errors, files)
    traces   the trace schema, the aggregation, synthetic traces
    search   the advisor's graph, search and pick (advisor/*, but for the top below); the
             simulator reaches it as a judge it is given, never an import
    engine   engine_sim: the engine and the simulator, over plain data only
    top      the public API (advisor/__init__, advisor.api and the advisor.recommendation it
             returns), the workflows and reports
             (reports/*), the CLI (advisor.cli, its entry points advisor.command and
             advisor.__main__)
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = ("advisor", "costmodel", "engine_sim", "reports", "traces")
ALLOWED = {
    "data": {"data"},
    "traces": {"data", "traces"},
    "search": {"data", "traces", "search"},
    "engine": {"data", "traces", "engine"},
    "top": {"data", "traces", "search", "engine", "top"},
}
CLI_ENTRY_POINTS = ("advisor.command", "advisor.__main__")  # the console script, python -m advisor
TOP_OF_ADVISOR = ("advisor", "advisor.api", "advisor.recommendation", *CLI_ENTRY_POINTS)


def layer(module: str) -> str:
    """The layer of a dotted module name of ours."""
    package = module.split(".")[0]
    if package == "costmodel":
        return "data"
    if package == "traces":
        return "traces"
    if package == "engine_sim":
        return "engine"
    if package == "reports" or module in TOP_OF_ADVISOR or module.startswith("advisor.cli"):
        return "top"
    return "search"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target(node: ast.ImportFrom, alias: ast.alias) -> str:
    """`from P import N` names module P.N when N is a module of P, else P."""
    candidate = f"{node.module}.{alias.name}"
    base = ROOT.joinpath(*candidate.split("."))
    return candidate if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file() else node.module


def imports(path: Path) -> list[tuple[str, int]]:
    """(dotted module of ours, line) for every import in one file, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out += [(_target(node, a), node.lineno) for a in node.names]
    return [(m, line) for m, line in out if m.split(".")[0] in OURS]


def sources() -> list[Path]:
    return [p for package in OURS for p in sorted((ROOT / package).rglob("*.py"))]


def test_every_import_points_down_or_sideways():
    bad = []
    for path in sources():
        own = layer(module_name(path))
        for target, line in imports(path):
            if layer(target) not in ALLOWED[own]:
                bad.append(f"{path.relative_to(ROOT)}:{line} ({own}) imports {target} ({layer(target)})")
    assert bad == []


def test_only_the_cli_entry_point_imports_the_cli():
    bad = [f"{p.relative_to(ROOT)}:{line}" for p in sources()
           if not module_name(p).startswith("advisor.cli") and module_name(p) not in CLI_ENTRY_POINTS
           for target, line in imports(p) if target.startswith("advisor.cli")]
    assert bad == []


@pytest.mark.parametrize("module, expected", [
    ("costmodel.design", "data"), ("traces.aggregate", "traces"), ("advisor.selection", "search"),
    ("advisor", "top"), ("advisor.api", "top"), ("advisor.recommendation", "top"), ("advisor.cli.app", "top"),
    ("engine_sim.sim", "engine"), ("reports.validation", "top"),
])
def test_layer_names_each_part(module, expected):
    assert layer(module) == expected


def test_the_finder_sees_lazy_imports_and_submodules(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import reports.report\nfrom advisor import metis\n"
                 "def f():\n    from engine_sim.sim import run_once\n")
    assert sorted(imports(f)) == [("advisor.metis", 2), ("engine_sim.sim", 4), ("reports.report", 1)]
    assert ALLOWED["search"] >= {layer("advisor.metis")} and "engine" not in ALLOWED["search"]
