"""From the engine's transaction records to what the checker, the metrics and the trace read."""
from __future__ import annotations

from pathlib import Path

from engine_sim.engine.checker import TE, CheckResult, Dataflow, check_history


def executions(records) -> list[TE]:
    """Committed executions of workload SPs, and the migrations between designs (system
    MOVE/snapshot transactions touch no workload state and carry no ordering constraint)."""
    out = []
    for r in records:
        if r.status != "commit" or r.kind not in ("stream", "oltp", "migration"):
            continue
        out.append(TE(id=(r.txn_id, r.child), procedure=r.procedure, batch=r.batch, lane=r.lane,
                      kind=r.kind, group=r.group, positions=dict(r.positions),
                      accesses=[(p, t, k, mo) for p, t, k, mo, _n in r.accesses], ts=r.commit_ts,
                      era=r.era))
    return out


def check_records(records, plan, batches: int, tes: list[TE] | None = None) -> CheckResult:
    """The checker's verdict; its `order` indexes `tes` (default: `executions(records)`)."""
    return check_history(executions(records) if tes is None else tes, dataflow(plan), range(batches))


def dataflow(plan) -> Dataflow:
    """The ordering constraints of the plan's workload (its data-parallel SPs' lanes too)."""
    lanes = {u.members[0]: len(u.lanes) for u in plan.units.values() if u.dp}
    return Dataflow.from_workload(plan.workload, lanes)


def verify_history(plan, driver, batches: int, next_plan=None, run_size: int = 100_000):
    """The checker's verdict on a run's history and, when it holds, the serial re-execution's
    digest, read from the driver's spool in bounded memory (stream_check.py); the sorted runs
    go to the spool's directory (or a temporary one when the history is in memory)."""
    from engine_sim.engine.spool import new_spool_dir, remove_spool_dir
    from engine_sim.engine.stream_check import check_spooled

    own = driver.cfg.history_dir is None
    work_dir = new_spool_dir() if own else driver.cfg.history_dir
    try:
        return check_spooled(driver.history, plan, batches, dataflow(plan), work_dir,
                             None if next_plan is None else [plan, next_plan], run_size)
    finally:
        if own:
            remove_spool_dir(work_dir)
        else:  # the sorted runs go; the spool stays for the trace
            for run in Path(work_dir).glob("*.run"):
                run.unlink(missing_ok=True)
