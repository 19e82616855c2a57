"""How a `Selection` (the final pick) reads in a print and a notebook: one line, and a table of
every candidate it weighed.

Why a module of its own: the selection judges candidates; this only shows them. The
dataclass's own repr printed every candidate's two partition arrays, about 230 lines at 100
SPs, where the doc's `rec.selection` promised every candidate's cost and figures, and why.
"""
from __future__ import annotations

import html


def selection_line(selection) -> str:
    """One line: the objective, the pick, how many were weighed and simulated."""
    chosen = selection.chosen
    label = getattr(chosen, "label", "?")
    shown = selection.prediction if selection.prediction is not None else getattr(chosen, "predicted_tps", None)
    figure = f", predicted {shown:,.0f} tuples/s" if isinstance(shown, (int, float)) else ""
    asked = f" (asked: {selection.requested})" if selection.requested != selection.objective else ""
    return (f"Selection(by {selection.objective}{asked}: picked {label!r:.80} of "
            f"{len(selection.candidates)} candidates{figure}, {selection.simulated} simulated)")


def selection_frame(selection):
    """Every candidate weighed, one row each in the order weighed: where it came from, its
    cost, its estimated and predicted tuples/s (NaN: not judged so) and whether it was picked."""
    import pandas as pd

    rows = [{"label": c.label, "source": c.source, "picked": c is selection.chosen,
             "cost": float(c.cost.total), "feasible": bool(c.cost.feasible),
             "estimated_tps": c.estimated_tps, "predicted_tps": c.predicted_tps,
             "batches": c.batches if c.predicted_tps is not None else None}
            for c in selection.candidates]
    frame = pd.DataFrame(rows, columns=["label", "source", "picked", "cost", "feasible", "estimated_tps",
                                        "predicted_tps", "batches"])
    frame[["estimated_tps", "predicted_tps"]] = frame[["estimated_tps", "predicted_tps"]].astype(float)
    frame["batches"] = frame["batches"].astype("Int64")
    return frame


def selection_html(selection) -> str:
    """The line, the note that says why (a fallback's reason), and the candidates' table."""
    e = html.escape
    frame = selection_frame(selection)
    frame["batches"] = frame["batches"].astype(float)  # (its <NA> shown "-", as the figures' gaps are)
    formats = {c: (lambda x: f"{x:,.0f}") for c in ("estimated_tps", "predicted_tps", "batches")}
    note = f"<br>{e(selection.note)}" if selection.note else ""
    return (f"<b>{e(selection_line(selection))}</b>{note}"
            + frame.to_html(index=False, formatters=formats, float_format=lambda x: f"{x:.4f}", na_rep="-"))
