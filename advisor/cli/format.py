"""Plain-text tables for the terminal."""
from __future__ import annotations

from advisor.design import Design
from advisor.graph import WorkloadGraph


def cost_table(designs: dict[str, Design], predicted: dict[str, float | None] | None = None) -> str:
    """One row per design: its weighted cost terms and, when given, its predicted throughput."""
    return candidate_table([(name, d.cost, (predicted or {}).get(name)) for name, d in designs.items()],
                           show_predicted=predicted is not None)


def candidate_table(rows: list[tuple[str, object, float | None]], show_predicted: bool = True) -> str:
    """Rows of (name, CostBreakdown, predicted tuples/s or None)."""
    width = max([20] + [len(r[0]) for r in rows])
    head = f"{'design':<{width}} {'state':>8} {'process':>8} {'balance':>8} {'total':>8}  feasible"
    if show_predicted:
        head += f" {'predicted tuples/s':>19} {'vs best':>8}"
    best = max((r[2] for r in rows if r[2] is not None), default=None)
    lines = [head, "-" * len(head)]
    for name, c, tps in rows:
        line = (f"{name:<{width}} {c.state_colocation:>8.4f} {c.processing_colocation:>8.4f} "
                f"{c.load_balance:>8.4f} {c.total:>8.4f}  {'yes' if c.feasible else 'NO':<8}")
        if show_predicted:
            if tps is None:
                line += f" {'-':>19} {'-':>8}"
            else:
                line += f" {tps:>19,.0f} {tps / best if best else 0.0:>7.2f}x"
        lines.append(line.rstrip())
    return "\n".join(lines)


def design_table(design: Design, graph: WorkloadGraph, limit: int = 40) -> str:
    """Per machine: its partitions, with the SPs and state items each holds."""
    ppm = design.partitions_per_machine
    holds: dict[int, list[str]] = {}
    for name, p in design.procedures.items():
        holds.setdefault(p, []).append(f"[{name}]")
    for name, p in design.state.items():
        if p is not None:
            holds.setdefault(p, []).append(name)
    lines = []
    for p in sorted(holds)[:limit]:
        items = holds[p]
        shown = ", ".join(items[:12]) + (f", ... ({len(items) - 12} more)" if len(items) > 12 else "")
        lines.append(f"machine {p // ppm} partition {p}: {shown}")
    if len(holds) > limit:
        lines.append(f"... {len(holds) - limit} more partitions")
    replicated = [n for n, p in design.state.items() if p is None]
    if replicated:
        lines.append(f"replicated on every partition: {', '.join(replicated)}")
    return "\n".join(lines)


def assumption_lines(workload) -> list[str]:
    """For a workload rebuilt from statistics: where it came from and what it assumes."""
    if workload is None or not getattr(workload, "assumed", ()):
        return []
    return [f"workload {workload.description}; assumed where the trace cannot tell:"] + \
        [f"  - {a}" for a in workload.assumed]
