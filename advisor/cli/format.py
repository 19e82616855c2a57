"""Plain-text tables for the terminal."""
from __future__ import annotations

from advisor.design import Design
from advisor.graph import WorkloadGraph


def cost_table(designs: dict[str, Design]) -> str:
    head = f"{'design':<20} {'state':>8} {'process':>8} {'balance':>8} {'total':>8}  feasible"
    lines = [head, "-" * len(head)]
    for name, d in designs.items():
        c = d.cost
        lines.append(f"{name:<20} {c.state_colocation:>8.4f} {c.processing_colocation:>8.4f} "
                     f"{c.load_balance:>8.4f} {c.total:>8.4f}  {'yes' if c.feasible else 'NO'}")
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
