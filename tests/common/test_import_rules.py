"""Modules of this distribution import each other plainly: no `try/except ImportError`
around an import of our own packages (they are always installed together)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OURS = {"costmodel", "traces", "advisor", "engine_sim", "reports"}
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in IMPORT_ERRORS for k in kinds)


def _imports_ours(nodes: list[ast.stmt]) -> bool:
    for stmt in nodes:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] in OURS for a in node.names):
                return True
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in OURS:
                return True
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "__import__":
                return True
    return False


def guarded_imports(tree: ast.AST) -> list[int]:
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Try) and _imports_ours(node.body)
            and any(_catches_import_error(h) for h in node.handlers)]


def test_the_finder_sees_a_guard():
    code = ("try:\n    from engine_sim.engine import run_workload\nexcept ImportError:\n    pass\n"
            "try:\n    import pymetis\nexcept ImportError:\n    pass\n")
    assert guarded_imports(ast.parse(code)) == [1]


def test_no_module_of_ours_guards_an_import_of_ours():
    found = [f"{path.relative_to(ROOT)}:{line}"
             for package in sorted(OURS) for path in sorted((ROOT / package).rglob("*.py"))
             for line in guarded_imports(ast.parse(path.read_text()))]
    assert found == []
