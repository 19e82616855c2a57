"""The sensitivity sweep: the chosen design's cost as each weight's share moves."""
from __future__ import annotations

from dataclasses import dataclass

from costmodel.errors import is_a
from reports.figures._common import new_axes, wrong_kind
from reports.sensitivity import Sensitivity

SWEEP_COLOURS = {"alpha": "#1f77b4", "beta": "#ff7f0e", "gamma": "#2ca02c"}


@dataclass
class _SweepInfo:
    lines: dict[str, tuple[list[float], list[float], list[float], list[str]]]  # term -> x, chosen, base, letters
    base_shares: dict[str, float]


def _sensitivity_info(sens) -> _SweepInfo:
    """The sweep's rows by term, in sweep order (plain lists: a report need not import pandas)."""
    if not is_a(sens, Sensitivity):
        raise wrong_kind("sensitivity", "a reports.sensitivity.Sensitivity (what sensitivity(...) returns)", sens)
    total = sens.base.alpha + sens.base.beta + sens.base.gamma
    base_shares = {t: getattr(sens.base, t) / total for t in SWEEP_COLOURS} if total > 0 else {}
    lines: dict[str, tuple[list, list, list, list]] = {}
    for row in sens.rows:
        xs, chosen, base, letters = lines.setdefault(row["term"], ([], [], [], []))
        xs.append(float(row["share"]))
        chosen.append(float(row["total"]))
        base.append(float(row["base_design_total"]))
        letters.append(row["design"])
    return _SweepInfo(lines, base_shares)


def plot_sensitivity(sensitivity, ax=None):
    """Cost of the design chosen at each weight (solid, letter = which design) and of the design
    chosen at the given weights (dashed): where they part, the choice is sensitive.

    `sensitivity` is a `reports.sensitivity.Sensitivity` (see `reports.sensitivity.sensitivity`).
    """
    info = _sensitivity_info(sensitivity)
    ax = new_axes(ax, figsize=(6.4, 3.6))
    _draw_sensitivity(info, ax)
    return ax


def _draw_sensitivity(info: _SweepInfo, ax) -> None:
    for term, (xs, chosen, base, letters) in info.lines.items():
        colour = SWEEP_COLOURS.get(term, "black")
        ax.plot(xs, chosen, "-o", color=colour, markersize=4, label=f"vary {term}: chosen design")
        ax.plot(xs, base, "--", color=colour, alpha=0.6, linewidth=1)
        for x, y, letter in zip(xs, chosen, letters):
            ax.annotate(letter, (x, y), textcoords="offset points", xytext=(0, 5), fontsize=7,
                        ha="center", color=colour)
        if term in info.base_shares:
            ax.axvline(info.base_shares[term], color=colour, linestyle=":", linewidth=0.8)
    ax.plot([], [], "--", color="grey", label="design A kept at these weights")
    ax.set_xlabel("share of the varied weight in alpha + beta + gamma (dotted: given weights)", fontsize=8)
    ax.set_ylabel("design cost", fontsize=8)
    ax.set_title("sensitivity to the weights (letters: distinct designs, A = recommended)", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, frameon=False)
