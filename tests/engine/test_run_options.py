"""The option records of `run_workload` check themselves when built (one EngineError line), and
each option has one way in: no keyword of `run_workload` repeats a record's field."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from costmodel.simple_designs import round_robin_design
from advisor.sources import load_workload
from engine_sim.engine import (ClientOptions, CommandLogOptions, EngineError, MigrationOptions, NetworkOptions,
                               RecoveryOptions, run_workload)

RECORDS = (ClientOptions, RecoveryOptions, CommandLogOptions, NetworkOptions, MigrationOptions)


@pytest.mark.parametrize("build, problem", [
    (lambda: ClientOptions(in_flight=0), "in_flight must be an integer >= 1"),
    (lambda: ClientOptions(in_flight=True), "in_flight must be an integer >= 1"),
    (lambda: ClientOptions(latency_bound_s=-1.0), "latency bound must be > 0"),
    (lambda: ClientOptions(abort_rate=1.0), "abort rate must be in"),
    (lambda: ClientOptions(restart_limit=-1), "restart limit must be an integer >= 0"),
    (lambda: RecoveryOptions(mode="full"), "--recovery must be one of strong, weak, off"),
    (lambda: RecoveryOptions(crash_after=0), "--crash-after must be an integer >= 1"),
    (lambda: RecoveryOptions(mode="off", crash_after=3), "needs recovery"),
    (lambda: RecoveryOptions(mode="off", crash_at=("participant", "after_vote")), "needs recovery"),
    (lambda: RecoveryOptions(crash_after=3, crash_at=("participant", "after_vote")), "one crash"),
    (lambda: RecoveryOptions(crash_at=("participant", "during")), "crash_at step"),
    (lambda: RecoveryOptions(snapshot_every=-1), "snapshot_every must be an integer >= 0"),
    (lambda: RecoveryOptions(crash_partition=-2), "crash partition must be an integer >= 0"),
    (lambda: CommandLogOptions(fsync="yes"), "fsync must be true or false"),
    (lambda: CommandLogOptions(group_commit=None), "group_commit must be true or false"),
    (lambda: CommandLogOptions(dir=3), "dir must be a path"),
    (lambda: NetworkOptions(machine_delay_ms=-0.5), "machine delay must be >= 0"),
    (lambda: MigrationOptions(at_batch=4), "need --migrate-to"),
    (lambda: MigrationOptions(mode="restart"), "need --migrate-to"),
    (lambda: MigrationOptions(to="B.json", at_batch=4), "must be a Design"),
])
def test_a_bad_value_is_refused_when_the_record_is_built(build, problem):
    with pytest.raises(EngineError, match=problem) as refused:
        build()
    assert "\n" not in str(refused.value)


def test_a_migration_needs_its_batch_and_a_known_mode():
    design = round_robin_design(load_workload("move-micro"))
    with pytest.raises(EngineError, match="needs --at-batch"):
        MigrationOptions(to=design)
    with pytest.raises(EngineError, match="migration mode must be one of live, restart"):
        MigrationOptions(to=design, at_batch=3, mode="compare")
    assert MigrationOptions(to=design, at_batch=3).asked and not MigrationOptions().asked


def test_a_crash_point_is_kept_in_its_parsed_form():
    spec = RecoveryOptions(crash_at="participant,after_vote,3").crash_at
    assert spec == ("participant", "after_vote", 3)
    assert RecoveryOptions(crash_at=spec) == RecoveryOptions(crash_at="participant:after_vote:3")
    assert RecoveryOptions(crash_at=("coordinator", "before_vote")).crash_at == ("coordinator", "before_vote", 1)


def test_records_are_frozen():
    client = ClientOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        client.in_flight = 2


def test_each_option_has_one_way_in():
    keywords = set(inspect.signature(run_workload).parameters)
    fields = {f.name for record in RECORDS for f in dataclasses.fields(record)}
    assert not keywords & fields, keywords & fields
    by_record = {p.default.__class__ for p in inspect.signature(run_workload).parameters.values()
                 if dataclasses.is_dataclass(p.default)}
    assert by_record == set(RECORDS)


def test_run_workload_refuses_a_bare_value_where_a_record_goes():
    w = load_workload("move-micro")
    with pytest.raises(EngineError, match="client must be a ClientOptions"):
        run_workload(w, round_robin_design(w), batches=2, in_process=True, client=8)


@pytest.mark.parametrize("recovery", [RecoveryOptions(crash_after=30), RecoveryOptions(crash_at="participant,after_vote")],
                         ids=["crash-after", "crash-at"])
def test_a_migration_compare_with_a_crash_is_refused_before_either_run(recovery):
    """It was refused after the whole live run, in words naming "restart", which the user did
    not ask for (or, with --crash-at, failed on "never happened")."""
    from advisor.sources import load_workload
    from costmodel.simple_designs import round_robin_design
    from engine_sim.engine.migration_compare import compare_migration

    w = load_workload("tpcdi-trade").with_cluster(2, 1)
    d = round_robin_design(w)
    with pytest.raises(EngineError, match="--migration compare runs the migration twice"):
        compare_migration(w, d, d, batches=200, at_batch=100, recovery=recovery)


def test_numpy_counts_are_the_counts_they_are_in_a_run_and_its_records():
    # `for n in np.arange(...)`: "--batches must be an integer >= 1, got np.int64(5)", and the
    # same of in_flight, crash_after and at_batch, where every other verb takes them
    import json

    import numpy as np

    w = load_workload("move-micro")
    d = round_robin_design(w)
    counts = ClientOptions(in_flight=np.int64(4), restart_limit=np.int32(5))
    assert (type(counts.in_flight), type(counts.restart_limit)) == (int, int)
    recovery = RecoveryOptions(snapshot_every=np.int64(2), crash_after=np.int64(3), crash_partition=np.int64(0))
    assert {type(getattr(recovery, n)) for n in ("snapshot_every", "crash_after", "crash_partition")} == {int}
    assert type(MigrationOptions(to=d, at_batch=np.int64(2)).at_batch) is int
    r = run_workload(w, d, batches=np.int64(6), batch_size=np.int64(3), seed=np.int64(1), in_process=True,
                     client=counts)
    assert r.committed > 0 and r.history_check == "ok"
    json.dumps(r.to_dict())  # the run's settings are plain numbers


@pytest.mark.parametrize("options, problem", [
    (dict(seed=-1), "^seed must be an integer >= 0, got -1"),  # it ran
    (dict(seed="a"), "^seed must be an integer >= 0, got 'a'"),
    (dict(trace_out=5), "^expected a file path, got 5"),  # pathlib's TypeError after the whole run
])
def test_a_bad_seed_or_trace_directory_is_refused_before_the_run(options, problem, monkeypatch):
    import engine_sim.engine.runner as runner

    w = load_workload("move-micro")
    monkeypatch.setattr(runner, "build_plan", lambda *a, **k: pytest.fail("the run started"))
    with pytest.raises(EngineError, match=problem):
        run_workload(w, round_robin_design(w), batches=2, in_process=True, **options)
