"""A site: one partition plus the procedure schedulers that live beside it (DLS), its command
log, and its Lamport clock. Single-threaded and message-driven: the runtime (in-process or a
process of its own) hands it messages and lets it poll for work; it talks to others only
through `send`.
"""
from __future__ import annotations

import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path

from costmodel.files import atomic_write_bytes
from costmodel.sim_params import ENGINE_SERVE_SLICE_S
from engine_sim.engine import messages as m
from engine_sim.engine.partition import Partition
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.recovery import CommandLog, read_snapshot, snapshot_path
from engine_sim.engine.sealing import new_secret, seal
from engine_sim.engine.scheduler import UnitScheduler, injected
from engine_sim.engine.store import Store
from engine_sim.engine.txn import Txn, make_txn_id


_MIGRATION = (m.MigrateStart, m.MigrateRows, m.Reload, m.MigrateSwitch)


@dataclass
class SiteConfig:
    run_dir: str
    fsync: bool = False
    group_commit: bool = True
    group_size: int = 64
    group_interval_s: float = 0.002
    use_time: bool = False  # time-based flushing and shipping (multi-process only)
    ship_size: int = 256
    ship_interval_s: float = 0.02
    serve_budget_s: float = ENGINE_SERVE_SLICE_S  # multi-process: serve this long, then send what it produced
    ack_interval_s: float = 0.002  # multi-process: sink completions go to the driver this often
    t0_ns: int = 0
    secret: bytes = field(default_factory=new_secret, repr=False)  # seals frames, logs, snapshots


def build_store(plan, pid: int) -> Store:
    """A partition's initial state: empty (virtual) tables, or the rows bundled code seeds."""
    router = plan.router
    module = plan.code_module
    tables, virtual = {}, set()
    for t in plan.workload.tables:
        if not router.holds(pid, t.name):
            continue
        rows = module.initial_rows(t.name, t.rows) if module is not None else None
        if rows is None:
            virtual.add(t.name)
            tables[t.name] = {}
        else:
            tables[t.name] = {k: v for k, v in rows.items()
                              if router.row_partition(t.name, k) in (pid, None)}
    windows = {name: spec for name, spec in plan.windows.items() if spec.partition == pid}
    return Store(tables, frozenset(virtual), windows)


class Site:
    def __init__(self, pid: int, plan, cfg: SiteConfig, transport, log_store, epoch: int = 0,
                 clock: int = 0, era: int = 0, plan_of=None):
        self.node = pid
        self.plan = plan
        self.era = era  # the design it runs: 0, or 1 once a migration switched to the next one
        self.plan_of = plan_of or (lambda _era: plan)  # the plan of each era (migration.py)
        self.moving = None  # a migration's move in progress (migration_site.SiteMove)
        self.cfg = cfg
        self.transport = transport
        self.epoch = epoch
        self.clock = clock
        self.group_commit = cfg.group_commit
        self.log = CommandLog(log_store, cfg.group_size, cfg.group_interval_s, cfg.use_time)
        self.partition = Partition(self, pid, build_store(plan, pid))
        self.schedulers: dict[str, UnitScheduler] = {}
        self.early: dict[str, list] = {}  # messages for schedulers not restored yet
        self.pending_acks: list = []
        self.done: dict[str, tuple[list, list]] = {}  # sink unit -> (batches, failed) to acknowledge
        self.done_since = 0.0
        self.history: list = []
        self.shipped_at = time.perf_counter()
        self.snapshot_marker: int | None = None
        self.cpu_started: float | None = None  # process CPU clock at the first message: the run's start
        if epoch == 0:
            self._make_schedulers(-1)

    def _make_schedulers(self, committed: int) -> None:
        """DLS: a scheduler for every unit based here, each lane past batch `committed`."""
        plan = self.plan
        self.schedulers = {}
        if plan.scheduler == "dls":
            for name, unit in plan.units.items():
                if unit.base == self.node and not unit.oltp:
                    self.schedulers[name] = UnitScheduler(self, name, dict.fromkeys(range(len(unit.lanes)),
                                                                                    committed))

    def set_plan(self, plan, era: int, committed: int) -> None:
        """A migration committed: run `plan` from batch committed + 1 on."""
        self.plan = self.partition.plan = plan
        self.era = era
        self._make_schedulers(committed)

    # -- clock ------------------------------------------------------------------------------------
    def new_txn_id(self) -> int:
        self.clock += 1
        return make_txn_id(self.clock, self.node)

    def observe(self, clock: int) -> None:
        if clock > self.clock:
            self.clock = clock

    def commit_ts(self, seen: int) -> int:
        self.clock = max(self.clock, seen) + 1
        return self.clock

    def now_us(self) -> int:
        return (time.monotonic_ns() - self.cfg.t0_ns) // 1000

    # -- messaging --------------------------------------------------------------------------------
    def send(self, dst: int, msg) -> None:
        if dst == self.node:
            self.handle(msg, self.node)
        else:
            self.transport.send(dst, msg)

    def handle(self, msg, src: int) -> None:
        if self.cpu_started is None:
            self.cpu_started = time.process_time()
        p = self.partition
        t = type(msg)
        if t is m.TxnRequest:
            p.enqueue(msg.txn)
        elif t is m.LockReq:
            p.on_lock_req(msg)
        elif t is m.LockReply or t is m.FragReply or t is m.Vote:
            p.on_reply(msg)
        elif t is m.Frag:
            p.on_frag(msg, src)
        elif t is m.Prepare:
            p.on_prepare(msg, src)
        elif t is m.Decide:
            p.on_decide(msg)
        elif t is m.Audit:
            self._scheduler(msg.txn.unit, msg, "on_audit")
        elif t is m.Invoke:
            self._scheduler(msg.unit, msg, "on_invoke")
        elif t is m.Inject:
            for inv in injected(self.plan, msg.units, msg.batches):
                self._scheduler(inv.unit, inv, "on_invoke")
        elif t is m.Skip:
            self._scheduler(msg.unit, msg, "on_skip")
        elif t is m.SnapshotReq:
            p.enqueue(Txn(id=self.new_txn_id(), kind="snapshot", unit="SNAPSHOT", lane=0,
                          batch=msg.gc_below, reply_to=DRIVER, base=self.node, aux=msg.number))
        elif t is m.Replay:
            r = msg.record
            p.enqueue(Txn(id=self.new_txn_id(), kind=r.kind, unit=r.unit, lane=r.lane, batch=r.batch,
                          inputs=r.inputs, reply_to=DRIVER, base=self.node, log=False,
                          trigger=False, move=r.move, replay_of=r.txn_id))
        elif t is m.Restore:
            self.restore(msg.number, msg.reload)
        elif t is m.SchedRestore:
            s = UnitScheduler(self, msg.unit, msg.committed)
            self.schedulers[msg.unit] = s
            s.restore(msg.pending)
            for method, early in self.early.pop(msg.unit, []):
                getattr(s, method)(early)
        elif t is m.Finish:
            self.finish(msg.want_state)
        elif t in _MIGRATION:
            from engine_sim.engine.migration_site import on_site_message

            on_site_message(self, msg)
        else:
            raise TypeError(f"site {self.node}: unexpected message {t.__name__}")

    def _scheduler(self, unit: str, msg, method: str) -> None:
        s = self.schedulers.get(unit)
        if s is None:  # recovering: this scheduler is rebuilt by a SchedRestore on its way
            self.early.setdefault(unit, []).append((method, msg))
        else:
            getattr(s, method)(msg)

    # -- work -------------------------------------------------------------------------------------
    def poll(self) -> bool:
        did = self.partition.poll(self.cfg.serve_budget_s if self.cfg.use_time else None)
        if self.log.due():
            self.flush()
        if self.history and (len(self.history) >= self.cfg.ship_size or (
                self.cfg.use_time and time.perf_counter() - self.shipped_at > self.cfg.ship_interval_s)):
            self.ship()
        if self.done and (not self.cfg.use_time
                          or time.perf_counter() - self.done_since > self.cfg.ack_interval_s):
            self.send_done()
        return did

    def runnable(self) -> bool:
        """Is there work the partition can start now (queued, and not held by a transaction
        waiting for replies)?"""
        p = self.partition
        return bool(p.queue) and p.holder is None

    def on_idle(self) -> None:
        """Nothing to do: write the log group now, hand finished history to the driver."""
        if self.log.buffer or self.pending_acks:
            self.flush()
        if self.history or self.snapshot_marker is not None:
            self.ship()
        if self.done:
            self.send_done()

    def batch_done(self, unit: str, batch: int, failed: bool) -> None:
        """A sink unit finished a batch: acknowledged to the driver in groups (every loop turn
        in-process; multi-process when idle or every `ack_interval_s`), so the driver handles
        one message per group, not one per batch."""
        if not self.done:
            self.done_since = time.perf_counter()
        batches, failures = self.done.setdefault(unit, ([], []))
        batches.append(batch)
        if failed:
            failures.append(batch)

    def send_done(self) -> None:
        done, self.done = self.done, {}
        for unit, (batches, failed) in done.items():
            self.transport.send(DRIVER, m.BatchesDone(unit, tuple(batches), tuple(failed)))

    def flush(self) -> None:
        self.log.force()
        acks, self.pending_acks = self.pending_acks, []
        for txn, audit, records in acks:
            self._deliver(txn, audit, records)

    def ship(self) -> None:
        records, self.history = self.history, []
        if self.cfg.use_time:  # multi-process: pickled once here, decoded only when the driver reads it
            records = pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL)
        self.shipped_at = time.perf_counter()
        marker, self.snapshot_marker = self.snapshot_marker, None
        self.transport.send(DRIVER, m.History(self.node, records, self.partition.busy_s,
                                              self.partition.commits, marker, self.partition.held_now()))

    def complete(self, txn, audit, records: list, wait_for_flush: bool) -> None:
        """A txn finished here; its outcome goes out once its log record is durable."""
        if wait_for_flush:
            self.pending_acks.append((txn, audit, records))
            if not self.group_commit:
                self.flush()
        else:
            self._deliver(txn, audit, records)

    def _deliver(self, txn, audit, records) -> None:
        if txn.kind != "snapshot":
            self.history.extend(records)
        if txn.kind == "snapshot":
            self.ship()
            self.transport.send(DRIVER, m.SnapshotDone(txn.aux, audit.commit_ts, audit.committed))
            return
        if txn.reply_to == self.node:
            self.handle(audit, self.node)
        else:
            self.transport.send(txn.reply_to, audit)

    def report_failure(self, txn, reason: str) -> None:
        pass  # the history shows the given-up batch; the checker reports it

    # -- snapshots, recovery, the end ------------------------------------------------------------
    def write_snapshot(self, number: int, gc_below: int) -> bool:
        self.flush()  # everything before the cut is durable and its history shipped
        self.partition.store.gc_streams(gc_below)
        atomic_write_bytes(snapshot_path(Path(self.cfg.run_dir), number, self.node),
                           seal(self.cfg.secret, self.partition.store.snapshot_bytes()), fsync=self.cfg.fsync)
        self.snapshot_marker = number
        self.ship()
        return True

    def restore(self, number: int | None, reload: bool = True) -> None:
        if reload and number is not None:
            data = read_snapshot(snapshot_path(Path(self.cfg.run_dir), number, self.node), self.cfg.secret)
            self.partition.store.restore_bytes(data)
        s = self.partition.store
        self.transport.send(DRIVER, m.StateReport(self.node, dict(s.progress), s.stream_batches(),
                                                  set(s.oltp_done), self.log.store.read()))

    def run_cpu_s(self, until: float) -> float:
        """CPU time of this site's process from its first message to `until` (its setup and
        the final digests not counted): the share of a core the site took while the run ran."""
        return until - self.cpu_started if self.cpu_started is not None else 0.0

    def finish(self, want_state: bool) -> None:
        started_finish = time.process_time()
        self.flush()
        self.ship()
        if self.done:
            self.send_done()
        store = self.partition.store
        router = self.plan.router
        digests, replicas = {}, {}
        for table in store.tables:
            d = store.table_digest(table)
            if router.replicated(table):
                replicas[table] = d
                if self.node == 0:
                    digests[table] = d
            else:
                digests[table] = d
        state = None
        if want_state:
            state = {t: dict(rows) for t, rows in store.tables.items()
                     if not router.replicated(t) or self.node == 0}
        self.transport.send(DRIVER, m.FinalReport(self.node, digests, replicas, state,
                                                  self.partition.busy_s, self.log.records,
                                                  self.log.flushes,
                                                  getattr(self.transport, "sent", 0),
                                                  self.run_cpu_s(started_finish),
                                                  getattr(self.transport, "refused", 0),
                                                  self.partition.held_now(),
                                                  getattr(self.transport, "payload_sent", 0)))
