"""A partition's part of the restart migration ("stop, move, restart", the comparison to the
live one): each partition dumps its whole state to disk and stops; a new partition per place,
started under the new design, reads every dump and keeps the rows the new design gives it (the
whole state is reloaded). The driver's part (stop every partition, start the new ones) is in
migration.py; migration_site.py hands these steps their messages and reports the reload."""
from __future__ import annotations

import pickle
from pathlib import Path

from costmodel.files import atomic_write_bytes
from engine_sim.engine import messages as m
from engine_sim.engine.migration_plan import item_of
from engine_sim.engine.plan import DRIVER
from engine_sim.engine.recovery import read_snapshot
from engine_sim.engine.sealing import seal


def dump_path(run_dir, number: int, partition: int) -> Path:
    """Where `partition` dumps its state for the migration whose snapshot is `number`."""
    return Path(run_dir) / f"dump-{number}-p{partition}.pkl"


def dump_state(site, start: m.MigrateStart) -> None:
    """The whole state to disk; the runtime stops this partition next."""
    data = seal(site.cfg.secret, site.partition.store.snapshot_bytes())
    atomic_write_bytes(dump_path(site.cfg.run_dir, start.number, site.node), data, fsync=site.cfg.fsync)
    site.ship()
    site.send(DRIVER, m.MigrateReady(site.node, start.era, site.partition.seq, {}, len(data), (),
                                     site.partition.busy_s, site.partition.held_now()))


def reload_state(site, msg: m.Reload) -> tuple[dict[str, int], int]:
    """A new partition reads every dump and keeps the rows the new design gives it. Returns
    the rows it now holds per state item and the bytes of dump it read."""
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
    return loaded, read
