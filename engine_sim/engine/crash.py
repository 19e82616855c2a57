"""Crash recovery, coordinated by the driver.

A crashed partition takes the cluster's volatile state with it (H-Store without replicas
restarts from its snapshot and command log): every partition drops what is not durable, the
dead process is restarted, and all load the last complete snapshot.
- strong: the logged transactions after the snapshot are replayed one by one in commit order,
  triggers off (a replayed transaction invokes nothing); then the schedulers are rebuilt from
  the recovered stream tables and progress, and the client resends what is missing;
- weak: the schedulers are rebuilt from the snapshot first (the batches its stream tables hold
  fire their downstream again), then only the logged border (and OLTP) transactions are
  replayed, one by one, with triggers on, so interior transactions run again inside the engine.
"""
from __future__ import annotations

import time

from engine_sim.engine import messages as m
from engine_sim.engine.rebuild import batch_finished, rebuild
from engine_sim.engine.recovery import commit_records, weak_replay


class Recovery:
    def __init__(self, driver):
        self.d = driver
        self.t0 = 0.0
        self.step = ""
        self.ready: set[int] = set()
        self.reports: dict[int, m.StateReport] = {}
        self.queue: list = []
        self.replayed_batches: dict[str, int] = {}
        self.expected: set[int] = set()

    @property
    def nodes(self) -> range:
        return range(self.d.plan.n_partitions)

    def start(self) -> None:
        d = self.d
        self.t0 = time.perf_counter()
        if d.migration is not None:  # the cluster comes back under the design the log names
            d.migration.on_crash()
        d.phase = "recover"
        _, snap_ts = d.snapshot
        keep = []
        for r in d.records:
            (d.lost if r.status == "commit" and r.commit_ts > snap_ts else keep).append(r)
        d.records = keep
        self.expected = {r.txn_id for r in d.lost if d.plan.recovery == "strong"}
        for node, busy in d.busy.items():
            d.busy_before[node] = d.busy_before.get(node, 0.0) + busy
        for node, held in d.held.items():
            d.held_before[node] = d.held_before.get(node, 0.0) + held
        d.busy, d.held = {}, {}
        d.epoch += 1
        d.snap_inflight = None
        d.oltp_pending.clear()
        d.schedulers = {}
        self.step = "ready"
        d.runtime.crash(d.cfg.crash_partition, d.epoch, d.clock)

    def handle(self, msg) -> None:
        d = self.d
        if isinstance(msg, m.Ready):
            if msg.epoch != d.epoch or self.step != "ready":
                return
            self.ready.add(msg.node)
            if len(self.ready) == d.plan.n_partitions:
                self.step = "restore"
                for node in self.nodes:
                    d.send(node, m.Restore(d.snapshot[0]))
            return
        self.reports[msg.node] = msg
        if len(self.reports) < d.plan.n_partitions:
            return
        reports, self.reports = list(self.reports.values()), {}
        logs = [r for rep in reports for r in rep.log_records]
        for r in logs:
            if hasattr(r, "commit_ts"):
                d.observe(max(r.commit_ts, r.txn_id >> 10))
        d.clock += 1
        committed_logs = commit_records(logs, d.snapshot[1])
        if self.step == "restore" and d.plan.recovery == "strong":
            self.queue = committed_logs
            self.step = "replay"
            self._next_strong()
        elif self.step == "restore":  # weak
            committed, pending, oltp_done = rebuild(d.plan, reports)
            self._reset_bookkeeping(committed)
            self._restore_schedulers(committed, pending)
            self.oltp_done = oltp_done
            self.committed = committed
            self.queue = weak_replay(committed_logs, d.plan)
            self.step = "weak-replay"
            self._next_weak()
        elif self.step == "query":  # strong, after the replay
            committed, pending, oltp_done = rebuild(d.plan, reports)
            self._reset_bookkeeping(committed)
            self._restore_schedulers(committed, pending)
            self._resume(committed, oltp_done)

    # -- strong: replay everything after the snapshot, triggers off -------------------------------
    def _next_strong(self) -> None:
        d = self.d
        if self.queue:
            rec = self.queue.pop(0)
            d.send(rec.base, m.Replay(rec))
            return
        self.step = "query"
        for node in self.nodes:
            d.send(node, m.Restore(None, reload=False))

    def on_replay_audit(self, audit: m.Audit) -> None:
        d = self.d
        if not audit.committed:
            d.violations.append(f"replay of {audit.txn.unit} batch {audit.txn.batch} aborted: {audit.reason}")
        d.replayed += 1
        self.expected.discard(audit.txn.replay_of)
        if self.step == "replay":
            self._next_strong()
        elif self.step == "weak-replay":
            self._next_weak()

    # -- weak: rebuild from the snapshot, replay border transactions, triggers on ----------------
    def _next_weak(self) -> None:
        d = self.d
        while self.queue:
            rec = self.queue.pop(0)
            if rec.kind == "oltp":
                self.oltp_done.add((rec.unit, rec.batch))
                d.send(rec.base, m.Replay(rec))
                return
            unit = d.plan.units[rec.unit]
            if min(self.committed[rec.unit].values()) >= rec.batch:
                continue
            if self.replayed_batches.get(rec.unit, -1) >= rec.batch:
                continue  # a data-parallel batch: all its lanes replay together
            self.replayed_batches[rec.unit] = rec.batch
            if unit.dp:
                batch = d.input_batch(rec.batch)
                items = tuple((None, mb, batch) for mb in d.entry[rec.unit])
            else:
                items = rec.inputs
            d.replayed += 1
            d.send(d.plan.scheduler_node(rec.unit), m.Invoke(rec.unit, rec.batch, None, items, recovering=True))
            return
        self._resume(self.committed, self.oltp_done)

    def on_replayed(self, msg: m.BatchDone) -> None:
        if self.step == "weak-replay":
            self._next_weak()

    # -- rebuild and resume ----------------------------------------------------------------------
    def _reset_bookkeeping(self, committed: dict) -> None:
        d = self.d
        before = set(d.outstanding)
        d.outstanding = {b for b in range(d.next_batch) if not batch_finished(d.plan, committed, b)}
        for b in d.outstanding:
            # a sink that committed b in the recovered state will not report b again: count it
            # now (without this a batch one sink finished before the crash never completed)
            d.sink_reports[b] = {u for u in d.plan.sinks if min(committed[u].values()) >= b}
        for b in sorted(before - d.outstanding):
            d.finish_batch(b)  # finished in the recovered state; its report died with the crash

    def _restore_schedulers(self, committed: dict, pending: dict) -> None:
        d = self.d
        for name, unit in d.plan.units.items():
            if unit.oltp:
                continue
            d.send(d.plan.scheduler_node(name), m.SchedRestore(name, committed[name],
                                                                pending.get(name, []), 0))

    def _resume(self, committed: dict, oltp_done: set) -> None:
        d = self.d
        plan = d.plan
        # the client sends again what the border units have not committed (duplicates of what
        # they have are dropped by the schedulers)
        low = min((min(committed[u].values()) for u in plan.borders), default=d.next_batch - 1)
        start = low + 1
        for b in range(start, d.next_batch):
            d.submit(b, resubmit=True)
        for proc in plan.oltp_units:
            for b in range(d.next_batch):
                if (proc, b) not in oltp_done:
                    d.submit_oltp(proc, b, 0)
        if self.expected:
            lost = sorted(self.expected)[:3]
            d.violations.append(f"{len(self.expected)} acknowledged commits were not durable "
                                f"(txn ids {lost}...)")
        d.recovery_s = time.perf_counter() - self.t0
        d.phase = "run"
        self.step = "done"


def start_recovery(driver, node: int) -> None:
    """A partition died where a crash point was asked for (it killed itself, or in-process
    threw its memory away): recover the cluster as after a requested crash."""
    driver.crashed = True
    driver.cfg.crash_partition = node
    driver.recovery = Recovery(driver)
    driver.recovery.start()


# -- crash points: a partition dies at a chosen step of two-phase commit ------------------------

ROLES = ("coordinator", "participant", "migration")
STEPS = ("before_vote", "after_vote", "after_decision")
# a migration's partition dies after sending the rows it loses (before the switch: the run
# recovers to the old design), or on the switch (after it: to the new one)
MIGRATION_STEPS = ("moving", "switched")


class CrashPoint(BaseException):
    """In-process: a partition reached its crash point; the runtime discards the cluster's
    memory and recovers. A BaseException so that no transaction's error handling (which
    turns exceptions into aborts) can swallow it."""

    def __init__(self, node: int):
        super().__init__(f"crash point reached on partition {node}")
        self.node = node


def parse_crash_at(spec) -> tuple | None:
    """(role, step[, n]) -> (role, step, n): crash at the n-th distributed transaction (default
    the first) that reaches `step` on a partition playing `role` in it. ("migration", step[,
    p]): partition p (default None: the run's crash partition) dies at that step of the
    migration."""
    if spec is None:
        return None
    from engine_sim.engine.errors import EngineError

    if isinstance(spec, str):
        spec = tuple(spec.replace(":", ",").split(","))
    if not isinstance(spec, (tuple, list)) or len(spec) not in (2, 3):
        raise EngineError(f"crash_at must be (role, step[, n]), got {spec!r}")
    role, step = spec[0], spec[1]
    migration = role == "migration"
    n = spec[2] if len(spec) == 3 else (None if migration else 1)
    if role not in ROLES:
        raise EngineError(f"crash_at role must be one of {', '.join(ROLES)}, got {role!r}")
    steps = MIGRATION_STEPS if migration else STEPS
    if step not in steps:
        raise EngineError(f"crash_at step{' of a migration' if migration else ''} must be one of "
                          f"{', '.join(steps)}, got {step!r}")
    if n is None:
        return (role, step, None)
    try:
        n = int(n)
    except (TypeError, ValueError):
        n = -1
    if n < (0 if migration else 1):
        what = "partition must be an integer >= 0" if migration else "count must be an integer >= 1"
        raise EngineError(f"crash_at {what}, got {spec[2]!r}")
    return (role, step, n)


def crash_point(partition, role: str, step: str, kind: str = "") -> None:
    """Called by a partition at each step of 2PC (`kind`: the transaction's); dies there when
    the run asked for it. Only before the first recovery (epoch 0): a crash point fires once
    per run. Never in a snapshot's 2PC: that is the multi-process runtime's own (the in-process
    one runs none), so the n-th distributed transaction is the same one in both."""
    spec = getattr(partition.plan, "crash_at", None)
    if spec is None or spec[0] != role or spec[1] != step or kind == "snapshot":
        return
    site = partition.site
    if site.epoch != 0:
        return
    if role == "migration":  # spec[2]: the partition that dies
        if site.node != spec[2]:
            return
    else:
        partition.crash_seen = getattr(partition, "crash_seen", 0) + 1
        if partition.crash_seen < spec[2]:
            return
    die(site)


def die(site) -> None:
    """Multi-process: send what this step already sent, then SIGKILL ourselves (no goodbye).
    In-process: raise CrashPoint to the runtime."""
    import os
    import signal

    net = site.transport
    if hasattr(net, "has_output") and hasattr(net, "flush"):
        end = time.perf_counter() + 1.0
        net.flush(site.clock, site.epoch)
        while net.has_output() and time.perf_counter() < end:
            time.sleep(0.001)
            net.flush(site.clock, site.epoch)
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(10)  # never reached
    raise CrashPoint(site.node)
