"""The analytical busy-time estimate: it charges remote work and MOVEs where they run, ranks
designs like the simulator, and the pick screens every candidate with it."""
import numpy as np
import pytest

from advisor.api import recommend
from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from advisor.placement import place_state
from advisor.design_moves import private_state, touched_state
from advisor.estimate_climb import climb_estimate
from advisor.sim_local_search import improve
from advisor.sources import load_workload
from costmodel import REPLICATED, Weights
from advisor.busy_estimate import BusyEstimate
from costmodel.busy_time import BusyPrices, busy_time
from engine_sim.sim import Calibration, max_throughput
from engine_sim.sim.judge import ENGINE_SIMULATOR

pytestmark = pytest.mark.integration


def spearman(x, y) -> float:
    """Spearman's rank correlation, equal figures sharing their mean rank (as
    `bench/busy_time_rank.py` reports it): designs the simulator puts at the same figure
    (symmetric placements) have no order for the estimate to match."""
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def without_the_other_routes(monkeypatch, search) -> None:
    """Turn off the searches' later routes (the ends across a plateau, the moves made with a
    trade of places, the steps from tied ends, the longer runs that break a tie), which reach
    some designs another way, so a test can show what one mechanism alone does."""
    import advisor.estimate_climb as climbs

    monkeypatch.setattr(climbs, "PLATEAU_STEPS", 0)
    monkeypatch.setattr(search, "NEAR_STARTS", 0)
    monkeypatch.setattr(search, "TIE_BREAK_BATCHES", 0)
    for module in (search, climbs):
        monkeypatch.setattr(module, "trade_moves", lambda *args: iter(()))


def test_remote_state_loads_the_partition_that_holds_it():
    g = WorkloadGraph.from_workload(load_workload("bank-transfer").with_cluster(2, 1))
    together = busy_time(g.cost, np.array([0, 0]), np.array([0, 0]))
    apart = busy_time(g.cost, np.array([0, 0]), np.array([1, 1]))  # both tables elsewhere
    assert together.partition[1] == 0 and apart.partition[1] > 0  # the holder works
    assert apart.partition[0] > together.partition[0]  # and the base waits for 2PC
    assert apart.throughput_tps < together.throughput_tps
    # a MOVE between machines costs both coordinators
    split = busy_time(g.cost, np.array([0, 1]), np.array([0, 1]))
    assert split.coordinator[1] > together.coordinator[1]


def test_dearer_messages_make_distribution_dearer():
    g = WorkloadGraph.from_workload(load_workload("bank-transfer").with_cluster(2, 1))
    cheap, dear = BusyPrices(), BusyPrices(latency_s=1e-3)
    proc, state = np.array([0, 0]), np.array([1, 1])
    assert busy_time(g.cost, proc, state, dear).throughput_tps < busy_time(g.cost, proc, state, cheap).throughput_tps


def random_designs(g: WorkloadGraph, n: int, seed: int):
    """Random designs, half with the state placed by the advisor's rule; windows with their owner."""
    rng = np.random.default_rng(seed)
    n_parts = g.cost.n_partitions
    for k in range(n):
        proc = rng.integers(0, n_parts, g.cost.n_proc)
        state = rng.integers(0, n_parts, g.cost.n_state)
        if k % 2:
            state = place_state(g.cost, proc, state)
        owned = g.cost.state_owner >= 0
        state[owned] = proc[g.cost.state_owner[owned]]
        yield proc, state


# voter-leaderboard (nested groups running code) and streaming-ledger ranked at 0.35 and 0.85
# before the estimate priced code, groups and one lock round trip per partition (linear-road,
# at 0.89 here before lock waits were priced, is checked on 8 machines below)
@pytest.mark.parametrize("name", ["tpcdi-trade", "voter-leaderboard", "streaming-ledger"])
def test_the_estimate_ranks_designs_like_the_simulator(name):
    w = load_workload(name)
    w = w.with_cluster(4, w.cluster.partitions_per_machine)
    g = WorkloadGraph.from_workload(w)
    params = Calibration.reference().params
    estimate = BusyEstimate.of(g, w, params)
    est, sim = [], []
    for proc, state in random_designs(g, 16, seed=1):
        est.append(estimate.throughput_tps(proc, state))
        sim.append(max_throughput(w, Design.from_arrays(g, proc, state, Weights()), batches=200,
                                  calibration=params).throughput_tps)
    rho = spearman(est, sim)
    assert rho >= 0.95, rho  # the target; docs/measurements.md lists the workloads that miss it
    assert sim[int(np.argmax(est))] >= 0.95 * max(sim)  # its favourite is the simulator's best, near enough


def test_a_window_is_priced_at_its_owner_and_code_is_not_charged_its_declared_cost():
    w = load_workload("linear-road").with_cluster(2, 1)
    g = WorkloadGraph.from_workload(w)
    params = Calibration.reference().params
    traits = BusyEstimate.of(g, w, params).traits
    owner = g.proc_index(w.windows[0].procedure)
    declared = w.procedure(w.windows[0].procedure).cost * params.cost_unit_s
    assert traits.work_s[owner] > declared  # its window's maintenance on top
    voter = load_workload("voter-leaderboard")
    vt = BusyEstimate.of(WorkloadGraph.from_workload(voter), voter, params).traits
    assert vt.code.all() and not vt.work_s.any()


def test_a_nested_group_runs_on_its_first_members_partition():
    w = load_workload("voter-leaderboard").with_cluster(2, 1)
    g = WorkloadGraph.from_workload(w)
    estimate = BusyEstimate.of(g, w, Calibration.reference().params)
    state = np.zeros(g.cost.n_state, dtype=np.int64)
    first = g.proc_index(w.topological_order()[0])
    proc = np.zeros(g.cost.n_proc, dtype=np.int64)
    proc[[i for i in range(g.cost.n_proc) if i != first]] = 1  # the other members elsewhere
    split = estimate.estimate(proc, state)
    together = estimate.estimate(np.zeros_like(proc), state)
    assert split.partition[1] > 0  # partition 1 is locked for the members placed there
    assert split.throughput_tps < together.throughput_tps


def test_the_simulated_search_finds_a_faster_design_than_its_start():
    w = load_workload("tpcdi-trade").with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    proc = np.zeros(g.cost.n_proc, dtype=np.int64)  # a poor start: everything on partition 0
    state = np.zeros(g.cost.n_state, dtype=np.int64)
    a = improve(g, w, proc, state, Weights(), simulator=ENGINE_SIMULATOR)
    assert a.improved and a.end_tps > 1.2 * a.start_tps and len(a.moves) >= 2
    assert a.simulated >= len(a.moves) + 1
    # budgets in events: the same input, the same design
    b = improve(g, w, proc, state, Weights(), simulator=ENGINE_SIMULATOR)
    assert a.moves == b.moves and np.array_equal(a.proc_part, b.proc_part)
    assert a.end_tps == pytest.approx(max_throughput(w, Design.from_arrays(g, a.proc_part, a.state_part, Weights()),
                                                     batches=300).throughput_tps, rel=0.02)


def test_recommend_searches_past_its_pool_where_the_pool_lacks_the_faster_design():
    rec = recommend("linear-road")  # 4 machines x 2 partitions: the pool's best splits them poorly
    imp = rec.selection.improvement
    assert imp.improved and imp.end_tps > 1.02 * imp.start_tps
    assert rec.selection.chosen.label == "simulated search"
    pool_best = max(o.predicted_tps for o in rec.selection.candidates
                    if o.source != "simulated search" and o.predicted_tps)
    assert rec.selection.chosen.predicted_tps > pool_best
    assert rec.design.provenance["simulated_search"]["moves"] == imp.moves
    again = recommend("linear-road")
    assert again.design.procedures == rec.design.procedures and again.design.state == rec.design.state


def test_the_climb_on_the_estimate_raises_it_without_simulating():
    w = load_workload("tpcdi-trade").with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    estimate = BusyEstimate.of(g, w, Calibration.reference().params)
    proc = np.zeros(g.cost.n_proc, dtype=np.int64)  # everything on partition 0
    state = np.zeros(g.cost.n_state, dtype=np.int64)
    p2, s2, moves = climb_estimate(g, estimate, proc, state, private_state(g), touched_state(g))
    assert moves and estimate.throughput_tps(p2, s2) > 1.5 * estimate.throughput_tps(proc, state)
    again = climb_estimate(g, estimate, proc, state, private_state(g), touched_state(g))
    assert again[2] == moves and np.array_equal(again[0], p2)  # deterministic
    # where it stops, no move off the busiest partition raises the estimate by CLIMB_GAIN
    _, _, more = climb_estimate(g, estimate, p2, s2, private_state(g), touched_state(g))
    assert more == []


def test_a_lock_wait_holds_the_earlier_partitions_of_its_transaction():
    from costmodel.lock_waits import hold_with_lock_waits

    def holds(txn, part, held):
        txn, part, held = np.array(txn), np.array(part), np.array(held, dtype=float)
        next_txn = np.array([np.flatnonzero(txn > t)[0] if (txn > t).any() else txn.size for t in txn])
        no_single = np.zeros(0, dtype=np.int64)
        return hold_with_lock_waits(txn, part, held, next_txn, np.zeros(3), no_single,
                                     np.zeros(0), 0.0)

    # two transactions lock partition 2 after partitions of their own: each may find the
    # other there, so each holds its first partition longer; the last lock waits for nothing
    meet = holds([0, 0, 1, 1], [0, 2, 1, 2], [1e-3, 1e-3, 1e-3, 1e-3])
    assert meet[0] > 1e-3 and meet[2] > 1e-3
    assert meet[1] == 1e-3 and meet[3] == 1e-3
    # both lock partition 0 first: the one holding it cannot meet the other at partition 2
    apart = holds([0, 0, 1, 1], [0, 2, 0, 2], [1e-3, 1e-3, 1e-3, 1e-3])
    assert np.array_equal(apart, np.full(4, 1e-3))
    # alone, a transaction never waits for itself
    alone = holds([0, 0], [0, 2], [1e-3, 1e-3])
    assert np.array_equal(alone, np.full(2, 1e-3))


def test_lock_waits_rank_contending_designs_closer_to_the_simulator():
    # linear-road on 8 machines x 2: several distributed transactions lock the same partitions,
    # and without the waits the estimate ranked such designs at 0.73 (docs/measurements.md)
    import dataclasses

    w = load_workload("linear-road").with_cluster(8, 2)
    g = WorkloadGraph.from_workload(w)
    params = Calibration.reference().params
    with_waits = BusyEstimate.of(g, w, params)
    without = dataclasses.replace(with_waits, lock_waits=False)
    a, b, sim = [], [], []
    for proc, state in random_designs(g, 16, seed=1):
        a.append(with_waits.throughput_tps(proc, state))
        b.append(without.throughput_tps(proc, state))
        sim.append(max_throughput(w, Design.from_arrays(g, proc, state, Weights()), batches=200,
                                  calibration=params).throughput_tps)
    assert all(x <= y for x, y in zip(a, b))  # waits only lengthen holds
    rho = [spearman(e, sim) for e in (a, b)]
    assert rho[0] > rho[1], rho


def test_a_round_to_rarely_reached_tables_is_priced_at_its_chance():
    # voter-leaderboard's nested group runs code; DeleteContestant writes Contestants and Votes
    # with probability 0.01 each. With Leaderboard at the group's base, its round to them runs
    # in about 2 % of batches, and the simulator holds each partition that much less
    import dataclasses

    from engine_sim.sim import simulate

    w = load_workload("voter-leaderboard").with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    params = Calibration.reference().params
    estimate = BusyEstimate.of(g, w, params)
    chance = dict(zip([(g.proc_names[i], g.state_names[j]) for i, j in zip(g.cost.ps_proc, g.cost.ps_state)],
                      estimate.traits.presence))
    assert chance[("DeleteContestant", "Votes")] == pytest.approx(0.01)
    assert chance[("Vote", "Votes")] == pytest.approx(0.9) and chance[("Vote", "VotesByPhone")] == 1.0
    always = dataclasses.replace(estimate, traits=dataclasses.replace(estimate.traits, presence=None))
    proc, state = np.array([0, 3, 3]), np.array([2, 1, 3, 0])  # Vote, UpdateLeaderboard, DeleteContestant
    rate = 400.0
    run = simulate(w, Design.from_arrays(g, proc, state, Weights()), calibration=params, input_rate=rate,
                   batches=400)
    held = np.array(run.partition_utilisation) / rate  # seconds each partition is held a batch
    priced, every_batch = estimate.estimate(proc, state).partition, always.estimate(proc, state).partition
    assert np.allclose(priced, held, rtol=0.05), (priced, held)
    assert (every_batch > 1.1 * held).all()  # a round trip a batch longer, as before


def test_moves_are_tried_off_the_next_busiest_partition_when_it_is_close():
    from types import SimpleNamespace

    from advisor.design_moves import NEAR_BUSIEST, busiest_partition_moves

    w = load_workload("tpcdi-trade").with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    proc = np.arange(g.cost.n_proc, dtype=np.int64) % 4
    state = np.zeros(g.cost.n_state, dtype=np.int64)

    def moved(busy, pulls: bool):
        """The partitions SPs move off (pulls: the partitions they are pulled onto)."""
        load = SimpleNamespace(partition=np.array(busy, dtype=float))
        moves = busiest_partition_moves(g, proc, state, private_state(g), touched_state(g), load)
        return {int((p2 if pulls else proc)[np.flatnonzero(p2 != proc)[0]]) for label, p2, _ in moves
                if (p2 != proc).any() and ("onto the busiest" in label) == pulls}

    for pulls in (False, True):
        assert moved([1.0, 0.2, 0.3, 0.1], pulls) == {0}
        assert moved([1.0, 0.2, 1.0 - NEAR_BUSIEST / 2, 0.1], pulls) == {0, 2}
        assert moved([1.0, 0.2, 1.0 - 2 * NEAR_BUSIEST, 0.1], pulls) == {0}


def test_the_search_tries_a_partitions_place_in_the_lock_order_within_its_machine():
    """Two partitions of one machine trading places keep the placement by machine, but a
    distributed transaction locks them in the other order. On a generated dataflow (seed
    1000, 2 machines x 2 partitions) one order is faster: the estimate and the simulator
    both say so, and the search reaches it from the slower one."""
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    from advisor.design_moves import busiest_partition_moves, lock_order_swaps

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1000).with_cluster(2, 2)
    g = WorkloadGraph.from_workload(w)
    c = g.cost
    proc = np.array([0, 0, 1, 0, 0, 0, 1, 0])  # the statistics path's pick before the swaps
    state = np.array([0, 0, 1, 1, 0])
    load = SimpleNamespace(partition=np.array([1.0, 0.5, 0.0, 0.0]))
    swaps = [(p2, s2) for _label, p2, s2 in lock_order_swaps(g, proc, state, load)]
    assert len(swaps) == 1  # partition 0 with 1, its machine's other one; never across machines
    moves = busiest_partition_moves(g, proc, state, private_state(g), touched_state(g), load)
    assert not any((p2 == 1 - proc).all() and (s2 == 1 - state).all() for _, p2, s2 in moves)
    p2, s2 = swaps[0]
    assert (p2 == 1 - proc).all() and (s2 == 1 - state).all()
    assert (p2 // c.partitions_per_machine == proc // c.partitions_per_machine).all()  # same machines
    cal = Calibration.reference()
    est = BusyEstimate.of(g, w, cal.sim_params())
    assert est.throughput_tps(p2, s2) > 1.03 * est.throughput_tps(proc, state)

    def simulated(p, s):
        d = Design.from_arrays(g, p, s, Weights(0.3, 0.1, 0.6))
        return max_throughput(w, d, calibration=cal, batches=600).throughput_tps

    assert simulated(p2, s2) > 1.02 * simulated(proc, state)
    found = improve(g, w, proc, state, Weights(0.3, 0.1, 0.6), simulator=ENGINE_SIMULATOR)
    assert found.improved and any("trade places" in m for m in found.moves), found.moves
    assert found.end_tps > 1.02 * found.start_tps


def test_the_search_also_climbs_from_the_pools_next_best_designs(monkeypatch):
    """A pool design that the simulator ranks below the pick can climb higher: on a generated
    dataflow (seed 1001, 2 machines x 2 partitions) the pick's own climb gains nothing, while
    the climb from another pool design ends faster, and the search takes it from there (the
    random starts and the pulls onto the busiest partition left out: with them the pick's own
    climb gets higher, which is their own test)."""
    import sys
    from pathlib import Path

    import advisor.design_moves as design_moves
    import advisor.sim_local_search as search

    monkeypatch.setattr(search, "RANDOM_STARTS", 0)
    monkeypatch.setattr(design_moves, "_pulls_onto", lambda *args: iter(()))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1001).with_cluster(2, 2)
    g = WorkloadGraph.from_workload(w)

    def arrays(procs: str, tables: str) -> tuple[np.ndarray, np.ndarray]:
        return np.array([int(x) for x in procs]), np.array([int(x) for x in tables])

    pick = arrays("22021110", "1000111221")  # SP0..SP7, T0..T9: what the statistics path picked
    other = arrays("23323223", "2333223222")  # the pool's all-on-one-machine design
    weights = Weights(0.3, 0.1, 0.6)
    alone = improve(g, w, *pick, weights, simulator=ENGINE_SIMULATOR)
    both = improve(g, w, *pick, weights, simulator=ENGINE_SIMULATOR, starts=[("other", *other)])
    assert both.moves and both.moves[0] == "start from 'other'"
    assert both.end_tps > 1.02 * max(alone.end_tps, both.start_tps)
    again = improve(g, w, *pick, weights, simulator=ENGINE_SIMULATOR, starts=[("other", *other)])
    assert (again.proc_part == both.proc_part).all() and again.moves == both.moves  # deterministic


def test_the_search_climbs_from_a_design_far_behind_within_its_budget(monkeypatch):
    """generated-1017 on 8 machines: from the pick a statistics path made (5,065 tuples/s),
    neither its own climb nor a contender's gains; hash-by-table, which the pick never
    simulated (0.55 of the pick by the estimate), climbs highest. It is climbed from as one
    of the pool's other designs (`more_starts`), within the estimate budget; without the
    budget it is not. (The random starts and the pulls onto the busiest partition left out: a
    random start climbs higher still with them, which is their own test.)"""
    import sys
    from pathlib import Path

    import advisor.design_moves as design_moves
    import advisor.sim_local_search as search
    from advisor.baselines import BASELINE_FUNCTIONS

    monkeypatch.setattr(search, "RANDOM_STARTS", 0)
    monkeypatch.setattr(design_moves, "_pulls_onto", lambda *args: iter(()))

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1017).with_cluster(8, 1)
    g = WorkloadGraph.from_workload(w)
    weights = Weights(0.3, 0.1, 0.6)
    pick = np.array([0, 0, 3, 4, 3, 7, 7, 0, 0, 3]), np.array([0, 0, 3, 0, 7, 0, 0, 0, 4, 7])
    far = BASELINE_FUNCTIONS["hash-by-table"](g, weights, 0)
    found = improve(g, w, *pick, weights, simulator=ENGINE_SIMULATOR, more_starts=[("hash-by-table", *far)])
    assert found.moves[0] == "start from 'hash-by-table'", found.moves
    assert found.end_tps > 1.2 * found.start_tps
    monkeypatch.setattr(search, "CLIMB_BUDGET", 0)
    none = improve(g, w, *pick, weights, simulator=ENGINE_SIMULATOR, more_starts=[("hash-by-table", *far)])
    assert not any(m.startswith("start from") for m in none.moves)
    assert none.end_tps < found.end_tps


def test_a_crowded_start_climbs_as_high_pricing_fewer_places(monkeypatch):
    """Everything on one partition of 8 machines x 2: every SP to every partition is 16 x 15
    places a step. Off a crowded partition an SP tries the least busy partition of each machine
    and the partitions of what it works with; the climb ends where the full one does."""
    import advisor.design_moves as design_moves

    w = load_workload("boundaries-16sp").with_cluster(8, 2)
    g = WorkloadGraph.from_workload(w)
    params = Calibration.reference().params
    proc = np.zeros(g.cost.n_proc, dtype=np.int64)
    state = np.zeros(g.cost.n_state, dtype=np.int64)
    assert g.cost.n_proc * 15 > design_moves.CROWDED_MOVES  # the start is crowded
    ends = []
    for crowded in (design_moves.CROWDED_MOVES, 10**9):  # the rule, then every place
        monkeypatch.setattr(design_moves, "CROWDED_MOVES", crowded)
        estimate = BusyEstimate.of(g, w, params)
        p2, s2, moves = climb_estimate(g, estimate, proc, state, private_state(g), touched_state(g))
        ends.append((estimate.throughput_tps(p2, s2), len(moves), len(estimate._memo)))
    (narrow, n_moves, n_priced), (full, f_moves, f_priced) = ends
    assert n_moves == f_moves > 3 and narrow == pytest.approx(full, rel=1e-9)
    assert n_priced < 0.9 * f_priced


def test_the_search_does_not_start_when_one_search_of_the_pick_would_overspend_it():
    w = load_workload("tpcdi-trade").with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    proc = np.arange(g.cost.n_proc, dtype=np.int64) % 4
    state = place_state(g.cost, proc, np.zeros(g.cost.n_state, dtype=np.int64))
    found = improve(g, w, proc, state, Weights(0.3, 0.1, 0.6), simulator=ENGINE_SIMULATOR, event_budget=10_000)
    assert not found.improved and found.simulated == 0
    assert "over the search's budget of 10,000" in found.skipped
    ran = improve(g, w, proc, state, Weights(0.3, 0.1, 0.6), simulator=ENGINE_SIMULATOR)
    assert ran.simulated > 0 and ran.skipped == ""


def test_two_moves_within_the_tie_are_tried_together(monkeypatch):
    """generated-1028 on 4 machines x 2, from what its statistics path picked: moving SP2, or
    SP3, onto partition 0 each gains a little (SP2 and SP3 share T3's partition and stream from
    SP0's), both together gain 18 %. With a tie tolerance above either single gain the search
    makes the two moves as one step, and without that step it stops where it started."""
    import sys
    from pathlib import Path

    import advisor.sim_local_search as search

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1028).with_cluster(4, 2)
    g = WorkloadGraph.from_workload(w)
    weights = Weights(0.3, 0.1, 0.6)
    start = np.array([0, 1, 1, 1, 1, 1, 1, 0, 0]), np.array([1, 0, 0, 1, 1, 1, 1, 0])
    monkeypatch.setattr(search, "TIE_TOLERANCE", 0.05)  # above what SP2 or SP3 alone gains here
    found = improve(g, w, *start, weights, simulator=ENGINE_SIMULATOR)
    made = {m.replace(" (onto the busiest)", "") for m in found.moves}  # (partition 0 is the busiest)
    assert {"SP2 -> partition 0 and SP3 -> partition 0",
            "SP3 -> partition 0 and SP2 -> partition 0"} & made, found.moves
    assert found.end_tps > 1.15 * found.start_tps
    monkeypatch.setattr(search, "joined_moves", lambda *a: None)
    alone = improve(g, w, *start, weights, simulator=ENGINE_SIMULATOR)
    assert not alone.moves and alone.end_tps == found.start_tps


def test_a_move_joined_with_a_trade_of_places_is_made_first(monkeypatch):
    """generated-1088 on 4 machines x 2, from what its statistics path picked: SP4 joining
    partition 1's SPs gains 1 %, partitions 0 and 1 trading places loses a little, both gain
    3 %. Joined as placements the trade would move SP4 back among the SPs it left; made one
    after the other (the move, then the trade) they give that design, and the search keeps it."""
    import sys
    from pathlib import Path

    import advisor.design_moves as design_moves
    import advisor.sim_local_search as search
    from advisor.design_moves import joined_moves, _trade_of, _traded

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    proc, state = np.array([0, 0, 1, 0, 0, 1, 1, 0]), np.array([1, 0, 0, 0])  # SP0..SP7, T0..T3
    traded = _traded(proc, state, 0, 1)
    moved = proc.copy()
    moved[4] = 1
    assert _trade_of(proc, state, *traded) == (0, 1) and _trade_of(proc, state, moved, state) is None
    for first, second in (((0.0, "trade", *traded), (0.0, "move", moved, state)),
                          ((0.0, "move", moved, state), (0.0, "trade", *traded))):
        _, _, p2, s2 = joined_moves(proc, state, first, second)
        assert p2.tolist() == [1, 1, 0, 1, 0, 0, 0, 1] and s2.tolist() == [0, 1, 1, 1]  # SP4 with SP2, SP5, SP6

    w = generated_workload(1088).with_cluster(4, 2)
    g = WorkloadGraph.from_workload(w)
    weights = Weights(0.3, 0.1, 0.6)
    found = improve(g, w, proc, state, weights, simulator=ENGINE_SIMULATOR)
    assert any("trade places and" in m or "and partitions" in m for m in found.moves), found.moves
    assert found.end_tps > 1.02 * found.start_tps
    monkeypatch.setattr(design_moves, "_trade_of", lambda *args: None)  # joined as placements only
    without_the_other_routes(monkeypatch, search)
    alone = improve(g, w, proc, state, weights, simulator=ENGINE_SIMULATOR)
    assert alone.end_tps < found.end_tps


def test_joined_moves_refuse_two_places_for_one_item():
    from advisor.design_moves import joined_moves

    proc, state = np.array([0, 0, 1]), np.array([0, 1])
    a = (1.0, "SP0 -> partition 1", np.array([1, 0, 1]), np.array([1, 1]))
    b = (1.0, "SP1 -> partition 1", np.array([0, 1, 1]), np.array([0, 1]))
    c = (1.0, "SP0 -> partition 2", np.array([2, 0, 1]), np.array([0, 1]))
    _, label, p, s = joined_moves(proc, state, a, b)
    assert label == "SP0 -> partition 1 and SP1 -> partition 1"
    assert p.tolist() == [1, 1, 1] and s.tolist() == [1, 1]
    assert joined_moves(proc, state, a, c) is None  # SP0 cannot go to partitions 1 and 2


def _random_locks(rng, n_txns: int, n_parts: int, most: int):
    """Transactions' locks as the estimate orders them: each transaction's partitions
    consecutive and ascending, none twice."""
    txn, part = [], []
    for t in range(n_txns):
        parts = np.sort(rng.choice(n_parts, size=int(rng.integers(1, most + 1)), replace=False))
        txn += [t] * parts.size
        part += parts.tolist()
    return np.array(txn), np.array(part)


@pytest.mark.parametrize("n_parts", [6, 130])
def test_the_lock_groups_meet_what_the_pairwise_rule_meets(n_parts):
    """A later lock meets every lock at its partition except its transaction's own and those
    of transactions that lock one of its earlier partitions: the groups add up the same
    visits as that rule lock by lock (130 partitions: the masks span three words)."""
    from costmodel.lock_waits import earlier_partitions, meeting_groups

    rng = np.random.default_rng(n_parts)
    t, part = _random_locks(rng, 60, n_parts, 5)
    later = np.r_[False, t[1:] == t[:-1]]
    group, pair_j, pair_g = meeting_groups(part, later, earlier_partitions(t, part, n_parts))
    visit = rng.random(t.size)
    got = np.bincount(pair_j, weights=np.bincount(group, weights=visit)[pair_g], minlength=t.size)
    parts_of = [set(part[t == x].tolist()) for x in range(t.max() + 1)]
    want, apart = np.zeros(t.size), []
    for j in np.flatnonzero(later):
        mine_below = {q for q in parts_of[t[j]] if q < part[j]}
        for k in np.flatnonzero(part == part[j]):
            if t[k] != t[j]:
                apart.append(not mine_below & parts_of[t[k]])
                want[j] += visit[k] * apart[-1]
    assert np.allclose(got, want, rtol=1e-12, atol=0)
    assert any(apart) and not all(apart)  # locks met and locks not met are both in the draw


def test_emptying_a_partition_moves_all_it_holds_off_the_least_busy_one():
    from types import SimpleNamespace

    from advisor.design_moves import emptying_moves

    proc, state = np.array([0, 1, 1, 2]), np.array([1, REPLICATED, 2, 3])
    load = SimpleNamespace(partition=np.array([0.5, 0.2, 0.9, 0.0]))  # 3 runs no SP: not in use
    moves = {label: (p.tolist(), s.tolist()) for label, p, s in emptying_moves(proc, state, load)}
    assert moves == {
        "partition 1 emptied onto partition 0": ([0, 0, 0, 2], [0, REPLICATED, 2, 3]),
        "partition 1 emptied onto partition 2": ([0, 2, 2, 2], [2, REPLICATED, 2, 3]),
    }
    assert not list(emptying_moves(np.zeros(4, dtype=np.int64), state, load))  # one partition in use


def test_the_climb_empties_partitions_where_no_small_move_pays():
    """generated-1031 on 8 machines, from the pool's round-robin start (SPs on 4 machines):
    one SP move gains, then none does; emptying the least busy partition onto another twice
    puts the dataflow on 2 machines, which the estimate and the simulator both put faster (the
    spec path's pick had stayed on one machine, 12 % slower)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1031).with_cluster(8, 1)
    g = WorkloadGraph.from_workload(w)
    cal = Calibration.reference()
    start = np.array([1, 1, 7, 3, 1, 5, 5, 7, 7]), np.array([5, 0, 7, 0, 7, 3, 1, 1, 5, 7])
    estimate = BusyEstimate.of(g, w, cal.sim_params())
    p2, s2, moves = climb_estimate(g, estimate, *start, private_state(g), touched_state(g))
    assert any("emptied" in m for m in moves), moves
    assert len(set(p2.tolist())) < len(set(start[0].tolist()))
    alone = estimate.throughput_tps(*start)
    assert estimate.throughput_tps(p2, s2) > 1.2 * alone

    def simulated(p, s):
        d = Design.from_arrays(g, p, s, Weights(0.3, 0.1, 0.6))
        return max_throughput(w, d, calibration=cal, batches=300).throughput_tps

    naive = np.zeros_like(start[0]), np.zeros_like(start[1])
    assert simulated(p2, s2) > 1.05 * simulated(*naive)


@pytest.mark.parametrize("name, machines", [("voter-leaderboard", 4), ("linear-road", 8), ("tpcdi-trade", 2)])
def test_many_designs_priced_together_get_each_its_own_figures_to_the_last_digit(name, machines):
    """`busy_times` prices many designs in one go (what a climb does with its neighbours);
    every sum adds the same terms in the same order as one design alone, so the figures are
    equal, not merely close (a climb's ties would otherwise break differently). The designs
    mix nested groups running code (voter-leaderboard), lock waits (linear-road), replicated
    tables and repeats."""
    from costmodel.busy_time import busy_times

    w = load_workload(name).with_cluster(machines)
    g = WorkloadGraph.from_workload(w)
    estimate = BusyEstimate.of(g, w, Calibration.reference().params)
    designs = list(random_designs(g, 24, seed=machines))
    rng = np.random.default_rng(machines)
    for proc, state in designs[::3]:
        state[rng.random(state.size) < 0.3] = REPLICATED
    designs += designs[:3]  # the same design twice in one batch
    partition, coordinator, link = busy_times(g.cost, np.stack([p for p, _ in designs]), np.stack([s for _, s in designs]),
                                        estimate.prices, estimate.traits)
    alone = [busy_time(g.cost, p, s, estimate.prices, estimate.batch_size, estimate.traits) for p, s in designs]
    assert any(a.throughput_tps != alone[0].throughput_tps for a in alone)  # designs that differ
    for k, one in enumerate(alone):
        assert np.array_equal(partition[k], one.partition) and np.array_equal(coordinator[k], one.coordinator)
        assert np.array_equal(link[k], one.link)
    # the estimate's own batch path: the same figures, and what it remembers counted once
    fresh = BusyEstimate.of(g, w, Calibration.reference().params)
    together = fresh.estimate_many(designs)
    assert [e.throughput_tps for e in together] == [a.throughput_tps for a in alone]
    assert fresh.priced == len({(p.tobytes(), s.tobytes()) for p, s in designs}) < len(designs)


def test_a_lock_meets_no_transaction_sharing_an_earlier_partition_across_words():
    """The rule 'cannot meet a transaction that locked a partition in common before' on
    clusters past 63 partitions (the masks span several words)."""
    from costmodel.lock_waits import earlier_partitions, meeting_groups

    t = np.array([0, 0, 1, 1, 2, 2])
    part = np.array([5, 100, 5, 100, 70, 100])
    later = np.array([False, True, False, True, False, True])
    group, pair_j, pair_g = meeting_groups(part, later, earlier_partitions(t, part, 130))
    met = {(int(j), k) for j, g in zip(pair_j, pair_g) for k in np.flatnonzero(group == g)}
    # transactions 0 and 1 both lock 5 first; transaction 2 shares nothing below 100 with them
    assert met == {(1, 5), (3, 5), (5, 1), (5, 3)}


def test_random_starts_find_on_four_machines_what_the_search_on_two_found(monkeypatch):
    """generated-1048: the pick on 2 machines (6,471 tuples/s here) runs on 4 as well, the
    other two idle, but no pool design on 4 machines climbs to it (6,170 without random
    starts) by the moves off the busiest partition; a climb from one of the seeded random
    designs does (pulling an SP onto the busiest gets there too: left out here). The random designs are
    reproducible and well formed (windows with their owners, state where the rule puts it)."""
    import sys
    from pathlib import Path

    import advisor.design_moves as design_moves
    import advisor.sim_local_search as search
    from advisor.design_moves import random_starts

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    monkeypatch.setattr(design_moves, "_pulls_onto", lambda *args: iter(()))  # (they reach it too)
    w = generated_workload(1048)
    on_two = recommend(w, machines=2, seed=0, baselines=False).prediction
    on_four = recommend(w, machines=4, seed=0, baselines=False)
    assert on_four.prediction >= 0.98 * on_two
    g = on_four.graph
    first, again = random_starts(g, 3, seed=5), random_starts(g, 3, seed=5)
    for (label, p, s), (_, p2, s2) in zip(first, again):
        assert np.array_equal(p, p2) and np.array_equal(s, s2)
        owned = g.cost.state_owner >= 0
        assert (s[owned] == p[g.cost.state_owner[owned]]).all()
        assert p.max() < 8 and s.max() < 8
    assert not np.array_equal(first[0][1], random_starts(g, 1, seed=6)[0][1])
    monkeypatch.setattr(search, "RANDOM_STARTS", 0)
    without_the_other_routes(monkeypatch, search)
    without = recommend(w, machines=4, seed=0, baselines=False).prediction
    assert without < 0.98 * on_two  # what the random starts are for


def test_an_sp_that_reaches_the_busiest_partition_is_pulled_onto_it(monkeypatch):
    """generated-1042 on 4 machines x 2: the busiest partition holds tables SP2 reaches from the
    next partition, and its remote accesses load the busiest more than SP2's own work would.
    Only moving SP2 onto the busiest finds the design the search on 2 machines found (it runs
    on 4 too); the moves off the busiest never get there."""
    import sys
    from pathlib import Path

    import advisor.design_moves as design_moves
    import advisor.sim_local_search as search
    from advisor.design_moves import busiest_partition_moves, private_state, touched_state

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1042)
    on_two = recommend(w, machines=2, seed=0, baselines=False).prediction
    on_four = recommend(w, machines=4, seed=0, baselines=False)
    assert on_four.prediction >= 0.98 * on_two
    g = on_four.graph
    proc, state = on_four.design.arrays(g)
    est = BusyEstimate.of(g, on_four.workload.with_cluster(4, 2), Calibration.reference().params)
    here = est.estimate(proc, state)
    hot = design_moves._busiest_partitions(here.partition)  # the busiest, and the next if close
    pulls = [(label, p2) for label, p2, _ in busiest_partition_moves(g, proc, state, private_state(g),
                                                                        touched_state(g), here)
             if "onto the busiest" in label]
    assert pulls
    for label, p2 in pulls:  # each takes one SP from elsewhere onto a busiest partition
        moved = np.flatnonzero(p2 != proc)
        assert moved.size == 1 and p2[moved[0]] in hot and proc[moved[0]] != p2[moved[0]], label
    real = design_moves._pulls_onto
    monkeypatch.setattr(design_moves, "_pulls_onto", lambda *args: iter(()))
    without_the_other_routes(monkeypatch, search)
    without = recommend(w, machines=4, seed=0, baselines=False).prediction
    assert without < 0.98 * on_two  # what the pulls are for
    monkeypatch.setattr(design_moves, "_pulls_onto", real)
    assert recommend(w, machines=4, seed=0, baselines=False).prediction >= 0.98 * on_two


def test_the_simulated_search_keeps_within_the_machines_memory(monkeypatch):
    """generated-1031 on 8 machines from a spread start (at most 87 MB a machine): the search
    consolidates it onto fewer machines (188 MB on one), which a 100 MB limit forbids; with the
    limit the search ends within it, and without the check it would not."""
    import advisor.sim_local_search as search
    from costmodel.model import machine_memory
    from workload_edits import memory_bound_case

    w, g, limit, start = memory_bound_case()
    assert machine_memory(g.cost, start[1]).max() <= limit
    kept = improve(g, w, *start, Weights(0.3, 0.1, 0.6), simulator=ENGINE_SIMULATOR)
    assert machine_memory(g.cost, kept.state_part).max() <= limit
    monkeypatch.setattr(search, "memory_check", lambda graph, state: (lambda s: True))
    free = improve(g, w, *start, Weights(0.3, 0.1, 0.6), simulator=ENGINE_SIMULATOR)
    assert machine_memory(g.cost, free.state_part).max() > limit


def test_busy_times_compare_busiest_first_to_the_climbs_resolution():
    from advisor.estimate_climb import CLIMB_GAIN, _less_loaded

    here = np.array([1.0, 0.9, 0.8])
    assert _less_loaded(np.array([1.0, 0.9, 0.7]), here)  # the same but for the third
    assert not _less_loaded(np.array([1.0, 0.9, 0.9]), here)
    # a busiest part within the climb's resolution is as busy: the next one decides
    assert _less_loaded(np.array([1.0 + CLIMB_GAIN / 2, 0.8, 0.8]), here)
    assert not _less_loaded(np.array([1.0 + 2 * CLIMB_GAIN, 0.1, 0.1]), here)
    assert not _less_loaded(here, here)  # nothing is below itself


def test_the_search_simulates_where_a_climb_ends_across_the_estimates_plateau(monkeypatch):
    """generated-1017 on 4 machines: from this design no move raises the estimate (partition 0
    is the busiest, whatever moves), but moving SP7 and its state off partition 3 onto partition
    1 leaves it as fast by the estimate and the partitions behind it less busy; the simulator
    puts that design 9 % faster. The statistics path had ended on the design before it, at 0.92
    of the spec path's pick."""
    import sys
    from pathlib import Path

    import advisor.estimate_climb as climbs
    from advisor.estimate_climb import CLIMB_GAIN, across_plateau

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1017).with_cluster(4, 1)
    g = WorkloadGraph.from_workload(w)
    cal = Calibration.reference()
    estimate = BusyEstimate.of(g, w, cal.sim_params())
    start = np.array([3, 1, 3, 2, 3, 0, 0, 3, 1, 3]), np.array([3, 3, 3, 1, 0, 0, 1, 0, 2, 0])
    assert climb_estimate(g, estimate, *start, private_state(g), touched_state(g))[2] == []  # a climb's end
    p2, s2, moves = across_plateau(g, estimate, *start, private_state(g), touched_state(g))
    assert moves[0] == "SP7 with all its state -> partition 1", moves
    before, after = estimate.estimate(*start), estimate.estimate(p2, s2)
    assert after.bottleneck_s <= before.bottleneck_s * (1 + CLIMB_GAIN)
    assert np.sort(after.partition)[-3] < np.sort(before.partition)[-3]  # the third busiest is lighter

    found = improve(g, w, *start, Weights(0.3, 0.1, 0.6), cal, simulator=ENGINE_SIMULATOR)
    assert found.moves[0] == "SP7 with all its state -> partition 1 (estimate)", found.moves
    assert found.end_tps > 1.05 * found.start_tps
    monkeypatch.setattr(climbs, "PLATEAU_STEPS", 0)  # without it the search stays where it was
    stays = improve(g, w, *start, Weights(0.3, 0.1, 0.6), cal, simulator=ENGINE_SIMULATOR)
    assert stays.moves == [] and stays.end_tps == found.start_tps


def test_a_move_that_pays_only_with_a_trade_of_places_is_made_with_it(monkeypatch):
    """generated-1125 on 2 machines x 2, where its statistics path stopped: moving SP9 and its
    state to the other partition of machine 0 loses by the estimate, and so does the two
    partitions trading places alone, but both together gain (the spec path's pick, 6 % faster
    in the simulator). Without the joined moves the search stays where it started."""
    import sys
    from pathlib import Path

    import advisor.estimate_climb as climbs
    import advisor.sim_local_search as search
    from advisor.design_moves import trade_moves
    from advisor.estimate_climb import via_a_trade

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1125).with_cluster(2, 2)
    g = WorkloadGraph.from_workload(w)
    cal = Calibration.reference()
    estimate = BusyEstimate.of(g, w, cal.sim_params())
    start = np.array([0, 0, 0, 1, 1, 0, 0, 1, 1, 1]), np.array([1, 0, 0, 0, 1, 0, 1, 1])
    here = estimate.estimate(*start)
    joined = {label: (p, s) for label, p, s in trade_moves(g, *start, private_state(g), touched_state(g), here)}
    label = "SP9 with all its state -> partition 0, then partitions 0 and 1 trade places"
    p2, s2 = joined[label]
    assert p2.tolist() == [1, 1, 1, 0, 0, 1, 1, 0, 0, 1]  # SP9 with the others, on the later partition
    assert estimate.throughput_tps(p2, s2) > 1.02 * here.throughput_tps
    alone = [l for l in joined if l.startswith("SP9 with all its state -> partition 0")]
    assert alone == [label]
    assert via_a_trade(g, estimate, *start, private_state(g), touched_state(g))[2][0] == label

    found = improve(g, w, *start, Weights(0.3, 0.1, 0.6), cal, simulator=ENGINE_SIMULATOR)
    assert label in found.moves and found.end_tps > 1.05 * found.start_tps
    for module in (search, climbs):
        monkeypatch.setattr(module, "trade_moves", lambda *args: iter(()))
    monkeypatch.setattr(search, "TIE_BREAK_BATCHES", 0)  # else the longer runs take a 2 % move (6,005)
    stays = improve(g, w, *start, Weights(0.3, 0.1, 0.6), cal, simulator=ENGINE_SIMULATOR)
    assert stays.moves == [] and stays.end_tps == found.start_tps
    # machines of one partition have no places to trade
    one = WorkloadGraph.from_workload(generated_workload(1125).with_cluster(4, 1))
    proc = np.array([0, 0, 0, 1, 1, 0, 0, 1, 1, 1])
    assert not list(trade_moves(one, proc, start[1], private_state(one), touched_state(one),
                                BusyEstimate.of(one, w.with_cluster(4, 1), cal.sim_params()).estimate(proc, start[1])))


def test_the_steps_also_run_from_a_climb_end_that_ties_with_the_best(monkeypatch):
    """generated-1048 on 8 machines: a pool design's climb end comes within the 2 % tie of
    the best, and the steps run from it too (NEAR_STARTS). Until stop 60 they ended higher
    there (6,492 against 6,393 tuples/s without them); since the busy-time estimate prices a
    source's input batch and each stream's bytes, both routes reach 6,420, and on 150
    generated dataflows (4, 8 and 16 machines) no route ended 1 % higher (docs/measurements.md,
    Stop 60). What stays to check: the steps run from the tied end (more designs simulated,
    within the same event budget) and the pick never ends lower for it."""
    import sys
    from pathlib import Path

    import advisor.sim_local_search as search

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    w = generated_workload(1048)
    both = recommend(w, machines=8, seed=0, baselines=False)
    monkeypatch.setattr(search, "NEAR_STARTS", 0)
    one = recommend(w, machines=8, seed=0, baselines=False)
    ran = both.selection.improvement.simulated - one.selection.improvement.simulated
    assert ran > 0, (both.selection.improvement.simulated, one.selection.improvement.simulated)
    assert both.prediction >= one.prediction
    assert both.design.provenance["simulated_search"]["moves"][0].startswith("start from")


def test_a_design_that_ties_on_the_short_runs_is_taken_where_the_longer_runs_put_it_faster(monkeypatch):
    """generated-1149 on 4 machines x 2, from the statistics path's pick (the spec's pick with SP6
    and T3 on partition 0): the one move to the spec's pick (onto partition 2) simulates 1.9 %
    faster on 300 batches, within the 2 % tie, and about 2 % faster on 1,200; the engine on 16
    cores measured the spec's pick 4.7 % faster (docs/measurements.md, Stop 43). Without the
    longer runs the search stays where it started."""
    import sys
    from pathlib import Path

    import advisor.sim_local_search as search

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from trace_quality import generated_workload

    spec = recommend(generated_workload(1149), machines=4, seed=0, baselines=False)
    g = spec.graph
    proc, state = spec.design.arrays(g)
    sp6, t3 = g.proc_names.index("SP6"), g.state_names.index("T3")
    assert proc[sp6] == state[t3] != 0
    start_proc, start_state = proc.copy(), state.copy()
    start_proc[sp6] = start_state[t3] = 0
    w = spec.workload.with_cluster(4, 2)

    def search_from_the_start():
        return improve(g, w, start_proc, start_state, spec.design.weights, simulator=ENGINE_SIMULATOR)

    found = search_from_the_start()
    assert found.proc_part[sp6] == found.state_part[t3] == proc[sp6], found.moves
    assert found.end_tps > found.start_tps and "tie broken" in found.moves[-1]
    monkeypatch.setattr(search, "TIE_BREAK_BATCHES", 0)
    stayed = search_from_the_start()
    assert not stayed.moves and stayed.end_tps == stayed.start_tps


@pytest.mark.parametrize("change, bottleneck", [
    ({"batch_size": 1000}, "partition"),  # a source's input batch: the estimate charged none (1.7x high)
    ({"tuple_bytes": 10_000}, "network link of machine"),  # 64 bytes a tuple whatever the spec said (1.8x)
    ({"tuple_bytes": 1_000_000}, "network link of machine"),  # and no link at all (180x)
])
def test_the_estimate_prices_a_sources_input_and_each_streams_bytes_as_the_simulator(change, bottleneck):
    import dataclasses

    base = load_workload("tpcdi-trade").with_cluster(2, 1)
    w = base
    if "batch_size" in change:
        w = dataclasses.replace(w, input=dataclasses.replace(w.input, batch_size=change["batch_size"]))
    if "tuple_bytes" in change:
        w = dataclasses.replace(w, streams=tuple(dataclasses.replace(s, tuple_bytes=change["tuple_bytes"])
                                                 for s in w.streams))
    design = recommend(base, objective="cost", baselines=False).design
    g = WorkloadGraph.from_workload(w)
    params = Calibration.reference().params
    estimated = BusyEstimate.of(g, w, params).estimate(*design.arrays(g))
    simulated = max_throughput(w, design, batches=300, calibration=params)
    assert estimated.throughput_tps == pytest.approx(simulated.throughput_tps, rel=0.03)
    assert estimated.bottleneck.startswith(bottleneck) and simulated.bottleneck.startswith(bottleneck)
