"""What the tests of writers and readers at once share: whether a folder's parent is locked
now, as another writer (a process of its own, or one more open of it) would find it."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path


def parent_is_locked(folder: str | Path) -> bool:
    """Whether a writer could not take `folder`'s parent exclusively now (a publish waits)."""
    fd = os.open(Path(folder).parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # (and with it any lock it took)
