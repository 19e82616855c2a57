"""Reading the files a user names (a spec, a design, a calibration, a validation file): one
line naming the file for any problem, a size limit (an endless input such as /dev/zero is
refused, not read until memory runs out), a pipe read once however often a command asks for
it, and JSON whose objects give each key once.

Why a module of its own: `costmodel.files` is the one module that writes files; this is the
one that reads what users give.
"""
from __future__ import annotations

import io
import json
import stat
from pathlib import Path

from costmodel.errors import UserError
from costmodel.files import as_path


MAX_INPUT_BYTES = 256 * 2**20  # a spec, design or calibration of ours is kilobytes: /dev/zero is not one


def read_user_text(path: str | Path, error: type[Exception] = UserError) -> str:
    """Read a UTF-8 file a user named; any problem becomes one `error` line naming the file.
    At most MAX_INPUT_BYTES are read: an endless input (/dev/zero) is refused, not read until
    memory runs out."""
    path = as_path(path, error)
    if path.is_dir():
        raise error(f"{path}: is a directory, not a file")
    piped = _pipe_key(path)  # a pipe (`<(...)`, a FIFO) gives its bytes once
    if piped is not None and piped in _PIPED:  # (a command may read its design twice: what it holds, then the file)
        data = _PIPED[piped]
    else:
        data = _read_bytes(path, error)
        if piped is not None:
            _PIPED[piped] = data
    if len(data) > MAX_INPUT_BYTES:
        raise error(f"{path}: over {MAX_INPUT_BYTES // 2**20} MB, not a file this tool reads")
    try:  # as `read_text` reads it: universal newlines
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    except UnicodeDecodeError as exc:
        raise error(f"{path}: cannot read: {exc}") from None


_PIPED: dict[tuple, bytes] = {}  # what each pipe this process read gave: (name, device, inode) -> bytes


def _pipe_key(path: Path) -> tuple | None:
    """(name, device, inode) of a pipe, None for anything else (that very pipe: another one
    at the same name later, `/dev/fd/63` again, is read afresh)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_dev, st.st_ino) if stat.S_ISFIFO(st.st_mode) else None


def _read_bytes(path: Path, error: type[Exception]) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(MAX_INPUT_BYTES + 1)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc}") from None


class _RepeatedKey(ValueError):
    """A JSON object gave one key twice (`read_user_json` turns it into its one line)."""


def _keys_given_once(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


def read_user_json(path: str | Path, error: type[Exception] = UserError):
    """A JSON file a user named, parsed; unreadable or invalid JSON is one `error` line."""
    path = as_path(path, error)
    text = read_user_text(path, error)
    try:
        return json.loads(text, object_pairs_hook=_keys_given_once)
    except _RepeatedKey as exc:  # a hand edit that left two values: which one was meant is not ours to guess
        raise error(f"{path}: key {exc.args[0]!r} is given twice in one object") from None
    except ValueError as exc:  # JSONDecodeError, and an integer of more digits than Python converts
        raise error(f"{path}: not valid JSON: {exc}") from None
    except RecursionError:  # arrays or objects nested thousands deep: no format of ours is
        raise error(f"{path}: JSON nested too deeply to read") from None


# -- directories -------------------------------------------------------------------------------
