"""Throughput figures: predicted throughput against machines (simulator), and the engine's
measured throughput beside the simulator's prediction for the same designs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodel.errors import UserError
from reports.figures._common import label, new_axes, wrong_kind


def _frame(data):
    return data.to_frame() if hasattr(data, "to_frame") else data


@dataclass
class _CurveInfo:
    lines: dict[str, tuple[list[int], list[float]]]
    screened: dict[str, list[tuple[int, float]]]  # the points screened, not simulated in full, by design


def _curve_info(curve) -> _CurveInfo:
    """One line per design, in order of first appearance, by machine count (a `ScalingCurve`'s
    rows as plain lists: a report need not import pandas; a DataFrame's records alike)."""
    if not (hasattr(curve, "rows") or hasattr(curve, "columns")):
        raise wrong_kind("curve", "a reports.scaling.ScalingCurve or a DataFrame of machines, design, "
                         "throughput_tps", curve)
    rows = curve.rows if hasattr(curve, "rows") else curve.to_dict("records")
    points: dict[str, list[tuple[int, float]]] = {}
    screened: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        tps = row["throughput_tps"]
        point = (int(row["machines"]), float("nan") if tps is None else float(tps))
        points.setdefault(str(row["design"]), []).append(point)
        if isinstance(row.get("screened"), (bool, np.bool_)) and row["screened"]:  # (a frame's NaN: not)
            screened.setdefault(str(row["design"]), []).append(point)
    lines = {}
    for design, pairs in points.items():
        pairs.sort(key=lambda p: p[0])
        lines[design] = ([m for m, _ in pairs], [t for _, t in pairs])
    return _CurveInfo(lines, screened)


def plot_throughput_vs_machines(curve, ax=None):
    """Predicted (simulated) throughput per machine count, one line per design kind.

    `curve` is a `reports.scaling.ScalingCurve` or a DataFrame with columns machines, design,
    throughput_tps.
    """
    info = _curve_info(curve)
    ax = new_axes(ax, figsize=(6.4, 3.4))
    _draw_curve(info, ax)
    return ax


def _draw_curve(info: _CurveInfo, ax) -> None:
    for i, (design, (xs, ys)) in enumerate(info.lines.items()):
        (line,) = ax.plot(xs, ys, "-o", markersize=4, linewidth=2.2 if i == 0 else 1.2, label=label(design, 24))
        if design in info.screened:  # hollow: screened, not simulated in full (ScalingCurve.screened_note)
            sx, sy = zip(*info.screened[design])
            ax.plot(sx, sy, "o", markersize=4, color=line.get_color(), markerfacecolor="white", zorder=3)
    ax.set_xlabel("machines", fontsize=8)
    ax.set_ylabel("predicted throughput (tuples/s)", fontsize=8)
    ax.set_title("throughput against cluster size (simulator)", fontsize=9)
    ax.set_ylim(bottom=0)
    allx = sorted({x for xs, _ in info.lines.values() for x in xs})
    if allx:
        ax.set_xticks(allx)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, frameon=False)


@dataclass
class _PairInfo:
    names: list[str]
    engine: list[float]
    simulator: list[float]
    unit: str


def _pair_info(comparison, metric: str = "throughput_tps") -> _PairInfo:
    frame = _frame(comparison)
    columns = [str(c) for c in getattr(frame, "columns", ())]
    metrics = [c.removeprefix("engine_") for c in columns
               if c.startswith("engine_") and "sim_" + c.removeprefix("engine_") in columns]
    if "design" not in columns or not metrics:
        raise wrong_kind("comparison", "a ValidationView or a DataFrame of design, engine_<metric>, "
                         "sim_<metric>", comparison)
    if metric not in metrics:
        raise UserError(f"unknown metric {metric!r}: the comparison has {', '.join(metrics)}")
    unit = "throughput (tuples/s)" if metric == "throughput_tps" else metric
    return _PairInfo([str(x) for x in frame["design"]], frame[f"engine_{metric}"].astype(float).tolist(),
                     frame[f"sim_{metric}"].astype(float).tolist(), unit)


def plot_engine_vs_simulator(comparison, ax=None, metric: str = "throughput_tps"):
    """Measured (engine) beside predicted (simulator), per design.

    `comparison` is a `reports.validation_view.ValidationView` or a DataFrame with columns
    design, engine_<metric>, sim_<metric>.
    """
    info = _pair_info(comparison, metric)
    ax = new_axes(ax, figsize=(max(4.5, 1.2 * len(info.names) + 2), 3.2))
    _draw_pairs(info, ax)
    return ax


def _draw_pairs(info: _PairInfo, ax) -> None:
    xs = np.arange(len(info.names))
    ax.bar(xs - 0.2, np.nan_to_num(info.engine), 0.4, label="engine (measured)", color="#1f77b4")
    ax.bar(xs + 0.2, np.nan_to_num(info.simulator), 0.4, label="simulator (predicted)", color="#ff7f0e")
    ax.set_xticks(xs)
    ax.set_xticklabels([label(n, 16) for n in info.names], fontsize=7, rotation=15)
    ax.set_ylabel(info.unit, fontsize=8)
    ax.set_title("engine vs simulator", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, frameon=False)
