"""A report's independent sections side by side (`ReportOptions.jobs`, `advisor report --jobs`):
this process and worker processes share them; the same HTML as in one process, the workers'
simulations kept in the caller's cache,
a bad worker count refused in one line, and Ctrl-C leaves no worker and no file behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from advisor.api import recommend
from advisor.cli.app import run_app
from reports.predict import SIMULATIONS
from reports.report import ReportOptions, build_report

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small():
    """A small workload on 2 machines: every section has something to do, quickly."""
    return recommend("voter-leaderboard", machines=2)


def test_workers_build_the_same_report_as_one_process(small):
    options = dict(scaling_machines=[1, 2, 4])
    SIMULATIONS.clear()  # neither run may borrow the other's simulations
    said: list[str] = []
    parallel = build_report(small, options=ReportOptions(jobs=2, **options), progress=said.append)
    assert any("side by side in this process and 1 worker" in line for line in said)
    kept_from_workers = SIMULATIONS.keys()
    assert len(kept_from_workers) > 1  # the workers' simulations came back into this process's cache
    SIMULATIONS.clear()
    said.clear()
    serial = build_report(small, options=ReportOptions(jobs=1, **options), progress=said.append)
    assert not any("side by side" in line for line in said)
    assert SIMULATIONS.keys() == kept_from_workers  # the cache holds what one process would have
    assert parallel == serial
    # the sections whose results are compared did run
    assert "sensitivity" in serial and "tuples/s" in serial


def test_a_worker_runs_a_task_and_its_simulations_come_back(small):
    from reports.parallel import section_pool
    from reports.predict import PredictOptions, placement_key, predict

    SIMULATIONS.clear()
    options = PredictOptions(batches=60)
    with section_pool(2) as pool:  # one worker; this process takes no task (no work_here)
        where = pool.submit(os.getpid)
        result = pool.submit(predict, small.workload, small.design, options)
        failed = pool.submit(small.design.arrays, None)  # an error in a worker comes back as itself
        assert where.result() != os.getpid()
        assert not SIMULATIONS.keys()  # kept once the pool closes, in this thread
    from costmodel.errors import DesignError

    exc = failed.exception()  # the worker's own exception, its class and its line
    assert type(exc) is DesignError and str(exc) == "graph must be a WorkloadGraph or a Workload, got None"
    again = predict(small.workload, small.design, options)  # answered from the worker's run
    assert SIMULATIONS.misses == 1 and SIMULATIONS.hits == 1
    assert again.throughput_tps == result.result().throughput_tps
    assert any(placement_key(small.design) in key for key in SIMULATIONS.keys())


def test_a_task_submitted_first_goes_ahead_of_those_waiting():
    import time

    from reports.parallel import section_pool

    with section_pool(2) as pool:  # one worker, kept busy while the others queue
        pool.submit(time.sleep, 1.0)
        waiting = [pool.submit(time.monotonic) for _ in range(3)]
        urgent = pool.submit_first(time.monotonic)
    assert urgent.result() < min(f.result() for f in waiting)


def test_a_design_files_report_compares_side_by_side_and_reads_the_same(small, tmp_path):
    """`report_design` (what `advisor report` runs: the comparison's `recommend` as a task
    beside the sections) writes what `build_report(report_recommendation(...))` writes."""
    from reports.report import report_design
    from reports.compared import report_recommendation

    path = small.design.save(tmp_path / "design.json")
    options = dict(scaling_machines=[1, 2], sensitivity=False)
    before = build_report(report_recommendation(path, "voter-leaderboard"), source="voter-leaderboard",
                          options=ReportOptions(jobs=1, **options))
    for jobs in (1, 2):
        SIMULATIONS.clear()
        assert report_design(path, "voter-leaderboard", options=ReportOptions(jobs=jobs, **options)) == before
    assert "advisor (current search)" in before or "round-robin" in before  # something was compared


def test_the_default_worker_count_is_this_process_cores():
    assert ReportOptions().jobs == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_a_bad_worker_count_is_one_line_and_exit_2(bad, tmp_path, capsys):
    design = tmp_path / "d.json"
    recommend("move-micro", machines=2).design.save(design)
    out = tmp_path / "r.html"
    code = run_app(["report", "-d", str(design), "-o", str(out), "--jobs", bad])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "--jobs" in err[0] and "Traceback" not in err[0]
    assert not out.exists()


def test_ctrl_c_leaves_no_worker_and_no_partial_report(tmp_path):
    design = tmp_path / "d.json"
    recommend("tpcdi-trade", machines=2).design.save(design)
    out = tmp_path / "report.html"
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "report", "-d", str(design), "-o", str(out),
                             "--jobs", "3"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stderr:  # the workers are running once this line is out
        lines.append(line)
        if "side by side" in line:
            break
    else:
        pytest.fail(f"the report never started its workers: {''.join(lines)}")
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert len(workers) == 2  # --jobs 3: this process and two workers
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130
    assert rest.strip().splitlines()[-1] == "interrupted" and "Traceback" not in rest
    for worker in workers:
        gone = not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
        assert gone, f"worker {worker.pid} outlived the report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json"]  # no report, no temporary file


@pytest.mark.process
def test_a_pool_starts_no_more_processes_than_the_cores_or_four():
    # `tune -j 1000` started a thousand workers (36 s for 200); the answer is the same for any count
    from reports.parallel import MIN_PROCESSES, section_pool, usable_cores

    with section_pool(1000) as pool:
        assert len(pool._workers) == max(usable_cores(), MIN_PROCESSES) - 1


def test_the_candidate_tables_predictions_are_tasks_both_processes_can_take(small):
    """The table's missing simulations were one task: a 100-SP report's six baselines ran one
    after the other in one process (12 s) while the other waited. Each design the chart does not
    share is a task of its own; the chart's baselines go with its rows at this machine count."""
    from reports.parallel import InlinePool
    from reports.predict import PredictOptions, predict
    from reports.sections import start_predictions
    from reports.scaling import DEFAULT_BASELINES

    class Counting(InlinePool):
        def __init__(self):
            self.asked: list[tuple] = []

        def submit_first(self, fn, *args, **kwargs):
            self.asked.append(tuple(args[1]))  # the names of the designs the task simulates
            return super().submit_first(fn, *args, **kwargs)

    options = ReportOptions(jobs=2, scaling_machines=[small.design.machines],
                            predict=PredictOptions(batches=60))
    missing = dict(small.baselines)
    own_sim = predict(small.workload, small.design, options.predict)
    for scaling in (True, False):
        pool, futures = Counting(), {}
        start_predictions(pool, futures, options, small.design, small.graph, small.workload, own_sim, missing,
                          scaling)
        sims, rows = futures["predictions"].result()
        assert sorted(sims) == sorted(missing)  # every missing design simulated
        shared = [n for n in missing if scaling and n in DEFAULT_BASELINES]
        expected = ([tuple(shared)] if scaling else []) + [(n,) for n in missing if n not in shared]
        assert pool.asked == expected
        assert bool(rows) == scaling  # the chart's rows at this count come with the shared task
