"""The engine's trace: the Parquet format of traces.schema, valid for traces.trace_checks, and -
aggregated by the Spark job - the same access graph the advisor builds from the spec."""
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from costmodel.graph import WorkloadGraph
from advisor.sources import load_workload
from engine_sim.engine import run_workload
from engine_sim.engine.run_options import ClientOptions
from costmodel.simple_designs import round_robin_design
from traces.trace_checks import validate_trace

pytestmark = pytest.mark.integration


def table(trace, name):
    return pq.read_table(trace / name).to_pandas()


def test_engine_trace_is_valid_and_complete(tmp_path):
    w = load_workload("linear-road")
    r = run_workload(w, round_robin_design(w), batches=30, in_process=True, trace_out=tmp_path / "t",
                     client=ClientOptions(abort_rate=0.1))
    info = validate_trace(tmp_path / "t")
    assert info.key_type == "string" and r.trace_dir == str(tmp_path / "t")
    manifest = json.loads((tmp_path / "t" / "_trace.json").read_text())
    assert manifest["format"] == "advisor.trace/1" and manifest["created_by"] == "engine_sim.engine"
    assert manifest["tables"]["CarPositions"] == {"rows": 100000, "row_bytes": 48, "key": "car_id",
                                                 "read_mostly": False}
    assert manifest["history_check"] == "ok"
    txns = table(tmp_path / "t", "txns")
    assert (txns["status"] == "commit").sum() == r.committed
    assert (txns["status"] == "abort").sum() == r.aborts
    assert set(txns["procedure"]) == set(w.procedure_names)
    flows = table(tmp_path / "t", "flows")
    assert len(flows) == len(w.streams) * 30  # one row per stream batch
    acc = table(tmp_path / "t", "accesses")
    assert acc["rows"].min() >= 1 and set(acc["mode"]) == {"read", "write"}


def test_a_trace_is_written_whole_or_not_at_all(tmp_path):
    w = load_workload("move-micro")
    out = tmp_path / "t"
    run_workload(w, round_robin_design(w), batches=5, in_process=True, trace_out=out)
    before = sorted(p.name for p in out.rglob("*"))
    with pytest.raises(Exception):
        run_workload(w, round_robin_design(w), batches=0, in_process=True, trace_out=out)
    assert sorted(p.name for p in out.rglob("*")) == before


@pytest.mark.spark
@pytest.mark.parametrize("name", ["tpcdi-trade", "chain-32"])
def test_engine_trace_aggregated_by_spark_gives_the_spec_access_graph(tmp_path, spark, name):
    from advisor.statistics_graph import graph_from_statistics
    from traces.aggregate import aggregate

    w = load_workload(name)
    d = round_robin_design(w, 2, 2) if name == "chain-32" else round_robin_design(w)
    # accesses made every batch are exact at any batch count; random ones need the batches
    # for their binomial noise (the tolerance below) to stay small
    random_accesses = any(a.probability < 1 for p in w.procedures for a in p.accesses)
    batches = 300 if random_accesses else 60
    run_workload(w, d, batches=batches, in_process=True, trace_out=tmp_path / "trace")
    aggregate(tmp_path / "trace", tmp_path / "stats", "table", spark=spark, progress=None)
    got = graph_from_statistics(tmp_path / "stats")
    spec = WorkloadGraph.from_workload(w)
    assert got.proc_names == spec.proc_names and got.state_names == spec.state_names
    s, g = spec.cost, got.cost
    spec_edges = {(p, t, wr): x for p, t, wr, x in zip(s.ps_proc, s.ps_state, s.ps_write, s.ps_weight)}
    got_edges = {(p, t, wr): x for p, t, wr, x in zip(g.ps_proc, g.ps_state, g.ps_write, g.ps_weight)}
    assert got_edges.keys() == spec_edges.keys()
    var = {}  # an access made with probability q per batch: binomial noise on the mean
    for a_proc in w.procedures:
        for a in a_proc.accesses:
            key = (spec.proc_index(a_proc.name), spec.state_index(a.table), a.mode == "write")
            var[key] = var.get(key, 0.0) + a.rows ** 2 * a.probability * (1 - a.probability) / batches
    for edge, weight in spec_edges.items():  # rows per batch, as declared
        assert got_edges[edge] == pytest.approx(weight, rel=0.02, abs=4 * var[edge] ** 0.5 + 1e-9), edge
    assert sorted(zip(g.pp_src, g.pp_dst)) == sorted(zip(s.pp_src, s.pp_dst))
    np.testing.assert_allclose(sorted(g.pp_weight), sorted(s.pp_weight))  # tuples per batch
    np.testing.assert_allclose(g.state_bytes, s.state_bytes)


def test_cli_run_writes_a_trace(tpcdi_trade, tmp_path, capsys):
    design = round_robin_design(tpcdi_trade).save(tmp_path / "d.json")
    assert run_app(["run", "tpcdi-trade", "--design", str(design), "--batches", "10",
                    "--in-process", "--trace-out", str(tmp_path / "tr")]) == 0
    assert "trace" in capsys.readouterr().out
    validate_trace(tmp_path / "tr")
