"""A recommendation in words: how it was picked (the objective line and the simulated
search's), what the deployed design's migration weighed and which machines it leaves idle
(`Recommendation.pick_lines` adds the declared rate, which needs the simulator's wording). One text for the CLI and the notebook, so
`recommend`'s lines and `Recommendation`'s rendering say the same (the notebook's lacked the
pick, the search and the idle machines)."""
from __future__ import annotations

from costmodel.design import Design
from advisor.migration import gone_line


def shortened(name: str, width: int) -> str:
    """`name` in `width` characters: the search's "search: " prefix dropped first, then cut in
    the middle (names differ at their ends: "... ufactor=30 seed#1", "... seed#0")."""
    if len(name) <= width:
        return name
    name = name.removeprefix("search: ")
    if len(name) <= width:
        return name
    head = (width - 3) // 2
    return name[:head] + "..." + name[-(width - 3 - head):]


def objective_lines(sel, shortened_to: int | None = None) -> list[str]:
    """How the recommendation was picked, in a line or two (a fallback says why); the pick's
    name `shortened` to `shortened_to` characters, as the candidate table's row shows it (the
    line said 'search: metis 2 machines ufactor=1' above a row 'metis 2 machines ufactor=1')."""
    if sel.objective == "cost":
        head = "objective: cost (the cheapest design by the cost model; nothing simulated)"
        if sel.requested != "cost":
            head = f"objective: throughput requested, FELL BACK to cost: {sel.note.removeprefix('picked by cost: ')}"
            if sel.prediction is not None:  # (the one candidate: simulated all the same)
                head += (f"; predicted {sel.prediction:,.0f} tuples/s (simulator, {sel.calibration_label}, "
                         f"{sel.prediction_batches} batches)")
        return [head]
    if sel.objective == "estimate":
        return _estimate_lines(sel, shortened_to)
    c = sel.chosen
    shown = sel.prediction if sel.prediction is not None else c.predicted_tps
    label = c.label if shortened_to is None else shortened(c.label, shortened_to)
    lines = [f"objective: throughput: picked {label!r}, predicted {shown:,.0f} tuples/s "
             f"(simulator, {sel.calibration_label}, {sel.prediction_batches or c.batches} batches; "
             f"{sel.simulated} of {sel.distinct} distinct candidates "
             f"simulated in {sel.sim_s:.1f} s"
             + (f"; {sel.enumerated} of them from trying every assignment to machines"
                if sel.enumerated else "") + ")"]
    imp = sel.improvement
    if imp is not None and imp.simulated:
        lines.append(f"simulated search from the pool's pick: {imp.simulated} designs simulated, "
                     + (f"{imp.start_tps:,.0f} -> {imp.end_tps:,.0f} tuples/s "
                        f"({imp.end_tps / imp.start_tps:.2f}x: {moves_text(imp.moves)})" if imp.improved
                        else f"no move predicted faster than the pick ({imp.start_tps:,.0f} tuples/s)")
                     + _collapse_text(imp))
    elif imp is not None and imp.skipped:
        lines.append(f"simulated search skipped: {imp.skipped}")
    if sel.note:
        lines.append(f"note: {sel.note}")
    return lines


def _estimate_lines(sel, shortened_to: int | None) -> list[str]:
    """The pick by the busy-time estimate, where the simulator cannot judge in time: what it
    is estimated at, and how far the climbs took it from the pool's best by the estimate."""
    pick, c = sel.improvement, sel.chosen
    label = c.label if shortened_to is None else shortened(c.label, shortened_to)
    lines = [f"objective: throughput requested, PICKED BY THE BUSY-TIME ESTIMATE (not simulated): picked "
             f"{label!r}, estimated {c.estimated_tps:,.0f} tuples/s ({sel.calibration_label}; "
             f"{sel.distinct} distinct candidates and {pick.priced:,} designs priced)"]
    if pick.climbed and not pick.kept_cheapest:
        lines.append(f"estimate search: from {pick.start_label!r}, {moves_text([f'{m} (estimate)' for m in pick.moves])}; "
                     f"the pool's best {pick.pool_pick.label!r} estimated {pick.pool_pick.estimated_tps:,.0f} tuples/s "
                     f"({pick.estimated_tps / pick.pool_pick.estimated_tps:.2f}x)")
    lines.append(f"note: {sel.note.removeprefix('picked by the busy-time estimate, not simulated: ')}; "
                 "`advisor simulate` predicts the design all the same, at length")
    return lines


def _collapse_text(imp) -> str:
    """How many designs the search judged again because they collapse when overloaded (their
    short runs' figures hold until a queue forms), and how many of them that kept out."""
    if not imp.collapse_checked:
        return ""
    n, out = imp.collapse_checked, imp.collapse_kept_out
    if n == 1:
        return ("; 1 design that would have beaten the best but collapses when overloaded, judged again"
                f" on longer runs and {'kept out' if out else 'let through'}")
    return (f"; {n} designs that would have beaten the best but collapse when overloaded judged again on"
            f" longer runs, {out} of them kept out")


MOVES_SHOWN = 8  # of a search's moves, in its line: every one is in the design file


def moves_text(moves: list[str]) -> str:
    """The simulated search's moves in a line: a run of moves the estimate's climb took said
    once as such ("by the estimate: a, b, c"), not "(estimate)" after each. The first
    MOVES_SHOWN only, and how many more: a climb of 50 moves on 150 SPs was a line of 3,000
    characters nobody reads (the design file's provenance keeps every move)."""
    tag = " (estimate)"
    moves = list(moves)
    more = len(moves) - MOVES_SHOWN if len(moves) > MOVES_SHOWN else 0
    parts, run = [], []
    for m in moves[: len(moves) - more] + [None]:
        if m is not None and m.endswith(tag):
            run.append(m[: -len(tag)])
            continue
        if run:
            parts.append(f"by the estimate: {', '.join(run)}" if len(run) > 1 else f"{run[0]}{tag}")
            run = []
        if m is not None:
            parts.append(m)
    return "; ".join(parts) + (f" ... and {more} more moves (every one in the design file)" if more else "")


def screening_note(sel) -> str:
    """Why the table's figures differ from the one above, where they do: the candidates were
    run side by side on fewer batches ('' where they were not, or nothing was simulated)."""
    if sel.objective != "throughput" or not sel.prediction_batches:
        return ""
    shorter = sorted({o.batches for o in sel.candidates
                      if o.predicted_tps is not None and 0 < o.batches < sel.prediction_batches})
    if not shorter:
        return ""
    runs = f"{shorter[0]}" if len(shorter) == 1 else f"{shorter[0]}-{shorter[-1]}"
    full = sel.prediction_batches
    finalists = any(o.predicted_tps is not None and o.batches >= full for o in sel.candidates)
    return (f"predicted: the candidates screened side by side on {runs} batches each, shorter runs than the "
            f"recommendation's {full} above, so their figures differ from it"
            + (f"; the finalists' rows ran on {full}, as it did" if finalists else ""))


def migration_lines(plan) -> list[str]:
    """The pick from the deployed design and the frontier of megabytes against speed (a row
    over memory says so: the picks take a design that fits first, so it may be faster)."""
    from advisor.migration_pick import fits_memory

    by = {"simulator": "predicted tuples/s", "estimate": "estimated tuples/s", "cost": "cost"}[plan.judged_by]
    c = plan.chosen
    lines = [f"from the deployed design: picked {c.label!r}, moving {c.megabytes:,.3f} MB"
             + (f" (budget {plan.max_move_mb:,.3f} MB)" if plan.max_move_mb is not None else "")
             + f"; {len(plan.reachable)} designs weighed, by {by}",
             f"  {'budget':<30}  {'MB moved':>10}  {by:>18}  design"]
    if plan.gone:
        lines.insert(1, gone_line(plan.gone))
    for budget, r in plan.frontier():
        value = r.speed(plan.judged_by)
        shown = "-" if value is None else (f"{-value:.4f}" if plan.judged_by == "cost" else f"{value:,.0f}")
        over = "" if fits_memory(r) else "  (over memory)"
        lines.append(f"  {budget:<30}  {r.megabytes:>10,.3f}  {shown:>18}  {r.label}{over}")  # (fitted where printed)
    return lines




def idle_machines(design: Design) -> list[int]:
    """The machines no SP runs on and no state item is placed on (a replicated table's copies
    aside): a design that leaves machines idle is telling the user so."""
    ppm = design.partitions_per_machine
    used = {p // ppm for p in design.procedures.values()}
    used |= {p // ppm for p in design.state.values() if p is not None}
    return [m for m in range(design.machines) if m not in used]


def idle_line(design: Design) -> str:
    """The machines the design leaves idle, in a line ("" where it uses every one)."""
    idle = idle_machines(design)
    if not idle:
        return ""
    shown = ", ".join(map(str, idle[:8])) + (", ..." if len(idle) > 8 else "")
    return f"uses {design.machines - len(idle)} of {design.machines} machines; idle: {shown}"
