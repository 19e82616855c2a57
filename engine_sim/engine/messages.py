"""The messages partitions, schedulers and the driver exchange (and nothing else: no shared
state). Small slotted dataclasses, pickled on the wire in the multi-process runtime."""
from __future__ import annotations

from dataclasses import dataclass, field

from engine_sim.engine.wire import pickle_by_fields


# -- transaction execution (partition to partition, scheduler to partition) ---------------------
@dataclass(slots=True)
class TxnRequest:
    txn: object


@dataclass(slots=True)
class LockReq:
    txn_id: int
    coord: int
    logged: bool
    ops: list  # work shipped with the lock request (declared procedures), run on grant
    age: int = 0  # queue priority (smaller: older, served first)


@dataclass(slots=True)
class LockReply:
    txn_id: int
    part: int
    ok: bool
    results: list


@dataclass(slots=True)
class Frag:
    txn_id: int
    ops: list


@dataclass(slots=True)
class FragReply:
    txn_id: int
    part: int
    ok: bool
    results: list


@dataclass(slots=True)
class Prepare:
    txn_id: int
    logged: bool


@dataclass(slots=True)
class Vote:
    txn_id: int
    part: int
    ok: bool
    clock: int
    accesses: list
    position: tuple


@dataclass(slots=True)
class Decide:
    txn_id: int
    commit: bool
    commit_ts: int


@dataclass(slots=True)
class Audit:
    """A transaction's outcome, from its base partition to its scheduler (AuditResponse)."""

    txn: object
    committed: bool
    outputs: dict  # to-unit -> ((from SP, to SP, Batch), ...)
    commit_ts: int = 0
    purged: bool = False
    reason: str = ""


# -- scheduling (scheduler to scheduler, driver to scheduler) -----------------------------------
@dataclass(slots=True)
class Invoke:
    unit: str
    batch: int
    source: str | None  # upstream unit, None for input from the client
    items: tuple  # ((from SP, to SP, Batch | None), ...); None: batch is in the target's stream table
    recovering: bool = False


@dataclass(slots=True)
class Skip:
    """Upstream gave up on a batch (restart limit): downstream skips it too."""

    unit: str
    batch: int
    source: str


@dataclass(slots=True)
class Inject:
    """The client's input, injected at a border unit's scheduler in groups: the scheduler's
    site builds each batch itself (input batches are a pure function of the seed and the
    batch id), so one small message carries many batches' invocations."""

    units: tuple  # border units whose scheduler lives at the receiver
    batches: tuple  # batch ids, in order


@dataclass(slots=True)
class BatchDone:
    batch: int
    unit: str
    failed: bool = False
    recovering: bool = False


@dataclass(slots=True)
class BatchesDone:
    """Completions acknowledged in groups: a sink unit committed these batches (`failed`:
    those it skipped, given up upstream)."""

    unit: str
    batches: tuple
    failed: tuple = ()


# -- driver control ----------------------------------------------------------------------------
@dataclass(slots=True)
class Ready:
    node: int
    pid: int
    epoch: int = 0


@dataclass(slots=True)
class History:
    node: int
    records: list | bytes  # TxnRecords, or (multi-process) the pickled list, decoded when read
    busy_s: float
    commits: int  # commits this partition coordinated (crash_after counts them)
    snapshot: int | None = None  # every record of txns before snapshot `snapshot` is shipped
    held_s: float = 0.0  # time the partition was locked by a transaction (executing or waiting)


@dataclass(slots=True)
class SnapshotReq:
    number: int
    gc_below: int


@dataclass(slots=True)
class SnapshotDone:
    number: int
    commit_ts: int
    ok: bool


@dataclass(slots=True)
class Reset:
    """Crash recovery, step 1: drop all volatile state and unflushed log, adopt the epoch
    (and the design `era` the recovered cluster runs: 0 before a migration commits)."""

    epoch: int
    clock: int
    era: int = 0


@dataclass(slots=True)
class Restore:
    """Step 2: load snapshot `number` (or the initial state) and report what it holds; with
    reload False, just report (after a replay)."""

    number: int | None
    reload: bool = True


@dataclass(slots=True)
class StateReport:
    node: int
    progress: dict
    streams: dict  # (from SP, to SP, batch, lane) -> Batch
    oltp_done: set
    log_records: list  # durable command-log records of this partition


@dataclass(slots=True)
class Replay:
    record: object  # LogRecord


@dataclass(slots=True)
class ReplayDone:
    txn_id: int
    ok: bool


@dataclass(slots=True)
class Retrigger:
    """After a crash: send the recovered output batch of `unit` downstream again (a MOVE
    transaction when MOVEs are transactions)."""

    unit: str
    to_unit: str
    batch: int
    items: tuple


@dataclass(slots=True)
class SchedRestore:
    unit: str
    committed: dict  # lane -> last committed batch
    pending: list  # Invoke (for this unit) and Retrigger (from this unit) messages
    start_at: int  # first batch this unit may see


@dataclass(slots=True)
class Finish:
    want_state: bool


@dataclass(slots=True)
class FinalReport:
    node: int
    digests: dict  # table -> int (owned rows only)
    replicas: dict  # replicated table -> digest of this copy
    state: dict | None
    busy_s: float
    log_records: int = 0
    log_flushes: int = 0
    sent: int = 0  # messages this site sent (multi-process)
    cpu_s: float = 0.0  # CPU time of this site's process from its first message to Finish (multi-process)
    refused: int = 0  # connections it closed for a frame this run did not seal (multi-process)
    held_s: float = 0.0  # time the partition was locked by a transaction (executing or waiting)
    payload_bytes: int = 0  # padding bytes this site sent: its stream batches' declared bytes (payload.py)


@dataclass(slots=True)
class Stop:
    pass


# -- migration between designs at a batch boundary (migration.py) -------------------------------
@dataclass(slots=True)
class MigrateStart:
    """Every batch before `at_batch` committed: lay the state out as design `era` (live: send
    what this partition loses; restart: dump everything) and keep it as snapshot `number`."""

    era: int
    number: int
    at_batch: int
    mode: str  # live | restart


@dataclass(slots=True)
class MigrateRows:
    """Live: the rows (windows whole) one partition hands another, pickled once by the sender
    (so their size on the wire is known): {table: ({key: value}, virtual)}."""

    era: int
    payload: bytes


@dataclass(slots=True)
class Reload:
    """Restart: a new partition loads the whole state from the `partitions` dumps of snapshot
    `number` and keeps its own rows."""

    era: int
    number: int
    partitions: int


@dataclass(slots=True)
class MigrateReady:
    """A partition holds its part of the state under design `era` (and wrote its snapshot)."""

    node: int
    era: int
    seq: int  # its last position: the positions after the switch start above every one
    rows: dict  # state item -> rows it sent (live), dumped or loaded (restart)
    wire_bytes: int  # bytes of those rows as pickled for the wire or the dump
    windows: tuple  # the windows it holds now
    busy_s: float
    held_s: float = 0.0


@dataclass(slots=True)
class MigrateSwitch:
    """The migration committed: run design `era` from batch `at_batch` on."""

    era: int
    floor: int
    at_batch: int


@dataclass(slots=True)
class MigrateSwitched:
    node: int
    era: int


@dataclass(slots=True)
class Bundle:
    """Wire envelope: several messages from one node, with its clock and recovery epoch."""

    src: int
    clock: int
    epoch: int
    messages: list = field(default_factory=list)
    padding: object = None  # the declared bytes of the stream batches in it (payload.py); read, then dropped



for _cls in [v for v in list(globals().values())
             if isinstance(v, type) and v.__module__ == __name__ and hasattr(v, "__dataclass_fields__")]:
    pickle_by_fields(_cls)
