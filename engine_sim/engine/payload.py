"""The bytes a spec declares for the stream batches a message carries, and the zero padding
that makes a frame between two processes carry them.

Why: a spec declares each stream's `tuple_bytes`, and the simulator and the busy-time estimate
price a MOVE between sites by those bytes (serialising them, and their time on the link); the
engine's own tuples are a few small integers. Without the padding a wide-tuple spec's
measurement ignored what the prediction priced (move-micro at 1 MB tuples: 35 tuples/s
predicted on this host, 38,279 measured; 98 with the padding). A batch that crosses a process
boundary therefore carries `tuples x tuple_bytes` bytes of zeros beside its real tuples (the
trace's `flows.bytes`, the simulator's bytes per batch); a hand-off inside one process is never
pickled, so it carries nothing, as a hop inside one simulated node moves no bytes.
"""
from __future__ import annotations

import pickle
from typing import Iterable

from costmodel.workload import Stream
from engine_sim.engine import messages as m
from engine_sim.engine.errors import EngineError

MAX_FRAME_PAYLOAD = 256 << 20  # padding bytes one frame carries at most (a frame: < 1 GiB, MAX_FRAME_BYTES)


class StreamPayload:
    """What each message carrying stream batches declares: `len(tuples) x tuple_bytes` for
    every batch, by its stream (from SP, to SP). A batch whose source is unknown (a
    data-parallel sub-batch) takes the mean width, by tuples, of the streams into its SP; the
    client's input batch takes none (its real tuples are what the simulator sizes at 16 bytes
    a field)."""

    __slots__ = ("_width", "_into", "_by_type")

    def __init__(self, streams: Iterable[Stream]):
        streams = list(streams)
        self._width = {(s.source, s.target): int(s.tuple_bytes) for s in streams}
        tuples: dict[str, float] = {}
        nbytes: dict[str, float] = {}
        for s in streams:
            tuples[s.target] = tuples.get(s.target, 0.0) + s.tuples
            nbytes[s.target] = nbytes.get(s.target, 0.0) + s.tuples * s.tuple_bytes
        self._into = {t: round(nbytes[t] / tuples[t]) if tuples[t] else 0 for t in tuples}
        self._by_type = {m.Invoke: self._invoke, m.TxnRequest: self._request, m.Audit: self._audit,
                         m.Frag: self._frag}

    def width(self, src: str | None, dst: str) -> int:
        """Declared bytes of one tuple of a batch from `src` to `dst`."""
        w = self._width.get((src, dst)) if src is not None else None
        return self._into.get(dst, 0) if w is None else w

    def items(self, items) -> int:
        """Declared bytes of the batches in ((from SP, to SP, Batch | None), ...)."""
        n = 0
        for src, dst, batch in items:
            if batch is not None and batch.tuples:
                n += len(batch.tuples) * self.width(src, dst)
        return n

    def __call__(self, msg) -> int:
        """Declared bytes of the stream batches `msg` carries (0 for every other message)."""
        of = self._by_type.get(type(msg))
        return 0 if of is None else of(msg)

    def _invoke(self, msg: m.Invoke) -> int:  # an RPC MOVE: the batch rides with the invocation
        return self.items(msg.items)

    def _request(self, msg: m.TxnRequest) -> int:  # a scheduler elsewhere (central, a lane's)
        return self.items(msg.txn.inputs)

    def _audit(self, msg: m.Audit) -> int:  # the committed outputs, to a scheduler elsewhere
        return sum(self.items(items) for items in msg.outputs.values())

    def _frag(self, msg: m.Frag) -> int:  # a MOVE transaction writes the batch into its target
        n = 0
        for op in msg.ops:
            if op[0] == "spush":
                (src, dst, _b, _lane), batch = op[1], op[2]
                n += len(batch.tuples) * self.width(src, dst)
        return n


class Padding:
    """Zeros for a frame's padding: one buffer per process, grown as needed and reused, handed
    to pickle as a view (no padding object is built per frame, no tuple is touched: cheap
    where the declared bytes are few)."""

    __slots__ = ("_zeros",)

    def __init__(self):
        self._zeros = b""

    def of(self, n: int) -> pickle.PickleBuffer | None:
        """`n` zero bytes for a frame (None: no padding)."""
        if n <= 0:
            return None
        if len(self._zeros) < n:  # grown by doubling: batch sizes vary by a tuple or so
            self._zeros = bytes(max(n, min(2 * len(self._zeros), MAX_FRAME_PAYLOAD)))
        return pickle.PickleBuffer(memoryview(self._zeros)[:n])


def frames(msgs: list, payload: StreamPayload | None) -> list[tuple[list, int]]:
    """`msgs` (to one receiver) as frames of (messages, padding bytes), in order, each frame's
    padding at most MAX_FRAME_PAYLOAD unless one message alone declares more. Called on every
    flush to every receiver, so the common case (one frame) takes a type lookup a message."""
    if payload is None:
        return [(msgs, 0)]
    by_type = payload._by_type
    sizes = [0] * len(msgs)
    pad = 0
    for i, msg in enumerate(msgs):
        of = by_type.get(type(msg))
        if of is not None:
            sizes[i] = n = of(msg)
            pad += n
    if pad <= MAX_FRAME_PAYLOAD:
        return [(msgs, pad)]
    out: list[tuple[list, int]] = []
    part: list = []
    pad = 0
    for msg, n in zip(msgs, sizes):
        if part and n and pad + n > MAX_FRAME_PAYLOAD:
            out.append((part, pad))
            part, pad = [], 0
        part.append(msg)
        pad += n
    out.append((part, pad))
    return out


def check_payload(plan) -> None:
    """A multi-process run in which one message would declare more than MAX_FRAME_PAYLOAD
    bytes (one unit's input or output batches) is refused before it starts: its frame could not
    carry what the spec declares, and the host's memory would hold several copies of it."""
    into: dict[str, float] = {}
    out_of: dict[str, float] = {}
    for s in plan.workload.streams:
        if plan.procs[s.source].unit == plan.procs[s.target].unit:
            continue  # inside one nested transaction: never sent
        nbytes = s.tuples * plan.scale * s.tuple_bytes
        into[s.target] = into.get(s.target, 0.0) + nbytes
        out_of[s.source] = out_of.get(s.source, 0.0) + nbytes
    for unit in plan.units.values():
        for way, per_sp in (("into", into), ("out of", out_of)):
            nbytes = sum(per_sp.get(mb, 0.0) for mb in unit.members)
            if nbytes > MAX_FRAME_PAYLOAD:
                raise EngineError(
                    f"the streams {way} {unit.name} declare {nbytes:,.0f} bytes a batch (tuples x "
                    f"tuple_bytes); the multi-process engine moves at most {MAX_FRAME_PAYLOAD:,} in one "
                    f"message (use in_process=True, a smaller --batch-size, or the simulator)")
