"""A stream batch that crosses between processes carries the bytes its spec declares
(`tuples x tuple_bytes`, the trace's flow bytes and the simulator's bytes per batch), as zero
padding the receiver reads and drops; a hand-off inside one process carries nothing, as a hop
inside one simulated node moves no bytes. Before, the engine sent its few small integers: a
spec of 1 MB tuples was predicted at 35 tuples/s on this host and measured at 10,298."""
import contextlib
import dataclasses
import socket
import struct

import pyarrow.parquet as pq
import pytest

from advisor.sources import load_workload
from costmodel.design import Design
from engine_sim.engine import EngineError, run_workload
from engine_sim.engine import messages as m
from engine_sim.engine import payload as payload_mod
from engine_sim.engine.payload import StreamPayload, frames
from engine_sim.engine.sealing import new_secret
from engine_sim.engine.transport import Net, socket_path
from engine_sim.engine.txn import Batch
from engine_sim.sim.run import simulate

WIDE = 50_000  # bytes a tuple: 500 KB a batch of move-micro's 10 tuples
LEN = struct.Struct("<I")


def wide_move_micro(tuple_bytes: int = WIDE):
    w = load_workload("move-micro")
    return dataclasses.replace(w, streams=tuple(dataclasses.replace(s, tuple_bytes=tuple_bytes)
                                                for s in w.streams))


def across_machines() -> Design:
    return Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})


def invoke(batch_id: int = 3) -> m.Invoke:
    return m.Invoke("SP2", batch_id, "SP1", (("SP1", "SP2", Batch(tuple((i, 2 * i) for i in range(10)), 7)),))


def _read_frames(conn: socket.socket, count: int, sender: Net) -> bytes:
    """What `sender` wrote to `conn` until `count` whole frames came (the sender is flushed as
    the socket drains: it never blocks)."""
    conn.setblocking(False)
    got = bytearray()
    for _ in range(100_000):
        sender.flush(1, 0)
        try:
            chunk = conn.recv(1 << 20)
        except BlockingIOError:
            chunk = b""
        got.extend(chunk)
        pos, seen = 0, 0
        while len(got) - pos >= LEN.size and len(got) - pos - LEN.size >= LEN.unpack_from(got, pos)[0]:
            pos += LEN.size + LEN.unpack_from(got, pos)[0]
            seen += 1
        if seen >= count:
            return bytes(got)
    raise AssertionError(f"{count} frames never came ({len(got)} bytes)")


def test_a_wide_batch_crosses_a_socket_with_its_declared_bytes_and_the_receiver_drops_them(short_tmp_path):
    secret, d = new_secret(), str(short_tmp_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path(d, 1))  # partition 1, read raw: the bytes on the wire
    listener.listen(1)
    sender = Net(0, d, secret=secret, payload=StreamPayload(wide_move_micro().streams))
    try:
        sent = invoke()
        sender.send(1, sent)
        sender.flush(1, 0)
        conn, _ = listener.accept()
        wire = _read_frames(conn, 2, sender)  # the hello, then the invocation's frame
        conn.close()
        hello = LEN.unpack_from(wire, 0)[0]
        frame = LEN.unpack_from(wire, LEN.size + hello)[0]
        assert frame >= 10 * WIDE  # the batch's 10 tuples x 50,000 declared bytes went over
        assert sender.payload_sent == 10 * WIDE
        listener.close()

        # the same bytes to a partition's socket: it hears the invocation, the padding dropped
        receiver = Net(1, d, secret=secret)
        try:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(socket_path(d, 1))
            client.setblocking(False)
            left, bundles = memoryview(wire), []
            for _ in range(10_000):  # write what the socket takes, let the receiver read it
                with contextlib.suppress(BlockingIOError):  # full: the receiver reads some first
                    left = left[client.send(left):] if left else left
                bundles += receiver.poll(0.01)
                if bundles:
                    break
            client.close()
            assert [b.messages for b in bundles] == [[sent]] and bundles[0].padding is None
            assert receiver.payload_received == 10 * WIDE
        finally:
            receiver.close()
    finally:
        sender.close()


def test_a_message_without_stream_batches_carries_no_padding():
    payload = StreamPayload(wide_move_micro().streams)
    assert payload(m.Decide(1, True, 5)) == payload(m.BatchesDone("SP2", (1, 2))) == 0
    refs = m.Invoke("SP2", 1, "SP1", (("SP1", "SP2", None),))  # a MOVE transaction moved it already
    assert payload(refs) == 0
    client_input = m.Invoke("SP1", 1, None, ((None, "SP1", Batch(((1, 2),) * 10, 0)),))
    assert payload(client_input) == 0  # the client's input brings its real tuples only
    assert payload(invoke()) == 10 * WIDE


def test_frames_keep_order_and_cap_the_padding_each_frame_carries(monkeypatch):
    monkeypatch.setattr(payload_mod, "MAX_FRAME_PAYLOAD", 25 * WIDE)
    payload = StreamPayload(wide_move_micro().streams)
    msgs = [invoke(0), m.Decide(1, True, 5), invoke(1), invoke(2), invoke(3), m.Stop()]
    got = frames(msgs, payload)
    assert got == [(msgs[:3], 20 * WIDE), (msgs[3:], 20 * WIDE)]  # in order, none over the cap
    assert frames(msgs, None) == [(msgs, 0)]


def test_a_run_whose_message_would_exceed_what_a_frame_carries_is_refused_before_it_starts():
    w = wide_move_micro(tuple_bytes=10**9)  # 10 GB a batch
    with pytest.raises(EngineError, match="moves at most"):
        run_workload(w, across_machines(), batches=5)


@pytest.mark.process
@pytest.mark.integration
@pytest.mark.parametrize("scheduler, move, crossings", [
    ("dls", "rpc", 1),  # the invocation carries the batch to SP2's scheduler
    ("central", "rpc", 2),  # SP1's commit notification to the driver, then SP2's request
    ("dls", "txn", 1),  # the MOVE transaction's fragment writes it into SP2's partition
])
def test_every_batch_that_crosses_processes_carries_what_the_simulator_prices(scheduler, move, crossings,
                                                                             tmp_path):
    w, design, batches = wide_move_micro(), across_machines(), 20
    trace = tmp_path / "trace" if scheduler == "dls" and move == "rpc" else None
    r = run_workload(w, design, batches=batches, scheduler=scheduler, move=move, trace_out=trace)
    assert r.history_check == "ok" and r.moves == batches and r.restarts == 0
    assert r.payload_bytes == crossings * batches * 10 * WIDE
    sim = simulate(w, design, scheduler=scheduler, move=move, input_rate=10.0, batches=50)
    assert sim.streams["SP1->SP2"]["bytes_per_batch"] == 10 * WIDE  # what a crossing is priced by
    if trace is not None:  # the trace's flow bytes are those bytes too
        assert pq.read_table(trace / "flows").to_pandas()["bytes"].sum() == r.payload_bytes


@pytest.mark.integration
def test_a_hand_off_inside_one_process_moves_no_bytes():
    r = run_workload(wide_move_micro(), across_machines(), batches=10, in_process=True)
    assert r.history_check == "ok" and r.moves == 10 and r.payload_bytes == 0
