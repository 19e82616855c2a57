"""Frames only the run's own processes can make: every frame an engine process reads from a
socket, and every log record or snapshot recovery reads back from disk, carries a keyed
BLAKE2b tag over its bytes, made with a secret drawn afresh for each run and handed to the
partitions when they start (never over a socket). Nothing is unpickled before its tag checks,
so a forged or damaged frame is refused, not executed.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

TAG_BYTES = 16


class SealError(ValueError):
    """A frame whose tag does not match its bytes: forged, damaged, or from another run."""


def new_secret() -> bytes:
    return secrets.token_bytes(32)


def _tag(secret: bytes, data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, key=secret, digest_size=TAG_BYTES).digest()


def seal(secret: bytes, data: bytes) -> bytes:
    """`data` with its tag in front."""
    return _tag(secret, data) + data


def unseal(secret: bytes, frame: bytes | memoryview) -> bytes | memoryview:
    """The data of a sealed frame, or SealError when its tag does not match."""
    if len(frame) < TAG_BYTES:
        raise SealError("frame shorter than its tag")
    data = frame[TAG_BYTES:]
    if not hmac.compare_digest(_tag(secret, data), bytes(frame[:TAG_BYTES])):
        raise SealError("frame tag does not match: not from this run")
    return data
