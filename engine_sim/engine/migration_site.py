"""A partition's part of a migration: the messages a site receives from the driver and from
the other partitions, and what it does with them. Live: send every row it loses under the new
design (one pickled message per receiver), keep the rows it receives, and write its new layout
as the migration's snapshot; restart: dump, then reload (migration_restart.py); then, once the
driver committed, switch to the new design. The driver's part and the protocol as a whole are
described in migration.py."""
from __future__ import annotations

import pickle
from pathlib import Path

from costmodel.files import atomic_write_bytes
from engine_sim.engine import messages as m
from engine_sim.engine.crash import crash_point
from engine_sim.engine.migration_plan import item_of, row_holders, same_placement
from engine_sim.engine.migration_restart import dump_state, reload_state
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.recovery import snapshot_path
from engine_sim.engine.sealing import seal


class SiteMove:
    """A site's migration in progress: the start message and the rows received so far (they
    may arrive before the start itself)."""

    def __init__(self):
        self.start: m.MigrateStart | None = None
        self.incoming: list[bytes] = []
        self.sent: dict[str, int] = {}
        self.wire = 0


def on_site_message(site, msg) -> None:
    """One migration message at a site (the site hands over every message of the migration)."""
    t = type(msg)
    if t is m.MigrateSwitch:
        _switch(site, msg)
        return
    if t is m.Reload:
        loaded, read = reload_state(site, msg)
        _ready(site, msg.era, msg.number, loaded, read)
        return
    mv = site.moving = site.moving or SiteMove()
    if t is m.MigrateRows:
        mv.incoming.append(msg.payload)
    else:
        mv.start = msg
        site.flush()  # every commit before the boundary is durable
        site.partition.store.gc_streams(msg.at_batch)  # every batch before it is finished
        if msg.mode == "restart":
            dump_state(site, msg)
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
        if table in old.dp_tables or same_placement(old, place, table):
            continue
        virtual = table in store.virtual
        if node == min(old.table_partitions(table)):  # partitions that gain the table get it, if empty
            for q in place.table_partitions(table):
                if not old.holds(q, table):
                    out.setdefault(q, {})[table] = ({}, virtual)
        gone = []
        for key, value in rows.items():
            now, then = row_holders(old, table, key), row_holders(place, table, key)
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


def _ready(site, era: int, number: int, rows: dict, wire: int) -> None:
    """The new layout is in place (live or reloaded): write it as the snapshot the commit
    record will name and tell the driver what moved."""
    if site.plan.recovery != "off":  # the new layout is the snapshot the commit record names
        atomic_write_bytes(snapshot_path(Path(site.cfg.run_dir), number, site.node),
                           seal(site.cfg.secret, site.partition.store.snapshot_bytes()), fsync=site.cfg.fsync)
    site.moving = None
    site.ship()
    site.send(DRIVER, m.MigrateReady(site.node, era, site.partition.seq, rows, wire,
                                     tuple(sorted(site.partition.store.windows)), site.partition.busy_s,
                                     site.partition.held_now()))


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
