"""Voter with leaderboards runs its real procedure code (Vote, UpdateLeaderboard,
DeleteContestant in one nested transaction) and its leaderboard - hence its winner - equals
a plain serial run of the same votes in vote order, under any design and through a crash."""
import pytest

from costmodel.design import Design
from advisor.sources import load_workload
from engine_sim.engine import run_workload
from engine_sim.engine.run_options import RecoveryOptions
from engine_sim.engine.inputs import input_batches
from engine_sim.workloads import voter

BATCHES = 700  # seven contestants voted out


def spread_design(w):
    """Four partitions, tables apart, Contestants replicated: every vote is distributed."""
    return Design(w.name, 2, 2, {"Vote": 0, "UpdateLeaderboard": 1, "DeleteContestant": 2},
                  {"Contestants": None, "Votes": 1, "VotesByPhone": 2, "Leaderboard": 3})


def single(w):
    return Design(w.name, 1, 1, {p.name: 0 for p in w.procedures}, {t.name: 0 for t in w.tables})


def serial_board(w, d, batches=BATCHES):
    return voter.serial_leaderboard(input_batches(w, d, batches))


@pytest.mark.parametrize("layout", [single, spread_design])
def test_leaderboard_and_winner_equal_a_serial_run_in_vote_order(layout):
    w = load_workload("voter-leaderboard")
    d = layout(w)
    r = run_workload(w, d, batches=BATCHES, in_process=True, return_state=True)
    assert r.history_check == "ok"
    expected = serial_board(w, d)
    assert r.state["Leaderboard"] == expected
    assert len(expected) == 25 - BATCHES // voter.DELETE_EVERY
    assert voter.winner(r.state["Leaderboard"]) == voter.winner(expected)
    assert set(r.state["Contestants"]) == set(expected)
    assert all(c in expected for _phone, c in r.state["Votes"].values())  # removed contestants' votes are gone


def test_the_three_sps_commit_as_one_nested_transaction():
    w = load_workload("voter-leaderboard")
    r = run_workload(w, spread_design(w), batches=50, in_process=True)
    assert r.history_check == "ok"
    assert r.committed == 3 * 50 and r.distributed_txns == 50 and r.moves == 0


@pytest.mark.parametrize("recovery", ["strong", "weak"])
def test_the_winner_survives_a_crash(recovery):
    w = load_workload("voter-leaderboard")
    d = spread_design(w)
    r = run_workload(w, d, batches=300, in_process=True, return_state=True,
                     recovery=RecoveryOptions(mode=recovery, crash_after=120))
    assert r.crashed and r.history_check == "ok"
    assert r.state["Leaderboard"] == serial_board(w, d, 300)


def test_votes_over_the_phone_limit_are_refused():
    w = load_workload("voter-leaderboard")
    d = single(w)
    r = run_workload(w, d, batches=BATCHES, in_process=True, return_state=True)
    by_phone = r.state["VotesByPhone"]
    assert max(by_phone.values()) == voter.MAX_VOTES_PER_PHONE
    tuples = input_batches(w, d, BATCHES)
    assert sum(by_phone.values()) < len(tuples)  # some votes were refused
