"""Each SP's declared cost is real CPU work in the partition that runs it (`cost x
cost_unit_us`), real code gets no added loop, the spec's `cost_unit_us` is read and checked,
and the calibration's 4x-cost probe does about four times the 1x probe's work. Busy times are
wall clock, so a loaded host can only make them longer: the lower bounds below hold however
loaded, and the ratios take the least disturbed of a few runs."""
from __future__ import annotations

import time

import pytest

from advisor.cli import run_app
from costmodel.design import Design
from costmodel.errors import SpecError
from costmodel.spec_reader import parse_workload
from advisor.sources import load_workload
from costmodel.spec_writer import workload_to_toml
from costmodel.workload import Access, InputSpec, Procedure, Stream, Table, Workload
from engine_sim.engine import run_workload
from engine_sim.engine.run_options import CommandLogOptions
from costmodel.simple_designs import single_partition_design
from engine_sim.engine.plan import build_plan
from engine_sim.engine.procedures import burn_cpu
from window_specs import one_procedure_spec

pytestmark = pytest.mark.integration



def chain(costs: list[float], cost_unit_us: float) -> Workload:
    procs = tuple(Procedure(f"SP{i}", c, (Access(f"T{i}", "write", 1, "input:id"),))
                  for i, c in enumerate(costs))
    return Workload("work", tuple(Table(f"T{i}", 100, 8, "id") for i in range(len(costs))), procs,
                    tuple(Stream(f"SP{i}", f"SP{i + 1}", 1, 16) for i in range(len(costs) - 1)),
                    input=InputSpec(1, None, ("id",), cost_unit_us))


def test_burn_cpu_spends_that_much_cpu_time_and_zero_spends_none():
    t = time.thread_time()
    burn_cpu(3000)
    assert time.thread_time() - t >= 0.003
    t = time.thread_time()
    burn_cpu(0)
    burn_cpu(-5)
    assert time.thread_time() - t < 0.003


def test_the_spec_reads_cost_unit_us_and_writes_it_back():
    w = parse_workload(one_procedure_spec("cost_unit_us = 250"), "w.toml")
    assert w.input.cost_unit_us == 250.0
    assert parse_workload(workload_to_toml(w), "again.toml").input.cost_unit_us == 250.0
    default = parse_workload(one_procedure_spec(), "w.toml")
    assert default.input.cost_unit_us == 100.0  # a cost-1.0 SP: about 100 us
    assert "cost_unit_us" not in workload_to_toml(default)


RANGE = "cost_unit_us must be a number > 0 and <= 1000000 (engine CPU microseconds per unit of SP cost)"


@pytest.mark.parametrize("value, expected", [
    # 0 made every SP free (the weights dropped load balancing) and its trace was refused only
    # when aggregated: refused here, as `trace synth` and a manifest refuse it
    ("0", f"{RANGE}, got 0"),
    ("0.0", f"{RANGE}, got 0.0"),
    ("-1", f"{RANGE}, got -1"),
    ('"fast"', "cost_unit_us must be a number, got 'fast'"),
    ("true", "cost_unit_us must be a number, got True"),
    ("inf", "cost_unit_us must be finite"),
    ("1e9", f"{RANGE}, got 1000000000.0"),
])
def test_bad_cost_unit_us_is_one_line(value, expected):
    with pytest.raises(SpecError) as err:
        parse_workload(one_procedure_spec(f"cost_unit_us = {value}"), "w.toml")
    message = str(err.value)
    assert message.startswith("w.toml: [input]: ") and expected in message and "\n" not in message


def test_the_cli_refuses_a_bad_cost_unit_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    for value in ("-3", "0"):
        bad.write_text(one_procedure_spec(f"cost_unit_us = {value}"))
        assert run_app(["recommend", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"error: {bad}: [input]: {RANGE}, got {value}"


def test_declared_sps_carry_their_work_and_real_code_none():
    w = chain([1.0, 2.5], 40.0)
    plan = build_plan(w, single_partition_design(w))
    assert [plan.procs[p].work_us for p in ("SP0", "SP1")] == [40.0, 100.0]
    voter = load_workload("voter-leaderboard")
    vplan = build_plan(voter, single_partition_design(voter))
    assert all(p.work_us == 0.0 for p in vplan.procs.values())  # real code does its real work
    assert any(p.cost > 0 for p in voter.procedures)


@pytest.mark.parametrize("in_process", [True, pytest.param(False, marks=pytest.mark.process)])
def test_a_declared_cost_keeps_its_partition_busy_for_its_work(in_process):
    """Two SPs of cost 1 and 2 at 2 ms a unit: 6 ms of CPU per batch on the partition. A busy
    time is wall clock, at least the CPU spent in it; the same chain at cost 0 is far below."""
    batches = 12
    heavy = chain([1.0, 2.0], 2000.0)
    light = chain([0.0, 0.0], 2000.0)
    d = Design("work", 1, 1, {"SP0": 0, "SP1": 0}, {"T0": 0, "T1": 0})
    r = run_workload(heavy, d, batches=batches, in_process=in_process,
                     command_log=CommandLogOptions(fsync=False))
    z = run_workload(light, d, batches=batches, in_process=in_process,
                     command_log=CommandLogOptions(fsync=False))
    assert r.history_check == "ok" and z.history_check == "ok"
    work_s = batches * 3 * 2000e-6
    assert r.partition_busy_s[0] >= work_s
    assert z.partition_busy_s[0] < 0.5 * work_s
    assert r.state_digest == z.state_digest  # the work is CPU only: same rows, same state


def test_the_4x_cost_probe_does_about_4x_the_work():
    """The calibration probes txn (cost 1), txn_cost (cost 4) and txn_nocost (cost 0), run as
    `advisor calibrate` runs them. Busy time per batch, the least disturbed of three runs: the
    4x probe's is at least its 400 us of CPU. The ratio of the work parts is read per
    transaction - the shortest execution of each probe, which a preemption on a loaded host
    cannot lengthen unless it hits every one of them: the 4x probe's part above the cost-0
    probe is clearly more than 2.5 times the 1x probe's."""
    from engine_sim.calibrate import measure
    from engine_sim.sim.probes import probes

    plist = {p.name: p for p in probes() if p.observe == "busy" and p.name in ("txn", "txn_cost", "txn_nocost")}
    assert len(plist) == 3
    measured = measure(list(plist.values()), batches=30, in_process=True, repeats=3)
    assert measured["txn_cost:busy@p0"] >= 400e-6  # 4 units of 100 us of CPU, at least
    assert measured["txn:busy@p0"] >= 100e-6
    shortest = {}
    for name, p in plist.items():
        driver, _ = _CountingRuntime.run(p.workload, p.design, 60)
        shortest[name] = min(r.end_us - r.start_us for r in driver.records
                             if r.status == "commit" and r.kind == "stream")
    work1 = shortest["txn"] - shortest["txn_nocost"]
    work4 = shortest["txn_cost"] - shortest["txn_nocost"]
    assert work1 > 0 and work4 > 2.5 * work1, shortest


class _CountingRuntime:
    """An in-process run that counts the messages the driver sends and receives, by type."""

    @staticmethod
    def run(workload, design, batches: int, **plan_options):
        from collections import Counter

        from engine_sim.engine.driver import DriverConfig
        from engine_sim.engine.inproc import InProcessRuntime
        from engine_sim.engine.plan import DRIVER
        from engine_sim.engine.recovery import MemoryLogStore
        from engine_sim.engine.site import SiteConfig

        counts: Counter = Counter()

        class Counting(InProcessRuntime):
            def post(self, src, dst, msg):
                if DRIVER in (src, dst):
                    counts[type(msg).__name__] += 1
                super().post(src, dst, msg)

        plan = build_plan(workload, design, **plan_options)
        stores = {k: MemoryLogStore() for k in range(plan.n_partitions)}
        runtime = Counting(plan, SiteConfig(run_dir="unused"), DriverConfig(batches=batches, run_dir="unused"),
                           stores)
        driver = runtime.run(60.0)
        return driver, counts


@pytest.mark.parametrize("scheduler", ["dls", "central"])
def test_the_driver_handles_batches_in_groups(tpcdi_trade, scheduler):
    """Input goes to the border schedulers as a few Inject messages carrying many batches,
    completions come back as a few BatchesDone, and every batch completes once."""
    w = tpcdi_trade
    from costmodel.simple_designs import round_robin_design

    d = round_robin_design(w, 2, 1)
    batches = 200
    driver, counts = _CountingRuntime.run(w, d, batches, scheduler=scheduler)
    assert len(driver.done_us) == batches and not driver.outstanding
    assert counts["BatchDone"] == 0  # never one message per batch and sink
    if scheduler == "dls":  # the schedulers live at the partitions
        assert counts["Invoke"] == 0
        assert 0 < counts["Inject"] < batches / 4
        assert 0 < counts["BatchesDone"] < batches / 4
    from engine_sim.engine.history import check_records

    assert check_records(driver.records, driver.plan, batches).violations == []


@pytest.mark.process  # partition processes
def test_an_idle_partition_process_does_not_spin():
    """SP1 does 4 ms of work per batch on partition 0; SP2 on partition 1 does none, so
    partition 1 mostly waits. Waiting is sleeping in epoll, not polling: its process uses a
    small share of a core while partition 0 works, however long the run took."""
    w = chain([40.0, 0.0], 100.0)
    d = Design("work", 2, 1, {"SP0": 0, "SP1": 1}, {"T0": 0, "T1": 1})
    r = run_workload(w, d, batches=60, command_log=CommandLogOptions(fsync=False))
    assert r.history_check == "ok" and len(r.partition_cpu_s) == 2
    work_s = 60 * 40 * 100e-6
    assert r.partition_cpu_s[0] >= work_s
    assert r.partition_cpu_s[1] < 0.3 * work_s, r.partition_cpu_s


def test_a_halving_of_the_batches_in_flight_is_judged_on_the_batches_it_admitted():
    """Closed loop at a 1 s bound: 64 batches in flight take 2 s each, so the limit halves;
    the batches already in flight then complete as slowly, but they were admitted under the
    old limit and do not halve it again (before, the limit fell to 1 on them)."""
    from engine_sim.engine.driver import Driver, DriverConfig

    w = chain([0.0, 0.0], 100.0)
    plan = build_plan(w, Design("work", 1, 1, {"SP0": 0, "SP1": 0}, {"T0": 0, "T1": 0}))

    class Clocked(Driver):
        now = 0

        def now_us(self) -> int:
            return self.now

    class Nowhere:
        def send(self, dst, msg):
            pass

    d = Clocked(plan, DriverConfig(batches=1000, run_dir="unused", in_flight=64, latency_bound_s=1.0), Nowhere())
    d.poll()
    assert len(d.outstanding) == 64
    d.now = 2_000_000
    for b in range(64):  # every batch of the first 64 in flight: 2 s
        d.sink_done(b, "SP1", False)
    assert d.in_flight == 32 and d.in_flight_history == [64, 32]
    d.poll()  # admits 32 under the new limit
    d.now += 500_000
    for b in sorted(d.outstanding):
        d.sink_done(b, "SP1", False)  # 0.5 s each: within the bound
    assert d.in_flight == 32


def test_a_bundle_that_starts_a_crash_is_not_read_past_the_message_that_started_it():
    """Multi-process: partition 0 ships its history twice in one bundle (a timed shipment, then
    the commits a log flush released). The first shipment reaches the crash point and starts
    the recovery; the second's commits are in the log, so the replay brings them back. Read,
    they were in the history twice (CI: "SP1 processed batch 54 2 times")."""
    import pickle

    from engine_sim.engine import messages as m
    from engine_sim.engine.driver import Driver, DriverConfig
    from engine_sim.engine.txn import TxnRecord

    w = chain([0.0, 0.0], 100.0)
    plan = build_plan(w, Design("work", 2, 1, {"SP0": 0, "SP1": 1}, {"T0": 0, "T1": 1}))
    crashes = []

    class Cluster:
        def send(self, dst, msg):
            """The partitions are not there: what the driver sends them is not looked at."""

        def crash(self, node, epoch, clock):
            crashes.append((node, epoch))

    def shipment(batches, commits):
        records = [TxnRecord(txn_id=(b + 1) << 10, kind="stream", procedure="SP0", unit="SP0", lane=0,
                             batch=b, status="commit", restarts=0, base=0, partitions=(0,), start_us=0,
                             end_us=1, commit_ts=b + 1) for b in batches]
        return m.History(0, pickle.dumps(records), 0.0, commits)

    d = Driver(plan, DriverConfig(batches=10, run_dir="unused", crash_after=2), Cluster())
    d.poll()
    before = m.Bundle(0, 5, 0, [shipment([0, 1], 2), shipment([2, 3], 4)])
    later = m.Bundle(1, 6, 0, [m.History(1, pickle.dumps([]), 0.0, 0)])
    assert d.handle_bundles([before, later])
    assert crashes == [(0, 1)] and d.epoch == 1
    assert sorted(r.batch for r in d.lost) == [0, 1]  # to be replayed
    assert d.records == []  # neither the second shipment nor the later bundle was read
