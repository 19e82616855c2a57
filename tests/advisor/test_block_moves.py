"""Moves of a block of SPs that share state, with that state (`advisor.design_moves.block_moves`)."""
import numpy as np
import pytest

import advisor.design_moves as design_moves
from advisor.busy_estimate import BusyEstimate
from advisor.design_moves import block_moves, private_state, touched_state
from advisor.estimate_climb import climb_estimate
from costmodel import Weights
from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from costmodel.spec_reader import parse_workload
from costmodel.spec_writer import workload_to_toml
from costmodel.workload import Access, Cluster, InputSpec, Procedure, Stream, Table, Workload
from engine_sim.sim import Calibration, max_throughput

pytestmark = pytest.mark.integration


def two_groups(machines: int = 2) -> Workload:
    """Groups A and B of two SPs each, streaming one to the other and both writing their
    group's table TA or TB (and a private table each); little work, so a distributed
    transaction costs more than an SP."""
    tables = [Table("TA", 10_000, 100, "id"), Table("TB", 10_000, 100, "id")]
    procs = []
    for group in "AB":
        for k in (1, 2):
            tables.append(Table(f"P{group}{k}", 1_000, 100, "id"))
            procs.append(Procedure(f"{group}{k}", cost=0.3, accesses=(
                Access(f"T{group}", "write", 5.0), Access(f"P{group}{k}", "write", 1.0))))
    streams = (Stream("A1", "A2", 5.0), Stream("B1", "B2", 5.0))
    w = Workload("two-groups", tuple(tables), tuple(procs), streams, (), (), InputSpec(batch_size=10),
                 Cluster(machines, 1))
    return parse_workload(workload_to_toml(w), source="two-groups")


def all_on_partition_zero(g: WorkloadGraph) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(g.cost.n_proc, dtype=np.int64), np.zeros(g.cost.n_state, dtype=np.int64)


def test_a_block_of_sps_that_share_a_table_moves_with_it_and_their_private_state():
    w = two_groups()
    g = WorkloadGraph.from_workload(w)
    proc, state = all_on_partition_zero(g)
    load = BusyEstimate.of(g, w, Calibration.reference().params).estimate(proc, state)
    blocks = {label: (p2, s2) for label, p2, s2 in block_moves(g, proc, state, private_state(g), touched_state(g),
                                                               load)}
    assert sorted(blocks) == ["A1+A2 with their state -> partition 1", "B1+B2 with their state -> partition 1"]
    p2, s2 = blocks["A1+A2 with their state -> partition 1"]
    assert [g.proc_names[i] for i in np.flatnonzero(p2 != proc)] == ["A1", "A2"]
    assert sorted(g.state_names[j] for j in np.flatnonzero(s2 != state)) == ["PA1", "PA2", "TA"]
    # a partition whose SPs are all one block has none (that is the whole partition moved)
    proc[[2, 3]], state[[1, 4, 5]] = 1, 1
    load = BusyEstimate.of(g, w, Calibration.reference().params).estimate(proc, state)
    assert not list(block_moves(g, proc, state, private_state(g), touched_state(g), load))


def test_the_climb_parts_two_groups_doubled_up_on_one_partition(monkeypatch):
    """Every SP moved alone leaves its group's table remote to its peer (or takes it away
    from the peer), so no single move pays; the block move parts the groups, and the
    simulator puts that design faster too."""
    w = two_groups()
    g = WorkloadGraph.from_workload(w)
    cal = Calibration.reference()
    estimate = BusyEstimate.of(g, w, cal.params)
    start = all_on_partition_zero(g)
    proc, state, moves = climb_estimate(g, estimate, *start, private_state(g), touched_state(g))
    assert moves == ["A1+A2 with their state -> partition 1"]
    assert estimate.throughput_tps(proc, state) > 1.5 * estimate.throughput_tps(*start)

    def simulated(p, s) -> float:
        return max_throughput(w, Design.from_arrays(g, p, s, Weights()), calibration=cal,
                              batches=300).throughput_tps

    assert simulated(proc, state) > 1.5 * simulated(*start)
    monkeypatch.setattr(design_moves, "_block_moves", lambda *args: iter(()))
    assert climb_estimate(g, estimate, *start, private_state(g), touched_state(g))[2] == []


def test_a_tied_end_is_another_design_within_the_climbs_gain_best_first():
    from advisor.estimate_climb import CLIMB_GAIN
    from advisor.sim_local_search import tied_end

    g = WorkloadGraph.from_workload(two_groups(machines=4))
    pick = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 0, 1, 1])
    same_relabelled = np.array([2, 2, 3, 3]), np.array([2, 3, 2, 2, 3, 3])  # machines renamed
    other = np.array([0, 1, 2, 3]), np.array([0, 2, 0, 1, 2, 3])
    bar = 1000.0
    ends = [(bar, "pick again", *same_relabelled, []),
            (bar * (1 - 2 * CLIMB_GAIN), "too far below", *other, []),
            (bar * (1 - CLIMB_GAIN / 2), "tied", *other, ["a move"])]
    assert [e[1] for e in tied_end(g, ends, bar, [pick])] == ["tied"]
    assert tied_end(g, ends[:2], bar, [pick]) == []


def test_where_the_picks_climb_reaches_the_estimates_best_another_end_there_is_simulated(monkeypatch):
    """generated-3807 on 4 machines: a block move takes the pick's own climb to the estimate's
    best at once (SP0 and SP6 with their tables on one partition), so no other climb's end is
    above it; a random start's climb ends at the same estimate with SP0 and SP6 apart, which
    the simulator puts 8 % faster."""
    import sys
    from pathlib import Path

    import advisor.sim_local_search as search
    from advisor.api import recommend

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(3807)
    with_twin = recommend(w, machines=4, seed=0, baselines=False).prediction
    monkeypatch.setattr(search, "tied_end", lambda *args: [])
    without = recommend(w, machines=4, seed=0, baselines=False).prediction
    assert with_twin > 1.05 * without


def test_a_rival_end_is_sought_only_where_the_budget_leaves_a_step_from_each(monkeypatch):
    import sys
    from pathlib import Path

    import advisor.sim_local_search as search
    from advisor.api import recommend
    from advisor.sim_local_search import TRIED_PER_STEP, room_for_a_rival

    runs = 1 + 3 + 3 + 2 * TRIED_PER_STEP  # the pick, its end's designs, a rival's, two steps
    assert room_for_a_rival(3, 1_000.0, runs * 1_000.0)
    assert not room_for_a_rival(3, 1_000.0, runs * 1_000.0 - 1)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    sought = []
    real = search.tied_end
    monkeypatch.setattr(search, "tied_end", lambda *args: sought.append(1) or real(*args))
    monkeypatch.setattr(search, "room_for_a_rival", lambda *args: False)
    recommend(generated_workload(3807), machines=4, seed=0, baselines=False)
    assert not sought
    monkeypatch.setattr(search, "room_for_a_rival", room_for_a_rival)
    recommend(generated_workload(3807), machines=4, seed=0, baselines=False)
    assert sought
