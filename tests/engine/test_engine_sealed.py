"""The engine hears only its own run: a frame on a partition's or the driver's socket that the
run did not seal is refused unread (a pickle that would run a command never runs), and a
command log or snapshot changed on disk fails recovery in one line instead of being loaded."""
import pickle
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest

from costmodel.design import Design
from advisor.sources import load_workload
from engine_sim.engine import EngineFailure, run_workload
from engine_sim.engine.recovery import FileLogStore, read_snapshot
from engine_sim.engine.sealing import SealError, new_secret, seal, unseal


class _Touch:
    """Unpickling this creates PATH: what an attacker's frame would do if loaded."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_a_sealed_frame_opens_only_with_its_own_secret():
    key, other = new_secret(), new_secret()
    assert key != other and len(key) == 32
    frame = seal(key, b"payload")
    assert bytes(unseal(key, frame)) == b"payload"
    for bad in (seal(other, b"payload"), frame[:-1] + b"X", b"short", b"\0" * 16 + b"payload"):
        with pytest.raises(SealError):
            unseal(key, bad)


def test_a_log_or_snapshot_changed_on_disk_is_refused(tmp_path):
    key = new_secret()
    log = FileLogStore(tmp_path / "p0.log", fsync=False, secret=key)
    log.write([("commit", 1), ("commit", 2)])
    assert log.read() == [("commit", 1), ("commit", 2)]
    data = bytearray((tmp_path / "p0.log").read_bytes())
    data[-3] ^= 0xFF  # one flipped byte in the second record
    (tmp_path / "p0.log").write_bytes(bytes(data))
    with pytest.raises(EngineFailure, match=r"p0.log: record 2 fails its integrity check"):
        log.read()
    other = FileLogStore(tmp_path / "x.log", fsync=False, secret=new_secret())
    other.write([("commit", 1)])
    with pytest.raises(EngineFailure, match="record 1 fails"):
        FileLogStore(tmp_path / "x.log", fsync=False, secret=key).read()
    snap = tmp_path / "snap"
    snap.write_bytes(seal(key, b"state"))
    assert read_snapshot(snap, key) == b"state"
    snap.write_bytes(pickle.dumps(_Touch(str(tmp_path / "pwned"))))
    with pytest.raises(EngineFailure, match="snapshot .* fails its integrity check"):
        read_snapshot(snap, key)
    assert not (tmp_path / "pwned").exists()


def _forge(sock_dir: Path, marker: Path, sent: list, stop: threading.Event) -> None:
    """Send every engine socket of the run a frame that would touch `marker` if unpickled:
    one raw pickle, and one sealed with a key that is not the run's."""
    raw = pickle.dumps(_Touch(str(marker)))
    frames = [raw, seal(new_secret(), raw)]
    done: set = set()
    while not stop.is_set():
        try:
            paths = list(sock_dir.glob("engs-*/*.sock"))
        except FileNotFoundError:  # a run's directory went away mid-scan: look again
            paths = []
        for path in paths:
            if path in done:
                continue
            for frame in frames:
                try:
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                        s.connect(str(path))
                        s.sendall(struct.pack("<I", len(frame)) + frame)
                        sent.append(path.name)
                except OSError:  # not listening yet (bound, listen() to come), or closed: try again
                    break
            else:
                done.add(path)
        time.sleep(0.005)


@pytest.mark.process
def test_forged_frames_to_every_engine_socket_are_refused(short_tmp_path, monkeypatch):
    tmp_path = short_tmp_path  # (pytest's own may be too long for a socket: the run would go to /tmp)
    from engine_sim.engine.forkserver import forkserver_context

    forkserver_context()  # the forkserver's socket (made once a process) outside the directory this test removes
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the run's socket directory lands here
    w = load_workload("move-micro")
    d = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    marker, sent, stop = tmp_path / "pwned", [], threading.Event()
    forger = threading.Thread(target=_forge, args=(tmp_path, marker, sent, stop), daemon=True)
    forger.start()
    try:
        r = run_workload(w, d, batches=6000)  # long enough for the forger to reach every socket under load
    finally:
        stop.set()
        forger.join(5)
    reached = set(sent)
    assert {"driver.sock", "p0.sock", "p1.sock"} <= reached  # every socket got the forged frames
    assert not marker.exists()  # nothing was unpickled
    assert r.refused_frames >= 2 * len(reached) - 2  # a socket may close before its second frame
    assert r.history_check == "ok" and r.state_digest == r.serial_digest



def test_a_partition_that_fails_in_a_line_ends_the_run_with_that_line(monkeypatch):
    # a log changed on disk, found by a partition process recovering, reached multiprocessing's
    # 20-line traceback, and the run ended "partition 0 process exited with status 1"
    import multiprocessing

    from engine_sim.engine import multiproc

    def tampered(node, args):
        raise EngineFailure("command log /x/p0.log: record 5 fails its integrity check")

    class Exited(Exception):
        pass

    def exit_(code):
        raise Exited(code)

    monkeypatch.setattr(multiproc, "_serve", tampered)
    monkeypatch.setattr(multiproc.os, "_exit", exit_)
    receive, send = multiprocessing.Pipe(duplex=False)
    with pytest.raises(Exited):
        multiproc.site_main(0, {"failures": send})
    assert receive.recv() == "partition 0: command log /x/p0.log: record 5 fails its integrity check"


def _when_partitions_serve(action, done: list, timeout: float = 60) -> None:
    """Once this process's forkserver (the run's: an earlier one may still be recorded, dead)
    has two partition processes, `action(its pid, its socket's address)`."""
    from multiprocessing import forkserver

    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = forkserver._forkserver
        pid, address = server._forkserver_pid, server._forkserver_address
        try:
            if pid and address and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE \
                    and len(psutil.Process(pid).children()) >= 2:
                time.sleep(0.2)
                action(pid, address)
                done.append(pid)
                return
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.01)


def _junk(address: str) -> list[str]:
    """Connections to the forkserver's socket that are no request: bytes with no descriptor,
    nothing at all, descriptors whose count byte does not match, one descriptor alone."""
    import os

    sent = []
    for name, data, n_fds in (("bytes", b"\x00junk\n" * 8, 0), ("nothing", b"", 0),
                              ("wrong count", b"x", 2), ("one descriptor", b"\x01", 1)):
        fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(n_fds)]
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(address)
                if fds:
                    socket.send_fds(s, [data], fds)
                elif data:
                    s.sendall(data)
            sent.append(name)
        finally:
            for fd in fds:
                os.close(fd)
        time.sleep(0.05)
    return sent


@pytest.mark.process
def test_junk_on_the_forkserver_socket_is_dropped_and_the_run_goes_on(capfd):
    """Python 3.11's forkserver does not authenticate its socket (0700: only this user reaches
    it). Junk written to it killed the forkserver with a traceback on the terminal, and with
    it every partition: the run ended "partition 0 process exited with status 255"."""
    import psutil

    w = load_workload("move-micro")
    d = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    sent: list = []
    done: list = []
    sender = threading.Thread(target=_when_partitions_serve,
                              args=(lambda pid, address: sent.extend(_junk(address)), done), daemon=True)
    sender.start()
    r = run_workload(w, d, batches=4000)
    sender.join(30)
    assert sent == ["bytes", "nothing", "wrong count", "one descriptor"] and done
    assert r.history_check == "ok" and r.state_digest == r.serial_digest
    assert psutil.Process(done[0]).is_running()  # the same forkserver serves on
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ancdata" not in err, err


@pytest.mark.process
def test_a_forkserver_that_dies_is_named_in_the_runs_one_line():
    """It was "partition 0 process exited with status 255": the partitions died with their
    parent, and 255 is multiprocessing's stand-in for a status it could not read."""
    import os
    import signal

    w = load_workload("move-micro")
    d = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    done: list = []
    killer = threading.Thread(target=_when_partitions_serve,
                              args=(lambda pid, _address: os.kill(pid, signal.SIGKILL), done), daemon=True)
    killer.start()
    with pytest.raises(EngineFailure, match=r"^the engine's forkserver \(multiprocessing's, pid \d+, the parent "
                                            r"of every partition process\) was killed by signal 9 while "):
        run_workload(w, d, batches=200_000)
    killer.join(30)
    assert done
    r = run_workload(w, d, batches=50)  # the next run starts a new one
    assert r.history_check == "ok"
