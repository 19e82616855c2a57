"""Fusing stored procedures: the same dataflow with groups of SPs run as one SP each.

One rule for every caller: the dissertation's procedure-boundaries experiment cuts a chain
into fewer SPs (`engine_sim.sim.scenarios`), and `advisor tune` suggests fusing two SPs that
always run one after the other (`reports.transforms.merge_procedures`, which checks the pair
and names the result)."""
from __future__ import annotations

from dataclasses import replace

from costmodel.workload import Procedure, Workload


def merge_procedure_groups(workload: Workload, groups: list[list[str]], names: list[str],
                           overhead_units: float = 0.0) -> Workload:
    """Each group of SPs fused into one SP (`names[i]` for `groups[i]`); SPs in no group
    stay as they are.

    A fused SP does all its members' accesses in member order and sits where the group's
    first SP (in declaration order) was; its cost is the members' sum minus `overhead_units`
    per transaction saved (for specs whose costs include a per-SP transaction overhead); it
    keeps a data-parallel key only when every member has the same one. Streams inside a group
    disappear, the others are re-attached to the fused SPs, and nested groups and windows
    follow their SPs. The result is no longer its source's text: `source` and `sha256` are
    cleared."""
    owner = {p: names[i] for i, g in enumerate(groups) for p in g}
    fused: dict[str, Procedure] = {}
    for name, group in zip(names, groups):
        members = [workload.procedure(p) for p in group]
        keys = {m.partition_key for m in members}
        fused[name] = Procedure(
            name=name, cost=sum(m.cost for m in members) - overhead_units * (len(members) - 1),
            accesses=tuple(a for m in members for a in m.accesses),
            partition_key=keys.pop() if len(keys) == 1 else None, code=None, oltp=False)
    procedures: list[Procedure] = []
    placed: set[str] = set()
    for p in workload.procedures:
        if p.name not in owner:
            procedures.append(p)
        elif owner[p.name] not in placed:
            placed.add(owner[p.name])
            procedures.append(fused[owner[p.name]])
    streams = tuple(replace(s, source=owner.get(s.source, s.source), target=owner.get(s.target, s.target))
                    for s in workload.streams if owner.get(s.source, s.source) != owner.get(s.target, s.target))
    nested = []
    for g in workload.nested:
        members = list(dict.fromkeys(owner.get(m, m) for m in g))
        if len(members) >= 2:
            nested.append(tuple(members))
    windows = tuple(replace(w, procedure=owner.get(w.procedure, w.procedure)) for w in workload.windows)
    return replace(workload, procedures=tuple(procedures), streams=streams, nested=tuple(nested),
                   windows=windows, source="", sha256="")
