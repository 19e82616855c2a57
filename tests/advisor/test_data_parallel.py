"""Data-parallel lanes as a design states them: which SPs can split, the lanes a design gives
them, the variant the pick weighs, the design file, and what the simulator makes of lanes."""
import json

import pytest

from costmodel.lanes import data_parallel_blocker, lane_routes, lane_tables
from advisor.data_parallel import data_parallel_variant
from costmodel.design import Design
from costmodel.errors import DesignError
from advisor.sources import load_workload
from costmodel.simple_designs import round_robin_design
from engine_sim.sim import max_throughput, run_once
from costmodel.granularity import fragment_of
from traces.statistics import check_manifest_fields
from traces.errors import TraceError


def table_design(machines: int) -> tuple:
    w = load_workload("fraud-scoring").with_cluster(machines, 1)
    # the table-level layout a user would draw: ScoreCard and its state alone on the last machine
    procs = {"Ingest": 0, "RaiseAlert": 0, "ScoreCard": machines - 1}
    state = {"CardProfiles": machines - 1, "CardStats": machines - 1, "Alerts": 0}
    return w, Design("fraud-scoring", machines, 1, procs, state)


def test_only_sps_reaching_state_by_an_input_key_can_split():
    w = load_workload("fraud-scoring")
    assert lane_tables(w) == {"ScoreCard": "CardProfiles"}  # the first of two equal tables
    assert "input tuple" in data_parallel_blocker(w, "RaiseAlert")
    lr = load_workload("linear-road")
    assert "window" in data_parallel_blocker(lr, "SegmentStatistics")
    assert "OLTP" in data_parallel_blocker(lr, "AccountBalance")
    assert lane_tables(load_workload("bank-transfer")) == {}  # uniform keys: nothing to split by


def test_the_variant_spreads_lanes_and_keeps_the_rest():
    w, d = table_design(4)
    v = data_parallel_variant(w, d)
    assert v.data_parallel == {"ScoreCard": "CardProfiles"}
    assert v.procedures == d.procedures and v.state["Alerts"] == d.state["Alerts"]
    frags = sorted(n for n in v.state if n.startswith("CardProfiles#"))
    assert len(frags) == 16  # four per partition
    route = lane_routes(w, v)["ScoreCard"]
    assert route.co_tables == ("CardStats",)  # split alike, so its lanes stay single-partition
    assert {1, 2, 3} <= set(route.lanes) <= {0, 1, 2, 3}
    # the partition with Ingest and RaiseAlert gets fewer fragments than an idle one
    counts = {p: route.fragment_partitions.count(p) for p in range(4)}
    assert counts[0] < counts[1] and sum(counts.values()) == 16
    for key in (0, 7, 12345, 99999):  # a tuple goes to the lane holding its key's fragment
        lane = route.lane_of_key(key)
        assert route.fragment_partitions[fragment_of(key, 16)] == route.lanes[lane]
    assert data_parallel_variant(w, v) is None  # already split
    bank = load_workload("bank-transfer")
    assert data_parallel_variant(bank, round_robin_design(bank)) is None


def test_a_design_file_keeps_its_lanes_and_refuses_bad_ones(tmp_path):
    w, d = table_design(2)
    v = data_parallel_variant(w, d)
    path = v.save(tmp_path / "d.json")
    back = Design.load(path)
    assert back.data_parallel == v.data_parallel and back.state == v.state
    assert "data_parallel" not in json.loads(d.to_json())  # table-level files are unchanged
    for bad, says in (([1], "must be an object"), ({"Nope": "CardStats"}, "not a procedure"),
                      ({"ScoreCard": 3}, "must be an object")):
        data = json.loads(v.to_json())
        data["data_parallel"] = bad
        with pytest.raises(DesignError, match=says):
            Design.from_dict(data, "d.json")


@pytest.mark.parametrize("ask, says", [
    ({"RaiseAlert": "Alerts"}, "input tuple"),
    ({"ScoreCard": "Alerts"}, "does not access 'Alerts' by a key"),
    ({"ScoreCard": "Nowhere"}, "not a table"),
    ({"Ghost": "CardStats"}, "does not have"),
])
def test_lanes_the_workload_cannot_run_are_refused_in_one_line(ask, says):
    w, d = table_design(2)
    v = data_parallel_variant(w, d)
    v.data_parallel = ask
    with pytest.raises(DesignError, match=says):
        lane_routes(w, v)
    d.data_parallel = {"ScoreCard": "CardStats"}  # a table the design keeps whole
    with pytest.raises(DesignError, match="places 'CardStats' whole"):
        lane_routes(w, d)


def test_the_simulator_runs_every_lane_with_its_share():
    w, d = table_design(4)
    v = data_parallel_variant(w, d)
    r = run_once(w, v, batches=200, in_flight=8)
    lanes = {n: p for n, p in r.procedures.items() if n.startswith("ScoreCard[lane")}
    route = lane_routes(w, v)["ScoreCard"]
    assert sorted(p["partition"] for p in lanes.values()) == sorted(route.lanes)
    assert all(p["txns"] == 200 for p in lanes.values())  # every lane runs every batch
    assert r.distributed_txns == 0  # each lane holds its own fragments of both tables
    table = max_throughput(w, d, batches=300).throughput_tps
    split = max_throughput(w, v, batches=300).throughput_tps
    assert split > 1.5 * table  # ScoreCard is ~80 % of the work: four lanes relieve it


def test_one_scheduler_sends_every_lane_its_sub_batch():
    """As in the engine, a split SP's lanes are scheduled from the SP's own partition: each
    lane on another partition costs a request and a commit message there, and the lanes'
    streams share the one invocation message the scheduler merges them into."""
    from engine_sim.sim import SimParams
    from engine_sim.sim.compiled import compile_plan

    w, d = table_design(4)
    v = data_parallel_variant(w, d)
    plan = compile_plan(w, v, params=SimParams(), scheduler="dls", move="rpc", batches=20,
                        batch_size=None, seed=0)
    lanes = [u for u in plan.units if u.name.startswith("ScoreCard[lane")]
    route = lane_routes(w, v)["ScoreCard"]
    assert len(route.lanes) >= 3 and len(lanes) == len(route.lanes)
    assert {u.sched for u in lanes} == {plan.part_machine[v.procedures["ScoreCard"]]}
    assert {u.machine for u in lanes} == {plan.part_machine[p] for p in route.lanes}
    into = [e for e in plan.edges if e.name.startswith("Ingest") and "[lane" in e.name]
    assert len(into) == len(lanes) and sum(e.msg_share for e in into) == pytest.approx(1.0)
    plain = [e for e in plan.edges if "[lane" not in e.name]
    assert all(e.msg_share == 1.0 for e in plain)


def test_a_statistics_manifest_says_which_accesses_follow_an_input_field():
    good = {"input": {"fields": ["card_id"]}, "access_keys": {"ScoreCard": {"CardStats": "input:card_id"}}}
    check_manifest_fields(good, "s")
    for keys in ("uniform", "input:nope", "input:", 3):
        bad = {"input": {"fields": ["card_id"]}, "access_keys": {"ScoreCard": {"CardStats": keys}}}
        with pytest.raises(TraceError, match="access_keys.ScoreCard.CardStats"):
            check_manifest_fields(bad, "s")
    with pytest.raises(TraceError, match="'access_keys' must be an object"):
        check_manifest_fields({"access_keys": ["x"]}, "s")



def test_a_synthesized_trace_says_which_accesses_are_input_keyed():
    """Its manifest had no access_keys, so the workload rebuilt from its statistics had no SP
    that could run as lanes: `--data-parallel` from it was 0.37x the spec's on 6 machines."""
    from costmodel.workload import input_access_keys, workload_as_plain
    from traces.synth import synthesize

    spec = load_workload("fraud-scoring")
    assert input_access_keys(spec) == {"ScoreCard": {"CardProfiles": "input:card_id", "CardStats": "input:card_id"}}
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as root:
        synthesize(workload_as_plain(spec), Path(root) / "t", batches=5, seed=1)
        manifest = json.loads((Path(root) / "t" / "_trace.json").read_text())
    assert manifest["access_keys"] == input_access_keys(spec)


def test_lanes_asked_for_and_not_weighed_say_why():
    """`--data-parallel` said nothing when no variant could be weighed."""
    from advisor.api import recommend
    from advisor.data_parallel import lanes_not_weighed
    from costmodel.granularity import workload_at

    code = recommend("voter-leaderboard", machines=2, data_parallel=True)
    assert code.data_parallel is None
    assert code.granularity_note().startswith("granularity: data-parallel lanes not weighed: no SP can run as lanes "
                                              "(Vote: it runs bundled code")
    by_cost = recommend("fraud-scoring", machines=2, data_parallel=True, objective="cost")
    assert by_cost.granularity_note() == ("granularity: data-parallel lanes not weighed: the simulator judges "
                                          "them, and this pick is by cost")
    # a workload that holds a table as fragments only (statistics at fragment granularity)
    spec, design = table_design(2)
    state = {n: p for n, p in design.state.items() if n != "CardProfiles"}
    state.update({f"CardProfiles#{i}": design.state["CardProfiles"] for i in range(4)})
    fragments = workload_at(spec, state)
    at = Design(spec.name, 2, 1, dict(design.procedures), state)
    assert data_parallel_variant(fragments, at) is None
    assert "holds the tables its SPs would split on as fragments only" in lanes_not_weighed(fragments, at)
