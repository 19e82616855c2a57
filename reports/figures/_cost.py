"""The cost breakdown of the recommendation beside every baseline."""
from __future__ import annotations

from dataclasses import dataclass

from costmodel.design import Design
from costmodel.errors import is_a
from reports.figures._common import label, new_axes, wrong_kind

TERM_COLOURS = {"state co-location (alpha)": "#1f77b4", "processing co-location (beta)": "#ff7f0e",
                "load balance (gamma)": "#2ca02c"}


@dataclass
class _CostInfo:
    names: list[str]
    terms: dict[str, list[float]]  # weighted terms, one list per term
    totals: list[float]
    feasible: list[bool]


def _designs_of(recommendation) -> dict:
    designs = recommendation.all_designs() if hasattr(recommendation, "all_designs") else recommendation
    if not isinstance(designs, dict) or not all(is_a(d, Design) and d.cost is not None
                                                for d in designs.values()):
        raise wrong_kind("recommendation", "an advisor Recommendation or a dict of name -> scored Design",
                         recommendation)
    return designs


def _cost_info(recommendation) -> _CostInfo:
    designs = _designs_of(recommendation)
    names, totals, feasible = [], [], []
    terms: dict[str, list[float]] = {k: [] for k in TERM_COLOURS}
    for name, d in designs.items():
        c, w = d.cost, d.cost.weights
        names.append(name)
        terms["state co-location (alpha)"].append(w.alpha * c.state_colocation)
        terms["processing co-location (beta)"].append(w.beta * c.processing_colocation)
        terms["load balance (gamma)"].append(w.gamma * c.load_balance)
        totals.append(c.total)
        feasible.append(c.feasible)
    return _CostInfo(names, terms, totals, feasible)


def plot_cost_breakdown(recommendation, ax=None):
    """Stacked weighted cost terms per design (the first, the recommendation, in bold).

    `recommendation` is an `advisor.recommendation.Recommendation` or a dict name -> Design.
    """
    info = _cost_info(recommendation)
    ax = new_axes(ax, figsize=(6.4, 0.35 * len(info.names) + 1.4))
    _draw_cost(info, ax)
    return ax


def _draw_cost(info: _CostInfo, ax) -> None:
    ys = list(range(len(info.names)))[::-1]
    left = [0.0] * len(info.names)
    for term, values in info.terms.items():
        ax.barh(ys, values, left=left, color=TERM_COLOURS[term], label=term, height=0.65)
        left = [a + b for a, b in zip(left, values)]
    top = max(info.totals, default=1.0) or 1.0
    for y, total, ok in zip(ys, info.totals, info.feasible):
        ax.text(total + 0.01 * top, y, f"{total:.3f}" + ("" if ok else "  infeasible (memory)"),
                va="center", fontsize=7, color="black" if ok else "#d62728")
    ax.set_yticks(ys)
    ax.set_yticklabels([label(n, 24) for n in info.names], fontsize=7)
    if ys:
        ax.get_yticklabels()[0].set_fontweight("bold")
    ax.set_xlim(0, top * 1.3)
    ax.set_xlabel("design cost (lower is better)", fontsize=8)
    ax.set_title("cost breakdown: recommendation vs baselines", fontsize=9)
    ax.tick_params(labelsize=7)
    # below the axes: inside, at lower right, it covered the last bar and its total
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22 if len(ys) < 6 else -0.12),
              ncol=3, frameon=False)
