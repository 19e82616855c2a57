"""The driver: the client that feeds input batches (closed loop, a bounded number of batches
in flight), invokes OLTP procedures, hosts the central scheduler when asked, takes snapshots,
collects the history, kills a partition when told to and coordinates recovery, and finally
gathers the state digest."""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from engine_sim.engine import messages as m
from engine_sim.engine.crash import Recovery
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.inputs import input_batch
from engine_sim.engine.recovery import write_manifest
from engine_sim.engine.scheduler import UnitScheduler, entry_members, injected
from engine_sim.engine.metrics import CompletedBatches, LatencyHistogram
from engine_sim.engine.spool import HistorySpool, MemoryHistory
from engine_sim.engine.txn import Batch, Txn, make_txn_id


@dataclass
class DriverConfig:
    batches: int
    run_dir: str
    in_flight: int = 64  # batches the client keeps in flight (halved while over the latency bound)
    latency_bound_s: float = 1.0
    snapshot_every: int = 0  # completed batches between snapshots (0: none)
    crash_after: int | None = None
    crash_partition: int = 0
    want_state: bool = False
    fsync: bool = False
    t0_ns: int = 0
    migrate_at: int | None = None  # migrate to the runtime's next plan at this batch (migration.py)
    migrate_mode: str = "live"
    history_dir: str | None = None  # spool the history to this directory (None: keep it in memory)


class Driver:
    node = DRIVER

    def __init__(self, plan, cfg: DriverConfig, runtime, next_plan=None):
        self.clock = 0
        self.epoch = 0
        self.cfg = cfg
        self.runtime = runtime
        self.set_plan(plan, 0, -1)
        self.migration = None
        if cfg.migrate_at is not None:
            from engine_sim.engine.migration import MigrationControl

            self.migration = MigrationControl(self, next_plan, cfg.migrate_at, cfg.migrate_mode)
        self.injections: dict[int, list] = {}  # scheduler node -> batch ids not sent yet
        self.in_flight = max(1, cfg.in_flight)
        self.in_flight_history: list[int] = [self.in_flight]
        self.next_batch = 0
        self.outstanding: set[int] = set()
        self.sink_reports: dict[int, set] = {}
        self.submit_us: dict[int, int] = {}  # batches not finished yet -> when they arrived
        # finished batches (their times only where a migration's figures need them) and the
        # latencies: bounded memory however long the run (metrics.py)
        self.done_us = CompletedBatches(cfg.batches, times=cfg.migrate_at is not None)
        self.latency_us = LatencyHistogram()
        self.failed: set[int] = set()
        self.oltp_pending: dict[tuple[str, int], Txn] = {}
        # the surviving history: spooled to disk as it arrives (multi-process shipments as the
        # pickled bytes they came in), so a long run's driver holds none of it
        self.history = HistorySpool(cfg.history_dir) if cfg.history_dir else MemoryHistory()
        self.recent: deque = deque(maxlen=32)  # latencies (us) of the last completed batches
        self.in_flight_from = 0  # first batch submitted under the current in-flight limit
        self.lost: list = []  # commits a crash undid (weak) or that replay must bring back (strong)
        self.busy: dict[int, float] = {}
        self.busy_before: dict[int, float] = {}
        self.held: dict[int, float] = {}  # as `busy`: time each partition was locked
        self.held_before: dict[int, float] = {}
        self.commits: dict[int, int] = {}
        self.snapshot = (None, 0)  # (number, commit ts) of the last complete snapshot
        self.snap_inflight: int | None = None
        self.snap_done: dict[int, int] = {}
        self.snap_markers: dict[int, set] = {}
        self.next_snapshot_at = cfg.snapshot_every or 0
        self.completed_count = 0
        self.phase = "run"
        self.recovery: Recovery | None = None
        self.crashed = False
        self.recovery_s = 0.0
        self.replayed = 0
        self.finals: dict[int, m.FinalReport] = {}
        self.violations: list[str] = []
        self.started_us = None
        self.last_done_us = None
        self.cpu_s = 0.0  # CPU time of the driver's process while it ran (multi-process)

    def set_plan(self, plan, era: int, committed: int) -> None:
        """Run `plan` (design `era`): at the start, and when a migration commits (every
        scheduler then starts after batch `committed`)."""
        self.plan = plan
        self.era = era
        self.schedulers: dict[str, UnitScheduler] = {}
        if plan.scheduler == "central":
            self.schedulers = {u: UnitScheduler(self, u, dict.fromkeys(range(len(unit.lanes)), committed))
                               for u, unit in plan.units.items() if not unit.oltp}
        self.entry = {u: entry_members(plan, u) for u in plan.borders}
        self.inject_units: dict[int, tuple] = {}  # scheduler node -> border units it schedules
        for u in plan.borders:
            node = plan.scheduler_node(u)
            self.inject_units[node] = self.inject_units.get(node, ()) + (u,)

    # -- plumbing ---------------------------------------------------------------------------------
    @property
    def records(self) -> list:
        """The surviving history as a list (read whole: at a crash, or by a caller that wants
        it; the checker reads `history` as it streams). Multi-process sites ship it pickled;
        it is decoded only when read, so the driver spends nothing on it per batch."""
        return list(self.history)

    @records.setter
    def records(self, records: list) -> None:
        self.history.rewrite(records)

    def add_record(self, record) -> None:
        """A record the driver itself commits (a migration), without decoding the history."""
        self.history.append([record])

    def now_us(self) -> int:
        return (time.monotonic_ns() - self.cfg.t0_ns) // 1000

    def send(self, dst: int, msg) -> None:
        if dst == DRIVER:
            self.handle(msg, DRIVER)
        else:
            self.runtime.send(dst, msg)

    def new_txn_id(self) -> int:
        self.clock += 1
        return make_txn_id(self.clock, DRIVER)

    def observe(self, clock: int) -> None:
        if clock > self.clock:
            self.clock = clock

    def report_failure(self, txn, reason: str) -> None:
        """A batch given up at the restart limit: nothing to do here, the history records the
        skip and the checker reports the batch as not processed exactly once."""

    @property
    def finished(self) -> bool:
        return self.phase == "done"

    # -- input ------------------------------------------------------------------------------------
    def input_batch(self, b: int) -> Batch:
        return input_batch(self.plan, b)

    def submit(self, b: int, resubmit: bool = False) -> None:
        """Submit input batch b: queued for the border units' schedulers and sent in groups
        (`send_injections`), one Inject per scheduler node for all batches of a loop turn."""
        self.send_input(b, oltp=not resubmit)
        if not resubmit:
            self.admit(b)

    def send_input(self, b: int, oltp: bool = True) -> None:
        for node in self.inject_units:
            self.injections.setdefault(node, []).append(b)
        if oltp:
            for proc in self.plan.oltp_units:
                self.submit_oltp(proc, b, 0)

    def admit(self, b: int) -> None:
        """Batch b arrived: its latency counts from now (it may wait in the client's queue
        while a migration pauses the input)."""
        self.submit_us.setdefault(b, self.now_us())
        if self.started_us is None:
            self.started_us = self.submit_us[b]
        self.outstanding.add(b)
        self.sink_reports[b] = set()

    def submit_oltp(self, proc: str, b: int, restarts: int, age: int = 0) -> None:
        plan = self.plan
        txn = Txn(id=self.new_txn_id(), kind="oltp", unit=proc, lane=0, batch=b, restarts=restarts,
                  reply_to=DRIVER, base=plan.units[proc].base, log=plan.logged(proc, "oltp"), prio=age)
        self.oltp_pending[(proc, b)] = txn
        self.send(txn.base, m.TxnRequest(txn))

    # -- the loop ----------------------------------------------------------------------------------
    def send_injections(self) -> None:
        injections, self.injections = self.injections, {}
        for node, batches in injections.items():
            self.send(node, m.Inject(self.inject_units[node], tuple(batches)))

    def poll(self) -> bool:
        did = self._poll_run() if self.phase == "run" else False
        if self.injections:
            self.send_injections()
            did = True
        return did

    def _poll_run(self) -> bool:
        did = False
        mig = self.migration
        while self.next_batch < self.cfg.batches and len(self.outstanding) < self.in_flight:
            if mig is not None and mig.holds(self.next_batch):
                mig.hold(self.next_batch)  # it arrives and waits while the migration pauses the input
            else:
                self.submit(self.next_batch)
            self.next_batch += 1
            did = True
        migrating = False
        if mig is not None:
            did = mig.poll() or did
            migrating = mig.active
        if (self.cfg.snapshot_every and self.snap_inflight is None and not migrating
                and self.completed_count >= self.next_snapshot_at and self.next_batch < self.cfg.batches):
            self.request_snapshot()
            did = True
        if (self.next_batch >= self.cfg.batches and not self.outstanding and not self.oltp_pending
                and self.snap_inflight is None and not migrating):
            self.phase = "finish"
            for node in range(self.plan.n_partitions):
                self.send(node, m.Finish(self.cfg.want_state))
            did = True
        return did

    def request_snapshot(self) -> None:
        n = (self.snapshot[0] or 0) + 1 if self.snap_inflight is None else self.snap_inflight
        self.snap_inflight = n
        self.snap_markers[n] = set()
        low = min(self.outstanding) if self.outstanding else self.next_batch
        self.send(0, m.SnapshotReq(n, low))
        self.next_snapshot_at = self.completed_count + self.cfg.snapshot_every

    # -- messages ---------------------------------------------------------------------------------
    def handle(self, msg, src: int) -> None:
        t = type(msg)
        if t is m.History:
            self.on_history(msg)
        elif t is m.BatchesDone:
            failed = msg.failed
            for b in msg.batches:
                self.sink_done(b, msg.unit, b in failed)
        elif t is m.Inject:  # central scheduler
            for inv in injected(self.plan, msg.units, msg.batches):
                self.schedulers[inv.unit].on_invoke(inv)
        elif t is m.BatchDone:
            if msg.recovering:
                if self.recovery is not None:
                    self.recovery.on_replayed(msg)
            else:
                self.on_batch_done(msg)
        elif t is m.Audit:
            txn = msg.txn
            if txn.replay_of is not None:
                if self.recovery is not None:
                    self.recovery.on_replay_audit(msg)
            elif txn.kind == "oltp":
                self.on_oltp(msg)
            else:
                self.schedulers[txn.unit].on_audit(msg)
        elif t is m.Invoke:
            self.schedulers[msg.unit].on_invoke(msg)
        elif t is m.Skip:
            self.schedulers[msg.unit].on_skip(msg)
        elif t is m.SnapshotDone:
            self.on_snapshot_done(msg)
        elif t is m.SchedRestore:  # central scheduler, after a crash
            s = UnitScheduler(self, msg.unit, msg.committed)
            self.schedulers[msg.unit] = s
            s.restore(msg.pending)
        elif t in (m.Ready, m.StateReport):
            if self.recovery is not None:
                self.recovery.handle(msg)
        elif t is m.MigrateReady or t is m.MigrateSwitched:
            if self.migration is not None:
                self.migration.handle(msg)
        elif t is m.FinalReport:
            self.finals[msg.node] = msg
            self.busy[msg.node] = msg.busy_s
            self.held[msg.node] = msg.held_s
            if len(self.finals) == self.plan.n_partitions:
                self.phase = "done"
        else:
            raise TypeError(f"driver: unexpected message {t.__name__}")

    def handle_bundles(self, bundles) -> bool:
        """Multi-process: the messages of the bundles one poll returned; True if there were any.
        A bundle sent in an epoch that ended is void, and so is the rest of the bundle whose
        message starts a crash: a partition can ship its history twice in one bundle, and when
        the first shipment starts the recovery, the second's commits are ones the replay brings
        back (read, they were in the history twice)."""
        got = False
        for b in bundles:
            if b.epoch < self.epoch:
                continue
            self.observe(b.clock)
            for msg in b.messages:
                self.handle(msg, b.src)
                got = True
                if b.epoch < self.epoch:
                    break
        return got

    def on_history(self, msg: m.History) -> None:
        if isinstance(msg.records, bytes):
            self.history.append_packed(msg.records)
        elif msg.records:
            self.history.append(msg.records)
        self.busy[msg.node] = msg.busy_s
        self.held[msg.node] = msg.held_s
        self.commits[msg.node] = msg.commits
        if msg.snapshot is not None and msg.snapshot in self.snap_markers:
            self.snap_markers[msg.snapshot].add(msg.node)
            self._maybe_snapshot_complete(msg.snapshot)
        c = self.cfg
        if (c.crash_after is not None and not self.crashed and self.phase == "run"
                and msg.node == c.crash_partition and msg.commits >= c.crash_after):
            self.crashed = True
            self.recovery = Recovery(self)
            self.recovery.start()

    def on_batch_done(self, msg: m.BatchDone) -> None:
        self.sink_done(msg.batch, msg.unit, msg.failed)

    def sink_done(self, b: int, unit: str, failed: bool) -> None:
        if b not in self.outstanding:
            return
        reports = self.sink_reports.setdefault(b, set())
        reports.add(unit)
        if failed:
            self.failed.add(b)
        if len(reports) >= len(self.plan.sinks) and not self._oltp_waiting(b):
            self.finish_batch(b)

    def batch_done(self, unit: str, batch: int, failed: bool) -> None:
        """A sink unit's scheduler here (central) finished a batch."""
        self.sink_done(batch, unit, failed)

    def _oltp_waiting(self, b: int) -> bool:
        return any((proc, b) in self.oltp_pending for proc in self.plan.oltp_units)

    def finish_batch(self, b: int) -> None:
        self.outstanding.discard(b)
        self.sink_reports.pop(b, None)  # a finished batch's reports are not read again
        now = self.now_us()
        if self.done_us.add(b, now):
            latency = now - self.submit_us.pop(b)
            self.latency_us.add(latency)
            if b >= self.in_flight_from:
                self.recent.append(latency)
            self.completed_count += 1
            self._adapt_in_flight()
        self.last_done_us = now

    def _adapt_in_flight(self) -> None:
        """Closed loop at a latency bound: halve the batches in flight while the mean end-to-end
        latency of the last batches exceeds the bound. Only batches submitted under the current
        limit count: a halving is judged on what it did, not on the batches queued before it."""
        recent = self.recent
        if len(recent) < 8 or self.in_flight <= 1:
            return
        mean_s = sum(recent) / len(recent) / 1e6
        if mean_s > self.cfg.latency_bound_s:
            self.in_flight = max(1, self.in_flight // 2)
            self.in_flight_history.append(self.in_flight)
            self.recent.clear()
            self.in_flight_from = self.next_batch

    def on_oltp(self, audit: m.Audit) -> None:
        txn = audit.txn
        key = (txn.unit, txn.batch)
        if self.oltp_pending.get(key) is not txn and (key not in self.oltp_pending
                                                     or self.oltp_pending[key].id != txn.id):
            return
        if audit.committed:
            del self.oltp_pending[key]
            b = txn.batch
            if b in self.outstanding and len(self.sink_reports.get(b, ())) >= len(self.plan.sinks) \
                    and not self._oltp_waiting(b):
                self.finish_batch(b)
        else:
            self.submit_oltp(txn.unit, txn.batch, txn.restarts + 1, txn.age)

    def on_snapshot_done(self, msg: m.SnapshotDone) -> None:
        if msg.number != self.snap_inflight:
            return
        if not msg.ok:  # refused a lock: try again with a new id
            self.send(0, m.SnapshotReq(msg.number, min(self.outstanding) if self.outstanding else self.next_batch))
            return
        self.snap_done[msg.number] = msg.commit_ts
        self._maybe_snapshot_complete(msg.number)

    def _maybe_snapshot_complete(self, n: int) -> None:
        if n in self.snap_done and len(self.snap_markers.get(n, ())) == self.plan.n_partitions:
            write_manifest(self.cfg.run_dir, n, self.snap_done[n], self.cfg.fsync, design=self.era)
            self.snapshot = (n, self.snap_done[n])
            self.snap_inflight = None
