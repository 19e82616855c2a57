"""engine_sim.engine.twophase, read off the real (in-process) engine's messages: a coordinator
locks its partitions one at a time in ascending order, commits with two-phase commit to exactly
the partitions it locked, picks a commit timestamp no older than any vote, and an aborted
attempt releases every partition it asked for."""
from __future__ import annotations

from costmodel.design import Design
from costmodel.workload import Access, InputSpec, Procedure, Table, Workload
from engine_sim.engine import messages as M
from engine_sim.engine import run_workload
from engine_sim.engine.inproc import InProcessRuntime
from engine_sim.engine.run_options import ClientOptions
from engine_sim.engine.twophase import _targets

BATCHES = 20
# A (base 0) locks 0, 1, 2; B (base 1) locks 0 and 1: opposite bases on shared partitions
CROSSED = Workload("crossed", tuple(Table(f"T{i}", 1000, 64, "k") for i in range(3)),
                   (Procedure("A", 1.0, (Access("T0", "read", 5), Access("T1", "write", 5),
                                         Access("T2", "read", 5))),
                    Procedure("B", 1.0, (Access("T1", "read", 5), Access("T0", "write", 5)))),
                   (), input=InputSpec(batch_size=10))
DESIGN = Design("crossed", 3, 1, {"A": 0, "B": 1}, {"T0": 0, "T1": 1, "T2": 2})


def run_and_listen(monkeypatch, **options):
    """Run the engine in this process, keeping every message (src, dst, message) it posts."""
    posted = []
    post = InProcessRuntime.post

    def listening(self, src, dst, msg):
        posted.append((src, dst, msg))
        return post(self, src, dst, msg)

    monkeypatch.setattr(InProcessRuntime, "post", listening)
    result = run_workload(CROSSED, DESIGN, batches=BATCHES, in_process=True, **options)
    return result, posted


def by_txn(posted):
    out: dict[int, list] = {}
    for src, dst, msg in posted:
        if isinstance(msg, (M.LockReq, M.LockReply, M.Prepare, M.Vote, M.Decide)):
            out.setdefault(msg.txn_id, []).append((src, dst, msg))
    return out


def check_locking(txn_id, msgs):
    """Lock requests go out one at a time (the next after the previous grant), ascending."""
    coord = msgs[0][0]
    asked, waiting = [], None
    for src, dst, msg in msgs:
        if isinstance(msg, M.LockReq):
            assert src == coord and msg.coord == coord and waiting is None, txn_id
            asked.append(dst)
            waiting = dst
        elif isinstance(msg, M.LockReply):
            assert src == waiting and dst == coord
            waiting = None
    assert asked == sorted(set(asked)) and coord not in asked
    return coord, asked


def test_commits_lock_in_ascending_order_and_run_2pc_with_exactly_the_locked_partitions(monkeypatch):
    result, posted = run_and_listen(monkeypatch)
    assert result.history_check == "ok" and result.distributed_txns == 2 * BATCHES
    committed = 0
    for txn_id, msgs in by_txn(posted).items():
        coord, asked = check_locking(txn_id, msgs)
        prepares = [dst for src, dst, m in msgs if isinstance(m, M.Prepare)]
        votes = [m for _, _, m in msgs if isinstance(m, M.Vote)]
        decides = [(dst, m) for _, dst, m in msgs if isinstance(m, M.Decide)]
        assert all(m.commit for _, m in decides)  # nothing aborts without injected aborts
        committed += 1
        assert sorted(prepares) == asked and sorted(v.part for v in votes) == asked
        assert sorted(dst for dst, _ in decides) == asked
        assert all(v.ok for v in votes)
        first_prepare = next(i for i, (_, _, m) in enumerate(msgs) if isinstance(m, M.Prepare))
        last_reply = max(i for i, (_, _, m) in enumerate(msgs) if isinstance(m, M.LockReply))
        last_vote = max(i for i, (_, _, m) in enumerate(msgs) if isinstance(m, M.Vote))
        first_decide = min(i for i, (_, _, m) in enumerate(msgs) if isinstance(m, M.Decide))
        assert last_reply < first_prepare and last_vote < first_decide
        ts = {m.commit_ts for _, m in decides}
        assert len(ts) == 1 and ts.pop() >= max(v.clock for v in votes)  # one timestamp, not older
    assert committed == 2 * BATCHES  # every SP, every batch, one distributed transaction


def test_an_aborted_attempt_releases_every_partition_it_asked_and_is_retried(monkeypatch):
    result, posted = run_and_listen(monkeypatch, client=ClientOptions(abort_rate=0.4), seed=2)
    assert result.history_check == "ok"
    aborted = 0
    for txn_id, msgs in by_txn(posted).items():
        coord, asked = check_locking(txn_id, msgs)
        decides = [(dst, m.commit) for _, dst, m in msgs if isinstance(m, M.Decide)]
        if any(not ok for _, ok in decides):
            aborted += 1
            assert sorted(dst for dst, _ in decides) == asked  # a No to every partition asked
            assert not any(ok for _, ok in decides)
            assert not [m for _, _, m in msgs if isinstance(m, (M.Prepare, M.Vote))]  # before 2PC
    assert aborted > 0  # the injected aborts happened ...
    assert result.distributed_txns == 2 * BATCHES  # ... and every batch still committed once


def test_an_operation_runs_where_its_row_lives_and_a_replicated_write_everywhere():
    parts = {0, 2, 1}
    assert _targets(2, ("get", "T", 5), me=0, parts=parts) == (2,)
    assert _targets(None, ("get", "T", 5), me=1, parts=parts) == (1,)  # a copy is read locally
    assert _targets(None, ("put", "T", 5, 1), me=1, parts=parts) == (0, 1, 2)  # every copy written
