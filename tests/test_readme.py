"""The README is one page for a newcomer (the reference lives in docs/), and its two commands
are the ones CI and users run."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commands():
    text = (ROOT / "README.md").read_text()
    first_section = text.split("## What it does")[0]
    return re.findall(r"^    (python3 -m venv .+)$", first_section, flags=re.M)


def test_readme_first_section_gives_exactly_two_commands():
    found = commands()
    assert len(found) == 2
    main, tests = found
    assert "pip install -e ." in main and "advisor " in main
    assert "pip install -e '.[test]'" in tests and "pytest" in tests


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "README.md" in ci and "pytest" in ci
    # .ci/run extracts the command with this pattern; it must find the README's test line
    pattern = re.compile(r"^    (python3 -m venv \.venv .*pytest.*)$", re.M)
    assert pattern.search((ROOT / "README.md").read_text()).group(1) == commands()[1]


# one page: a pitch, the two commands, two quick starts and links; the reference is in docs/
README_MAX_LINES = 150


def test_readme_stays_one_page_and_links_every_docs_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert pages and [p for p in pages if f"](docs/{p})" not in text] == []


def _python_from_debian():
    import importlib.util

    spec = importlib.util.spec_from_file_location("python_from_debian", ROOT / ".ci" / "python_from_debian.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ci_finds_a_pythons_upstream_tarball_in_a_debian_source_index():
    """CI builds the python3.13 a machine lacks from Debian's source package: the tarball and
    its checksum come from the suite's source index (only the upstream .orig.tar.xz, only the
    package asked for)."""
    index = ("Package: python3.13-defaults\nDirectory: pool/main/p/python3.13-defaults\nFiles:\n"
             " 0123 10 python3.13-defaults_3.13.orig.tar.xz\n\n"
             "Package: python3.13\nVersion: 3.13.5-2\nDirectory: pool/main/p/python3.13\nFiles:\n"
             " aaaa 4298 python3.13_3.13.5-2.dsc\n dbaa 22856016 python3.13_3.13.5.orig.tar.xz\n"
             " 3c05 299640 python3.13_3.13.5-2.debian.tar.xz\n")
    find = _python_from_debian().tarball_in
    assert find(index, "python3.13") == ("pool/main/p/python3.13/python3.13_3.13.5.orig.tar.xz", "dbaa")
    assert find(index, "python3.12") is None
