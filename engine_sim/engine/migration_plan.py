"""What a migration moves, worked out from the two designs' plans: the checks that make a
migration one the engine can run (`migration_plan`), the SPs and state items whose place
changes, which partitions hold a row and which state item it belongs to, and a row's declared
bytes. Plain questions about plans: the protocol (migration.py, migration_site.py,
migration_restart.py) asks them and nothing here sends or stores anything."""
from __future__ import annotations

from costmodel.design import check_comparable
from costmodel.granularity import base_table, fragment_of
from engine_sim.engine.errors import EngineError


def migration_plan(workload, design, target, plan, compiled, batches: int, at_batch):
    """The plan of `target` (`compiled` compiles a design with the run's options), once the
    migration is one the engine can run: designs of one workload on one cluster placing the
    same items, the target placing each window on its owner's partition, at a batch after
    the first and before the last, keeping every SP's lanes. (The mode is checked where the
    options are built: run_options.MigrationOptions.)"""
    from engine_sim.engine.runner import check_design

    check_comparable(design, target)
    check_design(workload, target)
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
    """SPs whose base partition differs between the two plans."""
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
    return int(workload.table(base_table(item, set(workload.table_names))).row_bytes)


def item_of(router, table: str, key) -> str:
    """The design's state item a row belongs to: `T@KEY`, `T#i` or `T`."""
    hot = router.hot.get(table)
    if hot and str(key) in hot:
        return f"{table}@{key}"
    frags = router.fragments.get(table)
    if frags:
        return f"{table}#{fragment_of(key, len(frags))}"
    return table


def row_holders(router, table: str, key) -> tuple:
    """The partitions holding a row under `router` (every one for a replicated table)."""
    part = router.row_partition(table, key)
    return router.all if part is None else (part,)


def same_placement(a, b, table: str) -> bool:
    """Whether routers `a` and `b` place `table` alike (whole, as fragments and its hot tuples),
    so that none of its rows moves."""
    return (a.whole.get(table, 0), a.fragments.get(table), a.hot.get(table)) == \
        (b.whole.get(table, 0), b.fragments.get(table), b.hot.get(table))
