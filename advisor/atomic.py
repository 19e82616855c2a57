"""Write files so that a reader never sees half of one: temporary file, then rename."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from advisor.errors import AdvisorError


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same directory, then rename.

    A path that cannot be written (no such directory, no permission, a full disk) is one
    AdvisorError line, and the temporary file is removed."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; give what open() would give
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _remove(tmp)
        raise AdvisorError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        _remove(tmp)
        raise
    return path


def _remove(tmp: str | None) -> None:
    if tmp is not None and os.path.exists(tmp):
        os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_user_text(path: str | Path, error: type[Exception]) -> str:
    """Read a file a user named; any problem becomes one `error` line naming the file."""
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a directory, not a file")
    try:
        return path.read_text()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read: {exc}") from None
