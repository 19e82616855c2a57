"""The client's input: batch b of a run, the same for a seed however often it is asked
(a recovering client sends the same batches again)."""
from __future__ import annotations

from engine_sim.engine.procedures import txn_rng
from engine_sim.engine.txn import Batch


def input_batch(plan, b: int) -> Batch:
    """Tuples aligned with the spec's input fields: uniform over each field's domain (the
    rows of the tables it keys), or what the workload's code generates (e.g. Voter's votes)."""
    rng = txn_rng(plan, -7, b, 0, "input")
    gen = getattr(plan.code_module, "generate_batch", None) if plan.code_module else None
    if gen is not None:
        tuples = gen(rng, b, plan.batch_size)
    else:
        tuples = tuple(tuple(rng.below(d) for d in plan.field_domains) for _ in range(plan.batch_size))
    return Batch(tuple(tuples), rng.next())


def input_batches(workload, design, batches: int, seed: int = 0, batch_size: int | None = None) -> list:
    """The tuples of the first `batches` input batches a run with this seed feeds."""
    from engine_sim.engine.plan import build_plan

    plan = build_plan(workload, design, seed=seed, batch_size=batch_size)
    return [input_batch(plan, b).tuples for b in range(batches)]
