"""What the engine's forkserver (multiprocessing's, which starts every partition process) does
with a connection to its socket that is not a request of this run's driver: drops it and goes
on serving. Imported by the forkserver first among its preload modules; anywhere else,
importing it does nothing.

Why: Python 3.11's forkserver reads any connection to its socket as a request (it does not
authenticate it; the socket lives in a 0700 directory, so only this user can reach it), and a
connection that sent junk (bytes without the two file descriptors a request carries, or
nothing at all) raised out of its loop: the forkserver died with a traceback on the
command's terminal, every partition process died with it (PR_SET_PDEATHSIG), and the run ended
"partition 0 process exited with status 255". Such a connection is now refused as the
forkserver refuses an aborted one (ECONNABORTED, which its loop skips), as the engine's own
sockets refuse a frame the run did not seal. A request carrying file descriptors is still
served as Python serves it (Python 3.14 authenticates it). Anything else that ends the
forkserver is said by the driver in one line (`multiproc.MultiProcessRuntime._check`); its
traceback only with ADVISOR_DEBUG set."""
from __future__ import annotations

import array
import errno
import os
import socket
import sys

REFUSED = errno.ECONNABORTED  # what the forkserver's loop skips (a client gone before accept)
MIN_FDS = 2  # a request's own pipe ends; the rest are inherited descriptors


def recvfds_or_refuse(sock: socket.socket, size: int) -> list[int]:
    """`multiprocessing.reduction.recvfds`, except that a connection that is not a request
    (nothing sent, no descriptors, a count byte that does not match them, fewer than a
    request's two) raises OSError(ECONNABORTED) and leaves no descriptor it carried open."""
    from multiprocessing import reduction

    item = array.array("i").itemsize
    msg, ancdata, flags, _addr = sock.recvmsg(1, socket.CMSG_SPACE(item * size))
    fds: list[int] = []
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(data[:len(data) - len(data) % item])
            fds.extend(received)
    if getattr(reduction, "ACKNOWLEDGE", False) and msg:
        try:
            sock.send(b"A")
        except OSError:
            pass
    well_formed = (len(msg) == 1 and len(ancdata) == 1 and not flags & getattr(socket, "MSG_CTRUNC", 0)
                   and len(fds) >= MIN_FDS and len(fds) % 256 == msg[0])
    if not well_formed:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        raise OSError(REFUSED, "not a request of this process's multiprocessing: dropped")
    return fds


def _in_the_forkserver() -> bool:
    """Whether multiprocessing's forkserver loop is on this thread's stack (it imports its
    preload modules from there)."""
    from multiprocessing import forkserver

    loop = getattr(getattr(forkserver, "main", None), "__code__", None)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is loop:
            return True
        frame = frame.f_back
    return False


def _quiet_excepthook(default):
    """The forkserver's own end is the driver's to say in one line; the processes it forks
    (partitions starting) keep Python's traceback."""
    me = os.getpid()

    def hook(kind, value, tb) -> None:
        if os.getpid() != me or os.environ.get("ADVISOR_DEBUG"):
            default(kind, value, tb)
    return hook


def _in_this_process_only(guarded, original):
    """`guarded` in this process, `original` in the processes it forks (a partition that
    receives a descriptor gets multiprocessing's own reading of it)."""
    me = os.getpid()

    def recvfds(sock, size):
        return (guarded if os.getpid() == me else original)(sock, size)
    return recvfds


def install() -> bool:
    """In the forkserver: refuse what is not a request, keep its own end off the terminal.
    True if installed (this is the forkserver)."""
    if not _in_the_forkserver():
        return False
    from multiprocessing import reduction

    reduction.recvfds = _in_this_process_only(recvfds_or_refuse, reduction.recvfds)
    sys.excepthook = _quiet_excepthook(sys.excepthook)
    return True


install()
