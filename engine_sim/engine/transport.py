"""Messages between processes: Unix stream sockets, one connection per (sender, receiver)
pair (so each pair is FIFO), non-blocking with user-space buffers (no process ever blocks on
a full socket, so two busy partitions cannot deadlock writing to each other), no locks shared
between processes (so a killed process cannot wedge the others). Messages to one receiver are
bundled per loop turn and pickled once, with the sender's Lamport clock and recovery epoch,
and sealed with the run's secret (sealing.py): a connection whose frame does not check is
closed unread, so only the run's own processes are heard. A frame whose messages carry stream
batches is padded with the bytes the spec declares for them (payload.py), which the receiver
reads and drops. A connection's first frame is a sealed hello: until a frame of it checks, a
connection may send no more than a hello's bytes and only so many such connections are kept
(the oldest closed first), so a stranger can make a partition neither buffer a huge frame nor
run out of descriptors. A receiver answers a connection it hears with one byte (HEARD); until
that byte comes back, the sender keeps a copy of what it wrote, and where the connection ends
first (a flood of strangers closed it among the unheard, perhaps with its hello unread) the
copy is sent again on a new one: a connection closed unheard had none of its frames handled,
so nothing is handled twice. An optional delay holds
messages between different machines for a while (calibration).
"""
from __future__ import annotations

import contextlib
import errno
import heapq
import os
import pickle
import selectors
import socket
import struct
import time
from pathlib import Path

from engine_sim.engine.errors import EngineError
from engine_sim.engine.messages import Bundle
from engine_sim.engine.payload import Padding, StreamPayload, frames
from engine_sim.engine.sealing import SealError, seal, unseal

_LEN = struct.Struct("<I")
MAX_FRAME_BYTES = 1 << 30  # a longer length prefix is not a frame of this run
HELLO_BYTES = 64  # what a connection not yet heard to be the run's may send before its hello checks
MAX_UNHEARD = 32  # connections kept open before their hello (a run has a few peers a partition)
HEARD = b"\x01"  # a receiver's one answer on a connection: its hello checked


def hello_frame(secret: bytes) -> bytes:
    """The sealed empty frame a connection of the run's sends first: what makes the receiver
    listen to it (and count it as the run's, not among the unheard a flood may fill)."""
    hello = seal(secret, b"")
    return _LEN.pack(len(hello)) + hello


def socket_path(sock_dir: str, node: int) -> str:
    return str(Path(sock_dir) / _socket_name(node))


def longest_socket_name(n_partitions: int) -> int:
    """The longest socket name a run of `n_partitions` binds (its directory must fit it)."""
    return max(len(_socket_name(-1)), len(_socket_name(max(n_partitions - 1, 0))))


def _socket_name(node: int) -> str:
    return "driver.sock" if node < 0 else f"p{node}.sock"


def connect_with_hello(path: str, secret: bytes, attempts: int = 100) -> socket.socket:
    """A blocking connection to `path` that has said the run's hello (OSError where nobody
    listens). A connection closed before the hello was written was closed unheard, among a
    flood of strangers: another is made."""
    tried = 0
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            raise
        try:
            sock.sendall(hello_frame(secret))
        except OSError:
            sock.close()
            tried += 1
            if tried < attempts:
                continue
            raise
        return sock


class _Out:
    """A connection to one receiver: what is still to write (`buf`), and until the receiver
    says it heard the connection, a copy of what was written (`unheard`; None once heard)."""
    __slots__ = ("dst", "sock", "buf", "unheard")

    def __init__(self, dst: int, sock):
        self.dst = dst
        self.sock = sock
        self.buf = bytearray()
        self.unheard: bytearray | None = bytearray()


class Net:
    def __init__(self, node: int, sock_dir: str, machine_of=None, delay_s: float = 0.0, *,
                 secret: bytes, payload: StreamPayload | None = None):
        self.node = node
        self.payload = payload  # the declared bytes of a message's stream batches (None: no padding)
        self.padding = Padding()
        self.payload_sent = 0  # padding bytes sent: what the spec declares for the batches that left
        self.payload_received = 0  # padding bytes read (and dropped)
        self.secret = secret
        self.refused = 0  # connections closed for a frame that was not sealed by this run
        self.sock_dir = sock_dir
        self.machine_of = machine_of
        self.delay_s = delay_s
        path = socket_path(sock_dir, node)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(256)
        self.listener.setblocking(False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.outs: dict[int, _Out] = {}
        self.waiting: dict[int, bytearray] = {}  # data for receivers we cannot reach yet
        self.inbuf: dict[socket.socket, bytearray] = {}
        self.heard: set[socket.socket] = set()  # connections that sent a frame sealed by this run
        self.pending: dict[int, list] = {}
        self.delayed: list = []  # (due, seq, dst, msg)
        self._seq = 0
        self.sent = 0

    # -- sending -----------------------------------------------------------------------------------
    def send(self, dst: int, msg) -> None:
        self.sent += 1
        if self.delay_s and self.machine_of is not None and self.machine_of(dst) != self.machine_of(self.node):
            self._seq += 1
            heapq.heappush(self.delayed, (time.perf_counter() + self.delay_s, self._seq, dst, msg))
            return
        self.pending.setdefault(dst, []).append(msg)

    def next_due(self) -> float | None:
        return self.delayed[0][0] if self.delayed else None

    def flush(self, clock: int, epoch: int) -> None:
        now = time.perf_counter()
        while self.delayed and self.delayed[0][0] <= now:
            _, _, dst, msg = heapq.heappop(self.delayed)
            self.pending.setdefault(dst, []).append(msg)
        if self.pending:
            pending, self.pending = self.pending, {}
            for dst, msgs in pending.items():
                for part, pad in frames(msgs, self.payload):
                    self._enqueue(dst, self._frame(part, pad, clock, epoch))
        for dst in list(self.waiting):
            self._enqueue(dst, b"")
        for dst, out in list(self.outs.items()):
            if out.buf:
                self._write(dst, out)

    def _frame(self, msgs: list, pad: int, clock: int, epoch: int) -> bytes:
        """One sealed, length-prefixed frame of `msgs` with `pad` bytes of padding."""
        self.payload_sent += pad
        data = seal(self.secret, pickle.dumps(Bundle(self.node, clock, epoch, msgs, self.padding.of(pad)),
                                              protocol=pickle.HIGHEST_PROTOCOL))
        return _LEN.pack(len(data)) + data

    def _enqueue(self, dst: int, data: bytes) -> None:
        out = self.outs.get(dst)
        if out is None:
            sock = self._connect(dst)
            if sock is None:
                self.waiting.setdefault(dst, bytearray()).extend(data)
                return
            out = self.outs[dst] = _Out(dst, sock)
            self.sel.register(sock, selectors.EVENT_READ, out)  # for HEARD, or an end before it
            out.buf.extend(hello_frame(self.secret))
            held = self.waiting.pop(dst, None)
            if held:
                out.buf.extend(held)
        out.buf.extend(data)

    def _connect(self, dst: int):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(socket_path(self.sock_dir, dst))
        except (FileNotFoundError, ConnectionRefusedError, OSError):
            sock.close()
            return None
        sock.setblocking(False)
        return sock

    def _write(self, dst: int, out: _Out) -> None:
        try:
            n = out.sock.send(out.buf)
            if out.unheard is not None:
                out.unheard += out.buf[:n]
            del out.buf[:n]
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            if getattr(exc, "errno", None) in (errno.EAGAIN, errno.EWOULDBLOCK):
                return
            self._ended(out)

    def _answered(self, out: _Out) -> None:
        """The receiver's answer on a connection: HEARD (the copy is no longer needed), or
        the connection's end."""
        try:
            data = out.sock.recv(64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:  # HEARD: from now on an end is the receiver's death
            out.unheard = None
            self.sel.unregister(out.sock)
        else:
            self._ended(out)

    def _ended(self, out: _Out) -> None:
        """The connection to `out.dst` ended. Heard, the receiver died: what it did not get
        is lost with it (a recovery replays it). Unheard, it was closed before its hello was
        read (its frames never handled): all of it again, on a new connection."""
        if out.unheard is not None:
            try:
                heard = out.sock.recv(64)  # the answer may have come just before the end
            except OSError:
                heard = b""
            if heard:
                out.unheard = None
        self._forget(out)
        if out.unheard is not None:
            again = bytes(out.unheard + out.buf)[len(hello_frame(self.secret)):]
            self._enqueue(out.dst, again)

    def _forget(self, out: _Out) -> None:
        with contextlib.suppress(KeyError):  # (unregistered once heard)
            self.sel.unregister(out.sock)
        out.sock.close()
        del self.outs[out.dst]

    def drop(self, dst: int) -> None:
        """Forget the connection to a receiver (it was killed)."""
        out = self.outs.get(dst)
        if out is not None:
            self._forget(out)
        self.waiting.pop(dst, None)
        self.pending.pop(dst, None)

    def reset(self) -> None:
        """After a crash: forget every connection and everything not yet sent (all of it
        belongs to the epoch that ended); new messages connect afresh."""
        for dst in list(self.outs):
            self.drop(dst)
        self.waiting.clear()
        self.pending.clear()
        self.delayed.clear()

    def has_output(self) -> bool:
        return bool(self.pending) or bool(self.waiting) or any(o.buf for o in self.outs.values())

    # -- receiving ---------------------------------------------------------------------------------
    def poll(self, timeout: float) -> list[Bundle]:
        bundles: list[Bundle] = []
        for key, _ in self.sel.select(timeout):
            sock = key.fileobj
            if sock is self.listener:
                self._accept(bundles)
            elif key.data is not None:  # a connection of ours to another receiver
                if self.outs.get(key.data.dst) is key.data and key.data.unheard is not None:
                    self._answered(key.data)
            elif sock in self.inbuf:  # (else closed earlier in this turn: an unheard one, to make room)
                self._read(sock, bundles)
        return bundles

    def _read(self, sock, bundles: list[Bundle]) -> None:
        """What `sock` has sent: its frames onto `bundles`; closed where it ended or sent
        what this run did not seal (a stranger: a hello's bytes at most)."""
        buf = self.inbuf[sock]
        heard = sock in self.heard
        closed = False
        while heard or len(buf) <= _LEN.size + HELLO_BYTES:
            try:
                chunk = sock.recv(1 << 20 if heard else _LEN.size + HELLO_BYTES + 1)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                chunk = b""
            if not chunk:
                closed = True
                break
            buf.extend(chunk)
        pos = 0
        while len(buf) - pos >= _LEN.size:
            (n,) = _LEN.unpack_from(buf, pos)
            if n > (MAX_FRAME_BYTES if heard else HELLO_BYTES):
                closed = self._refuse(buf)
                break
            if len(buf) - pos - _LEN.size < n:
                break
            try:
                data = unseal(self.secret, bytes(buf[pos + _LEN.size:pos + _LEN.size + n]))
            except SealError:
                closed = self._refuse(buf)
                break
            if not heard:
                heard = True
                self.heard.add(sock)
                try:
                    sock.send(HEARD)
                except OSError:
                    pass  # the sender is gone, or will not read it: its loss
            if data:  # (a hello is empty)
                bundles.append(self._opened(data))
            pos += _LEN.size + n
        del buf[:pos]
        if not heard and len(buf) > _LEN.size + HELLO_BYTES:
            closed = self._refuse(buf)  # more than a hello, and none checked
        if closed:
            self._close(sock)

    def _opened(self, data) -> Bundle:
        """The bundle a checked frame holds, its padding counted and dropped (never handled)."""
        bundle = pickle.loads(data)
        if bundle.padding is not None:
            self.payload_received += len(bundle.padding)
            bundle.padding = None
        return bundle

    def _accept(self, bundles: list[Bundle]) -> None:
        """Take the waiting connections; beyond MAX_UNHEARD not yet heard (or with no
        descriptor left) the oldest of those is closed, so a flood of strangers costs the run
        nothing but them. Before that, what the unheard have sent is read: the run's own say
        their hello as they connect, and must not be taken for strangers because dozens of
        them connected in one turn (a design of 32 partitions could not start)."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors (EMFILE, ENFILE) or memory: make room
                if not self._close_oldest_unheard(bundles, descriptor=True):
                    raise EngineError(f"partition {self.node}: cannot take a connection: "
                                      f"{exc.strerror or exc}") from None
                continue
            conn.setblocking(False)
            self.inbuf[conn] = bytearray()
            self.sel.register(conn, selectors.EVENT_READ, None)
            if len(self.inbuf) - len(self.heard) > MAX_UNHEARD:
                self._close_oldest_unheard(bundles)

    def _close_oldest_unheard(self, bundles: list[Bundle], descriptor: bool = False) -> bool:
        """Make room among the unheard (`descriptor`: free a descriptor too): hear first what
        they have sent, then close the oldest still unheard; False where none is left to close."""
        open_before = len(self.inbuf)
        for sock in [s for s in self.inbuf if s not in self.heard]:  # first, hear who has spoken
            self._read(sock, bundles)
        if (len(self.inbuf) < open_before if descriptor
                else len(self.inbuf) - len(self.heard) <= MAX_UNHEARD):
            return True  # room made without closing one of the run's
        oldest = next((s for s in self.inbuf if s not in self.heard), None)  # (dicts keep order)
        if oldest is None:
            return False
        self.refused += 1
        self._close(oldest)
        return True

    def _close(self, sock) -> None:
        self.sel.unregister(sock)
        sock.close()
        del self.inbuf[sock]
        self.heard.discard(sock)

    def _refuse(self, buf: bytearray) -> bool:
        """A frame this run did not seal: drop what the connection sent and close it."""
        self.refused += 1
        buf.clear()
        return True

    def close(self) -> None:
        for out in self.outs.values():
            out.sock.close()
        for sock in list(self.inbuf):
            sock.close()
        self.sel.close()
        self.listener.close()
        try:
            os.unlink(socket_path(self.sock_dir, self.node))
        except OSError:
            pass
