"""Workload statistics (what the Spark job writes) as a notebook object: `_repr_html_`,
`.to_frame()` (one row per procedure, with what it touches) and `.plot()`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAX_BARS = 40  # procedures drawn: at 100, 0.6 in a bar made a figure 62 in wide (a strip in a notebook)
MAX_WIDTH_IN = 14.0


def shown_procedures(frame):
    """The rows the figure draws and what to call them: every procedure, or past MAX_BARS the
    MAX_BARS with the highest mean cost, costliest first (the hot ones a reader looks for)."""
    if len(frame) <= MAX_BARS:
        return frame, "procedures"
    top = frame.sort_values("mean_cost_us", ascending=False, kind="stable").head(MAX_BARS)
    return top, f"the {MAX_BARS} costliest of {len(frame)} procedures"


@dataclass
class StatisticsView:
    """Wraps `traces.statistics.Statistics` (the four DataFrames and the manifest)."""

    stats: object

    @classmethod
    def load(cls, stats_dir: str | Path) -> "StatisticsView":
        from traces.statistics import load_statistics_object

        return cls(load_statistics_object(stats_dir))

    def frames(self) -> dict:
        return self.stats.frames()

    def to_frame(self):
        """Per procedure: invocations, mean and p95 cost, abort rate, rows touched, tuples out."""
        import pandas as pd

        s = self.stats
        batches = max(int(s.manifest.get("batches") or 1), 1)
        procs = s.procedures[["procedure", "invocations", "mean_cost_us", "p95_cost_us", "abort_rate"]].copy()
        touched = s.procedure_state.groupby("procedure", as_index=False).agg(
            state_items=("state", "nunique"), rows=("rows", "sum"))
        out = s.streams.groupby("from_procedure", as_index=False).agg(tuples_out=("tuples", "sum"))
        frame = procs.merge(touched, on="procedure", how="left").merge(
            out.rename(columns={"from_procedure": "procedure"}), on="procedure", how="left")
        frame["rows_per_batch"] = frame["rows"].fillna(0) / batches
        frame["tuples_out_per_batch"] = frame["tuples_out"].fillna(0) / batches
        frame["state_items"] = frame["state_items"].fillna(0).astype(int)
        return pd.DataFrame(frame.drop(columns=["rows", "tuples_out"]))

    def plot(self, ax=None):
        """Mean cost per procedure (bars) with its p95 (whisker); past MAX_BARS procedures the
        MAX_BARS costliest, costliest first (the title says so)."""
        from reports.figures._common import label, new_axes

        frame, shown = shown_procedures(self.to_frame())
        ax = new_axes(ax, figsize=(min(MAX_WIDTH_IN, max(4.5, 0.3 * len(frame) + 2)), 3.2))
        xs = range(len(frame))
        ax.bar(xs, frame["mean_cost_us"], color="#1f77b4", label="mean")
        ax.errorbar(xs, frame["mean_cost_us"], yerr=[[0] * len(frame), (frame["p95_cost_us"] - frame["mean_cost_us"]).clip(lower=0)],
                    fmt="none", ecolor="black", capsize=3, label="p95")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([label(n, 16) for n in frame["procedure"]], fontsize=7,
                           rotation=20 if len(frame) <= 16 else 60, ha="right")
        ax.set_ylabel("cost per execution (us)", fontsize=8)
        ax.set_title(f"{shown} in the trace ({self.stats.manifest.get('batches')} batches)", fontsize=9)
        ax.legend(fontsize=7, frameon=False)
        return ax

    def __repr__(self) -> str:
        return f"StatisticsView({self.stats!r})"

    def _repr_html_(self) -> str:
        return self.stats._repr_html_()
