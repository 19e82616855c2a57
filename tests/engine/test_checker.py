"""The history checker on hand-made histories: it accepts exactly the correct streaming
schedules and names what is wrong with the others."""
from itertools import permutations

import pytest

from engine_sim.engine.checker import TE, Dataflow, check_history

FLOW = Dataflow(["T1", "T2"], [("T1", "T2")])


def serial(order, table="s", key=0, mode="write", partition=0):
    """TEs executed one after another on one partition, all touching one row."""
    return [TE(id=(p, b), procedure=p, batch=b, positions={partition: (0, i)},
               accesses=[(partition, table, key, mode)]) for i, (p, b) in enumerate(order)]


def test_the_two_legal_schedules_of_a_two_sp_two_batch_dataflow_and_no_other():
    tes = [("T1", 0), ("T1", 1), ("T2", 0), ("T2", 1)]
    accepted = [order for order in permutations(tes)
                if check_history(serial(order), FLOW, range(2)).ok]
    assert sorted(accepted) == sorted([
        (("T1", 0), ("T2", 0), ("T1", 1), ("T2", 1)),
        (("T1", 0), ("T1", 1), ("T2", 0), ("T2", 1)),
    ])


def test_batch_order_violation_is_refused_with_the_cycle():
    r = check_history(serial([("T1", 1), ("T1", 0)]), Dataflow(["T1"], []), range(2))
    assert not r.ok
    assert "cycle" in str(r) and "batch order" in str(r) and "conflict on s[0]" in str(r)


def test_dataflow_order_violation_is_refused():
    r = check_history(serial([("T2", 0), ("T1", 0)]), FLOW, range(1))
    assert not r.ok and "dataflow order" in str(r)


def test_reads_alone_do_not_conflict():
    r = check_history(serial([("T1", 1), ("T1", 0)], mode="read"), Dataflow(["T1"], []), range(2))
    assert r.ok  # equivalent to a serial schedule in batch order: nothing observable differs


def test_conflicts_across_partitions_form_a_cycle():
    # T1@0 before T1@1 on partition 0, the other way round on partition 1
    a = TE(id=1, procedure="A", batch=0, kind="oltp", positions={0: (0, 1), 1: (0, 2)},
           accesses=[(0, "x", 1, "write"), (1, "y", 1, "write")])
    b = TE(id=2, procedure="B", batch=0, kind="oltp", positions={0: (0, 2), 1: (0, 1)},
           accesses=[(0, "x", 1, "write"), (1, "y", 1, "write")])
    r = check_history([a, b], Dataflow(["A", "B"], [], oltp={"A", "B"}))
    assert not r.ok and "cycle" in str(r)


def test_exactly_once_rejects_duplicates_and_gaps():
    dup = serial([("T1", 0), ("T1", 0), ("T2", 0)])
    r = check_history(dup, FLOW, range(1))
    assert not r.ok and "processed batch 0 2 times" in str(r)
    gap = serial([("T1", 0), ("T2", 0), ("T1", 2), ("T2", 2)])
    r = check_history(gap, FLOW, range(3))
    assert not r.ok and "never committed batch 1" in str(r)


def test_an_oltp_request_applied_twice_is_refused():
    tes = [TE(id=i, procedure="Q", batch=7, kind="oltp", positions={0: (0, i)}) for i in range(2)]
    r = check_history(tes, Dataflow(["Q"], [], oltp={"Q"}))
    assert not r.ok and "applied 2 times" in str(r)


NESTED = Dataflow(["A", "B", "C"], [("A", "B"), ("B", "C")], nested=[("A", "B", "C")])


def group(batch, gid, seq, members=("A", "B", "C"), partition=0):
    return [TE(id=(m, batch), procedure=m, batch=batch, group=gid,
               positions={partition: (0, seq, i)}, accesses=[(partition, "t", 0, "write")])
            for i, m in enumerate(members)]


def test_nested_groups_committed_together_are_accepted():
    assert check_history(group(0, "g0", 1) + group(1, "g1", 2), NESTED, range(2)).ok


def test_a_nested_group_missing_a_child_is_not_atomic():
    r = check_history(group(0, "g0", 1, members=("A", "B")), NESTED)
    assert not r.ok and "not atomic" in str(r) and "not C" in str(r)


def test_a_nested_group_split_over_transactions_is_not_atomic():
    tes = group(0, "g0", 1, members=("A", "B")) + group(0, "g9", 2, members=("C",))
    r = check_history(tes, NESTED)
    assert not r.ok and "separate transactions" in str(r)


def test_a_transaction_between_the_children_of_a_group_breaks_isolation():
    tes = group(0, "g0", 1)
    tes[2].positions = {0: (0, 3, 0)}  # C runs after an intruder at position 2
    intruder = TE(id="x", procedure="X", batch=0, kind="oltp", positions={0: (0, 2)},
                  accesses=[(0, "t", 0, "write")])
    r = check_history(tes + [intruder], Dataflow(["A", "B", "C", "X"], NESTED.streams,
                                                 nested=NESTED.nested, oltp={"X"}))
    assert not r.ok and "not isolated" in str(r) and "X(oltp" in str(r)


@pytest.mark.parametrize("lanes", [1, 3])
def test_every_lane_of_a_data_parallel_sp_must_commit(lanes):
    tes = [TE(id=(b, k), procedure="P", batch=b, lane=k, positions={k: (0, b)}) for b in range(2)
           for k in range(lanes - 1)]
    r = check_history(tes, Dataflow(["P"], [], lanes={"P": lanes}), range(2))
    assert not r.ok and "never committed batch 0" in str(r)


# -- the serial order the checker returns ---------------------------------------------------------

def in_batch_and_dataflow_order(order) -> bool:
    """Whether `order` is a legal schedule of FLOW on one row, said without the checker: each
    SP runs its batches in order, and a stream's source runs a batch before its target does."""
    at = {te: i for i, te in enumerate(order)}
    batches = sorted({b for _, b in order})
    in_batch_order = all(at[(p, a)] < at[(p, b)]
                         for p in FLOW.procedures for a, b in zip(batches, batches[1:]))
    return in_batch_order and all(at[(s, b)] < at[(t, b)] for s, t in FLOW.streams for b in batches)


def test_the_serial_order_is_the_executed_one_for_every_legal_schedule():
    """On one row every legal schedule has exactly one equivalent serial order: the one run.
    The checker accepts exactly the schedules in batch and dataflow order (some are)."""
    tes = [("T1", 0), ("T1", 1), ("T2", 0), ("T2", 1)]
    legal = [order for order in permutations(tes) if in_batch_and_dataflow_order(order)]
    accepted = []
    for order in permutations(tes):
        hist = serial(order)
        r = check_history(hist, FLOW, range(2))
        if r.ok:
            accepted.append(order)
            assert [(hist[i].procedure, hist[i].batch) for i in r.order] == list(order)
        else:
            assert r.order == []
    assert legal and sorted(accepted) == sorted(legal)


def test_the_serial_order_keeps_every_edge_and_each_group_together():
    flow = Dataflow(["A", "B", "C"], [("A", "B")], nested=[("A", "B")])
    tes = []
    for b in range(3):
        g = f"g{b}"
        tes.append(TE(id=("A", b), procedure="A", batch=b, group=g, positions={0: (0, 3 * b, 0)},
                      accesses=[(0, "t", b, "write")], ts=10 * b + 5))
        tes.append(TE(id=("B", b), procedure="B", batch=b, group=g, positions={0: (0, 3 * b, 1)},
                      accesses=[(0, "t", 0, "write")], ts=10 * b + 5))
        tes.append(TE(id=("C", b), procedure="C", batch=b, positions={0: (0, 3 * b + 1, 0)},
                      accesses=[(0, "t", 0, "read")], ts=10 * b + 6))
    r = check_history(tes, flow, range(3))
    assert r.ok and sorted(r.order) == list(range(len(tes)))
    where = {i: k for k, i in enumerate(r.order)}
    from engine_sim.engine.checker import _edges
    for a, b in _edges(tes, flow):
        assert where[a] < where[b]
    for b in range(3):  # A and B of one batch stand next to each other
        assert abs(where[3 * b] - where[3 * b + 1]) == 1


def test_unordered_transactions_follow_their_commit_timestamps():
    flow = Dataflow(["X", "Y"], [])
    tes = [TE(id=("X", 0), procedure="X", batch=0, positions={0: (0, 1)}, accesses=[(0, "a", 1, "write")], ts=9),
           TE(id=("Y", 0), procedure="Y", batch=0, positions={1: (0, 1)}, accesses=[(1, "b", 1, "write")], ts=3)]
    r = check_history(tes, flow, range(1))
    assert r.ok and r.order == [1, 0]
