"""The layers of DESIGN.md, read off the source: imports point one way.

costmodel imports nothing of the project; traces only costmodel; engine_sim never reports; the
advisor outside its CLI reaches engine_sim and reports only lazily (inside a function, for
notebook `.plot()`-style helpers), so importing the advisor never loads the engine or the
report stack."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = {"advisor", "costmodel", "engine_sim", "reports", "traces"}


def imports(path: Path) -> list[tuple[str, bool]]:
    """(top package of each import of ours, whether it is at module level) in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    for node in tree.body:  # `if TYPE_CHECKING:` / try blocks at module level count as top level
        if isinstance(node, (ast.If, ast.Try)):
            top_level |= {id(n) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        out += [(n.split(".")[0], id(node) in top_level) for n in names if n.split(".")[0] in OURS]
    return out


def modules(package: str, exclude: str | None = None) -> list[Path]:
    found = sorted((ROOT / package).rglob("*.py"))
    return [p for p in found if exclude is None or exclude not in p.relative_to(ROOT).parts]


@pytest.mark.parametrize("package, allowed", [
    ("costmodel", set()), ("traces", {"costmodel", "traces"}),
])
def test_lower_layers_import_only_what_is_below_them(package, allowed):
    allowed = allowed | {package}
    bad = [(p.relative_to(ROOT).as_posix(), pkg) for p in modules(package)
           for pkg, _ in imports(p) if pkg not in allowed]
    assert not bad, bad


def test_the_engine_and_simulator_never_import_reports():
    bad = [p.relative_to(ROOT).as_posix() for p in modules("engine_sim")
           if any(pkg == "reports" for pkg, _ in imports(p))]
    assert not bad, bad


def test_the_advisor_outside_its_cli_reaches_engine_and_reports_only_lazily():
    bad = [(p.relative_to(ROOT).as_posix(), pkg) for p in modules("advisor", exclude="cli")
           for pkg, top in imports(p) if top and pkg in ("engine_sim", "reports")]
    assert not bad, bad
    lazy = [p for p in modules("advisor", exclude="cli")
            if any(pkg in ("engine_sim", "reports") and not top for pkg, top in imports(p))]
    assert lazy, "the finder must see the lazy imports the advisor does have"


def test_the_finder_tells_top_level_from_lazy(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import reports.x\nfrom costmodel import y\ndef f():\n    from engine_sim import z\n")
    assert sorted(imports(f)) == [("costmodel", True), ("engine_sim", False), ("reports", True)]
