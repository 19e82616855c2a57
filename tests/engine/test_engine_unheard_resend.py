"""A connection of the run's own that a flood of strangers closed before its hello was read
is sent again, whole, on a new one; once the receiver has answered that it heard it, its end
is the receiver's death and nothing is sent twice. Under load, a partition preempted between
its connect and its first write lost its messages this way (its connection was the oldest
unheard when 32 strangers came after it), and the run waited for them until killed."""
import select
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine_sim.engine.sealing import new_secret
from engine_sim.engine.transport import MAX_UNHEARD, Net, socket_path

ROOT = Path(__file__).resolve().parents[2]


def _strangers(d: str, node: int, n: int) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(socket_path(d, node))
        out.append(s)
    return out


def _deliver(sender: Net, receiver: Net, turns: int = 200) -> list:
    """The messages the receiver hears while both take turns (the sender writes and reads
    its answers)."""
    got = []
    for _ in range(turns):
        sender.flush(1, 0)
        sender.poll(0)
        got += [msg for b in receiver.poll(0.005) for msg in b.messages]
        if got and not sender.has_output():
            break
    return got


@pytest.fixture
def nets(short_tmp_path):
    """A receiver (partition 0) and a sender (partition 1) of one run, closed after the test
    (whichever receiver it holds then)."""
    d, secret = str(short_tmp_path), new_secret()
    held = {"dir": d, "secret": secret, "receiver": Net(0, d, secret=secret), "sender": Net(1, d, secret=secret)}
    yield held
    held["sender"].close()
    held["receiver"].close()


def test_a_connection_closed_unheard_before_its_first_write_is_opened_again(nets, monkeypatch):
    receiver, sender = nets["receiver"], nets["sender"]
    sender.send(0, "first")
    with monkeypatch.context() as m:
        m.setattr(sender, "_write", lambda dst, out: None)  # preempted after its connect
        sender.flush(1, 0)
    strangers = _strangers(nets["dir"], 0, MAX_UNHEARD)  # one more unheard than kept
    receiver.poll(0)  # the sender's connection is the oldest unheard: closed
    assert receiver.refused == 1 and not receiver.heard
    assert _deliver(sender, receiver) == ["first"]
    assert not sender.has_output()
    for s in strangers:
        s.close()


def test_frames_written_but_closed_unread_are_sent_again(nets):
    receiver, sender = nets["receiver"], nets["sender"]
    sender.send(0, "first")
    sender.flush(1, 0)  # hello and frame written, into a connection not yet accepted
    conn, _ = receiver.listener.accept()
    conn.close()  # closed with them unread, as a flood's oldest unheard is
    assert _deliver(sender, receiver) == ["first"]


def test_once_heard_a_receivers_end_is_its_death_and_nothing_is_sent_twice(nets):
    receiver, sender = nets["receiver"], nets["sender"]
    sender.send(0, "first")
    assert _deliver(sender, receiver) == ["first"]
    for _ in range(100):  # the receiver's answer arrives
        sender.poll(0.005)
        if sender.outs[0].unheard is None:
            break
    assert sender.outs[0].unheard is None  # no copy kept of what was heard
    receiver.close()  # it dies; another takes its place
    receiver = nets["receiver"] = Net(0, nets["dir"], secret=nets["secret"])
    sender.send(0, "second")
    got = _deliver(sender, receiver, turns=20)
    assert "first" not in got


WATCHED = """
import sys, time
from engine_sim.engine.multiproc import _die_with_parent
_die_with_parent(sys.argv[1], bytes.fromhex(sys.argv[2]))
time.sleep(2.0)
print("alive")
"""


@pytest.mark.process
def test_a_partitions_watchdog_closed_unheard_connects_again(short_tmp_path):
    # (its end before the driver's answer was taken for the driver's death: the partition exited)
    d, secret = str(short_tmp_path), new_secret()
    driver = Net(-1, d, secret=secret)
    try:
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WATCHED), d, secret.hex()],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert select.select([driver.listener], [], [], 30)[0]
        conn, _ = driver.listener.accept()  # its watchdog's connection
        conn.close()  # closed unheard
        for _ in range(400):
            driver.poll(0.005)
            if driver.heard or child.poll() is not None:
                break
        out, err = child.communicate(timeout=30)
        assert driver.heard, (child.returncode, out, err[-2000:])  # it came back and said its hello
        assert child.returncode == 0 and out.strip() == "alive", err[-2000:]
    finally:
        driver.close()
