"""The streamed history check (stream_check.py) over hand-made histories: on every one it gives
the in-memory checker's verdict, violations and serial order, whether it decides alone (the
commit order is a serial order) or hands the history to the in-memory checker; and the spool
and the external sort it reads hold what they were given in bounded memory."""
import pickle
from itertools import permutations

import pytest

from engine_sim.engine.checker import TE, Dataflow, check_history
from engine_sim.engine.history import executions
from engine_sim.engine.spool import HistorySpool, MemoryHistory, SortedRuns
from engine_sim.engine.stream_check import check_spooled
from engine_sim.engine.txn import TxnRecord

FLOW = Dataflow(["T1", "T2"], [("T1", "T2")])
NESTED = Dataflow(["A", "B", "C"], [("A", "B"), ("B", "C")], nested=[("A", "B", "C")])


def records_of(tes: list[TE], ts=None) -> list[TxnRecord]:
    """The engine's records of these executions; commit timestamps `ts` (default: in list order)."""
    out = []
    for i, te in enumerate(tes):
        child = te.positions and max(len(p) > 2 and p[2] for p in te.positions.values()) or 0
        out.append(TxnRecord(txn_id=i, kind=te.kind, procedure=te.procedure, unit=te.procedure,
                             lane=te.lane, batch=te.batch, status="commit", restarts=0, base=0,
                             partitions=tuple(sorted(te.positions)), start_us=0, end_us=0,
                             commit_ts=(i if ts is None else ts[i]), child=int(child), group=te.group,
                             positions=dict(te.positions),
                             accesses=[(*a, 1) for a in te.accesses], era=te.era))
    return out


def both(records, flow, batches, tmp_path, run_size=2):
    """(streamed verdict, in-memory verdict) on the same records."""
    streamed = check_spooled(records, None, batches, flow, tmp_path, run_size=run_size, with_order=True)
    return streamed, check_history(executions(records), flow, range(batches))


def assert_same(streamed, old):
    assert streamed.check.ok == old.ok
    assert streamed.check.violations == old.violations
    assert streamed.check.order == old.order


def said(streamed, text: str) -> bool:
    return any(text in v for v in streamed.check.violations)


def serial(order, table="s", key=0, mode="write", partition=0):
    return [TE(id=(p, b), procedure=p, batch=b, positions={partition: (0, i)},
               accesses=[(partition, table, key, mode)]) for i, (p, b) in enumerate(order)]


@pytest.mark.parametrize("mode", ["write", "read"])
def test_every_schedule_of_two_sps_and_two_batches_gets_the_in_memory_verdict(tmp_path, mode):
    tes = [("T1", 0), ("T1", 1), ("T2", 0), ("T2", 1)]
    decided_alone = 0
    for order in permutations(tes):
        for ts in (None, [3, 2, 1, 0]):  # commit order as executed, and reversed
            streamed, old = both(records_of(serial(order, mode=mode), ts), FLOW, 2, tmp_path)
            assert_same(streamed, old)
            decided_alone += streamed.streamed
    assert decided_alone >= 2  # the legal schedules in commit order need no graph in memory


def test_a_duplicated_batch_is_caught_without_the_graph(tmp_path):
    streamed, old = both(records_of(serial([("T1", 0), ("T1", 0), ("T2", 0)])), FLOW, 1, tmp_path)
    assert_same(streamed, old)
    assert streamed.streamed and said(streamed, "processed batch 0 2 times")


def test_a_missing_batch_is_caught_without_the_graph(tmp_path):
    streamed, old = both(records_of(serial([("T1", 0), ("T2", 0), ("T1", 2), ("T2", 2)])), FLOW, 3, tmp_path)
    assert_same(streamed, old)
    assert streamed.streamed and said(streamed, "T1 never committed batch 1")


def test_a_missing_lane_and_a_repeated_oltp_request_are_caught(tmp_path):
    lanes = [TE(id=b, procedure="P", batch=b, lane=0, positions={0: (0, b)}) for b in range(2)]
    streamed, old = both(records_of(lanes), Dataflow(["P"], [], lanes={"P": 2}), 2, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "never committed batch 0 (lane 1)")
    oltp = [TE(id=i, procedure="Q", batch=7, kind="oltp", positions={0: (0, i)}) for i in range(2)]
    streamed, old = both(records_of(oltp), Dataflow(["Q"], [], oltp={"Q"}), 8, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "applied 2 times")


def test_a_cycle_is_found_and_named_as_the_in_memory_checker_names_it(tmp_path):
    a = TE(id=1, procedure="A", batch=0, kind="oltp", positions={0: (0, 1), 1: (0, 2)},
           accesses=[(0, "x", 1, "write"), (1, "y", 1, "write")])
    b = TE(id=2, procedure="B", batch=0, kind="oltp", positions={0: (0, 2), 1: (0, 1)},
           accesses=[(0, "x", 1, "write"), (1, "y", 1, "write")])
    streamed, old = both(records_of([a, b]), Dataflow(["A", "B"], [], oltp={"A", "B"}), 1, tmp_path)
    assert_same(streamed, old)
    assert not streamed.streamed and said(streamed, "cycle")


def group(batch, gid, seq, members=("A", "B", "C"), partition=0):
    return [TE(id=(m, batch), procedure=m, batch=batch, group=gid,
               positions={partition: (0, seq, i)}, accesses=[(partition, "t", 0, "write")])
            for i, m in enumerate(members)]


def test_nested_groups_atomic_split_and_interleaved(tmp_path):
    ok = group(0, "g0", 1) + group(1, "g1", 2)
    streamed, old = both(records_of(ok, [5, 5, 5, 9, 9, 9]), NESTED, 2, tmp_path)
    assert_same(streamed, old)
    assert streamed.streamed and streamed.check.ok
    missing = group(0, "g0", 1, members=("A", "B"))
    streamed, old = both(records_of(missing), NESTED, 1, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "not C")
    split = group(0, "g0", 1, members=("A", "B")) + group(0, "g9", 2, members=("C",))
    streamed, old = both(records_of(split), NESTED, 1, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "separate transactions")
    tes = group(0, "g0", 1)
    tes[2].positions = {0: (0, 3, 0)}
    intruder = TE(id="x", procedure="X", batch=0, kind="oltp", positions={0: (0, 2)},
                  accesses=[(0, "t", 0, "write")])
    flow = Dataflow(["A", "B", "C", "X"], NESTED.streams, nested=NESTED.nested, oltp={"X"})
    streamed, old = both(records_of(tes + [intruder], [1, 1, 1, 2]), flow, 1, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "not isolated")


def test_windows_and_designs_are_checked_as_before(tmp_path):
    flow = Dataflow(["W", "X"], [], windows={"win": "W"})
    steps = [TE(id=b, procedure="W", batch=b, positions={0: (0, i)}, accesses=[(0, "win", 1, "write")])
             for i, b in enumerate([0, 2, 1])]
    streamed, old = both(records_of(steps), Dataflow(["W"], [], windows={"win": "W"}), 3, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "out of batch order")
    gap = [s for s in steps if s.batch != 1]
    streamed, old = both(records_of(gap), Dataflow(["W"], [], windows={"win": "W"}), 3, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "with a gap (batch 1 missing)")
    intruder = TE(id="x", procedure="X", batch=0, positions={0: (0, 9)}, accesses=[(0, "win", 1, "read")])
    streamed, old = both(records_of(steps[:1] + [intruder]), flow, 1, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "private to W")
    # a migration at batch 1: batch 1 ran under the old design
    mig = TE(id="m", procedure="MIGRATION", batch=1, kind="migration", era=1)
    runs = [TE(id=b, procedure="T1", batch=b, positions={0: (0, b)}, era=0) for b in range(2)]
    streamed, old = both(records_of([runs[0], mig, runs[1]]), Dataflow(["T1"], []), 2, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "ran under design 0, but its batch belongs to design 1")


def test_a_long_legal_history_is_decided_in_the_given_memory(tmp_path):
    """500 batches of a two-SP dataflow, one partition each: streamed, in the commit order,
    holding at most one sorted run of 64 entries, and the same serial order."""
    tes = []
    for b in range(500):
        tes.append(TE(id=("T1", b), procedure="T1", batch=b, positions={0: (0, b)},
                      accesses=[(0, "s", b % 7, "write")]))
        tes.append(TE(id=("T2", b), procedure="T2", batch=b, positions={1: (0, b)},
                      accesses=[(1, "u", b % 5, "write")]))
    streamed, old = both(records_of(tes), FLOW, 500, tmp_path, run_size=64)
    assert_same(streamed, old)
    assert streamed.streamed and streamed.check.ok and streamed.executions == 1000
    assert streamed.peak_held <= 64


def test_the_spool_gives_back_what_it_was_given_and_holds_none_of_it(tmp_path):
    recs = records_of(serial([("T1", b) for b in range(10)]))
    spool = HistorySpool(tmp_path)
    spool.append(recs[:4])
    spool.append_packed(pickle.dumps(recs[4:]))
    assert spool.held == 0 and spool.bytes > 0
    assert [r.txn_id for r in spool] == list(range(10))
    assert [r.txn_id for r in spool] == list(range(10))  # read again
    spool.rewrite(r for r in spool if r.txn_id % 2)
    spool.append(recs[:1])
    assert [r.txn_id for r in spool] == [1, 3, 5, 7, 9, 0]
    spool.close()
    memory = MemoryHistory()
    memory.append(recs[:4])
    memory.append_packed(pickle.dumps(recs[4:]))
    assert [r.txn_id for r in memory] == list(range(10)) and memory.held == 10


def test_the_external_sort_merges_its_runs_in_order(tmp_path):
    import random

    items = [(random.Random(3).random() * i, i) for i in range(1000)]
    runs = SortedRuns(tmp_path, "x", run_size=100)
    for it in items:
        runs.add(it)
    runs.finish()
    assert len(runs.runs) == 10 and runs.peak_buffered == 100
    assert list(runs) == sorted(items) and list(runs) == sorted(items)
