"""bench/migration.py's engine half (issue 20): designs A and B for a workload change, the
engine migrating A -> B live and by stop, move and restart, and the simulator's frontier.
Timings are measurements, not asserted: these check the figures' shape and accounting."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

_PATH = Path(__file__).resolve().parents[2] / "bench" / "migration.py"
_spec = importlib.util.spec_from_file_location("migration_bench", _PATH)
B = importlib.util.module_from_spec(_spec)
sys.modules["migration_bench"] = B  # its dataclasses look their module up by name
_spec.loader.exec_module(B)

TINY = dict(batches=40, at_batch=20, in_flight=8, trace_batches=80)


def _check_modes(case) -> None:
    assert [m.mode for m in case.modes] == ["live", "restart"]
    for m in case.modes:
        assert m.outcome == "committed"
        assert m.history_check == "ok" and m.serial_equal
        assert m.pause_ms == pytest.approx(m.drain_ms + m.move_ms, abs=1e-6)
        assert m.tps_before > 0 and m.tps_after > 0
        assert m.after_over_before == pytest.approx(m.tps_after / m.tps_before)
        assert m.held_batches >= 1  # the client kept producing while the engine paused
    live, restart = case.modes
    assert restart.rows_moved >= live.rows_moved  # a restart reloads every row, not only the moved ones
    megabytes = [p.megabytes for p in case.frontier]
    assert case.frontier[0].budget == "no move" and megabytes[0] == 0
    assert case.frontier[-1].budget == "unconstrained" and case.frontier[-1].share_of_best == pytest.approx(1.0)
    assert megabytes == sorted(megabytes)
    assert all(p.predicted_tps > 0 for p in case.frontier)
    text = "\n".join(B.describe_engine_case(case))
    assert case.case in text and "restart" in text


def test_a_drifted_bundled_workload_migrates_live_and_by_restart(tmp_path):
    case = B.engine_migration("drift:tpcdi-trade", tmp_path, **TINY)
    assert case.picked_by == "simulator"
    assert case.items_moved or case.procedures_moved  # the drift made B differ from A
    _check_modes(case)


@pytest.mark.slow
def test_the_hot_accounts_move_with_the_stream_that_made_them_hot(tmp_path, spark):
    case = B.engine_migration("hot-shift", tmp_path, spark=spark, **TINY)
    assert case.picked_by == "cost"
    assert "Accounts@0" in case.items_moved  # the hot account follows the stream now hitting it
    live, restart = case.modes
    assert live.rows_moved > 0
    for m in case.modes:  # every row of the hot-shift spec is declared 64 bytes
        assert m.bytes_moved == 64 * m.rows_moved
    _check_modes(case)


def test_the_phases_differ_only_in_which_stream_is_hot():
    one, two = (B.hot_shift_phase(sp) for sp in B.HOT_SPS)
    keys = [{p.name: [a.keys for a in p.accesses if a.table == "Accounts"] for p in w.procedures} for w in (one, two)]
    assert keys[0]["Transfer"] == keys[1]["Deposit"] == [f"zipf:{B.HOT_THETA:g}"]
    assert keys[0]["Deposit"] == keys[1]["Transfer"] == ["uniform"]
    with pytest.raises(ValueError, match="hot stream"):
        B.hot_shift_phase("Parse")


@pytest.mark.parametrize("case", ["nope", "drift:", "drift:no-such-workload"])
def test_an_unknown_engine_case_is_one_line_and_exit_2(case):
    with pytest.raises(ValueError):
        B.check_engine_case(case)
    done = subprocess.run([sys.executable, str(_PATH), "--engine", "--engine-cases", case],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "case" in done.stderr
