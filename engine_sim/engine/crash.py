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
        d.phase = "recover"
        _, snap_ts = d.snapshot
        keep = []
        for r in d.records:
            (d.lost if r.status == "commit" and r.commit_ts > snap_ts else keep).append(r)
        d.records = keep
        self.expected = {r.txn_id for r in d.lost if d.plan.recovery == "strong"}
        for node, busy in d.busy.items():
            d.busy_before[node] = d.busy_before.get(node, 0.0) + busy
        d.busy = {}
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
