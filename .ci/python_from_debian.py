"""Build a CPython that this machine lacks from a Debian-format source package of it.

Why: CI machines here have Python 3.11 and reach only package registries (PyPI, Debian's
archive, npm). PyPI ships no interpreter and the portable builds on npm download from GitHub
when installed, but Debian's archive holds the upstream source of the python3.X it packages
(trixie: 3.13), checksummed in the suite's source index. So: read the index, fetch the
`.orig.tar.xz`, check its MD5, configure and make it into a fresh prefix. Debian no longer
packages 3.12; Ubuntu's archive (noble) does, in the same format, so it is asked next where
the machine reaches it (stop 49 found this one does).

    python3 .ci/python_from_debian.py 3.13 PREFIX   # prints PREFIX/bin/python3.13
    python3 .ci/python_from_debian.py 3.12 PREFIX   # from Ubuntu noble's source package

Exit 0 with the interpreter's path on stdout; any failure (no network, no compiler, a suite
without that version) is one line on stderr and exit 1, so CI can say so and skip the run.
Standard library only: it runs under the machine's own Python before anything is installed.
"""
from __future__ import annotations

import hashlib
import io
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

# (archive, suites): the first suite whose source index has the version wins, Debian's first
ARCHIVES = (
    (os.environ.get("CI_DEBIAN_MIRROR", "http://deb.debian.org/debian"), ("trixie", "forky", "sid")),
    (os.environ.get("CI_UBUNTU_MIRROR", "http://archive.ubuntu.com/ubuntu"), ("noble-updates", "noble")),
)
TIMEOUT_S = 120


class BuildError(Exception):
    """Why the interpreter was not built (one line; CI says it and skips that version)."""


def _fetch(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
            return r.read()
    except OSError as exc:
        raise BuildError(f"cannot fetch {url}: {exc}") from None


def tarball_in(index: str, package: str) -> tuple[str, str] | None:
    """(path in the archive, MD5) of `package`'s upstream tarball in a suite's source index
    (Debian's Sources format: one stanza per source package, its `Files:` lines "md5 size
    name"), or None when the suite does not have it."""
    for stanza in index.split("\n\n"):
        fields = stanza.split("\n")
        if f"Package: {package}" not in fields:
            continue
        directory = next((f.split(": ", 1)[1] for f in fields if f.startswith("Directory: ")), None)
        files = [f.split() for f in fields if f.startswith(" ") and f.strip().endswith(".orig.tar.xz")]
        if directory and files and len(files[0]) == 3:
            md5, _size, name = files[0]
            return f"{directory}/{name}", md5
    return None


def source_of(version: str) -> tuple[str, str]:
    """(URL, MD5) of the upstream tarball of the python<version> source package, from the
    first archive and suite that has it (an archive this machine cannot reach is passed over)."""
    package = f"python{version}"
    unreachable = []
    for mirror, suites in ARCHIVES:
        for suite in suites:
            try:
                index = lzma.decompress(_fetch(f"{mirror}/dists/{suite}/main/source/Sources.xz"))
            except (BuildError, lzma.LZMAError) as exc:
                unreachable.append(str(exc))
                break  # the next archive
            found = tarball_in(index.decode("utf-8", "replace"), package)
            if found is not None:
                return f"{mirror}/{found[0]}", found[1]
    where = "; ".join(f"{m} ({', '.join(s)})" for m, s in ARCHIVES)
    raise BuildError(f"no {package} source package in {where}" + (f" ({unreachable[0]})" if unreachable else ""))


def build(version: str, prefix: Path) -> Path:
    url, md5 = source_of(version)
    data = _fetch(url)
    if hashlib.md5(data).hexdigest() != md5:
        raise BuildError(f"{url}: MD5 does not match the source index")
    work = Path(tempfile.mkdtemp(prefix=f"python{version}-src-"))
    try:
        return _make(data, work, version, prefix)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _make(data: bytes, work: Path, version: str, prefix: Path) -> Path:
    """Unpack the checked tarball in `work`, configure, make and install it into `prefix`."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:
        try:
            tar.extractall(work, filter="data")
        except TypeError:  # a 3.11 before 3.11.4 has no filters; the tarball's MD5 was checked
            tar.extractall(work)
    src = next(work.iterdir())
    jobs = str(len(os.sched_getaffinity(0)))
    for step in (["./configure", "--quiet", f"--prefix={prefix}"], ["make", "-s", "-j", jobs],
                 ["make", "-s", "install"]):
        done = subprocess.run(step, cwd=src, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise BuildError(f"{' '.join(step[:2])} failed: {last}")
    python = prefix / "bin" / f"python{version}"
    if subprocess.run([python, "-c", "import ssl, ctypes, sqlite3, lzma, bz2, zlib"],
                      capture_output=True).returncode != 0:
        raise BuildError(f"python{version} was built without a module the install needs "
                         "(ssl, ctypes, sqlite3, lzma, bz2 or zlib: their -dev packages are missing)")
    return python


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python_from_debian.py VERSION PREFIX", file=sys.stderr)
        return 2
    try:
        print(build(argv[1], Path(argv[2]).resolve()))
    except BuildError as exc:
        print(f"python{argv[1]} not built: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
