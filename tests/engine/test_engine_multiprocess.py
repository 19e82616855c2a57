"""The real thing: one OS process per partition, messages over sockets, 2PC across processes,
a partition process killed with SIGKILL and recovered. Same semantics as in-process: the same
state digest, a correct history."""
import os

import pytest

from conftest import running

from advisor.sources import load_workload
from engine_sim.engine import run_workload
from engine_sim.engine.run_options import RecoveryOptions
from costmodel.simple_designs import round_robin_design
from engine_sim.engine.inputs import input_batches
from engine_sim.workloads import voter

pytestmark = [pytest.mark.process, pytest.mark.integration]  # one OS process per partition




def test_processes_reach_the_in_process_state_and_exit(tpcdi_trade):
    w = tpcdi_trade
    d = round_robin_design(w)
    ip = run_workload(w, d, batches=120, in_process=True)
    mp = run_workload(w, d, batches=120)
    assert mp.mode == "multi-process" and mp.history_check == "ok"
    assert mp.state_digest == ip.state_digest and mp.committed == ip.committed
    assert mp.log_records == 120 and mp.messages > 0
    assert len(mp.pids) == 4 and os.getpid() not in mp.pids and not running(mp.pids)


def test_two_phase_commit_across_processes():
    w = load_workload("bank-transfer")
    from costmodel.design import Design
    d = Design(w.name, 2, 1, {"ValidateTransfer": 0, "ApplyTransfer": 1}, {"Customers": 1, "Accounts": 0})
    r = run_workload(w, d, batches=80, recovery=RecoveryOptions(mode="strong"))
    ip = run_workload(w, d, batches=80, in_process=True, recovery=RecoveryOptions(mode="strong"))
    assert r.history_check == "ok" and r.distributed_txns == 160
    assert r.state_digest == ip.state_digest
    # each partition stays locked through the other's work and the 2PC round trips
    assert all(held > busy > 0 for held, busy in zip(r.partition_held_s, r.partition_busy_s))


@pytest.mark.parametrize("recovery", ["strong", "weak"])
def test_a_killed_partition_process_is_restarted_and_recovered(recovery):
    w = load_workload("voter-leaderboard")
    from costmodel.design import Design
    d = Design(w.name, 2, 1, {"Vote": 0, "UpdateLeaderboard": 1, "DeleteContestant": 0},
               {"Contestants": None, "Votes": 1, "VotesByPhone": 0, "Leaderboard": 1})
    r = run_workload(w, d, batches=250, return_state=True,
                     recovery=RecoveryOptions(mode=recovery, crash_after=100))
    assert r.crashed and r.recovery_s > 0 and r.history_check == "ok"
    assert r.state["Leaderboard"] == voter.serial_leaderboard(input_batches(w, d, 250))
    assert len(r.pids) == 3 and not running(r.pids)  # two partitions, one of them restarted


def test_move_as_transaction_across_processes():
    w = load_workload("move-micro")
    d = round_robin_design(w)
    r = run_workload(w, d, batches=60, move="txn", recovery=RecoveryOptions(crash_after=30, mode="strong"))
    clean = run_workload(w, d, batches=60, in_process=True, move="txn",
                         recovery=RecoveryOptions(mode="strong"))
    assert r.history_check == "ok" and r.move_txns == 60 and r.state_digest == clean.state_digest


@pytest.mark.parametrize("how", ["script", "module"])
def test_a_script_without_a_main_guard_runs_the_engine_once(tmp_path, how):
    """The partitions' processes ran the user's main module again as they started: a script
    calling `advisor.validate` at its top level, with no `if __name__ == "__main__":`, started
    a run in each of them (147 lines, three tracebacks, a failed run)."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "noguard.py").write_text(
        "import advisor\n"
        "rec = advisor.recommend('bank-transfer', machines=2, objective='cost')\n"
        "result = advisor.validate('bank-transfer', rec.design, batches=20, sim=False)\n"
        "print('top level ran; engine committed', result.engine['committed'])\n")
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "noguard.py"] if how == "script" else [sys.executable, "-m", "noguard"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(tmp_path)])}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout.count("top level ran") == 1 and "engine committed 40" in done.stdout


def test_the_forkserver_starts_deaf_to_ctrl_c(tmp_path):
    """It shares the terminal with the command, and a Ctrl-C while it imported its preload
    printed a traceback of its own under the command's `interrupted` line. (It starts with
    SIGINT blocked: the forkserver's start had started the resource tracker, whose start
    unblocked SIGINT before the forkserver was spawned.)"""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    script = ("import signal\n"
              "from engine_sim.engine import forkserver as engine_forkserver\n"
              "from multiprocessing import forkserver\n"
              "engine_forkserver.forkserver_context()\n"
              "pid = forkserver._forkserver._forkserver_pid\n"
              "status = open(f'/proc/{pid}/status').read()\n"  # read at once: it is still importing
              "print(*(next(line for line in status.splitlines() if line.startswith(f)).split()[1]\n"
              "        for f in ('SigIgn', 'SigBlk')))\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    ignored, blocked = (int(mask, 16) for mask in done.stdout.split())
    assert (ignored | blocked) & (1 << (signal.SIGINT - 1))  # deaf: ignored or held back
