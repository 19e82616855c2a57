"""A statistics directory's digest (`sha256`, the input digest every design made from it
records) names the tables as they are read, not as the manifest remembers them: a table
edited since it was written (the manifest kept) is another input, so a report of a design
`recommend` picked from the old figures searches again rather than take it for the pick."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from advisor.pick_digest import is_the_pick, pick_request
from advisor.sources import load_source
from costmodel.weights import Weights
from traces.statistics import read_statistics_arrow

DATA = Path(__file__).resolve().parents[1] / "common" / "data" / "stats-move-micro"


def copied(tmp_path) -> Path:
    stats = tmp_path / "stats"
    shutil.copytree(DATA, stats)
    return stats


def edit_procedures(stats: Path) -> None:
    """SP1's durations four times as long; `_stats.json` left as it was."""
    table = pq.read_table(stats / "procedures.parquet")
    frame = table.to_pandas()
    for column in ("total_cost_us", "mean_cost_us", "p50_cost_us", "p95_cost_us"):
        frame.loc[frame.procedure == "SP1", column] *= 4
    pq.write_table(pa.Table.from_pandas(frame, schema=table.schema, preserve_index=False),
                   stats / "procedures.parquet")


def test_unedited_statistics_keep_the_digest_they_were_written_with(tmp_path):
    stats = copied(tmp_path)
    written = json.loads((stats / "_stats.json").read_text())["sha256"]
    assert read_statistics_arrow(stats)[1]["sha256"] == written
    assert load_source(stats)[1].source_sha256 == written


def test_an_edited_table_is_another_input(tmp_path):
    stats = copied(tmp_path)
    written = json.loads((stats / "_stats.json").read_text())["sha256"]
    edit_procedures(stats)
    workload, graph = load_source(stats)
    assert graph.source_sha256 != written and workload.sha256 == graph.source_sha256
    assert json.loads((stats / "_stats.json").read_text())["sha256"] == written  # nothing rewritten


def test_a_design_picked_from_the_old_figures_is_not_the_pick_of_the_new_ones(tmp_path):
    from advisor.api import recommend

    stats = copied(tmp_path)
    weights = Weights(0.3, 0.1, 0.6)  # the same request but for the input (priced weights would differ too)
    design = recommend(stats, weights=weights, objective="cost", baselines=False).design
    workload, graph = load_source(stats)
    assert is_the_pick(design, pick_request(graph, workload, weights, 0, objective="cost"))
    edit_procedures(stats)
    workload, graph = load_source(stats)
    assert not is_the_pick(design, pick_request(graph, workload, weights, 0, objective="cost"))
