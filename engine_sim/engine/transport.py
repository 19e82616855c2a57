"""Messages between processes: Unix stream sockets, one connection per (sender, receiver)
pair (so each pair is FIFO), non-blocking with user-space buffers (no process ever blocks on
a full socket, so two busy partitions cannot deadlock writing to each other), no locks shared
between processes (so a killed process cannot wedge the others). Messages to one receiver are
bundled per loop turn and pickled once, with the sender's Lamport clock and recovery epoch,
and sealed with the run's secret (sealing.py): a connection whose frame does not check is
closed unread, so only the run's own processes are heard. An optional delay holds messages
between different machines for a while (calibration).
"""
from __future__ import annotations

import errno
import heapq
import os
import pickle
import selectors
import socket
import struct
import time
from pathlib import Path

from engine_sim.engine.messages import Bundle
from engine_sim.engine.sealing import SealError, seal, unseal

_LEN = struct.Struct("<I")
MAX_FRAME_BYTES = 1 << 30  # a longer length prefix is not a frame of this run


def socket_path(sock_dir: str, node: int) -> str:
    return str(Path(sock_dir) / _socket_name(node))


def longest_socket_name(n_partitions: int) -> int:
    """The longest socket name a run of `n_partitions` binds (its directory must fit it)."""
    return max(len(_socket_name(-1)), len(_socket_name(max(n_partitions - 1, 0))))


def _socket_name(node: int) -> str:
    return "driver.sock" if node < 0 else f"p{node}.sock"


class _Out:
    __slots__ = ("sock", "buf")

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()


class Net:
    def __init__(self, node: int, sock_dir: str, machine_of=None, delay_s: float = 0.0, *,
                 secret: bytes):
        self.node = node
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
                data = seal(self.secret, pickle.dumps(Bundle(self.node, clock, epoch, msgs),
                                                      protocol=pickle.HIGHEST_PROTOCOL))
                self._enqueue(dst, _LEN.pack(len(data)) + data)
        for dst in list(self.waiting):
            self._enqueue(dst, b"")
        for dst, out in list(self.outs.items()):
            if out.buf:
                self._write(dst, out)

    def _enqueue(self, dst: int, data: bytes) -> None:
        out = self.outs.get(dst)
        if out is None:
            sock = self._connect(dst)
            if sock is None:
                self.waiting.setdefault(dst, bytearray()).extend(data)
                return
            out = self.outs[dst] = _Out(sock)
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
            del out.buf[:n]
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            if getattr(exc, "errno", None) in (errno.EAGAIN, errno.EWOULDBLOCK):
                return
            out.sock.close()  # the receiver died: what it did not get is lost with it
            del self.outs[dst]

    def drop(self, dst: int) -> None:
        """Forget the connection to a receiver (it was killed)."""
        out = self.outs.pop(dst, None)
        if out is not None:
            out.sock.close()
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
                while True:
                    try:
                        conn, _ = self.listener.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    conn.setblocking(False)
                    self.inbuf[conn] = bytearray()
                    self.sel.register(conn, selectors.EVENT_READ, None)
                continue
            buf = self.inbuf[sock]
            closed = False
            while True:
                try:
                    chunk = sock.recv(1 << 20)
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
                if n > MAX_FRAME_BYTES:
                    closed = self._refuse(buf)
                    break
                if len(buf) - pos - _LEN.size < n:
                    break
                try:
                    data = unseal(self.secret, bytes(buf[pos + _LEN.size:pos + _LEN.size + n]))
                except SealError:
                    closed = self._refuse(buf)
                    break
                bundles.append(pickle.loads(data))
                pos += _LEN.size + n
            del buf[:pos]
            if closed:
                self.sel.unregister(sock)
                sock.close()
                del self.inbuf[sock]
        return bundles

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
