"""Plain-text tables for the terminal."""
from __future__ import annotations

from costmodel.design import Design
from costmodel.design_view import lane_partitions
from costmodel.graph import WorkloadGraph
from advisor.recommendation_text import idle_line, shortened  # (format shows the text the API words)


NAME_WIDTH = 32  # a longer candidate name is shortened, so a row fits 80 columns




def name_width(rows: list[tuple]) -> int:
    """The width of `candidate_table`'s name column for these rows (names past it are
    `shortened`: the pick's name elsewhere is said as its row shows it)."""
    return min(NAME_WIDTH, max([20] + [len(r[0]) for r in rows]))


def candidate_table(rows: list[tuple[str, object, float | None, float | None]],
                    show_predicted: bool = True, show_estimated: bool | None = None) -> str:
    """Rows of (name, CostBreakdown, estimated tuples/s, predicted tuples/s), each None when
    unknown: the cost the search minimises, whether the design fits the memory limits, the
    busy-time estimate and the simulator's prediction (both tuples/s), and the prediction
    over the fastest one's. With the estimate alone (`show_estimated`, nothing simulated: a
    pick by the estimate), the estimate over the fastest one's."""
    show_estimated = show_predicted if show_estimated is None else show_estimated
    width = name_width(rows)
    head = f"{'design':<{width}} {'cost':>7}  feasible"
    if show_estimated:
        head += f" {'estimated':>10}"
    if show_predicted:
        head += f" {'predicted':>10}"
    if show_estimated or show_predicted:
        head += f" {'vs best':>7}"
    column = 3 if show_predicted else 2  # what "vs best" compares
    best = max((r[column] for r in rows if r[column] is not None), default=None)
    lines = [head, "-" * len(head)]
    for row in rows:
        name, c, est, tps = row
        shown = shortened(name, width)
        line = f"{shown:<{width}} {c.total:>7.4f}  {'yes' if c.feasible else 'NO':<8}"
        if show_estimated:
            line += f" {'-' if est is None else f'{est:,.0f}':>10}"
        if show_predicted:
            line += f" {'-' if tps is None else f'{tps:,.0f}':>10}"
        if show_estimated or show_predicted:
            value = row[column]
            line += f" {'-':>7}" if value is None else f" {value / best if best else 0.0:>6.2f}x"
        lines.append(line.rstrip())
    return "\n".join(lines)


def design_table(design: Design, graph: WorkloadGraph, limit: int = 40) -> str:
    """Per machine: its partitions, with the SPs and state items each holds."""
    ppm = design.partitions_per_machine
    holds: dict[int, list[str]] = {}
    for name, p in design.procedures.items():
        holds.setdefault(p, []).append(f"[{name}]")
    for name, parts in lane_partitions(design).items():
        for p in parts:
            holds.setdefault(p, []).append(f"[{name} lane]")
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
    idle = idle_line(design)
    if idle:
        lines.append(idle)
    return "\n".join(lines)




def assumption_lines(workload) -> list[str]:
    """For a workload rebuilt from statistics: where it came from and what it assumes."""
    if workload is None or not getattr(workload, "assumed", ()):
        return []
    return [f"workload {workload.description}; assumed where the trace cannot tell:"] + \
        [f"  - {a}" for a in workload.assumed]
