"""A run's history goes to disk as it arrives: the driver holds none of it, the streamed check
and serial replay read it back in the memory they are given and reach the in-memory checker's
verdict and serial state, and the spool's directory is gone after the run, a failed one too.
(A lost row failing the run through the digest: test_engine_serial.py, whose runs now go
through the streamed check.)"""
import tempfile
from pathlib import Path

import pytest

from advisor.sources import load_workload
from engine_sim.engine import EngineError, run_workload
from engine_sim.engine.run_options import RecoveryOptions
from engine_sim.engine import runner
from costmodel.simple_designs import round_robin_design
from engine_sim.engine.history import check_records, executions, verify_history
from engine_sim.engine.serial import serial_digest
from engine_sim.engine.spool import SPOOL_PREFIX

pytestmark = pytest.mark.integration


def _spools() -> set:
    return set(Path(tempfile.gettempdir()).glob(SPOOL_PREFIX + "*"))


@pytest.fixture
def captured(monkeypatch):
    """The driver of every run, and what the streamed check said with a tiny sort budget,
    taken while the spool still exists."""
    seen = []
    original = runner._result

    def capture(plan, driver, batches, *args, **kwargs):
        spool = driver.history.path
        small = verify_history(plan, driver, batches, run_size=50)
        records = list(driver.history)
        tes = executions(records)
        old = check_records(records, plan, batches, tes)
        seen.append(dict(held=driver.history.held, spool_bytes=spool.stat().st_size, small=small,
                         records=len(records), old=old,
                         old_serial=serial_digest(plan, tes, old.order) if old.ok else ""))
        return original(plan, driver, batches, *args, **kwargs)

    monkeypatch.setattr(runner, "_result", capture)
    return seen


@pytest.mark.parametrize("batches", [60, 240])
def test_the_driver_holds_no_history_and_the_check_stays_in_its_budget(captured, batches):
    w = load_workload("tpcdi-trade")
    r = run_workload(w, round_robin_design(w), batches=batches, in_process=True)
    got = captured[-1]
    assert r.history_check == "ok" and r.serial_digest == r.state_digest
    assert got["held"] == 0  # records held in the driver's memory: none, however long the run
    assert got["records"] == r.committed == 4 * batches and got["spool_bytes"] > 100 * batches
    small = got["small"]
    assert small.streamed and small.check.ok and small.executions == 4 * batches
    assert small.peak_held <= 50  # the sort held one run of 50 entries at most
    assert small.serial_digest == got["old_serial"] == r.state_digest


@pytest.mark.process  # partition processes
def test_the_streamed_check_agrees_with_the_in_memory_one_across_a_crash_and_processes(captured):
    w = load_workload("linear-road")
    r = run_workload(w, round_robin_design(w), batches=60,
                     recovery=RecoveryOptions(mode="strong", crash_after=40))
    got = captured[-1]
    assert r.crashed and r.history_check == "ok" and r.serial_digest == r.state_digest
    assert got["held"] == 0 and got["old"].ok and got["small"].check.ok
    assert got["small"].serial_digest == got["old_serial"]


def test_the_spool_directory_is_removed_after_a_run_and_after_a_failed_one(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # not another test's runs (xdist)
    before = _spools()
    w = load_workload("move-micro")
    assert run_workload(w, round_robin_design(w), batches=5, in_process=True).history_check == "ok"
    assert _spools() - before == set()
    with pytest.raises(EngineError):
        run_workload(w, round_robin_design(w), batches=5, in_process=True, timeout_s=1e-6)
    assert _spools() - before == set()
