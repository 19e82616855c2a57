"""Where the streamed history check (stream_check.py) hands a history to the in-memory checker,
and where it must not.

Every trigger of that fallback is reached here by a forged history - positions falling along
the commit order (with and without a real conflict behind them), an SP's batches or a dataflow
edge going backward, a nested group split, repeated or missing a member, a window touched
without a position, a migration on the wrong side of an execution - and
on each the streamed check gives the in-memory checker's verdict, every violation word for word
and its serial order. Each of these histories is an incorrect schedule or one a correct engine
does not record (a later position on a partition always carries a later commit timestamp), so
the fallback costs memory only on a run that is wrong. Real runs of the bundled workloads that
exercise nested groups, windows, OLTP requests, aborts, data-parallel lanes, MOVE
transactions, crashes and migrations are decided by the streamed check alone."""
import pytest

from engine_sim.engine.checker import TE, Dataflow
from test_stream_check import assert_same, both, records_of, said

FLOW = Dataflow(["T1", "T2"], [("T1", "T2")])
NESTED = Dataflow(["A", "B"], [("A", "B")], nested=[("A", "B")])


def te(proc, batch, pos, table="s", key=0, mode="write", partition=0, **kw):
    return TE(id=(proc, batch, kw.get("lane", 0)), procedure=proc, batch=batch, positions={partition: pos},
              accesses=[(partition, table, key, mode)], **kw)


def fell_back(streamed, why: str) -> bool:
    return not streamed.streamed and any(why in n for n in streamed.notes)


def test_positions_falling_on_unrelated_rows_fall_back_and_keep_the_commit_order(tmp_path):
    """No conflict behind the fall: the in-memory checker's order is the commit order."""
    tes = [te("T1", 0, (0, 2), key=1), te("T1", 1, (0, 1), key=2), te("T2", 0, (0, 3), key=3, partition=1),
           te("T2", 1, (0, 4), key=4, partition=1)]
    streamed, old = both(records_of(tes), FLOW, 2, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "positions on partition 0 fall") and old.ok and old.order == [0, 1, 2, 3]


def test_a_real_conflict_against_the_commit_order_gives_the_graphs_order(tmp_path):
    """OLTP requests writing one row: positions say b before a, timestamps a before b; the
    serial order follows the positions."""
    a = TE(id="a", procedure="Q", batch=0, kind="oltp", positions={0: (0, 2)}, accesses=[(0, "s", 1, "write")])
    b = TE(id="b", procedure="Q", batch=1, kind="oltp", positions={0: (0, 1)}, accesses=[(0, "s", 1, "write")])
    streamed, old = both(records_of([a, b]), Dataflow(["Q"], [], oltp={"Q"}), 2, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "fall along the commit order") and old.ok and old.order == [1, 0]


def test_batch_order_and_dataflow_order_going_backward(tmp_path):
    backward = [te("T1", 1, (0, 1), key=1), te("T1", 0, (0, 2), key=2), te("T2", 0, (1, 1), partition=1),
                te("T2", 1, (1, 2), partition=1)]
    streamed, old = both(records_of(backward), FLOW, 2, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "T1 batches fall")
    downstream_first = [te("T2", 0, (1, 1), partition=1), te("T1", 0, (0, 1))]
    streamed, old = both(records_of(downstream_first), FLOW, 1, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "T2 ran batch 0 or later before T1 ran it") and old.order == [1, 0]
    # the same, closing a cycle through a conflict: caught and named as the graph names it
    cyclic = [te("T2", 0, (0, 1)), te("T1", 0, (0, 2))]
    streamed, old = both(records_of(cyclic), FLOW, 1, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "serialization graph has a cycle")


def group(batch, gid, seq, members=("A", "B")):
    return [TE(id=(m, batch, gid), procedure=m, batch=batch, group=gid, positions={0: (0, seq, i)},
               accesses=[(0, "t", 0, "write")]) for i, m in enumerate(members)]


def test_nested_groups_repeated_split_or_without_a_group(tmp_path):
    twice = group(0, "g0", 1) + group(0, "g1", 2)
    siblings = Dataflow(["A", "B"], [], nested=[("A", "B")])  # no stream between them
    streamed, old = both(records_of(twice, [1, 1, 2, 2]), siblings, 1, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "committed twice") and said(streamed, "processed batch 0 2 times")
    no_group = group(0, None, 1)
    streamed, old = both(records_of(no_group), NESTED, 1, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "not one transaction") and said(streamed, "separate transactions")
    half = group(0, "g0", 1, members=("A",)) + group(1, "g1", 2)
    streamed, old = both(records_of(half, [1, 2, 2]), NESTED, 2, tmp_path)
    assert_same(streamed, old)
    assert said(streamed, "batch 0 committed A but not B")


def test_a_window_touched_without_a_position(tmp_path):
    flow = Dataflow(["W"], [], windows={"win": "W"})
    steps = [TE(id=b, procedure="W", batch=b, positions={0: (0, b)}, accesses=[(0, "win", 1, "write")])
             for b in range(2)]
    steps[1].positions = {1: (0, 1)}  # its window access on a partition it holds no position on
    streamed, old = both(records_of(steps), flow, 2, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "without a position")



def test_a_window_owned_by_an_oltp_procedure_is_decided_without_the_graph(tmp_path):
    """(It used to fall back.) Its requests step the window as stream batches do: in order and
    without a gap, or the violation the in-memory checker words."""
    oltp_owner = Dataflow(["Q"], [], oltp={"Q"}, windows={"win": "Q"})

    def requests(order, ts=None):
        return records_of([TE(id=b, procedure="Q", batch=b, kind="oltp", positions={0: (0, i)},
                              accesses=[(0, "win", 1, "write")]) for i, b in enumerate(order)], ts)

    for order, ts, verdict in (([0, 1, 2], None, "ok"), ([0, 2], None, "with a gap (batch 1 missing)"),
                               ([0, 2, 1], None, "out of batch order"),
                               ([1, 0, 2], [2, 1, 3], "fall")):  # positions against the timestamps
        streamed, old = both(requests(order, ts), oltp_owner, 3, tmp_path)
        assert_same(streamed, old)
        if verdict == "fall":
            assert fell_back(streamed, "fall along the commit order")
        else:
            assert streamed.streamed and (old.ok if verdict == "ok" else said(streamed, verdict))


def test_a_migration_on_the_wrong_side_of_an_execution(tmp_path):
    flow = Dataflow(["T1"], [])
    mig = TE(id="m", procedure="MIGRATION", batch=1, kind="migration", era=1)
    late = [te("T1", 0, (0, 0), era=0), te("T1", 1, (0, 1), era=1), mig]  # design 1 ran before it
    streamed, old = both(records_of(late), flow, 2, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "later design precedes a migration") and old.order == [0, 2, 1]
    early = [mig, te("T1", 0, (0, 0), era=0), te("T1", 1, (0, 1), era=1)]  # design 0 ran after it
    streamed, old = both(records_of(early), flow, 2, tmp_path)
    assert_same(streamed, old)
    assert fell_back(streamed, "earlier design follows a migration") and old.order == [1, 0, 2]


RUNS = [  # (workload, run options): every option that changes what the history holds
    ("voter-leaderboard", {}),  # nested groups
    ("voter-leaderboard", {"data_parallel": True}),
    ("linear-road", {"client": {"abort_rate": 0.1}}),  # windows, OLTP requests, aborts
    ("window-micro", {"move": "txn"}),
    ("tpcdi-trade", {"data_parallel": True, "move": "txn"}),  # lanes, MOVE transactions
    ("tpcdi-trade", {"recovery": {"mode": "strong", "crash_after": 30}}),
    ("linear-road", {"recovery": {"mode": "weak", "crash_after": 30}}),
    ("bank-transfer", {"migration": True}),
]


@pytest.mark.integration
@pytest.mark.parametrize("name, options", RUNS, ids=[f"{n}-{'-'.join(o) or 'plain'}" for n, o in RUNS])
def test_real_runs_are_decided_by_the_streamed_check_alone(name, options, workloads, monkeypatch):
    from dataclasses import replace

    from costmodel.simple_designs import round_robin_design
    from engine_sim.engine import run_workload, runner
    from engine_sim.engine.history import check_records, executions, verify_history
    from engine_sim.engine.run_options import ClientOptions, MigrationOptions, RecoveryOptions

    seen = []
    original = runner._result

    def capture(plan, driver, batches, *args, **kwargs):
        records = list(driver.history)
        next_plan = None if driver.migration is None else driver.migration.plan
        seen.append((verify_history(plan, driver, batches, next_plan, run_size=40),
                     check_records(records, plan, batches, executions(records))))
        return original(plan, driver, batches, *args, **kwargs)

    monkeypatch.setattr(runner, "_result", capture)
    w = workloads(name)
    d = round_robin_design(w)
    kw = {k: v for k, v in options.items() if k in ("data_parallel", "move")}
    if "client" in options:
        kw["client"] = ClientOptions(**options["client"])
    if "recovery" in options:
        kw["recovery"] = RecoveryOptions(**options["recovery"])
    if "migration" in options:
        n = d.n_partitions
        moved = replace(d, procedures={p: (k + 1) % n for p, k in d.procedures.items()},
                        state={t: (k + 1) % n if isinstance(k, int) else k for t, k in d.state.items()})
        kw["migration"] = MigrationOptions(to=moved, at_batch=60)
    r = run_workload(w, d, batches=120, in_process=True, **kw)
    assert r.history_check == "ok" and r.serial_digest == r.state_digest
    streamed, old = seen[-1]
    assert streamed.streamed, streamed.notes  # no fallback: the summaries decided it
    assert streamed.check.ok and old.ok and streamed.check.violations == old.violations == []
    assert streamed.peak_held <= 40 < streamed.executions
    if "recovery" in options:
        assert r.crashed
    if "migration" in options:
        assert r.migration.outcome == "committed"
