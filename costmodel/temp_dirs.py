"""Temporary directories that a killed process leaves behind, and that hold Unix sockets.

SIGKILL runs no clean-up, so each directory made here names the process that made it (an
owner file); the next run removes those whose owner is gone. A directory that will hold Unix
sockets must also be short: the kernel takes a socket path of at most 107 bytes (103 on
macOS), and a long TMPDIR (a test runner's, a nested build directory) would otherwise end a
run with "AF_UNIX path too long". Such a directory goes to /tmp instead.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from costmodel.errors import UserError

OWNER_FILE = ".owner-pid"
UNIX_SOCKET_PATH_MAX = 103 if sys.platform == "darwin" else 107  # sun_path's bytes, less the NUL
SHORT_TEMP_DIR = "/tmp"  # where sockets go when the usual temporary directory is too long a path
_RANDOM_CHARS = 8  # what mkdtemp adds to a prefix


class TempDirError(UserError):
    """No temporary directory fits: the input (the environment) was fine, the run cannot go on."""

    exit_code = 1


def socket_dir_base(prefix: str, longest_socket_name: int) -> str:
    """Where to make a directory named `prefix*` for sockets named up to `longest_socket_name`
    characters: the usual temporary directory if every such path fits, else /tmp."""
    def fits(base: str) -> bool:
        longest = os.path.join(base, prefix + "x" * _RANDOM_CHARS, "x" * longest_socket_name)
        return len(os.fsencode(longest)) <= UNIX_SOCKET_PATH_MAX

    usual = tempfile.gettempdir()
    if fits(usual):
        return usual
    if fits(SHORT_TEMP_DIR) and os.access(SHORT_TEMP_DIR, os.W_OK | os.X_OK):
        return SHORT_TEMP_DIR
    raise TempDirError(f"the temporary directory {usual} is too long a path for a Unix socket "
                       f"(at most {UNIX_SOCKET_PATH_MAX} bytes with the socket's name) and "
                       f"{SHORT_TEMP_DIR} cannot be written: set TMPDIR to a shorter directory")


def owned_temp_dir(prefix: str, *, longest_socket_name: int = 0) -> Path:
    """A private temporary directory with the creating process's pid in it, so that a later
    run can tell one left by a process that was killed. `longest_socket_name` > 0: the
    directory will hold Unix sockets, and is made where their paths fit."""
    base = socket_dir_base(prefix, longest_socket_name) if longest_socket_name > 0 else None
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        (folder / OWNER_FILE).write_text(f"{os.getpid()}\n")
    except BaseException:  # (a Ctrl-C, a full disk): an ownerless directory is never swept
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def remove_owned_dir(folder: Path, attempts: int = 40, pause_s: float = 0.05) -> bool:
    """Remove a directory of `owned_temp_dir`: its contents first and its owner file last,
    again while a late writer puts files in (a partition process still writing its snapshot
    as the run ends on a signal). Where it cannot, the owner file stays, so the next run's
    sweep takes it: removed in one go (rmtree), the owner file went first, the late file
    stayed, and an ownerless directory was never swept. True where it is gone."""
    for attempt in range(attempts):
        if attempt:
            time.sleep(pause_s)
        try:
            for entry in [e for e in folder.iterdir() if e.name != OWNER_FILE]:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        entry.unlink()
            if any(e.name != OWNER_FILE for e in folder.iterdir()):
                continue  # still written to
        except FileNotFoundError:
            return True
        except OSError:
            return False
        with contextlib.suppress(OSError):
            (folder / OWNER_FILE).unlink()
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:  # a file came in meanwhile: own the directory again, go round
            with contextlib.suppress(OSError):
                (folder / OWNER_FILE).write_text(f"{os.getpid()}\n")
    return False


def sweep_abandoned_dirs(prefix: str) -> list[Path]:
    """Remove this user's temporary directories named `prefix*` whose owner process is gone,
    in the usual temporary directory and in /tmp (where socket directories may be). A
    directory without an owner file, of another user, or whose owner lives is left alone."""
    removed = []
    bases = dict.fromkeys((tempfile.gettempdir(), SHORT_TEMP_DIR))
    for folder in (f for base in bases for f in Path(base).glob(prefix + "*")):
        try:
            if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
                continue
            pid = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if pid > 0 and not pid_alive(pid):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def pid_alive(pid: int) -> bool:
    """Whether `pid` may still run: a directory or file it owns is left alone while it does."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process holds the pid now: not ours to judge
    return True
