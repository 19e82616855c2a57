"""Synthetic traces: the format, determinism, and that the spec's distributions are honoured."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from costmodel.workload import workload_as_plain
from advisor.sources import load_workload
from traces.keys import ZipfSampler
from traces.synth import synthesize
from traces.trace_checks import validate_trace

MIXED = {
    "name": "mixed",
    "input": {"batch_size": 4, "rate": None, "fields": ["x"]},
    "cluster": {"machines": 2, "partitions_per_machine": 2},
    "tables": [
        {"name": "A", "rows": 50, "row_bytes": 10, "key": "a", "read_mostly": True},
        {"name": "B", "rows": 1000, "row_bytes": 20, "key": "b", "read_mostly": False},
        {"name": "C", "rows": 20, "row_bytes": 30, "key": "c", "read_mostly": False},
    ],
    "procedures": [
        {"name": "P1", "cost": 1.0, "accesses": [
            {"table": "A", "mode": "read", "rows": 3, "keys": "zipf:0.9", "probability": 1.0},
            {"table": "B", "mode": "write", "rows": 4, "keys": "input:x", "probability": 1.0}]},
        {"name": "P2", "cost": 3.0, "accesses": [
            {"table": "B", "mode": "read", "rows": 4, "keys": "input:x", "probability": 1.0},
            {"table": "C", "mode": "write", "rows": 2, "keys": "sequential", "probability": 1.0}]},
        {"name": "P3", "cost": 0.5, "accesses": [
            {"table": "C", "mode": "read", "rows": 1.5, "keys": "uniform", "probability": 0.3}]},
    ],
    "streams": [{"source": "P1", "target": "P2", "tuples": 2.5, "tuple_bytes": 8},
                {"source": "P2", "target": "P3", "tuples": 1, "tuple_bytes": 16}],
    "nested": [],
    "topological_order": ["P1", "P2", "P3"],
}


def read(trace, dataset) -> pd.DataFrame:
    return pq.read_table(trace / dataset).to_pandas()


@pytest.fixture(scope="module")
def mixed_trace(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "mixed"
    synthesize(MIXED, out, batches=3000, seed=7, abort_rate=0.1, noise=0.1)
    txns, acc = read(out, "txns"), read(out, "accesses")
    acc = acc.merge(txns[["txn_id", "procedure", "batch_id", "status"]], on="txn_id")
    return out, txns, acc, read(out, "flows")


def test_trace_is_valid_and_manifest_counts_rows(mixed_trace):
    out, txns, acc, flows = mixed_trace
    info = validate_trace(out)
    manifest = json.loads((out / "_trace.json").read_text())
    assert manifest["format"] == "advisor.trace/1"
    assert manifest["rows"] == info.rows == {"txns": len(txns), "accesses": len(acc),
                                             "flows": len(flows)}
    assert manifest["tables"]["B"] == {"rows": 1000, "row_bytes": 20, "key": "b",
                                       "read_mostly": False}
    assert txns["txn_id"].is_unique
    assert (txns["end_us"] >= txns["start_us"]).all()


def test_same_seed_same_trace_other_seed_other_trace(tmp_path):
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        synthesize(MIXED, tmp_path / name, batches=200, seed=seed)
    for ds in ("txns", "accesses", "flows"):
        a, b, c = (pq.read_table(tmp_path / n / ds) for n in "abc")
        assert a.equals(b)
    assert not pq.read_table(tmp_path / "a" / "accesses").equals(
        pq.read_table(tmp_path / "c" / "accesses"))


def test_chunking_does_not_change_the_distribution_of_a_seeded_trace(tmp_path):
    # chunks of ~50 rows instead of ~1M: same row counts per procedure, same schema
    synthesize(MIXED, tmp_path / "small", batches=500, seed=1, chunk_rows=50)
    txns = read(tmp_path / "small", "txns")
    assert txns.groupby("procedure").size().to_dict() == {"P1": 500, "P2": 500, "P3": 500}
    assert sorted(txns["batch_id"].unique()) == list(range(500))


def test_zipf_keys_follow_the_bounded_zipf_distribution(mixed_trace):
    _, _, acc, _ = mixed_trace
    a = acc[(acc["table"] == "A") & (acc["status"] == "commit")]
    counts = a.groupby(a["key"].astype(int))["rows"].sum().reindex(range(50), fill_value=0)
    observed = counts / counts.sum()
    expected = np.arange(1, 51) ** -0.9
    expected /= expected.sum()
    assert 0.5 * np.abs(observed.to_numpy() - expected).sum() < 0.03  # total variation
    assert observed.iloc[0] > 3 * observed.iloc[10]


def test_zipf_sampler_large_tables_use_the_power_law():
    rng = np.random.default_rng(0)
    keys = ZipfSampler(50_000_000, 0.8).sample(rng, 200_000)
    assert keys.min() >= 0 and keys.max() < 50_000_000
    # P(key < 100) under the power law ~ (101^0.2 - 1) / (50e6^0.2 - 1)
    share = (keys < 100).mean()
    assert share == pytest.approx((101 ** 0.2 - 1) / (50e6 ** 0.2 - 1), rel=0.1)


def test_input_field_gives_the_same_key_to_every_procedure_in_a_batch(mixed_trace):
    _, _, acc, _ = mixed_trace
    b = acc[(acc["table"] == "B") & (acc["status"] == "commit")]
    per = b.groupby(["batch_id", "procedure"])["key"].apply(lambda s: tuple(sorted(s))).unstack()
    assert (per["P1"] == per["P2"]).all()
    assert per["P1"].map(len).mean() > 3  # 4 tuples per batch, rare collisions coalesce


def test_sequential_keys_run_on_across_batches(mixed_trace):
    _, txns, acc, _ = mixed_trace
    c = acc[(acc["table"] == "C") & (acc["procedure"] == "P2") & (acc["status"] == "commit")]
    keys = c.sort_values(["batch_id", "key"]).groupby("batch_id")["key"].apply(
        lambda s: sorted(map(int, s)))
    flat = np.concatenate([k if k[-1] - k[0] == 1 else k[::-1] for k in keys])
    assert (flat == np.arange(flat.size) % 20).all()


def test_probability_fractional_rows_costs_aborts_and_flows(mixed_trace):
    _, txns, acc, flows = mixed_trace
    committed = txns[txns["status"] == "commit"]
    p3 = acc[(acc["procedure"] == "P3") & (acc["status"] == "commit")]
    assert p3["txn_id"].nunique() / 3000 == pytest.approx(0.3, abs=0.04)
    assert p3["rows"].sum() / p3["txn_id"].nunique() == pytest.approx(1.5, abs=0.08)
    cost = (committed["end_us"] - committed["start_us"]).groupby(committed["procedure"]).mean()
    assert cost["P2"] / cost["P1"] == pytest.approx(3.0, rel=0.02)
    assert cost["P1"] / cost["P3"] == pytest.approx(2.0, rel=0.02)
    assert (txns["status"] == "abort").sum() / 9000 == pytest.approx(0.1, abs=0.02)
    assert (txns.loc[txns["status"] == "abort", "restarts"] == 0).all()
    retried = txns[(txns["status"] == "commit") & (txns["restarts"] == 1)]
    assert len(retried) == (txns["status"] == "abort").sum()
    e = flows[flows["from_procedure"] == "P1"]
    assert e["tuples"].sum() / 3000 == pytest.approx(2.5, abs=0.05)
    assert (e["bytes"] == e["tuples"] * 8).all()
    # dataflow order within a batch: P1 ends before P2 starts
    first = committed.pivot(index="batch_id", columns="procedure", values="start_us")
    assert (first["P1"] < first["P2"]).all() and (first["P2"] < first["P3"]).all()


def test_voter_input_fields_match_across_tables(tmp_path):
    w = load_workload("voter-leaderboard")
    synthesize(workload_as_plain(w), tmp_path / "v", batches=300, seed=2)
    txns, acc = read(tmp_path / "v", "txns"), read(tmp_path / "v", "accesses")
    acc = acc.merge(txns[["txn_id", "batch_id"]], on="txn_id")
    contestant = acc[(acc["table"] == "Contestants") & (acc["mode"] == "read")].set_index(
        "batch_id")["key"]
    board = acc[(acc["table"] == "Leaderboard") & (acc["mode"] == "write")].set_index(
        "batch_id")["key"]
    assert (contestant.sort_index() == board.sort_index()).all()
    assert json.loads((tmp_path / "v" / "_trace.json").read_text())["nested"] == [
        ["Vote", "UpdateLeaderboard", "DeleteContestant"]]


def test_cli_synth_writes_a_trace_and_rejects_bad_input(tmp_path, capsys):
    assert run_app(["trace", "synth", "tpcdi-trade", "--batches", "20", "--out",
                    str(tmp_path / "t"), "--seed", "1", "-q"]) == 0
    assert "20 batches" in capsys.readouterr().out
    validate_trace(tmp_path / "t")
    assert run_app(["trace", "synth", "no-such-workload", "--batches", "5", "--out",
                    str(tmp_path / "u")]) == 2
    assert run_app(["trace", "synth", "tpcdi-trade", "--batches", "0", "--out",
                    str(tmp_path / "u")]) == 2
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert run_app(["trace", "synth", "tpcdi-trade", "--batches", "5", "--out",
                    str(tmp_path / "mine")]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 3 and "Traceback" not in err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert not (tmp_path / "u").exists()


_RSS_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    from advisor.sources import load_workload
    from costmodel.workload import workload_as_plain
    from traces.synth import synthesize
    spec = workload_as_plain(load_workload("tpcdi-trade"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    s = synthesize(spec, sys.argv[1], int(sys.argv[2]), seed=0, chunk_rows=int(sys.argv[3]))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rows": s.accesses, "growth_kb": after - before}))
""")


def _rss_growth(out, batches: int, chunk_rows: int) -> dict:
    proc = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, str(out), str(batches),
                           str(chunk_rows)], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


@pytest.mark.process  # measures a subprocess
def test_memory_stays_flat_as_the_trace_grows(tmp_path):
    """Peak RSS growth during synthesis does not grow with the number of rows (chunks of 64k
    rows: a 5x longer trace needs no more memory)."""
    small = _rss_growth(tmp_path / "s", 3_000, 1 << 16)
    large = _rss_growth(tmp_path / "l", 15_000, 1 << 16)
    assert large["rows"] > 4.5 * small["rows"]
    assert large["growth_kb"] < small["growth_kb"] + 30_000


@pytest.mark.slow
def test_memory_stays_flat_at_ten_million_rows(tmp_path):
    """1M vs 10M access rows with the default chunk size: the same peak (< 2 GiB for any size)."""
    small = _rss_growth(tmp_path / "s", 15_000, 1 << 20)
    large = _rss_growth(tmp_path / "l", 150_000, 1 << 20)
    assert large["rows"] > 9_000_000
    assert large["growth_kb"] < small["growth_kb"] + 100_000
    assert large["growth_kb"] < 2 * 2**20


@pytest.mark.parametrize("unit", ["nan", "-5", "0", "1e12"])
def test_a_cost_unit_the_trace_cannot_hold_is_refused_before_writing(tmp_path, capsys, unit):
    out = tmp_path / "t"
    assert run_app(["trace", "synth", "tpcdi-trade", "--batches", "5", "--out", str(out),
                    "--cost-unit-us", unit]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --cost-unit-us must be a number > 0") and err.count("\n") == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_synthetic_trace_takes_the_specs_cost_unit_unless_told_another(tmp_path):
    # it took 100 us a unit whatever the spec said: a spec at 1,000 was traced at 100, and the
    # statistics' workload predicted 7.9x fast (the engine's traces carry the spec's unit)
    spec = {**MIXED, "input": {**MIXED["input"], "cost_unit_us": 250.0}}
    synthesize(spec, tmp_path / "own", batches=20, seed=1, noise=0.0)
    synthesize(spec, tmp_path / "told", batches=20, seed=1, noise=0.0, cost_unit_us=100.0)
    for name, unit in (("own", 250.0), ("told", 100.0)):
        manifest = json.loads((tmp_path / name / "_trace.json").read_text())
        assert manifest["input"]["cost_unit_us"] == unit
    own, told = (pq.read_table(tmp_path / n / "txns").to_pandas() for n in ("own", "told"))
    durations = [(t["end_us"] - t["start_us"]).sum() for t in (own, told)]
    assert durations[0] == pytest.approx(2.5 * durations[1], rel=0.01)  # the SPs' work at 250 us a unit
    synthesize(MIXED, tmp_path / "default", batches=2)  # a spec that says none: 100
    assert json.loads((tmp_path / "default" / "_trace.json").read_text())["input"]["cost_unit_us"] == 100.0


def test_a_batch_of_more_access_rows_than_memory_holds_is_refused_before_writing(tmp_path, capsys):
    # a batch is drawn whole: a spec's 1e9 rows an access (a spec may say up to 1e9) took 50 GB
    # and the command was killed for memory, with nothing said; one past the limit is refused
    from traces.synth import MAX_SYNTH_ROWS_PER_BATCH

    spec = tmp_path / "big.toml"
    spec.write_text('name = "big"\n[[tables]]\nname = "T"\nrows = 1000\nrow_bytes = 8\nkey = "k"\n'
                    '[[procedures]]\nname = "P"\ncost = 1.0\naccesses = [{ table = "T", mode = "write", '
                    f'rows = {MAX_SYNTH_ROWS_PER_BATCH - 1} }}, {{ table = "T", mode = "read", rows = 1.5 }}]\n')
    out = tmp_path / "t"
    assert run_app(["trace", "synth", str(spec), "--batches", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: big: a batch draws up to {MAX_SYNTH_ROWS_PER_BATCH + 1:,} access rows")
    assert err.count("\n") == 1 and not out.exists()
