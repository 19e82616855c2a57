"""The report's context: what `reports.report.build_report` computed (the design, its
simulations, its sections' results), worded and drawn as the template shows it, one part of
the page per function."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from costmodel import machine_loads, machine_memory
from costmodel.design import Design
from costmodel.model import cost_terms_text
from costmodel.workload import cluster_text
from reports.sensitivity import design_signature, machine_changes, placement_signature

if TYPE_CHECKING:
    from reports.predict import PredictOptions
    from reports.report import ReportOptions

THIS_DESIGN = "this design"  # how the report names the design it is about


def draw_png(draw, figsize=(6.4, 3.6)) -> str:
    """Draw on a detached figure (no pyplot state, nothing shown in a notebook) -> base64 PNG."""
    from reports.figures._common import detached_figure, figure_png_base64

    fig = detached_figure(figsize)
    draw(fig.add_subplot())
    return figure_png_base64(fig)


def _fmt(x, digits: int = 4) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _tps(x) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def _provenance_line(provenance: dict) -> str:
    """The header's seed, pick and version: the candidate `recommend` picked (`picked`), not the
    cost search's best (`search`), which the header named though the pick was another."""
    shown = ("seed", "picked" if "picked" in provenance else "search", "version")
    return ", ".join(f"{k}={provenance[k]}" for k in shown if k in provenance)


def _predicted_for(calibration) -> str:
    """What the report's predictions stand for, as `recommend` words it (None: the reference)."""
    from advisor.selection import calibration_label
    from engine_sim.sim import Calibration

    return calibration_label(Calibration.reference() if calibration is None else calibration)


def _source_label(source) -> str:
    from costmodel.workload import Workload

    if isinstance(source, Workload):
        return source.source or f"workload {source.name}"
    return str(getattr(source, "name", source)) if not isinstance(source, (str, Path)) else str(source)


def header_context(design: Design, graph, workload, predict: PredictOptions, figures: dict[str, str], *,
                   title: str | None, source) -> dict:
    """The report's head: what the design is for (workload, cluster, weights, where it came
    from), its cost, the figures of the design and what the simulations assumed."""
    from advisor import __version__

    cost = design.cost
    return {
        "title": title or f"Design report: {graph.name}",
        "workload_name": graph.name, "cluster": cluster_text(design.machines, design.partitions_per_machine),
        "weights": {k: f"{v:g}" for k, v in design.weights.to_dict().items()},
        "method": design.method or "unknown",
        "source_label": _source_label(source if source is not None else workload or graph),
        "provenance": _provenance_line(design.provenance),
        "version": __version__, "figures": figures,
        "cost": {"total": _fmt(cost.total), "terms": cost_terms_text(cost), "feasible": cost.feasible,
                 "overflow": f"{cost.worst_overflow_mb:.1f}"},
        "latency_bound": f"{predict.latency_bound_s:g}", "sim_batches": predict.batches,
        "assumed": list(getattr(workload, "assumed", ()) or ()),
    }


def candidates_context(designs: dict[str, Design], sims: dict, simulated_here: dict, predict: PredictOptions,
                       design: Design, lanes: bool) -> dict:
    """The table of this design beside the others (cost and predicted throughput), its notes
    and the verdict; `simulated_here`: the designs the report simulated (a screening run
    marks those it did not simulate in full)."""
    screened = {n for n in simulated_here if sims.get(n) is not None and sims[n].batches < predict.batches}
    context = _cost_rows(designs, sims, screened)
    context["screened_note"] = screened_note(screened)
    context["predicted_for"] = _predicted_for(predict.calibration)
    context["calibration_note"] = design.calibration_note(context["predicted_for"])
    context["items_note"] = (
        "The table-level designs beside it are placed at this design's fragments (each table's fragments "
        "where the table is) and simulated so, on the same workload as this design; recommend --data-parallel "
        "simulates them at table level, so its figures for them read a few percent apart."
        if lanes and len(designs) > 1 else "")
    context["verdict"] = _verdict(designs, sims)
    return context


def scaling_context(curve, lanes: bool) -> dict:
    """The throughput-versus-machines chart and its notes (none when the section did not run)."""
    from reports.figures import plot_throughput_vs_machines

    context = {"scaling_figure": None, "scaling_notes": [], "scaling_screened": ""}
    context["scaling_note"] = ("Not computed: the picks at other cluster sizes weigh no data-parallel lanes, "
                               "so the chart would set this design beside designs of another kind.") if lanes else ""
    if curve is not None:
        context["scaling_figure"] = draw_png(lambda ax: plot_throughput_vs_machines(curve, ax=ax), (6.4, 3.4))
        context["scaling_notes"] = [dip.describe() for dip in curve.dips()]
        context["scaling_screened"] = curve.screened_note()
    return context


def validation_context(validation, design: Design) -> dict | None:
    """The engine's run beside the simulator's (None: no validation given)."""
    if validation is None:
        return None
    from reports.figures import plot_engine_vs_simulator
    from reports.validation_view import ValidationView

    view = ValidationView.from_any(validation)
    return {
        "figure": draw_png(lambda ax: plot_engine_vs_simulator(view, ax=ax), (6.0, 3.2)) if view.has_both else None,
        "header": view.header, "rows": view.rows,
        "notes": view.cluster_notes(design.machines, design.partitions_per_machine) + view.notes,
    }


def suggestions_context(computed: bool, sections: dict) -> dict:
    """The suggestions section's result as rows (`computed` False: the section was off)."""
    if not computed:
        return {"suggestions": [], "suggestions_note": "Not computed."}
    result = sections["suggestions"]
    return {"suggestions": [{"text": s.text, "reason": s.reason, "effect": s.gain_text} for s in result],
            "suggestions_note": result.note}


def _cost_rows(designs: dict[str, Design], sims: dict, screened: set[str] = frozenset()) -> dict:
    own = designs[THIS_DESIGN]
    own_sig = placement_signature(own)
    own_tps = sims[THIS_DESIGN].throughput_tps if sims.get(THIS_DESIGN) is not None else None
    rows = []
    for name, d in designs.items():
        c = d.cost
        sim = sims.get(name)
        tps = None if sim is None else float(sim.throughput_tps)
        rows.append({
            "name": name, "chosen": name == THIS_DESIGN,
            "same": name != THIS_DESIGN and placement_signature(d) == own_sig,
            "state": _fmt(c.state_colocation), "processing": _fmt(c.processing_colocation),
            "balance": _fmt(c.load_balance), "total": _fmt(c.total), "feasible": "yes" if c.feasible else "NO",
            "tps": _tps(tps), "screened": name in screened,
            "ratio": "" if tps is None or not own_tps or name == THIS_DESIGN else f"{own_tps / tps:.2f}x" if tps > 0 else "inf",
        })
    return {"cost_rows": rows, "has_throughput": bool(sims) and own_tps is not None}


def screened_note(screened: set[str]) -> str:
    """What "(screened)" in the candidate table means ('' where no row is)."""
    if not screened:
        return ""
    from reports.predict import SCREEN_BELOW, screening_text

    return (f"(screened): below {SCREEN_BELOW:.0%} of this design's figure by the busy-time estimate and by a "
            f"screening run ({screening_text()}), so not simulated in full, as recommend's table screens its "
            f"candidates.")


def _verdict(designs: dict[str, Design], sims: dict) -> dict | None:
    """Does this design beat every baseline in predicted throughput (ties only with baselines
    that place everything exactly as it does)?"""
    own = sims.get(THIS_DESIGN)
    if own is None:
        return None
    from advisor.selection import TIE_TOLERANCE

    own_sig = placement_signature(designs[THIS_DESIGN])
    beaten, same, tied, losing = [], [], [], []
    for name, d in designs.items():
        if name == THIS_DESIGN or sims.get(name) is None:
            continue
        other = sims[name].throughput_tps
        if placement_signature(d) == own_sig:
            same.append(name)
        elif abs(own.throughput_tps - other) <= TIE_TOLERANCE * max(own.throughput_tps, other):
            tied.append(f"{name} ({other:,.0f} tuples/s)")  # as the pick counts a tie: within 2 %
        elif own.throughput_tps > other:
            beaten.append(name)
        else:
            losing.append(f"{name} ({other:,.0f} tuples/s)")
    head = f"This design ({own.throughput_tps:,.0f} tuples/s predicted)"
    if losing:
        return {"ok": False, "text": f"{head} does NOT beat: " + ", ".join(losing)
                + (f"; it ties {', '.join(tied)}" if tied else "") + "."}
    text = (f"{head} ties {', '.join(tied)} (within {TIE_TOLERANCE:.0%}) and beats every other baseline"
            if tied else f"{head} beats every baseline") + " in predicted throughput"
    if same:
        text += f"; {', '.join(same)} found the same placement"
    return {"ok": True, "text": text + "."}


def machine_rows(design: Design, graph, sim) -> dict:
    from reports.figures._common import node_partitions

    _, state = node_partitions(design, graph)  # a window counts on its owner's machine
    c = graph.cost
    lanes_graph, proc, _ = design.cost_view(graph)  # each data-parallel lane on its machine
    loads = machine_loads(lanes_graph.cost, proc)
    mem = machine_memory(c, state) / 2**20
    total = loads.sum() or 1.0
    limit = "" if c.memory_limit_bytes is None else f"{c.memory_limit_bytes / 2**20:,.0f}"
    util = list(sim.machine_utilisation) if sim is not None and sim.machine_utilisation else []
    rows = [{"machine": m, "load": f"{loads[m]:g}", "share": f"{loads[m] / total:.0%}", "memory": f"{mem[m]:,.1f}",
             "limit": limit, "utilisation": f"{util[m]:.0%}" if m < len(util) else ""} for m in range(design.machines)]
    return {"machine_rows": rows, "has_utilisation": bool(util)}


def sensitivity_section(o: ReportOptions, graph, design: Design, futures: dict) -> dict:
    """The sensitivity part of the report's context, once its sweeps are done (empty when off)."""
    if not o.sensitivity:
        note = ("Not computed: the sweep picks by the cost model at table level and never weighs "
                "data-parallel lanes, so it would find this design's choice changed at every point."
                if design.data_parallel else "Not computed.")
        return {"sensitivity_figure": None, "sensitivity_text": "", "sensitivity_designs": [],
                "sensitivity_note": note}
    from reports.sensitivity import DEFAULT_SHARES, TERMS, sensitivity_of

    swept = {term: [d for share in DEFAULT_SHARES for d in futures[f"sensitivity {term} {share}"].result()]
             for term in TERMS}
    return _sensitivity_context(sensitivity_of(graph, design.weights, design, DEFAULT_SHARES, swept), design, graph)


GROUPS_IN_FULL = 40  # SPs + state items up to which the sweep's designs are listed in full, machine by machine
CHANGES_SHOWN = 12  # past that, of each design's differences from A, the first this many are named


def _sensitivity_context(sens, design: Design, graph) -> dict:
    """The sweep (`reports.sensitivity.Sensitivity`, computed by its section) as the report
    shows it: each design's machines in full on a small dataflow; on a larger one, what each
    places elsewhere than A (A's places are the full assignment's)."""
    from reports.figures import plot_sensitivity

    rows = sens.rows  # plain rows: pandas is not imported for a report
    in_full = len(design.procedures) + len(design.state) <= GROUPS_IN_FULL
    designs = []
    for letter, d in sens.designs.items():
        points = ", ".join(f"{r['term']} {r['share']:.0%}" for r in rows if r["design"] == letter)
        if in_full:
            groups = "; ".join("{" + ", ".join(x.split(":", 1)[1] for x in g) + "}" for g in design_signature(d)[0])
        elif letter == "A":
            groups = "the design of this report (its places: the full assignment below)"
        else:
            changes = machine_changes(sens.designs["A"], d, graph)
            more = f" and {len(changes) - CHANGES_SHOWN:,} more" if len(changes) > CHANGES_SHOWN else ""
            groups = (f"{len(changes):,} of {len(d.procedures) + len(d.state):,} items: "
                      f"{', '.join(changes[:CHANGES_SHOWN])}{more}"
                      if changes else "A's machine grouping; its partitions within machines differ")
        designs.append({"letter": letter, "where": points or "the given weights only", "groups": groups})
    changed = [r for r in rows if r["design"] != "A"]
    if not changed:
        text = "The same design (A) is chosen at every point of the sweep: the choice does not hinge on the weights."
    else:
        text = (f"The choice changes at {len(changed)} of {len(rows)} sweep points; the largest extra cost of keeping "
                f"design A there is {max(r['regret'] for r in changed):.3f}.")
    return {"sensitivity_figure": draw_png(lambda ax: plot_sensitivity(sens, ax=ax), (6.8, 3.8)),
            "sensitivity_text": text, "sensitivity_designs": designs, "sensitivity_in_full": in_full}


def assignment_context(design: Design, limit: int, graph=None) -> dict:

    rows = [{**r, "machine": "all (replicated)" if r["replicated"] else r["machine"],
             "partition": "" if r["partition"] is None else r["partition"],
             "owner": r["owner"] or ""} for r in design.assignment_rows(graph)]
    return {"assignment": rows[:limit], "assignment_more": max(0, len(rows) - limit),
            "assignment_windows": any(r["kind"] == "window" for r in rows)}

