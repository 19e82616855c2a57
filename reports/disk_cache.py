"""Answers kept on disk between runs: a report's picks (`reports.pick_cache`) and its
simulations (`reports.predict`), so that the next report of the same workload (another option,
the notebook's next cell, the demo run again) reads them instead of working them out again.

Both are deterministic: the same request (the code of the packages that answer it, the
workload's content and every setting, hashed into the entry's name by the caller) always
gives the same answer, and a changed line of that code is another request.

The directory: `ADVISOR_CACHE_DIR`, else `$XDG_CACHE_HOME/sstore-advisor` (default
`~/.cache/sstore-advisor`), one folder a kind of answer; `ADVISOR_CACHE_DIR=off` turns it off.
It must be this user's alone (made with mode 0700): a folder others can write into is not
used, since what is read from there would be whatever they put in it. The cache is
best-effort: an entry that cannot be read is a miss, and one that cannot be written (a full or
read-only disk) is not kept, silently. Beyond MAX_ENTRIES a kind, the oldest tenth goes.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from costmodel.files import atomic_write_bytes

CACHE_ENV = "ADVISOR_CACHE_DIR"
OFF = ("off", "0", "no", "none", "")
MAX_ENTRIES = 2_000  # a kind: a few KB each
MAX_ENTRY_BYTES = 16 * 2**20


def cache_dir() -> Path | None:
    """The cache's directory, or None where it is turned off."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            home = Path.home()
        except (RuntimeError, KeyError, OSError):  # no home directory to be found: no cache
            return None
        if not home.is_dir():  # (a HOME that does not exist is not made, from / down, to hold one)
            return None
        base = str(home / ".cache")
    return Path(base) / "sstore-advisor"


def read_entry(kind: str, key: str | None) -> bytes | None:
    """The bytes kept for `key`, or None (a miss, no key, the cache off or not ours)."""
    folder = _own_dir(kind, create=False)
    if key is None or folder is None:
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(folder / key, flags)
    except OSError:
        return None
    try:  # a regular file only: an entry linked to /dev/zero was read until the process was killed
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            data = fh.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= MAX_ENTRY_BYTES else None


def write_entry(kind: str, key: str | None, data: bytes) -> None:
    """Keep `data` for `key` (renamed into place: a reader never sees half of it)."""
    folder = _own_dir(kind, create=True)
    if key is None or folder is None or len(data) > MAX_ENTRY_BYTES:
        return
    try:
        atomic_write_bytes(folder / key, data, fsync=False)
        _prune(folder)
    except (OSError, ValueError):  # (a full disk is a UserError, a ValueError): not kept
        pass


def _own_dir(kind: str, create: bool) -> Path | None:
    """The kind's folder if it and the cache's directory are this user's alone (the
    directory is checked before anything is made in it)."""
    root = cache_dir()
    if root is None:
        return None
    folder = root / kind
    try:
        for path in (root, folder):
            if create:
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _private(path):
                return None
    except OSError:
        return None
    return folder


def _private(path: Path) -> bool:
    st = os.lstat(path)
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _prune(folder: Path) -> None:
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if len(entries) <= MAX_ENTRIES:
        return

    def age(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    for path in sorted(entries, key=age)[: len(entries) - MAX_ENTRIES * 9 // 10]:
        try:
            path.unlink()
        except OSError:
            pass
