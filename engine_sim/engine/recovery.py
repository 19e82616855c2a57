"""Durability: the command log with group commit, snapshots, and what recovery replays.

Each partition appends a record for every transaction it commits as coordinator (strong
recovery) or only for border and OLTP transactions (weak recovery), and prepare markers for
logged distributed transactions it takes part in. Records are buffered and written together
(group commit): a transaction's outcome is acknowledged - its downstream triggered - only
once its record is durable. Distributed transactions force the log at prepare (participants)
and at commit (coordinator), so whatever a durable record depends on is durable too.

Commit timestamps are Lamport times agreed in 2PC: conflicting transactions commit in
timestamp order, so replaying the merged logs in timestamp order reproduces the state, and a
snapshot (a transaction locking every partition) is a consistent cut at its timestamp.
"""
from __future__ import annotations

import json
import os
import pickle
import struct
import time
from pathlib import Path

from costmodel.files import atomic_write_bytes
from engine_sim.engine.errors import EngineFailure
from engine_sim.engine.sealing import SealError, seal, unseal
from engine_sim.engine.txn import LogRecord

_FRAME = struct.Struct("<I")


class MemoryLogStore:
    """The in-process runs' "disk": survives a simulated crash of the site that writes it."""

    def __init__(self):
        self.records: list = []
        self.writes = 0

    def write(self, records: list) -> None:
        self.records.extend(records)
        self.writes += 1

    def read(self) -> list:
        return list(self.records)

    def close(self) -> None:
        """Nothing to release: the records stay in memory for the site that recovers."""


class FileLogStore:
    """An append-only file of length-prefixed pickles, each sealed with the run's secret,
    fsync'ed on every group write."""

    def __init__(self, path: str | Path, fsync: bool = True, *, secret: bytes):
        self.path = Path(path)
        self.fsync = fsync
        self.secret = secret
        self.file = open(self.path, "ab")
        self.writes = 0

    def write(self, records: list) -> None:
        parts = []
        for r in records:
            data = seal(self.secret, pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL))
            parts.append(_FRAME.pack(len(data)))
            parts.append(data)
        self.file.write(b"".join(parts))
        self.file.flush()
        if self.fsync:
            os.fsync(self.file.fileno())
        self.writes += 1

    def read(self) -> list:
        return read_log_file(self.path, self.secret)

    def close(self) -> None:
        self.file.close()


def read_log_file(path: str | Path, secret: bytes) -> list:
    """Every complete record of a log file (a torn last record, from a crash, is ignored; a
    record this run did not write fails the run, unread)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    out, pos = [], 0
    while pos + _FRAME.size <= len(data):
        (n,) = _FRAME.unpack_from(data, pos)
        if pos + _FRAME.size + n > len(data):
            break
        try:
            record = unseal(secret, data[pos + _FRAME.size:pos + _FRAME.size + n])
        except SealError:
            raise EngineFailure(f"command log {path}: record {len(out) + 1} fails its integrity "
                                f"check (changed on disk, or not written by this run)") from None
        out.append(pickle.loads(record))
        pos += _FRAME.size + n
    return out


def read_snapshot(path: Path, secret: bytes) -> bytes:
    """A partition's snapshot as written by this run (else the run fails, unread)."""
    try:
        return bytes(unseal(secret, path.read_bytes()))
    except SealError:
        raise EngineFailure(f"snapshot {path} fails its integrity check (changed on disk, "
                            f"or not written by this run)") from None
    except OSError as exc:
        raise EngineFailure(f"snapshot {path}: {exc.strerror or exc}") from None


class CommandLog:
    """Buffered command log of one partition.

    Group commit writes the buffer when it holds `group_size` records, when it is older than
    `interval_s` (multi-process runs only: in-process runs stay deterministic), when the site
    is idle, or when a distributed transaction forces it. Without group commit every commit
    forces its own write.
    """

    def __init__(self, store, group_size: int = 64, interval_s: float = 0.002,
                 use_time: bool = True):
        self.store = store
        self.buffer: list = []
        self.first_at = 0.0
        self.group_size = group_size
        self.interval_s = interval_s
        self.use_time = use_time
        self.records = 0
        self.flushes = 0

    def append(self, record) -> None:
        if not self.buffer:
            self.first_at = time.perf_counter()
        self.buffer.append(record)
        self.records += 1

    def force(self) -> bool:
        if not self.buffer:
            return False
        self.store.write(self.buffer)
        self.buffer = []
        self.flushes += 1
        return True

    def due(self) -> bool:
        if not self.buffer:
            return False
        if len(self.buffer) >= self.group_size:
            return True
        return self.use_time and time.perf_counter() - self.first_at >= self.interval_s


# -- snapshots ---------------------------------------------------------------------------------

def snapshot_path(run_dir: Path, number: int, partition: int) -> Path:
    return Path(run_dir) / f"snap-{number}-p{partition}.pkl"


def write_manifest(run_dir: Path, number: int, commit_ts: int, fsync: bool, design: int = 0) -> None:
    """A snapshot counts only once every partition wrote its part: then this names it, and
    the design (era) its layout is of. Written atomically: naming a migration's snapshot with
    the new design is the migration's commit record."""
    atomic_write_bytes(Path(run_dir) / "snapshot.json",
                       json.dumps({"number": number, "commit_ts": commit_ts, "design": design}).encode(),
                       fsync=fsync)


def read_manifest(run_dir: Path) -> tuple[int | None, int, int]:
    """(snapshot number, its commit timestamp, the design its layout is of)."""
    path = Path(run_dir) / "snapshot.json"
    if not path.exists():
        return None, 0, 0
    data = json.loads(path.read_text())
    return int(data["number"]), int(data["commit_ts"]), int(data.get("design", 0))


# -- what to replay ----------------------------------------------------------------------------

def commit_records(records: list, after_ts: int) -> list[LogRecord]:
    """Durable commit records after a snapshot, once each, in commit-timestamp order."""
    seen = {}
    for r in records:
        if isinstance(r, LogRecord) and r.commit_ts > after_ts:
            seen[r.txn_id] = r
    return sorted(seen.values(), key=lambda r: (r.commit_ts, r.txn_id))


def weak_replay(records: list[LogRecord], plan) -> list[LogRecord]:
    """Weak recovery replays border and OLTP transactions only (the latest record of each
    batch: a batch replayed once and logged again must not run twice)."""
    latest = {}
    for r in records:
        if r.kind == "oltp" or (r.kind == "stream" and plan.units[r.unit].border):
            latest[(r.kind, r.unit, r.lane, r.batch)] = r
    return sorted(latest.values(), key=lambda r: (r.commit_ts, r.txn_id))
