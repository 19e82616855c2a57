"""The option records of `run_workload`: the everyday options are its keywords; the rest come
grouped by what they steer (the client, recovery and crashes, the command log, the network
between machines, a migration), so a call names only the groups it changes. Every record checks
its values when it is built: a bad one is one EngineError line (exit status 2), before any run."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from costmodel.design import Design
from costmodel.errors import as_python_number, check_latency_bound
from engine_sim.engine.crash import parse_crash_at
from engine_sim.engine.errors import EngineError
from engine_sim.engine.migration import MODES as MIGRATION_MODES

RECOVERY_MODES = ("strong", "weak", "off")


def check_positive_int(name: str, value, allow_none: bool = False, at_most: int | None = None) -> None:
    """`value` is an integer >= 1 (or None where that means "the default"), at most `at_most`."""
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise EngineError(f"{name} must be an integer >= 1, got {value!r}")
    if at_most is not None and value > at_most:
        raise EngineError(f"{name} must be at most {at_most:,}, got {value:,}")


def python_ints(record, *names: str) -> None:
    """The record's number fields as Python numbers where a numpy one was given (`for k in
    np.arange(...)`, a float32): counts are checked as ints, and a run's settings go into its JSON."""
    for name in names:
        object.__setattr__(record, name, as_python_number(getattr(record, name)))


def check_choice(name: str, value, allowed: tuple[str, ...]) -> None:
    """`value` is one of `allowed`."""
    if value not in allowed:
        raise EngineError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def _check_count(name: str, value, allow_none: bool = True) -> None:
    """An integer >= 0 (or None)."""
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise EngineError(f"{name} must be an integer >= 0, got {value!r}")


def check_record(name: str, value, kind: type) -> None:
    """A run option passed as anything but its record (say a bare string) is refused in one
    line rather than failing deep in the run."""
    if not isinstance(value, kind):
        raise EngineError(f"{name} must be a {kind.__name__}, got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class ClientOptions:
    """The closed-loop client: `in_flight` batches kept in flight (halved while the mean batch
    latency exceeds `latency_bound_s`), `abort_rate` of injected aborts, and the restarts a
    transaction gets before its batch is given up (`restart_limit`)."""

    in_flight: int = 64
    latency_bound_s: float = 1.0
    abort_rate: float = 0.0
    restart_limit: int = 100

    def __post_init__(self) -> None:
        python_ints(self, "in_flight", "restart_limit", "latency_bound_s", "abort_rate")
        check_positive_int("in_flight", self.in_flight)
        check_latency_bound(self.latency_bound_s, EngineError)
        rate = self.abort_rate
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not 0.0 <= rate < 1.0:
            raise EngineError(f"abort rate must be in [0, 1), got {rate!r}")
        if not isinstance(self.restart_limit, int) or isinstance(self.restart_limit, bool) \
                or self.restart_limit < 0:
            raise EngineError(f"restart limit must be an integer >= 0, got {self.restart_limit!r}")


@dataclass(frozen=True)
class RecoveryOptions:
    """Command logging and crashes: `mode` "strong", "weak" or "off"; `snapshot_every` completed
    batches between snapshots (None: a quarter of the run when recovery is on; 0: none);
    `crash_after` K commits of `crash_partition` (None: the first border SP's partition) kill
    it, or `crash_at` = (role, step[, n]) kills the partition playing `role` ("coordinator" or
    "participant") of the n-th distributed transaction at `step` of 2PC ("before_vote",
    "after_vote", "after_decision"), or ("migration", "moving" | "switched"[, partition]) kills
    a partition during a migration; the cluster then recovers. One crash a run."""

    mode: str = "weak"
    snapshot_every: int | None = None
    crash_after: int | None = None
    crash_partition: int | None = None
    crash_at: tuple | str | None = None

    def __post_init__(self) -> None:
        python_ints(self, "snapshot_every", "crash_after", "crash_partition")
        check_choice("--recovery", self.mode, RECOVERY_MODES)
        check_positive_int("--crash-after", self.crash_after, allow_none=True)
        _check_count("snapshot_every", self.snapshot_every)
        _check_count("crash partition", self.crash_partition)
        object.__setattr__(self, "crash_at", parse_crash_at(self.crash_at))  # (role, step, n)
        if self.crash_after is not None and self.mode == "off":
            raise EngineError("--crash-after needs recovery (strong or weak), not --recovery off")
        if self.crash_at is not None and self.mode == "off":
            raise EngineError("a crash point needs recovery (strong or weak), not recovery off")
        if self.crash_at is not None and self.crash_after is not None:
            raise EngineError("ask for one crash: crash_after or crash_at, not both")


@dataclass(frozen=True)
class CommandLogOptions:
    """Where and how the command log is written: `group_commit` batches log writes; `to_disk`
    and `fsync` (None: on disk with fsync for multi-process runs, in memory in-process; a
    `dir` puts it on disk there, kept after the run)."""

    group_commit: bool = True
    fsync: bool | None = None
    to_disk: bool | None = None
    dir: str | Path | None = None

    def __post_init__(self) -> None:
        for name in ("group_commit", "fsync", "to_disk"):
            value = getattr(self, name)
            if not (isinstance(value, bool) or (value is None and name != "group_commit")):
                raise EngineError(f"command log {name} must be true or false, got {value!r}")
        if self.dir is not None and not isinstance(self.dir, (str, Path)):
            raise EngineError(f"command log dir must be a path, got {self.dir!r}")


@dataclass(frozen=True)
class NetworkOptions:
    """The network between emulated machines: `machine_delay_ms` added to every message that
    crosses machines."""

    machine_delay_ms: float = 0.0

    def __post_init__(self) -> None:
        python_ints(self, "machine_delay_ms")
        delay = self.machine_delay_ms
        if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not delay >= 0:
            raise EngineError(f"machine delay must be >= 0 ms, got {delay!r}")


@dataclass(frozen=True)
class MigrationOptions:
    """A migration during the run (the default: none): at batch `at_batch` the run pauses its
    input, moves state and SPs to design `to` (same workload and cluster) and goes on under it;
    `mode` "live" sends rows between partitions, "restart" stops, dumps the whole state,
    restarts under the new design and reloads it (migration.py)."""

    to: Design | None = None
    at_batch: int | None = None
    mode: str = "live"

    def __post_init__(self) -> None:
        python_ints(self, "at_batch")
        if self.to is None:
            if self.at_batch is not None or self.mode != "live":
                raise EngineError("--at-batch and --migration need --migrate-to (the design to migrate to)")
            return
        if not isinstance(self.to, Design):
            raise EngineError(f"the design to migrate to must be a Design, got {type(self.to).__name__}")
        if self.at_batch is None:
            raise EngineError("--migrate-to needs --at-batch (the batch at which to migrate)")
        check_choice("migration mode", self.mode, MIGRATION_MODES)

    @property
    def asked(self) -> bool:
        """Whether the run migrates at all."""
        return self.to is not None
