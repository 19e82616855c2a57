"""Publish a directory all at once: build it under a temporary name next to the target, then
rename. A reader never sees half a trace or half a statistics directory, and a failed job
leaves the previous output (if any) untouched."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from traces.errors import TraceError


def staging_dir(target: str | Path) -> Path:
    """A fresh temporary directory on the same filesystem as `target` (so rename is atomic)."""
    target = Path(target).absolute()
    check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))


def check_replaceable(target: Path, marker: str | None = None) -> None:
    """Refuse to overwrite anything that is not an empty directory or our own output."""
    if not target.exists():
        return
    if not target.is_dir():
        raise TraceError(f"{target}: exists and is not a directory")
    entries = [p.name for p in target.iterdir()]
    if not entries:
        return
    ours = {"_trace.json", "_stats.json"} if marker is None else {marker}
    if not ours & set(entries):
        raise TraceError(f"{target}: exists and is not a trace or statistics directory; "
                         "refusing to replace it (choose another --out or remove it)")


def publish_dir(staged: Path, target: str | Path, marker: str) -> Path:
    """Move `staged` to `target`, replacing a previous output of ours in one rename step."""
    target = Path(target).absolute()
    check_replaceable(target, marker)
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.rename(target, old / "previous")
    try:
        os.rename(staged, target)
    except BaseException:
        if old is not None:
            os.rename(old / "previous", target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target


def discard_dir(staged: Path) -> None:
    shutil.rmtree(staged, ignore_errors=True)
