"""Data-parallel lanes end to end: the engine routes every tuple to the lane holding its key's
fragment (every access local, history checked, state equal to a serial replay), recommend
takes the data-parallel variant only when the simulator predicts it faster, and a trace keeps
what lets a statistics directory split the same way."""
import json

import pyarrow.parquet as pq
import pytest

from advisor.api import recommend
from advisor.cli import run_app
from costmodel.lanes import lane_routes
from advisor.data_parallel import data_parallel_variant
from costmodel.design import Design
from advisor.sources import load_workload
from engine_sim.engine import run_workload
from traces.aggregate import aggregate
from costmodel.granularity import fragment_of

pytestmark = pytest.mark.integration


def variant(machines: int) -> tuple:
    w = load_workload("fraud-scoring").with_cluster(machines, 1)
    table = Design("fraud-scoring", machines, 1, {"Ingest": 0, "RaiseAlert": 0, "ScoreCard": machines - 1},
                   {"CardProfiles": machines - 1, "CardStats": machines - 1, "Alerts": 0})
    return w, table, data_parallel_variant(w, table)


def test_every_tuple_runs_on_the_lane_that_holds_its_key(tmp_path):
    w, _, v = variant(3)
    route = lane_routes(w, v)["ScoreCard"]
    r = run_workload(w, v, batches=60, in_process=True, trace_out=tmp_path / "t")
    assert r.history_check == "ok" and r.state_digest == r.serial_digest
    assert r.committed == 60 * (2 + len(route.lanes)) and r.distributed_txns == 0
    txns = pq.read_table(tmp_path / "t" / "txns").to_pandas()
    acc = pq.read_table(tmp_path / "t" / "accesses").to_pandas()
    score = txns[txns["procedure"] == "ScoreCard"]
    assert sorted(set(score["base_partition"])) == sorted(route.lanes)
    rows = acc.merge(score[["txn_id", "base_partition"]], on="txn_id")
    assert len(rows) > 0 and set(rows["table"]) == {"CardProfiles", "CardStats"}
    n = len(route.fragment_partitions)
    held = [route.fragment_partitions[fragment_of(k, n)] for k in rows["key"]]
    assert held == list(rows["base_partition"])  # every access on the lane's own partition
    manifest = json.loads((tmp_path / "t" / "_trace.json").read_text())
    assert manifest["access_keys"] == {"ScoreCard": {"CardProfiles": "input:card_id",
                                                     "CardStats": "input:card_id"}}


def test_lanes_emit_their_share_of_each_stream(tmp_path):
    """Split or not, an SP sends downstream the tuples its stream declares per batch (the
    lanes together, each its share), and a split SP downstream does its share of the work."""
    w = load_workload("move-micro").with_cluster(4, 1)
    table = Design("move-micro", 4, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    both = data_parallel_variant(w, table)
    assert set(both.data_parallel) == {"SP1", "SP2"}
    per_batch = {}
    for label, d in (("table", table), ("lanes", both)):
        r = run_workload(w, d, batches=40, in_process=True, trace_out=tmp_path / label)
        assert r.history_check == "ok" and r.state_digest == r.serial_digest
        flows = pq.read_table(tmp_path / label / "flows").to_pandas()
        per_batch[label] = flows.groupby("batch_id")["tuples"].sum()
        acc = pq.read_table(tmp_path / label / "accesses").to_pandas()
        per_batch[label + " T2 rows"] = acc[acc["table"].str.startswith("T2")]["rows"].sum()
    assert (per_batch["table"] == 10).all()
    assert (per_batch["lanes"] == per_batch["table"]).all()  # was 4 x 10: every lane sent all 10
    assert per_batch["lanes T2 rows"] == per_batch["table T2 rows"] == 40 * 10


@pytest.mark.process
def test_lanes_run_one_process_per_partition(tmp_path):
    w, _, v = variant(2)
    path = v.save(tmp_path / "d.json")
    assert run_app(["run", "fraud-scoring", "--design", str(path), "--batches", "200", "--json"]) == 0


def test_recommend_takes_lanes_only_where_they_are_predicted_faster(capsys):
    assert recommend("fraud-scoring", machines=4).data_parallel is None  # table level unless asked
    rec = recommend("fraud-scoring", machines=4, data_parallel=True)
    dp = rec.data_parallel
    assert dp is not None and dp.picked and dp.variant_tps > dp.table_tps * 1.02
    assert rec.design.data_parallel == {"ScoreCard": "CardProfiles"}
    assert rec.design.provenance["granularity"] == "data-parallel"
    assert rec.predicted_tps()["recommended"] == dp.variant_tps
    assert rec.bottleneck.describe()  # judged on the graph at the design's granularity
    # one machine has nothing to spread over: the variant ties at best and the table level stays
    single = recommend("fraud-scoring", machines=1, data_parallel=True)
    assert single.data_parallel is None or not single.data_parallel.picked
    assert not single.design.data_parallel
    assert recommend("bank-transfer", machines=2, data_parallel=True).data_parallel is None  # nothing splits by key
    assert run_app(["recommend", "fraud-scoring", "--machines", "4", "--data-parallel"]) == 0
    out = capsys.readouterr().out
    assert "granularity: picked data-parallel ScoreCard over CardProfiles" in out
    assert "table-level pick" in out
    # the objective line names the pool's pick as such: its figure is not the design's
    objective = next(line for line in out.splitlines() if line.startswith("objective:"))
    assert objective.startswith("objective: throughput: table-level pick '")
    assert f"predicted {dp.table_tps:,.0f} tuples/s" in objective
    assert f"predicted {dp.variant_tps:,.0f} tuples/s vs" in out
    assert run_app(["recommend", "fraud-scoring", "--machines", "4", "--json"]) == 0
    assert "data_parallel" not in json.loads(capsys.readouterr().out)


def test_variants_too_large_to_simulate_are_dropped_not_run():
    rec = recommend("chain-32", machines=4, baselines=False, data_parallel=True)  # 32 SPs could split
    dp = rec.data_parallel
    assert dp is not None and not dp.picked and len(dp.variant.data_parallel) == 1
    assert 1 <= dp.tried < 4  # splitting all 32 at once did not fit the event budget


def test_statistics_split_like_the_spec(tmp_path, spark):
    w = load_workload("fraud-scoring")
    one = Design("fraud-scoring", 1, 1, {p: 0 for p in w.procedure_names}, {t: 0 for t in w.table_names})
    run_workload(w, one, batches=150, in_process=True, trace_out=tmp_path / "t")
    aggregate(tmp_path / "t", tmp_path / "s", spark=spark, progress=None)
    stats = json.loads((tmp_path / "s" / "_stats.json").read_text())
    assert stats["access_keys"]["ScoreCard"] == {"CardProfiles": "input:card_id", "CardStats": "input:card_id"}
    rec = recommend(str(tmp_path / "s"), machines=4, data_parallel=True)
    assert rec.data_parallel is not None and rec.data_parallel.picked
    assert set(rec.design.data_parallel) == {"ScoreCard"}
    r = run_workload(w.with_cluster(4, 1), rec.design, batches=40, in_process=True)  # runs on the spec
    assert r.history_check == "ok" and r.state_digest == r.serial_digest


@pytest.mark.parametrize("command", [["simulate", "fraud-scoring", "--design", "D"],
                                     ["run", "fraud-scoring", "--design", "D", "--batches", "5", "--in-process"],
                                     ["evaluate", "--design", "D", "fraud-scoring"], ["validate", "--design", "D", "fraud-scoring"],
                                     ["report", "--design", "D", "fraud-scoring", "--out", "R"]])
def test_every_command_refuses_lanes_the_workload_cannot_run(tmp_path, capsys, command):
    _, _, v = variant(2)
    v.data_parallel = {"RaiseAlert": "Alerts"}
    path = v.save(tmp_path / "d.json")
    args = [str(path) if a == "D" else str(tmp_path / "r.html") if a == "R" else a for a in command]
    assert run_app(args) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("report: ")]
    assert len(errors) == 1 and errors[0].startswith("error: data_parallel: 'RaiseAlert' cannot run data-parallel")
    assert not (tmp_path / "r.html").exists()


def test_a_run_says_which_sps_ran_as_lanes():
    """Its `data_parallel` was the flag: true where no SP had a key to split on, false where the
    design's own lanes ran."""
    from advisor.api import recommend

    w = load_workload("fraud-scoring")
    lanes = recommend(w, machines=2, partitions_per_machine=2, data_parallel=True).design
    assert lanes.data_parallel
    r = run_workload(w, lanes, batches=10, in_process=True, seed=4)
    assert r.data_parallel and r.lanes == ["ScoreCard"] and r.seed == 4
    assert any(line.split()[:2] == ["lanes", "ScoreCard"] for line in r.describe())
    plain = recommend(w, machines=2, partitions_per_machine=2).design
    flagged = run_workload(w, plain, batches=10, in_process=True, data_parallel=True)
    assert not flagged.data_parallel and flagged.lanes == []  # fraud-scoring has no partition_key


def test_run_says_when_its_data_parallel_flag_split_nothing(tmp_path, capsys):
    from advisor.api import recommend

    plain = recommend("fraud-scoring", machines=2, objective="cost").design.save(tmp_path / "plain.json")
    args = ["run", "--design", str(plain), "--batches", "10", "--in-process"]
    assert run_app(args + ["--data-parallel"]) == 0
    assert "note: --data-parallel split no SP: none of 'fraud-scoring' has a partition_key" in capsys.readouterr().out
    assert run_app(args) == 0
    assert "note: --data-parallel" not in capsys.readouterr().out


@pytest.mark.parametrize("machines", [2, 3, 4])
def test_the_engine_counts_the_moves_to_and_from_lanes_as_the_simulator_does(machines):
    # each lane elsewhere gets its sub-batch (empty or not): a MOVE each, not one for all lanes
    from engine_sim.sim import simulate

    w, _, v = variant(machines)
    r = run_workload(w, v, batches=30, in_process=True)
    sim = simulate(w, v, batches=100, seed=0)
    route = lane_routes(w, v)["ScoreCard"]
    ingest, alert = v.procedures["Ingest"], v.procedures["RaiseAlert"]
    expected = sum(p != ingest for p in route.lanes) + sum(p != alert for p in route.lanes)
    assert r.moves == 30 * expected
    done = sim.to_dict()
    assert done["moves"] / done["completed_batches"] == pytest.approx(expected)


def test_moves_to_and_from_lanes_are_rpcs_under_move_txn_in_the_simulator_as_in_the_engine():
    # the engine sends a lane's batches as RPCs whatever --move says; the simulator priced two
    # MOVE transactions a batch there and read the design 6x slower than it ran
    from engine_sim.sim import simulate

    w, _, v = variant(2)
    run = run_workload(w, v, batches=30, in_process=True, move="txn")
    assert run.move_txns == 0 and run.history_check == "ok"
    txn, rpc = (simulate(w, v, batches=100, seed=0, move=m).to_dict() for m in ("txn", "rpc"))
    assert txn["move_txns"] == 0 and txn["distributed_txns"] == rpc["distributed_txns"]
    assert txn["throughput_tps"] == pytest.approx(rpc["throughput_tps"], rel=0.02)
