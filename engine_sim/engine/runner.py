"""`run_workload`: check the inputs, compile the plan, run it (in-process or one OS process
per partition), check the history, measure, and write the trace."""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from costmodel.signals import deferred as signals_deferred
from costmodel.temp_dirs import owned_temp_dir, remove_owned_dir, sweep_abandoned_dirs
from costmodel.design import Design, unplaced_message
from costmodel.errors import DesignError, as_python_int, check_seed
from costmodel.files import as_path
from costmodel.granularity import workload_at
from costmodel.graph import WorkloadGraph
from costmodel.workload import MAX_BATCH_SIZE, Workload
from engine_sim.engine.driver import DriverConfig
from engine_sim.engine.errors import EngineError, EngineFailure
from engine_sim.engine.history import verify_history
from engine_sim.engine.metrics import RunResult, latency_stats
from engine_sim.engine.payload import check_payload
from engine_sim.engine.plan import build_plan
from engine_sim.engine.recovery import FileLogStore, MemoryLogStore
from engine_sim.engine.run_options import (ClientOptions, CommandLogOptions, MigrationOptions, NetworkOptions,
                                           RecoveryOptions, check_choice, check_positive_int, check_record)
from engine_sim.engine.serial import state_digest
from engine_sim.engine.spool import new_spool_dir, remove_spool_dir
from engine_sim.engine.site import SiteConfig

MAX_PROCESSES = 64
MAX_RUN_BATCHES = 10_000_000  # hours of input at any rate the engine runs: a bigger count is a typo


def check_design(workload: Workload, design: Design) -> None:
    """The design must place exactly this workload's SPs, and every table (whole, as
    fragments or tuples, or replicated), on partitions of its own cluster."""
    if not isinstance(design, Design):
        raise EngineError(f"expected a Design, got {type(design).__name__}")
    names = set(workload.procedure_names)
    missing = [p for p in workload.procedure_names if p not in design.procedures]
    extra = [p for p in design.procedures if p not in names]
    if missing:
        raise DesignError(unplaced_message(design, missing, workload.name, kind="procedure "))
    if extra:
        raise DesignError(f"design places procedure {extra[0]!r}, which workload {workload.name!r} does not have")
    n = design.n_partitions
    for name, p in design.procedures.items():
        if not isinstance(p, int) or isinstance(p, bool) or not 0 <= p < n:
            raise DesignError(f"design places {name!r} on partition {p!r}, outside 0..{n - 1}")
    if set(design.state) == set(workload.table_names) | set(workload.window_names):
        # a design naming every table and window is checked as the advisor checks it (a window
        # on its owner's partition); one that leaves windows out gets them with their owners
        design.arrays(WorkloadGraph.from_workload(workload))  # raises DesignError when it does not fit
    elif set(design.state) - set(workload.table_names) - set(workload.window_names):
        # fragments or tuples: held to what every other command holds them to (a table placed
        # both whole and in parts ran, its whole placement ignored, where the rest refuse it)
        design.arrays(WorkloadGraph.from_workload(workload_at(workload, design.state)))


def _options(batches, batch_size, scheduler, move) -> None:
    # a run's input is built batch by batch before it is offered: past these it would not end
    check_positive_int("--batches", batches, at_most=MAX_RUN_BATCHES)
    check_positive_int("--batch-size", batch_size, allow_none=True, at_most=MAX_BATCH_SIZE)
    check_choice("--scheduler", scheduler, ("dls", "central"))
    check_choice("--move", move, ("rpc", "txn"))


def run_workload(workload: Workload, design: Design, *, batches: int, scheduler: str = "dls",
                 move: str = "rpc", in_process: bool = False, seed: int = 0,
                 batch_size: int | None = None, data_parallel: bool = False,
                 trace_out: str | Path | None = None, return_state: bool = False,
                 timeout_s: float | None = None, client: ClientOptions = ClientOptions(),
                 recovery: RecoveryOptions = RecoveryOptions(),
                 command_log: CommandLogOptions = CommandLogOptions(),
                 network: NetworkOptions = NetworkOptions(),
                 migration: MigrationOptions = MigrationOptions()) -> RunResult:
    """Run `batches` input batches of `workload` under `design` and prove the history.

    The everyday options are keywords: `return_state` (final rows), `timeout_s` (default:
    `default_timeout_s` of the run; past it the run fails with one error), `trace_out` (a
    Parquet trace directory). The rest come as records (run_options.py): `client` (batches in
    flight, latency bound, injected aborts, restart limit), `recovery` (mode, snapshots, a crash
    and where), `command_log`, `network` (delay between machines) and `migration` (a design to
    move to at a batch, live or by restart; `result.migration` says what it took). A migration
    crash point `("migration", "moving" | "switched"[, partition])` kills that partition (default
    the recovery's `crash_partition`) during the move, before the commit point (the run recovers
    to `design`), or on the switch, after it (to `migration.to`).
    """
    batches, batch_size, seed, trace_out = _checked_arguments(
        workload, design, batches, batch_size, seed, trace_out, scheduler, move, in_process,
        (("client", client, ClientOptions), ("recovery", recovery, RecoveryOptions),
         ("command_log", command_log, CommandLogOptions), ("network", network, NetworkOptions),
         ("migration", migration, MigrationOptions)))
    options = dict(seed=seed, batch_size=batch_size, scheduler=scheduler, move=move, recovery=recovery.mode,
                   data_parallel=data_parallel)
    compiled = _compiler(workload, options, client, recovery.crash_at)
    plan = compiled(design)
    if not in_process:
        check_payload(plan)
    crash_partition = _crash_partition(recovery.crash_partition, plan)
    next_plan = _migration_plan(workload, design, plan, compiled, batches, migration, recovery.crash_at,
                                recovery.crash_after)
    crash = _Crash(_migration_crash_point(recovery.crash_at, crash_partition, plan, next_plan),
                   recovery.crash_after, crash_partition)
    snapshot_every = _snapshot_every(recovery, batches)
    _check_crash_reachable(crash, plan, next_plan, batches, migration, snapshot_every)
    timeout_s = _checked_timeout(timeout_s, plan, batches)
    log = _CommandLog.of(command_log, in_process)
    own_dir = log.dir is None
    if own_dir:  # what runs killed with SIGKILL left behind goes first
        for prefix in ("eng-", "engs-"):
            sweep_abandoned_dirs(prefix)
    run_dir = history_dir = None
    try:  # (the directories made in here: a Ctrl-C just after the first left it in TMPDIR)
        run_dir = owned_temp_dir("eng-") if own_dir else Path(log.dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        history_dir = new_spool_dir()  # the history, on disk as it arrives; removed below
        t0 = time.monotonic_ns()
        site_cfg = SiteConfig(run_dir=str(run_dir), fsync=log.fsync, group_commit=command_log.group_commit,
                              use_time=not in_process, t0_ns=t0, ship_size=_ship_size(in_process, crash.after))
        driver_cfg = DriverConfig(batches=batches, run_dir=str(run_dir), in_flight=client.in_flight,
                                  latency_bound_s=client.latency_bound_s, snapshot_every=snapshot_every,
                                  crash_after=crash.after, crash_partition=crash.partition,
                                  want_state=return_state, fsync=log.fsync, t0_ns=t0,
                                  migrate_at=migration.at_batch if next_plan is not None else None,
                                  migrate_mode=migration.mode, history_dir=str(history_dir))
        started = time.perf_counter()
        if in_process:
            ran = _run_in_process(plan, next_plan, site_cfg, driver_cfg, run_dir, log, network, timeout_s)
        else:
            ran = _run_in_processes(plan, next_plan, site_cfg, driver_cfg, network, timeout_s, workload, design,
                                    dict(options, abort_rate=client.abort_rate,
                                         restart_limit=client.restart_limit, crash_at=crash.at))
        _check_the_crash_came(ran.driver, crash)
        wall_total = time.perf_counter() - started
        result = _result(plan, ran.driver, batches, wall_total, ran.messages, ran.log_stats,
                         "in-process" if in_process else "multi-process", client.latency_bound_s, return_state,
                         next_plan)
        result.pids = ran.pids
        result.refused_frames = ran.refused
        result.payload_bytes = ran.payload
        if trace_out is not None:
            _write_run_trace(trace_out, plan, ran.driver, result, design, seed, batches, scheduler, move,
                             recovery.mode)
        ran.driver.history.close()
        return result
    finally:
        with signals_deferred():  # (a signal in the middle of it left the rest in TMPDIR)
            remove_spool_dir(history_dir)
            if own_dir and run_dir is not None:
                remove_owned_dir(run_dir)


def _checked_arguments(workload, design, batches, batch_size, seed, trace_out, scheduler, move,
                       in_process: bool, records) -> tuple[int, int | None, int, Path | None]:
    """The run's arguments refused in one line before anything runs (numpy's counts taken as
    counts, the trace directory as a path), the design checked against the workload; `records`:
    (name, the record given, its type) of each option record."""
    if not isinstance(workload, Workload):
        raise EngineError(f"expected a Workload, got {type(workload).__name__}")
    batches, batch_size = as_python_int(batches), as_python_int(batch_size)  # (numpy's are counts too)
    seed = check_seed(seed, EngineError)  # (-1 ran, a string failed deep in the input)
    if trace_out is not None:  # (5 failed after the whole run, as the trace was written)
        trace_out = as_path(trace_out, EngineError)
    for name, record, kind in records:
        check_record(name, record, kind)
    _options(batches, batch_size, scheduler, move)
    check_design(workload, design)
    if not in_process and design.n_partitions > MAX_PROCESSES:
        raise EngineError(f"the design has {design.n_partitions} partitions; the multi-process engine runs "
                          f"at most {MAX_PROCESSES} here (use in_process=True or the simulator)")
    return batches, batch_size, seed, trace_out


def _compiler(workload: Workload, options: dict, client: ClientOptions, crash_at) -> Callable[[Design], object]:
    """What compiles a design into a plan with the run's options: the run's own design, and
    the one it migrates to."""
    def compiled(d: Design):
        p = build_plan(workload, d, **options)
        p.abort_rate = float(client.abort_rate)
        p.restart_limit = int(client.restart_limit)
        p.crash_at = crash_at
        return p

    return compiled


@dataclass(frozen=True)
class _Crash:
    """The crash a run was asked for, resolved: at a point (`at`, a migration's with its
    partition), or after `after` commits of `partition` (the first border unit's base
    partition unless the recovery options name one)."""

    at: tuple | None
    after: int | None
    partition: int


def _crash_partition(asked: int | None, plan) -> int:
    """The partition a crash kills: the one asked for, else the first border unit's."""
    partition = asked
    if partition is None:
        partition = plan.units[plan.borders[0]].base if plan.borders else 0
    if not 0 <= partition < plan.n_partitions:
        raise EngineError(f"crash partition {partition} is outside 0..{plan.n_partitions - 1}")
    return partition


def _migration_crash_point(crash_at, crash_partition: int, plan, next_plan):
    """A migration crash point with its partition (the crash partition when it names none),
    set on both plans; any other crash point as it is."""
    if crash_at is None or crash_at[0] != "migration":
        return crash_at
    part = crash_partition if crash_at[2] is None else crash_at[2]
    if not 0 <= part < plan.n_partitions:
        raise EngineError(f"crash partition {part} is outside 0..{plan.n_partitions - 1}")
    crash_at = (crash_at[0], crash_at[1], part)
    plan.crash_at = next_plan.crash_at = crash_at
    return crash_at


def _snapshot_every(recovery: RecoveryOptions, batches: int) -> int:
    """Batches between snapshots: as asked, else four a run with recovery on (none off)."""
    if recovery.snapshot_every is not None:
        return recovery.snapshot_every
    return max(1, batches // 4) if recovery.mode != "off" else 0


def _check_crash_reachable(crash: _Crash, plan, next_plan, batches: int, migration: MigrationOptions,
                           snapshot_every: int) -> None:
    """A crash after more commits than the partition can make in the run never comes: refused."""
    if crash.after is None:
        return
    most = most_commits(plan, batches, crash.partition, snapshot_every)
    if next_plan is not None:  # the design's batches before the migration, the next design's after
        at = min(max(int(migration.at_batch), 0), batches)
        most = (most_commits(plan, at, crash.partition, snapshot_every)
                + most_commits(next_plan, batches - at, crash.partition, snapshot_every) + MIGRATION_SLACK)
    if crash.after > most:
        raise EngineError(f"--crash-after {crash.after} cannot happen: partition {crash.partition} "
                          f"commits at most {most} transactions in {batches} batches")


def _checked_timeout(timeout_s, plan, batches: int) -> float:
    """The run's deadline: as given (> 0 seconds), else `default_timeout_s`."""
    if timeout_s is None:
        return default_timeout_s(plan, batches)
    if not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
        raise EngineError(f"timeout must be > 0 seconds, got {timeout_s!r}")
    return timeout_s


@dataclass(frozen=True)
class _CommandLog:
    """Where the command log goes: a directory given (kept after the run), else one of the
    run's own; on disk by default for processes, in memory in-process; fsync'd when on disk
    unless told."""

    dir: str | Path | None
    on_disk: bool
    fsync: bool

    @classmethod
    def of(cls, options: CommandLogOptions, in_process: bool) -> _CommandLog:
        on_disk = (not in_process) if options.to_disk is None else options.to_disk
        if options.dir is not None:
            on_disk = True
        return cls(options.dir, on_disk, on_disk if options.fsync is None else options.fsync)


@dataclass
class _Ran:
    """What a runtime hands back: its driver (history, commits, final reports) and the counts
    only it knows."""

    driver: object
    messages: int
    refused: int  # frames refused (multi-process)
    payload: int  # bytes of padding crossings carried (multi-process)
    log_stats: list  # (log records, log flushes) per partition
    pids: list[int]  # the partitions' processes (none in-process)


def _run_in_process(plan, next_plan, site_cfg: SiteConfig, driver_cfg: DriverConfig, run_dir: Path,
                    log: _CommandLog, network: NetworkOptions, timeout_s: float) -> _Ran:
    """Every partition in this process, its command log on disk or in memory (closed after)."""
    from engine_sim.engine.inproc import InProcessRuntime

    stores = {k: (FileLogStore(run_dir / f"p{k}.log", log.fsync, secret=site_cfg.secret) if log.on_disk
                  else MemoryLogStore())
              for k in range(plan.n_partitions)}
    try:
        runtime = InProcessRuntime(plan, site_cfg, driver_cfg, stores, network.machine_delay_ms / 1000.0,
                                   next_plan)
        driver = runtime.run(timeout_s)
    finally:
        for store in stores.values():
            store.close()
    return _Ran(driver, runtime.messages, 0, 0, [(r.log_records, r.log_flushes) for r in driver.finals.values()], [])


def _run_in_processes(plan, next_plan, site_cfg: SiteConfig, driver_cfg: DriverConfig, network: NetworkOptions,
                      timeout_s: float, workload: Workload, design: Design, options: dict) -> _Ran:
    """One OS process per partition, each compiling the plan again from `options`."""
    from engine_sim.engine.multiproc import MultiProcessRuntime

    runtime = MultiProcessRuntime(plan, site_cfg, driver_cfg, network.machine_delay_ms / 1000.0,
                                  workload=workload, design=design, options=options, next_plan=next_plan)
    driver = runtime.run(timeout_s)
    return _Ran(driver, runtime.messages, runtime.refused, runtime.payload_bytes, runtime.log_stats,
                list(runtime.pids))


def _check_the_crash_came(driver, crash: _Crash) -> None:
    """A crash asked for that never happened (the run ended first) fails the run."""
    crash_at, crash_after, crash_partition = crash.at, crash.after, crash.partition
    if (crash_after is not None or crash_at is not None) and not driver.crashed:
        asked = f"after {crash_after} commits of partition {crash_partition}" if crash_at is None \
            else f"at migration step {crash_at[1]} on partition {crash_at[2]}" if crash_at[0] == "migration" \
            else f"at {crash_at[0]} {crash_at[1]} of distributed transaction {crash_at[2]}"
        raise EngineFailure(f"the crash asked for ({asked}) never happened: the run ended first "
                            f"(partition commits: {dict(sorted(driver.commits.items()))})")


def _write_run_trace(trace_out: Path, plan, driver, result: RunResult, design: Design, seed: int, batches: int,
                     scheduler: str, move: str, recovery_mode: str) -> None:
    """The run's Parquet trace, its manifest naming how it ran; `result.trace_dir` says where."""
    from engine_sim.engine.trace_writer import write_trace

    write_trace(trace_out, plan, driver.history,
                {"seed": seed, "batches": batches, "batch_size": plan.batch_size,
                 "mode": result.mode, "scheduler": scheduler, "move": move,
                 "recovery": recovery_mode, "design_method": design.method,
                 "history_check": result.history_check})
    result.trace_dir = str(trace_out)


def _result(plan, driver, batches, wall_total, messages, log_stats, mode, bound, want_state,
            next_plan=None) -> RunResult:
    verdict = verify_history(plan, driver, batches, next_plan)
    check, counts = verdict.check, verdict.counts
    violations = list(driver.violations) + list(check.violations)
    finals = driver.finals
    per_table: dict[str, int] = {}
    replicas: dict[str, set] = {}
    for rep in finals.values():
        for table, d in rep.digests.items():
            per_table[table] = (per_table.get(table, 0) + d) % (1 << 128)
        for table, d in rep.replicas.items():
            replicas.setdefault(table, set()).add(d)
    for table, ds in sorted(replicas.items()):
        if len(ds) > 1:
            violations.append(f"replicas of {table} diverged")
    digest = state_digest(per_table)
    serial = ""
    if check.ok:
        serial = verdict.serial_digest
        if verdict.serial_error:
            violations.append(f"serial re-execution failed: {verdict.serial_error}")
        if serial and serial != digest:
            violations.append(f"state digest {digest[:12]}... differs from the serial re-execution's "
                              f"{serial[:12]}... (serial_digest): the final state is not the one a "
                              f"serial execution of the committed transactions reaches")
    state = None
    if want_state:
        state = {}
        for node in sorted(finals):
            for table, rows in (finals[node].state or {}).items():
                state.setdefault(table, {}).update(rows)
    p50, p99, mean = latency_stats(driver.latency_us)
    start = driver.started_us or 0
    end = driver.last_done_us or start
    wall = max((end - start) / 1e6, 1e-9)
    done = len(driver.done_us)
    n = plan.n_partitions
    busy = [driver.busy_before.get(k, 0.0) + driver.busy.get(k, 0.0) for k in range(n)]
    held = [driver.held_before.get(k, 0.0) + driver.held.get(k, 0.0) for k in range(n)]
    d = plan.design
    return RunResult(
        throughput_tps=done * plan.batch_size / wall, throughput_bps=done / wall,
        latency_p50_ms=p50, latency_p99_ms=p99,
        distributed_txns=counts.distributed_txns, moves=counts.moves,
        history_check="ok" if not violations else violations[0],
        state_digest=digest, serial_digest=serial, committed=counts.committed,
        aborts=counts.aborts, restarts=counts.restarts,
        partition_busy_s=busy, partition_held_s=held, wall_s=wall, latency_mean_ms=mean, latency_bound_s=bound,
        within_latency_bound=mean / 1000.0 <= bound, in_flight=driver.in_flight, batches=batches,
        batch_size=plan.batch_size, workload=plan.workload.name, machines=d.machines,
        partitions_per_machine=d.partitions_per_machine, mode=mode, scheduler=plan.scheduler,
        move=plan.move, recovery=plan.recovery,
        # what ran as lanes (a design's own, or --data-parallel's), not the flag: the flag with no
        # partition key to split on said true, a design with lanes and no flag false
        data_parallel=any(len(u.lanes) > 1 for u in plan.units.values()),
        lanes=sorted(m for u in plan.units.values() if len(u.lanes) > 1 for m in u.members), seed=plan.seed,
        crashed=driver.crashed, recovery_s=driver.recovery_s, replayed=driver.replayed,
        move_txns=counts.move_txns,
        log_records=sum(a for a, _ in log_stats), log_flushes=sum(b for _, b in log_stats),
        messages=messages, violations=violations[:20], state=state,
        partition_cpu_s=[finals[k].cpu_s for k in range(n) if k in finals] if mode != "in-process" else [],
        driver_cpu_s=driver.cpu_s,
        migration=None if driver.migration is None else driver.migration.result(plan.workload, plan,
                                                                                  plan.batch_size))


def _migration_plan(workload, design, plan, compiled, batches, migration: MigrationOptions, crash_at,
                    crash_after):
    """The plan of the design a run migrates to (None: no migration), after every check."""
    from engine_sim.engine.migration_plan import migration_plan

    if not migration.asked:
        if crash_at is not None and crash_at[0] == "migration":
            raise EngineError("a migration crash point needs a migration (--migrate-to and --at-batch)")
        return None
    if migration.mode == "restart" and (crash_at is not None or crash_after is not None):
        raise EngineError("a crash during a migration is tested with the live migration, not restart")
    return migration_plan(workload, design, migration.to, plan, compiled, batches, migration.at_batch)


PER_TXN_S, PER_TUPLE_S = 0.04, 200e-6  # far above what a healthy transaction takes, and a tuple of it
PER_BYTE_S = 100e-9  # far above what a declared stream byte costs between processes (about 20 ns, loaded)


def default_timeout_s(plan, batches: int) -> float:
    """A deadline no healthy run comes near: a minute, plus 40 ms per transaction the run
    executes (every lane of every unit, every batch; a healthy one takes well under 1 ms,
    a crash's replay runs some of them twice), 0.2 ms per tuple of its batch (a healthy
    one takes about 0.04 ms: a run of 3 batches of 1,000,000 tuples passed a 60 s deadline)
    and 100 ns per byte its streams declare a batch (the padding a crossing carries, payload.py:
    10 MB a batch took about 0.2 s on 2 loaded cores)."""
    per_batch = sum(len(u.lanes) for u in plan.units.values())
    stream_bytes = sum(s.tuples * plan.scale * s.tuple_bytes for s in plan.workload.streams)
    return 60.0 + batches * (per_batch * (PER_TXN_S + PER_TUPLE_S * plan.batch_size) + PER_BYTE_S * stream_bytes)


def _ship_size(in_process: bool, crash_after: int | None) -> int:
    """History records a site ships to the driver at once. The driver hears a partition's
    commit count only with them, and crashes it after K only while batches run: in-process,
    16 at a time told the last count after the run had ended, so a K among the last 16 never
    fired. Asked for a crash, each is shipped as it commits (multi-process sites also ship
    on a timer)."""
    if not in_process:
        return 256
    return 1 if crash_after is not None else 16


MIGRATION_SLACK = 4  # what a migration's own steps may commit on a partition, beyond the batches'


def most_commits(plan, batches: int, partition: int, snapshot_every: int) -> int:
    """An upper bound on the transactions `partition` coordinates in a run (its lanes' and
    OLTP procedures' batches, MOVEs it sends, snapshots): a crash after more never comes."""
    per_batch = 0
    for u in plan.units.values():
        lanes = sum(1 for base in (u.lanes or (u.base,)) if base == partition)
        per_batch += lanes
        if plan.move == "txn" and u.base == partition:
            per_batch += len(u.outputs)
    snapshots = (batches // snapshot_every + 1) if (snapshot_every and partition == 0) else 0
    return batches * per_batch + snapshots
