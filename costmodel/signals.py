"""Signals held back for a block that must run whole: a clean-up (a run's temporary
directories removed, its processes stopped) cut short by a Ctrl-C or SIGTERM left the rest
behind, and a child process started but not yet recorded could not be stopped."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def deferred() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP wait until the block ends, then act as they would have. Only
    the main thread receives signals (elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: caught.append(signum)) for sig in HELD}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in caught:
            signal.raise_signal(sig)
