"""The README is one page for a newcomer (the reference lives in docs/), and its two commands
are the ones CI and users run."""
import re
from pathlib import Path

import pytest

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


def test_ci_takes_a_python_debian_lacks_from_the_next_archive():
    """Debian no longer packages python3.12; CI asks Ubuntu's archive next (the same source
    format). An archive out of reach is passed over; a version nobody has is one line."""
    import lzma

    b = _python_from_debian()
    debian, ubuntu = b.ARCHIVES[0][0], b.ARCHIVES[1][0]
    stanza = ("Package: python3.12\nDirectory: pool/main/p/python3.12\nFiles:\n"
              " 8def 20625068 python3.12_3.12.3.orig.tar.xz\n")
    asked = []

    def fetch(url):
        asked.append(url)
        if url.startswith(debian):
            return lzma.compress(b"Package: python3.13\nDirectory: pool/main/p/python3.13\nFiles:\n"
                                 b" dbaa 1 python3.13_3.13.5.orig.tar.xz\n")
        return lzma.compress(stanza.encode())

    original = b._fetch
    try:
        b._fetch = fetch
        assert b.source_of("3.12") == (f"{ubuntu}/pool/main/p/python3.12/python3.12_3.12.3.orig.tar.xz", "8def")
        assert b.source_of("3.13")[0].startswith(debian)

        def debian_unreachable(url):
            if url.startswith(debian):
                raise b.BuildError(f"cannot fetch {url}: refused")
            return fetch(url)

        b._fetch = debian_unreachable
        assert b.source_of("3.12")[0].startswith(ubuntu)
        with pytest.raises(b.BuildError, match=r"^no python3.99 source package in .*\(cannot fetch .*refused\)$"):
            b.source_of("3.99")
    finally:
        b._fetch = original
