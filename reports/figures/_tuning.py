"""The tuning loop's rounds: predicted throughput and design cost per round."""
from __future__ import annotations

from dataclasses import dataclass

from costmodel.errors import is_a
from reports.figures._common import label, new_axes, wrong_kind


@dataclass
class _RoundsInfo:
    labels: list[str]
    throughput: list[float]
    cost: list[float]


def _rounds_info(study) -> _RoundsInfo:
    from reports.tuning import TuningStudy  # (not above: it imports the whole tuning loop)

    if not is_a(study, TuningStudy):
        raise wrong_kind("study", "a reports.tuning.TuningStudy (what advisor.tune(...) returns)", study)
    frame = study.to_frame()
    labels = [f"{r}: {label(c or 'start', 26)}" for r, c in zip(frame["round"], frame["change"])]
    return _RoundsInfo(labels, frame["predicted_tps"].astype(float).tolist(), frame["cost"].tolist())


def plot_tuning(study, ax=None):
    """Predicted throughput per tuning round (bars) with the design cost (line, right axis)."""
    info = _rounds_info(study)
    ax = new_axes(ax, figsize=(max(5.0, 1.3 * len(info.labels) + 2), 3.4))
    _draw_rounds(info, ax)
    return ax


def _draw_rounds(info: _RoundsInfo, ax) -> None:
    xs = list(range(len(info.labels)))
    ax.bar(xs, info.throughput, color="#1f77b4", label="predicted throughput")
    ax.set_ylabel("predicted throughput (tuples/s)", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels(info.labels, fontsize=6, rotation=20, ha="right")
    other = ax.twinx()
    other.plot(xs, info.cost, "-o", color="#d62728", markersize=4, label="design cost")
    other.set_ylabel("design cost", fontsize=8, color="#d62728")
    other.tick_params(labelsize=7)
    ax.tick_params(labelsize=7)
    ax.set_title("tuning rounds", fontsize=9)
