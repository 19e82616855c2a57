"""Windows in traces: synthetic traces record the owner's window accesses under the window's
name, validation accepts them, the Spark aggregation keeps each window whole as its own state
item at every granularity, and the graph from statistics keeps a window with its owner."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from costmodel.workload import workload_as_plain
from costmodel.graph import WorkloadGraph
from costmodel.spec_reader import parse_workload
from advisor.statistics_graph import graph_from_statistics
from traces.aggregate import aggregate
from traces.errors import TraceError
from traces.synth import synthesize
from traces.trace_checks import validate_trace
from window_specs import procedure, reads, spec_text, stream, table, window, writes

SPEC = spec_text(
    "wtrace",
    table("Bids", rows=100, row_bytes=10),
    table("Stats", rows=50, row_bytes=20),
    procedure("Ingest", 3.0, writes("Bids", 2)),
    procedure("Trend", 0.5, reads("RecentBids", 3), writes("Stats", 1)),
    procedure("Alert", 0.5, reads("Stats", 2)),
    stream("Ingest", "Trend", 4),
    stream("Trend", "Alert", 2.5),
    window("RecentBids", "Trend", size=20, slide=5),
    window("LastSecond", "Alert", size=1.0, slide=0.5, kind="time", tuple_bytes=16),
    rate=10)
BATCHES = 300


@pytest.fixture(scope="module")
def workload():
    return parse_workload(SPEC, "wtrace.toml")


@pytest.fixture(scope="module")
def trace(tmp_path_factory, workload):
    out = tmp_path_factory.mktemp("wtrace") / "trace"
    synthesize(workload_as_plain(workload), out, batches=BATCHES, seed=4, abort_rate=0.05)
    return out


def joined(trace) -> pd.DataFrame:
    txns = pq.read_table(trace / "txns").to_pandas()
    acc = pq.read_table(trace / "accesses").to_pandas()
    return acc.merge(txns[["txn_id", "procedure", "batch_id", "status"]], on="txn_id")


# -- synthetic traces -----------------------------------------------------------------------------

def test_the_manifest_records_the_windows_and_validation_accepts_them(trace, capsys):
    manifest = json.loads((trace / "_trace.json").read_text())
    assert manifest["windows"]["RecentBids"] == {
        "procedure": "Trend", "size": 20, "slide": 5, "kind": "tuple", "tuple_bytes": 32,
        "tuples": 20}
    assert manifest["windows"]["LastSecond"]["kind"] == "time"
    assert manifest["windows"]["LastSecond"]["tuples"] == pytest.approx(1.0 * 10 * 2.5)
    info = validate_trace(trace)
    assert set(info.windows) == {"RecentBids", "LastSecond"}
    assert {"RecentBids", "LastSecond"} <= set(info.tables)
    assert run_app(["trace", "validate", str(trace)]) == 0


def test_only_the_owner_touches_its_window_inserting_what_it_receives(trace):
    acc = joined(trace)
    flows = pq.read_table(trace / "flows").to_pandas()
    for window, owner in (("RecentBids", "Trend"), ("LastSecond", "Alert")):
        mine = acc[acc["table"] == window]
        assert set(mine["procedure"]) == {owner}
        writes = mine[(mine["mode"] == "write") & (mine["status"] == "commit")]
        received = flows[flows["to_procedure"] == owner].groupby("batch_id")["tuples"].sum()
        per_batch = writes.groupby("batch_id")["rows"].sum()
        pd.testing.assert_series_equal(per_batch, received[received > 0], check_names=False)
        # keys are the tuples' sequence numbers: each insert starts where the last one ended
        keys = writes.sort_values("batch_id")["key"].astype(int).to_numpy()
        rows = writes.sort_values("batch_id")["rows"].to_numpy()
        assert keys[0] == 0 and (keys[1:] == keys[:-1] + rows[:-1]).all()


def test_the_owner_reads_the_active_window_when_it_slides(trace):
    acc = joined(trace)
    mine = acc[(acc["table"] == "RecentBids") & (acc["status"] == "commit")]
    reads = mine[mine["mode"] == "read"]
    # 4 tuples per batch, slide 5: a slide in 4 of 5 batches, each reading the window's
    # aggregate from its metadata row (key -1, one row), as the engine's trace records it
    keys = reads["key"].astype("int64")
    slide_reads = reads[keys == -1]
    assert len(slide_reads) == pytest.approx(BATCHES * 4 / 5, abs=2)
    assert (slide_reads["rows"] == 1).all()
    # the declared reads (3 rows) take the newest active tuples: they end where the staged
    # (under one slide) begin
    declared = reads[keys >= 0]
    assert len(declared) and declared["rows"].max() <= 3
    inserted = mine[mine["mode"] == "write"].groupby("batch_id")["rows"].sum().cumsum()
    end = declared.set_index("batch_id").eval("key.astype('int64') + rows")
    staged = inserted.reindex(end.index) - end
    assert ((staged >= 0) & (staged < 5)).all()
    # the time window: at 10 batches/s and a 0.5 s slide, a slide every 5 batches
    alert = acc[(acc["table"] == "LastSecond") & (acc["status"] == "commit")
                & (acc["mode"] == "read")]
    assert len(alert) == pytest.approx(BATCHES / 5, abs=2)
    assert alert["rows"].max() <= 10 * 3  # the last second: 10 batches of 2 or 3 tuples


def test_bad_manifest_windows_are_one_line(trace, tmp_path, capsys):
    for change, words in [
        (lambda w: w["RecentBids"].update(slide=30), "slide must be > 0 and <= size"),
        (lambda w: w["RecentBids"].update(kind="rows"), "kind must be 'tuple' or 'time'"),
        (lambda w: w.update(Bids={"procedure": "Trend", "size": 1, "slide": 1}),
         "clashes with a table"),
        (lambda w: w["RecentBids"].pop("procedure"), "'procedure' (its owner)"),
    ]:
        bad = tmp_path / "bad"
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(trace, bad)
        manifest = json.loads((bad / "_trace.json").read_text())
        change(manifest["windows"])
        (bad / "_trace.json").write_text(json.dumps(manifest))
        with pytest.raises(TraceError, match="manifest window") as info:
            validate_trace(bad)
        assert words in str(info.value) and "\n" not in str(info.value)
        assert run_app(["trace", "validate", str(bad)]) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err


def test_a_window_whose_owner_never_ran_is_refused_by_validation(trace, tmp_path, capsys):
    """A misspelt owner passed `trace validate` and failed only after the Spark job."""
    bad = tmp_path / "ghost"
    shutil.copytree(trace, bad)
    manifest = json.loads((bad / "_trace.json").read_text())
    manifest["windows"]["RecentBids"]["procedure"] = "Ghost"
    (bad / "_trace.json").write_text(json.dumps(manifest))
    assert run_app(["trace", "validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.endswith("window 'RecentBids' belongs to procedure 'Ghost', which never ran (no row in txns)\n")
    assert err.count("\n") == 1


# -- aggregation ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stats(spark, trace, tmp_path_factory):
    root = tmp_path_factory.mktemp("wstats")
    out = {}
    for granularity, hot in (("table", 0), ("fragment:4", 0), ("tuple:3", 8)):
        out[granularity] = aggregate(trace, root / granularity.replace(":", "-"), granularity,
                                     hot, spark=spark, progress=None)
    return out


@pytest.mark.spark
@pytest.mark.parametrize("granularity", ["table", "fragment:4", "tuple:3"])
def test_windows_stay_whole_state_items_at_every_granularity(stats, trace, granularity):
    s = stats[granularity]
    windows = s.state[s.state["kind"] == "window"]
    assert list(windows["state"]) == ["RecentBids", "LastSecond"]
    assert (windows["table"] == windows["state"]).all()
    # never hashed into fragments, never a hot tuple, and after the tables' items
    others = s.state[s.state["kind"] != "window"]
    assert not others["table"].isin(["RecentBids", "LastSecond"]).any()
    assert list(s.state["kind"]).index("window") == len(others)
    # the totals are the trace's, all on the owner
    acc = joined(trace)
    for window, owner in (("RecentBids", "Trend"), ("LastSecond", "Alert")):
        rows = s.procedure_state[s.procedure_state["state"] == window]
        assert list(rows["procedure"]) == [owner]
        mine = acc[acc["table"] == window]
        assert rows["write_rows"].iloc[0] == mine.loc[mine["mode"] == "write", "rows"].sum()
        assert rows["read_rows"].iloc[0] == mine.loc[mine["mode"] == "read", "rows"].sum()
    bytes_ = dict(zip(windows["state"], windows["estimated_bytes"]))
    assert bytes_ == {"RecentBids": 20 * 32, "LastSecond": pytest.approx(25 * 16)}
    assert set(s.manifest["windows"]) == {"RecentBids", "LastSecond"}


@pytest.mark.spark
def test_the_graph_from_statistics_keeps_each_window_with_its_owner(stats, workload):
    spec = WorkloadGraph.from_workload(workload)
    for granularity in ("table", "fragment:4", "tuple:3"):
        g = graph_from_statistics(stats[granularity].path)
        assert g.window_names == ["RecentBids", "LastSecond"]
        owners = {g.state_names[j]: g.proc_names[g.cost.state_owner[j]]
                  for j in range(g.n_state) if g.is_window(j)}
        assert owners == {"RecentBids": "Trend", "LastSecond": "Alert"}
        assert not g.state_read_mostly[[g.state_index(w) for w in g.window_names]].any()
    table = graph_from_statistics(stats["table"].path)
    assert table.state_names == spec.state_names
    np.testing.assert_array_equal(table.cost.state_owner, spec.cost.state_owner)


@pytest.mark.spark
def test_a_window_touched_by_another_procedure_is_refused(spark, trace, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(trace, bad)
    manifest = json.loads((bad / "_trace.json").read_text())
    manifest["windows"]["Stats"] = manifest["windows"].pop("LastSecond")  # Stats: by Trend too
    manifest["tables"].pop("Stats")
    (bad / "_trace.json").write_text(json.dumps(manifest))
    with pytest.raises(TraceError, match="window 'Stats' is accessed by 'Trend', but only its "
                                         "owner 'Alert' may touch it"):
        aggregate(bad, None, "table", spark=spark, progress=None)
