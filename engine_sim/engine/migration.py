"""Migrating a running engine from one design to another at a batch boundary.

What it is: a pause-at-a-batch-boundary migration, not Squall's fine-grained one (no row is
pulled on demand while transactions run). At batch K the driver stops admitting input: the
client keeps producing, so batches K, K+1, ... arrive and wait in its input queue (their
latency counts the wait). Once every batch before K has committed at every SP (and no
snapshot is in flight), the move runs; then every site switches to the new design and the
waiting batches go in.

- live: each partition sends every row it loses under the new design (a window whole, to
  its owner's new partition) as one pickled message per receiver over the engine's
  transport, keeps the rows it receives, and writes its new layout as a snapshot;
- restart (the comparison, "stop, move, restart"): each partition dumps its whole state and
  stops; a new partition per place starts under the new design, reads every dump and keeps
  its rows (the whole state is reloaded), and writes its snapshot.

The commit point is one atomic write: the snapshot manifest naming the new layout's snapshot
and the new design. A crash before it (during the drain or the move) recovers the old design
from its last snapshot and log, and the run goes on under it (the migration is aborted); a
crash after it recovers the new design from the migration's snapshot. The driver records the
switch in the history (kind "migration", at batch K): the checker orders every execution of
the old design before it and every one of the new design after it, and the serial oracle
lays its rows out again at that point.

This module holds the driver's part (pause, drain, move or stop and restart, commit, switch,
resume) and the figures a migration reports (MigrationResult). A partition's part is in
migration_site.py (the live move and the switch) and migration_restart.py (dump and reload);
what moves, and the checks before a run, in migration_plan.py; the live-against-restart
experiment in migration_compare.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from engine_sim.engine import messages as m
from engine_sim.engine.errors import EngineFailure
from engine_sim.engine.migration_plan import moved_items, moved_procedures, row_bytes
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.recovery import read_manifest, write_manifest
from engine_sim.engine.txn import TxnRecord

MODES = ("live", "restart")
NEW = 1  # the era (design index) a migration switches to; 0 is the design the run started with


@dataclass
class MigrationResult:
    """What a migration took and what the run did around it. Throughputs are input tuples
    per second over three spans of the run: before (start to the pause), during (the pause
    to the moment the batches that waited have all completed) and after (to the end)."""

    mode: str  # live | restart
    at_batch: int
    outcome: str  # committed | aborted (a crash before the commit point: the old design kept)
    crashed: bool  # a partition died during the migration
    pause_s: float  # admission stopped -> admission resumed
    drain_s: float  # admission stopped -> every batch before at_batch committed
    move_s: float  # drained -> resumed: the move, the snapshot, the commit and the switch
    rows_moved: int  # live: rows sent to another partition; restart: every row reloaded
    bytes_moved: int  # those rows x their declared bytes (a table's row_bytes, a window's tuple_bytes)
    wire_bytes: int  # live: the pickled messages; restart: the dumps as read back
    items_moved: dict = field(default_factory=dict)  # state item -> rows (live: items whose place changed)
    procedures_moved: list = field(default_factory=list)
    window_homes: dict = field(default_factory=dict)  # window -> partition holding it after the move
    held_batches: int = 0  # batches that arrived during the pause and waited
    batches_before: int = 0
    batches_during: int = 0
    batches_after: int = 0
    tps_before: float = 0.0
    tps_during: float = 0.0
    tps_after: float = 0.0
    # the state items whose place changed, in either mode (restart's `items_moved` are the items
    # it reloaded: 1 where live counted 2 for the same two designs, unsaid)
    items_relocated: list = field(default_factory=list)

    def describe(self) -> list[tuple[str, str]]:
        how = ("live: paused at a batch boundary, rows sent between partitions" if self.mode == "live"
               else "stop, move and restart: whole state dumped and reloaded")
        rows = [("migration", f"{how}; at batch {self.at_batch}: {self.outcome}"
                              + (" after a crash" if self.crashed else "")),
                ("migration time", f"paused {self.pause_s * 1000:.1f} ms (drain {self.drain_s * 1000:.1f} ms, "
                                   f"move and switch {self.move_s * 1000:.1f} ms), {self.held_batches} "
                                   f"batches waited"),
                ("moved", f"{self.rows_moved:,} rows{' reloaded (every row)' if self.mode == 'restart' else ''}, "
                          f"{self.bytes_moved:,} bytes declared ({self.wire_bytes:,} on the wire); "
                          f"{len(self.items_relocated)} state items and {len(self.procedures_moved)} SPs change place"),
                ("throughput", "  ".join(f"{span} {span_tps(tps, n)}" for span, tps, n in (
                    ("before", self.tps_before, self.batches_before), ("during", self.tps_during, self.batches_during),
                    ("after", self.tps_after, self.batches_after))) + " tuples/s")]
        return rows


def span_tps(tps: float, batches: int) -> str:
    """A span's throughput, or n/a where no batch completed in it (a pause before the first
    window of batches completed, or a run that ends with the backlog): not a measured 0."""
    return f"{tps:,.0f}" if batches else "n/a"


# -- the driver's part ------------------------------------------------------------------------------

class MigrationControl:
    """Pause at `at_batch`, drain, move (or stop and restart), commit, switch, resume."""

    def __init__(self, driver, plan, at_batch: int, mode: str):
        self.d = driver
        self.plan = plan  # the design to migrate to
        self.at = at_batch
        self.mode = mode
        self.state = "wait"  # wait, drain, move, reload (restart), switch, recover, done
        self.held: list[int] = []
        self.n_held = 0
        self.ready: dict[int, m.MigrateReady] = {}
        self.switched: set[int] = set()
        self.us: dict[str, int] = {}  # pause, drained, resumed: driver microseconds
        self.number = 0
        self.seq = 0  # the last position any partition gave before the switch
        self.outcome = ""
        self.crashed = False
        self.rows: dict[str, int] = {}
        self.wire = 0
        self.windows: dict[str, int] = {}

    @property
    def active(self) -> bool:
        return self.state not in ("wait", "done")

    def holds(self, b: int) -> bool:
        """Is batch b kept in the client's queue (admitted, not sent) for now?"""
        return b >= self.at and self.state not in ("recover", "done")

    def hold(self, b: int) -> None:
        self.held.append(b)
        self.n_held += 1
        self.d.admit(b)

    def poll(self) -> bool:
        d = self.d
        if self.state == "wait" and d.next_batch >= self.at:
            self.state = "drain"
            self.us["pause"] = d.now_us()
        if self.state == "drain" and d.snap_inflight is None and all(b >= self.at for b in d.outstanding):
            self.state = "move"
            self.us["drained"] = d.now_us()
            self.number = (d.snapshot[0] or 0) + 1
            for node in range(d.plan.n_partitions):
                d.send(node, m.MigrateStart(NEW, self.number, self.at, self.mode))
            return True
        if self.state == "recover":  # recovered (to the design the commit record named)
            self.us["resumed"] = d.now_us()
            self.state = "done"
            return True
        return False

    def handle(self, msg) -> None:
        d = self.d
        n = d.plan.n_partitions
        if msg.era != NEW:
            return
        if type(msg) is m.MigrateSwitched:
            if self.state != "switch":
                return
            self.switched.add(msg.node)
            if len(self.switched) == n:
                self.us["resumed"] = d.now_us()
                self.state = "done"
                held, self.held = self.held, []
                for b in held:
                    d.send_input(b)
            return
        if self.state not in ("move", "reload"):
            return
        self.ready[msg.node] = msg
        self.seq = max(self.seq, msg.seq)  # restart: the old partitions' too
        if len(self.ready) < n:
            return
        if self.state == "move" and self.mode == "restart":
            self._restart()
        else:
            self._commit()

    def _restart(self) -> None:
        """Every partition dumped its state: stop them all, start new ones under the new
        design, and have each load the whole state."""
        d = self.d
        for node, r in self.ready.items():
            d.busy_before[node] = d.busy_before.get(node, 0.0) + r.busy_s
            d.held_before[node] = d.held_before.get(node, 0.0) + r.held_s
            d.busy.pop(node, None)
            d.held.pop(node, None)
        self.ready = {}
        self.state = "reload"
        d.runtime.restart(NEW, d.clock)
        for node in range(d.plan.n_partitions):
            d.send(node, m.Reload(NEW, self.number, d.plan.n_partitions))

    def _commit(self) -> None:
        """Every partition holds the new layout (and wrote it as a snapshot): the manifest
        naming it with the new design is the commit record; then every site switches."""
        d = self.d
        for r in self.ready.values():
            for item, k in r.rows.items():
                self.rows[item] = self.rows.get(item, 0) + k
            self.wire += r.wire_bytes
            self.windows.update({w: r.node for w in r.windows})
        d.clock += 1
        ts = d.clock
        if d.plan.recovery != "off":
            write_manifest(d.cfg.run_dir, self.number, ts, d.cfg.fsync, design=NEW)
            d.snapshot = (self.number, ts)
        now = d.now_us()
        d.add_record(TxnRecord(txn_id=d.new_txn_id(), kind="migration", procedure="MIGRATION",
                               unit="MIGRATION", lane=0, batch=self.at, status="commit", restarts=0,
                               base=DRIVER, partitions=tuple(range(d.plan.n_partitions)),
                               start_us=self.us["drained"], end_us=now, commit_ts=ts, era=NEW))
        d.set_plan(self.plan, NEW, self.at - 1)
        self.outcome = "committed"
        self.state = "switch"
        for node in range(d.plan.n_partitions):
            d.send(node, m.MigrateSwitch(NEW, self.seq + 1, self.at))

    def on_crash(self) -> None:
        """A partition died: the cluster comes back under the design the snapshot manifest
        names (the new one once the migration committed); the batches that waited are sent
        again by the recovery, as every batch not finished is."""
        if not self.active:
            return
        _number, _ts, design = read_manifest(self.d.cfg.run_dir)
        committed = design == NEW
        if committed != (self.state == "switch"):
            raise EngineFailure(f"the migration was at step {self.state!r} but the snapshot manifest "
                                f"names design {design}")
        self.outcome = "committed" if committed else "aborted"
        self.crashed = True
        self.held = []
        self.us.setdefault("drained", self.d.now_us())
        self.state = "recover"

    # -- figures ------------------------------------------------------------------------------------
    def result(self, workload, plan_a, batch_size: int) -> MigrationResult:
        d = self.d
        pause, drained = self.us.get("pause", 0), self.us.get("drained", 0)
        resumed = self.us.get("resumed", drained)
        held = range(self.at, self.at + self.n_held)
        clear = max([d.done_us[b] for b in held if b in d.done_us] or [resumed])
        end = d.last_done_us or clear
        start = d.started_us or 0
        spans = [(start, pause), (pause, clear), (clear, end)]
        done = d.done_us.values()
        counts = [sum(1 for t in done if t <= pause), sum(1 for t in done if pause < t <= clear),
                  sum(1 for t in done if t > clear)]
        tps = [c * batch_size / ((hi - lo) / 1e6) if hi > lo else 0.0 for c, (lo, hi) in zip(counts, spans)]
        if self.mode == "live":
            items = {i: self.rows.get(i, 0) for i in moved_items(plan_a, self.plan)}
        else:
            items = dict(sorted(self.rows.items()))
        return MigrationResult(
            mode=self.mode, at_batch=self.at, outcome=self.outcome or "not started", crashed=self.crashed,
            pause_s=(resumed - pause) / 1e6, drain_s=(drained - pause) / 1e6, move_s=(resumed - drained) / 1e6,
            rows_moved=sum(self.rows.values()),
            bytes_moved=sum(k * row_bytes(workload, i) for i, k in self.rows.items()),
            wire_bytes=self.wire, items_moved=items, items_relocated=moved_items(plan_a, self.plan),
            procedures_moved=moved_procedures(plan_a, self.plan),
            window_homes=dict(sorted(self.windows.items())), held_batches=self.n_held,
            batches_before=counts[0], batches_during=counts[1], batches_after=counts[2],
            tps_before=tps[0], tps_during=tps[1], tps_after=tps[2])
