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
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path

from costmodel.design import check_comparable
from costmodel.files import atomic_write_bytes
from costmodel.granularity import base_table, fragment_of
from engine_sim.engine import messages as m
from engine_sim.engine.crash import crash_point
from engine_sim.engine.errors import EngineError, EngineFailure
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.recovery import read_manifest, read_snapshot, snapshot_path, write_manifest
from engine_sim.engine.sealing import seal
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

    def describe(self) -> list[tuple[str, str]]:
        how = ("live: paused at a batch boundary, rows sent between partitions" if self.mode == "live"
               else "stop, move and restart: whole state dumped and reloaded")
        rows = [("migration", f"{how}; at batch {self.at_batch}: {self.outcome}"
                              + (" after a crash" if self.crashed else "")),
                ("migration time", f"paused {self.pause_s * 1000:.1f} ms (drain {self.drain_s * 1000:.1f} ms, "
                                   f"move and switch {self.move_s * 1000:.1f} ms), {self.held_batches} "
                                   f"batches waited"),
                ("moved", f"{self.rows_moved:,} rows, {self.bytes_moved:,} bytes declared "
                          f"({self.wire_bytes:,} on the wire), {len(self.items_moved)} state items, "
                          f"{len(self.procedures_moved)} SPs"),
                ("throughput", f"before {self.tps_before:,.0f}  during {self.tps_during:,.0f}  "
                               f"after {self.tps_after:,.0f} tuples/s")]
        return rows


# -- checks ---------------------------------------------------------------------------------------

def migration_plan(workload, design, target, plan, compiled, batches: int, at_batch, mode: str):
    """The plan of `target` (`compiled` compiles a design with the run's options), once the
    migration is one the engine can run: designs of one workload on one cluster placing the
    same items, the target placing each window on its owner's partition, at a batch after
    the first and before the last, keeping every SP's lanes."""
    from engine_sim.engine.runner import check_design

    check_comparable(design, target)
    check_design(workload, target)
    if mode not in MODES:
        raise EngineError(f"migration mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not isinstance(at_batch, int) or isinstance(at_batch, bool) or not 1 <= at_batch < batches:
        raise EngineError(f"--at-batch must be a batch of the run after the first, 1..{batches - 1}, "
                          f"got {at_batch!r}")
    target_plan = compiled(target)  # refuses a window away from its owner's partition
    for name, unit in plan.units.items():
        if len(unit.lanes) != len(target_plan.units[name].lanes):
            raise EngineError(f"the migration would split {name} into {len(target_plan.units[name].lanes)} "
                              f"lanes instead of {len(unit.lanes)}: a migration keeps every SP's lanes")
    if plan.router.dp_tables != target_plan.router.dp_tables:
        raise EngineError("the migration would change which tables are split by a data-parallel key: "
                          "a migration keeps every SP's lanes")
    return target_plan


def moved_procedures(plan_a, plan_b) -> list[str]:
    return sorted(p for p in plan_a.procs if plan_a.procs[p].base != plan_b.procs[p].base)


def moved_items(plan_a, plan_b) -> list[str]:
    """State items (tables, fragments, tuples, windows) whose partition differs."""
    a, b = plan_a.design.state, plan_b.design.state
    items = {n for n in set(a) | set(b) if a.get(n, 0) != b.get(n, 0)}
    items |= {w for w, spec in plan_a.windows.items() if plan_b.windows[w].partition != spec.partition}
    return sorted(items)


def row_bytes(workload, item: str) -> int:
    """Declared bytes of one row of a state item (a window's tuple)."""
    for w in workload.windows:
        if w.name == item:
            return int(w.tuple_bytes)
    return int(workload.table(base_table(item)).row_bytes)


def item_of(router, table: str, key) -> str:
    """The design's state item a row belongs to: `T@KEY`, `T#i` or `T`."""
    hot = router.hot.get(table)
    if hot and str(key) in hot:
        return f"{table}@{key}"
    frags = router.fragments.get(table)
    if frags:
        return f"{table}#{fragment_of(key, len(frags))}"
    return table


def _holders(router, table: str, key) -> tuple:
    part = router.row_partition(table, key)
    return router.all if part is None else (part,)


def _same_place(a, b, table: str) -> bool:
    return (a.whole.get(table, 0), a.fragments.get(table), a.hot.get(table)) == \
        (b.whole.get(table, 0), b.fragments.get(table), b.hot.get(table))


def dump_path(run_dir, number: int, partition: int) -> Path:
    return Path(run_dir) / f"dump-{number}-p{partition}.pkl"


# -- a site's part ---------------------------------------------------------------------------------

class SiteMove:
    """A site's migration in progress: the start message and the rows received so far (they
    may arrive before the start itself)."""

    def __init__(self):
        self.start: m.MigrateStart | None = None
        self.incoming: list[bytes] = []
        self.sent: dict[str, int] = {}
        self.wire = 0


def on_site_message(site, msg) -> None:
    t = type(msg)
    if t is m.MigrateSwitch:
        _switch(site, msg)
        return
    if t is m.Reload:
        _reload(site, msg)
        return
    mv = site.moving = site.moving or SiteMove()
    if t is m.MigrateRows:
        mv.incoming.append(msg.payload)
    else:
        mv.start = msg
        site.flush()  # every commit before the boundary is durable
        site.partition.store.gc_streams(msg.at_batch)  # every batch before it is finished
        if msg.mode == "restart":
            _dump(site, msg)
            return
        _send_rows(site, mv, site.plan_of(msg.era))
        crash_point(site.partition, "migration", "moving")
    if mv.start is not None and len(mv.incoming) == site.plan.n_partitions - 1:
        _lay_out(site, mv)


def _send_rows(site, mv: SiteMove, new) -> None:
    """Send every row this partition loses (the lowest holder of a row sends it, to each
    partition that holds it under `new` and not now), then drop the rows it no longer holds."""
    node, store, old = site.node, site.partition.store, site.plan.router
    place = new.router
    out: dict[int, dict] = {}
    for table, rows in store.tables.items():
        if table in old.dp_tables or _same_place(old, place, table):
            continue
        virtual = table in store.virtual
        if node == min(old.table_partitions(table)):  # partitions that gain the table get it, if empty
            for q in place.table_partitions(table):
                if not old.holds(q, table):
                    out.setdefault(q, {})[table] = ({}, virtual)
        gone = []
        for key, value in rows.items():
            now, then = _holders(old, table, key), _holders(place, table, key)
            if node == min(now):
                for q in then:
                    if q not in now:
                        out.setdefault(q, {}).setdefault(table, ({}, virtual))[0][key] = value
                        item = item_of(old, table, key)
                        mv.sent[item] = mv.sent.get(item, 0) + 1
            if node not in then:
                gone.append(key)
        for key in gone:
            del rows[key]
    for q in range(site.plan.n_partitions):
        if q != node:
            payload = pickle.dumps(out.get(q, {}), protocol=pickle.HIGHEST_PROTOCOL)
            mv.wire += len(payload) if q in out else 0
            site.send(q, m.MigrateRows(mv.start.era, payload))


def _lay_out(site, mv: SiteMove) -> None:
    """Every row has arrived: keep them, drop the tables this partition no longer holds, take
    the new design's windows, and write the new layout as the migration's snapshot."""
    new = site.plan_of(mv.start.era)
    store = site.partition.store
    for payload in mv.incoming:
        for table, (rows, virtual) in pickle.loads(payload).items():
            store.add_table(table, virtual).update(rows)
    for table in list(store.tables):
        if not new.router.holds(site.node, table):
            store.drop_table(table)
    store.windows = {w: spec for w, spec in new.windows.items() if spec.partition == site.node}
    _ready(site, mv.start.era, mv.start.number, mv.sent, mv.wire)


def _dump(site, start: m.MigrateStart) -> None:
    """Restart: the whole state to disk; the runtime stops this partition next."""
    data = seal(site.cfg.secret, site.partition.store.snapshot_bytes())
    atomic_write_bytes(dump_path(site.cfg.run_dir, start.number, site.node), data, fsync=site.cfg.fsync)
    site.ship()
    site.send(DRIVER, m.MigrateReady(site.node, start.era, site.partition.seq, {}, len(data), (),
                                     site.partition.busy_s))


def _reload(site, msg: m.Reload) -> None:
    """Restart: a new partition reads every dump and keeps the rows the new design gives it."""
    store, place, node = site.partition.store, site.plan.router, site.node
    for table in store.tables:
        if table not in place.dp_tables:
            store.tables[table] = {}  # the dumps hold the state, seeded rows included
    progress, oltp_done, read = {}, set(), 0
    for j in range(msg.partitions):
        blob = read_snapshot(dump_path(site.cfg.run_dir, msg.number, j), site.cfg.secret)
        read += len(blob)
        tables, _heads, _rows, prog, done = pickle.loads(blob)
        for table, rows in tables.items():
            if table not in store.tables:
                continue
            if table in place.dp_tables:
                if j == node:
                    store.tables[table] = dict(rows)
                continue
            mine = store.tables[table]
            for key, value in rows.items():
                if place.row_partition(table, key) in (node, None):
                    mine[key] = value
        for key, b in prog.items():
            progress[key] = max(progress.get(key, -1), b)
        oltp_done |= done
    store.progress, store.oltp_done = progress, oltp_done
    loaded: dict[str, int] = {}
    for table, rows in store.tables.items():
        for key in rows:
            item = item_of(place, table, key)
            loaded[item] = loaded.get(item, 0) + 1
    _ready(site, msg.era, msg.number, loaded, read)


def _ready(site, era: int, number: int, rows: dict, wire: int) -> None:
    if site.plan.recovery != "off":  # the new layout is the snapshot the commit record names
        atomic_write_bytes(snapshot_path(Path(site.cfg.run_dir), number, site.node),
                           seal(site.cfg.secret, site.partition.store.snapshot_bytes()), fsync=site.cfg.fsync)
    site.moving = None
    site.ship()
    site.send(DRIVER, m.MigrateReady(site.node, era, site.partition.seq, rows, wire,
                                     tuple(sorted(site.partition.store.windows)), site.partition.busy_s))


def _switch(site, msg: m.MigrateSwitch) -> None:
    """The migration committed: run the new design. Every batch before the boundary is done,
    so each scheduler starts after it and no purge epoch carries over; positions go on above
    every position any partition gave before (a moved window's accesses stay in order)."""
    site.set_plan(site.plan_of(msg.era), msg.era, msg.at_batch - 1)
    p = site.partition
    p.seq = max(p.seq, msg.floor)
    p.epochs.clear()
    crash_point(p, "migration", "switched")
    site.send(DRIVER, m.MigrateSwitched(site.node, msg.era))


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
            d.busy.pop(node, None)
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
            wire_bytes=self.wire, items_moved=items, procedures_moved=moved_procedures(plan_a, self.plan),
            window_homes=dict(sorted(self.windows.items())), held_batches=self.n_held,
            batches_before=counts[0], batches_during=counts[1], batches_after=counts[2],
            tps_before=tps[0], tps_during=tps[1], tps_after=tps[2])


# -- live against stop, move and restart ----------------------------------------------------------

@dataclass
class MigrationComparison:
    """One run migrated live and the same run migrated by stopping, moving and restarting,
    measured one after the other in this process."""

    live: object  # RunResult
    restart: object  # RunResult

    def to_dict(self) -> dict:
        return {"live": self.live.to_dict(), "restart": self.restart.to_dict()}

    def describe(self) -> list[str]:
        a, b = self.live.migration, self.restart.migration
        rows = [("", "live", "stop-move-restart"),
                ("outcome", a.outcome, b.outcome),
                ("pause ms", f"{a.pause_s * 1000:.1f}", f"{b.pause_s * 1000:.1f}"),
                ("  drain ms", f"{a.drain_s * 1000:.1f}", f"{b.drain_s * 1000:.1f}"),
                ("  move+switch ms", f"{a.move_s * 1000:.1f}", f"{b.move_s * 1000:.1f}"),
                ("rows moved", f"{a.rows_moved:,}", f"{b.rows_moved:,}"),
                ("bytes (declared)", f"{a.bytes_moved:,}", f"{b.bytes_moved:,}"),
                ("bytes (wire/dump)", f"{a.wire_bytes:,}", f"{b.wire_bytes:,}"),
                ("tuples/s before", f"{a.tps_before:,.0f}", f"{b.tps_before:,.0f}"),
                ("tuples/s during", f"{a.tps_during:,.0f}", f"{b.tps_during:,.0f}"),
                ("tuples/s after", f"{a.tps_after:,.0f}", f"{b.tps_after:,.0f}"),
                ("history check", self.live.history_check, self.restart.history_check),
                ("serial = state", str(self.live.serial_digest == self.live.state_digest),
                 str(self.restart.serial_digest == self.restart.state_digest))]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        return [f"{r[0]:<{w0}}  {r[1]:>{w1}}  {r[2]:>17}" for r in rows]


def compare_migration(workload, design, migrate_to, *, batches: int, at_batch: int, **options) -> MigrationComparison:
    """Run `workload` under `design` twice, migrating to `migrate_to` at `at_batch`: live, then
    by stop, move and restart (the same `run_workload` options otherwise, `migration` aside; a
    trace is written of the live run only)."""
    from engine_sim.engine.run_options import MigrationOptions
    from engine_sim.engine.runner import run_workload

    live = run_workload(workload, design, batches=batches, **options,
                        migration=MigrationOptions(to=migrate_to, at_batch=at_batch, mode="live"))
    options.pop("trace_out", None)
    restart = run_workload(workload, design, batches=batches, **options,
                           migration=MigrationOptions(to=migrate_to, at_batch=at_batch, mode="restart"))
    return MigrationComparison(live, restart)
