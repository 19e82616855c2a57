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
