"""From the engine's transaction records to what the checker, the metrics and the trace read."""
from __future__ import annotations

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
    lanes = {u.members[0]: len(u.lanes) for u in plan.units.values() if u.dp}
    flow = Dataflow.from_workload(plan.workload, lanes)
    return check_history(executions(records) if tes is None else tes, flow, range(batches))
