"""Transactions, the batches they carry, and the history record each execution leaves."""
from __future__ import annotations

from dataclasses import dataclass, field

from engine_sim.engine.wire import pickle_by_fields


@dataclass(slots=True, frozen=True)
class Batch:
    """An atomic batch of a stream: tuples (aligned with the input fields) and a carry value
    folding what the producing transaction read, so downstream writes depend on upstream reads
    (an ordering mistake anywhere changes the final state digest)."""

    tuples: tuple = ()
    carry: int = 0


@dataclass(slots=True)
class Txn:
    """One transaction execution request, as a scheduler (or the driver) creates it."""

    id: int  # (Lamport clock << 10) | (node + 1): unique, totally ordered
    kind: str  # stream | oltp | move | snapshot
    unit: str  # scheduling unit (SP or nested group), OLTP procedure, or system name
    lane: int  # sub-batch lane (0 unless data-parallel)
    batch: int
    inputs: tuple = ()  # ((from SP | None, to SP, Batch | None), ...); None batch: pop it locally
    epoch: int = 0  # purge epoch of Algorithm 2 (the restart counter the partition compares)
    restarts: int = 0
    reply_to: int = -1  # node of the scheduler (or driver) that gets the outcome
    base: int = 0  # partition that coordinates it
    log: bool = False  # write a command-log record on commit
    trigger: bool = True  # fire downstream on commit (off during strong replay)
    move: tuple | None = None  # MOVE txn: (from SP, to SP, batch, lane, source partition, target)
    replay_of: int | None = None  # strong replay: the original txn id
    recovering: bool = False  # weak recovery: a border batch replayed from the log
    aux: int = 0  # snapshot number, GC watermark, ...
    prio: int = 0  # queue priority: the id of the first attempt (restarts keep it); 0: this id

    @property
    def age(self) -> int:
        return self.prio or self.id


def make_txn_id(clock: int, node: int) -> int:
    return (clock << 10) | (node + 1)


@dataclass(slots=True)
class TxnRecord:
    """What the history keeps of one execution of one SP (a nested group leaves one record per
    child, sharing `group`). `positions` orders it at each partition it held: (recovery epoch,
    sequence number, child index); conflicts are ordered by them."""

    txn_id: int
    kind: str
    procedure: str
    unit: str
    lane: int
    batch: int
    status: str  # commit | abort
    restarts: int
    base: int
    partitions: tuple
    start_us: int
    end_us: int
    commit_ts: int = 0
    child: int = 0
    group: int | None = None
    positions: dict = field(default_factory=dict)  # partition -> (epoch, seq, child)
    accesses: list = field(default_factory=list)  # (partition, table, key, mode, rows)
    outputs: list = field(default_factory=list)  # (to SP, tuples, bytes, MOVEs to other partitions)
    replay: bool = False
    epoch: int = 0  # recovery epoch it ran in
    reason: str = ""  # why it aborted
    era: int = 0  # the design it ran under: 0, then 1 after a migration (kind "migration": the switch)
    work_us: float | None = None  # a committed declared SP's own work (CPU time; see twophase._drive)


@dataclass(slots=True)
class LogRecord:
    """A command-log record: what replay needs to run the same transaction again."""

    commit_ts: int
    txn_id: int
    kind: str
    unit: str
    lane: int
    batch: int
    inputs: tuple
    base: int
    move: tuple | None = None


for _cls in (Batch, Txn, TxnRecord, LogRecord):
    pickle_by_fields(_cls)
