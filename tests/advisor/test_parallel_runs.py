"""The pick's simulations side by side in forked workers (`advisor.parallel_runs`,
`SimulationRuns.prefetch`, `recommend(jobs=...)`, `advisor recommend --jobs`): the same design,
figures and counts as in one process, the workers really answering, the pick in this process
where forking is not safe or the caller's own simulator judges, an error in a worker raised
here as itself, and no worker left behind, whether the pick ends or fails."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import psutil
import pytest

import advisor.parallel_runs as parallel_runs
from advisor.api import recommend
from advisor.parallel_runs import pick_processes, serial_picks
from advisor.simulation_runs import AHEAD_MIN_EVENTS, SimulationRuns
from costmodel import Weights
from costmodel.graph import WorkloadGraph
from advisor.sources import load_workload
from engine_sim.sim.judge import ENGINE_SIMULATOR

pytestmark = [pytest.mark.process, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def forking_allowed(monkeypatch):
    """The pick forks here even though the test runner's own thread runs (pytest-xdist's):
    its workers never touch what that thread holds. `fork_is_safe` itself is tested in a
    process of its own below."""
    monkeypatch.setattr(parallel_runs, "fork_is_safe", lambda: True)


@pytest.fixture
def answers_from_workers(monkeypatch):
    """How many of each pick's answers came from its workers (read as the pick closes)."""
    taken: list[int] = []
    answer, close = SimulationRuns._answer, SimulationRuns.close

    def counting_answer(self, key, request):
        if key in self._ready:
            self.from_workers_ = getattr(self, "from_workers_", 0) + 1
        return answer(self, key, request)

    def recording_close(self):
        taken.append(getattr(self, "from_workers_", 0))
        close(self)

    monkeypatch.setattr(SimulationRuns, "_answer", counting_answer)
    monkeypatch.setattr(SimulationRuns, "close", recording_close)
    return taken


def _children() -> set[int]:
    """This process's children (another test's helpers, a multiprocessing forkserver, say, stay)."""
    return {c.pid for c in psutil.Process().children()}


def _figures(rec) -> tuple:
    s = rec.selection
    imp = s.improvement
    return (s.chosen.proc_part.tolist(), s.chosen.state_part.tolist(), s.prediction, s.chosen.label,
            s.simulator_runs, s.simulations_reused, s.simulator_probes, s.note,
            None if imp is None else (imp.simulated, list(imp.moves), imp.start_tps, imp.end_tps),
            [(o.label, o.predicted_tps, o.batches) for o in s.candidates])


@pytest.mark.parametrize("workload, machines", [("chain-32", 4), ("linear-road", 4)])
def test_workers_give_the_pick_of_one_process(workload, machines, answers_from_workers):
    before = _children()
    alone = recommend(workload, machines=machines, jobs=1)
    assert answers_from_workers == [0]
    side_by_side = recommend(workload, machines=machines, jobs=2)
    assert answers_from_workers[1] >= 2  # its longer simulations ran in the workers
    assert side_by_side.selection.improvement.simulated > 0  # the simulated search ran too
    assert _figures(side_by_side) == _figures(alone)
    assert side_by_side.design.to_json() == alone.design.to_json()
    assert _children() <= before  # the workers ended with the pick


def test_a_pick_that_fails_leaves_no_worker(monkeypatch):
    import advisor.sim_local_search as sim_local_search

    def fail(*_args, **_kwargs):
        raise KeyboardInterrupt  # as Ctrl-C would, once the screening round's workers exist

    monkeypatch.setattr(sim_local_search, "improve", fail)
    before = _children()
    with pytest.raises(KeyboardInterrupt):
        recommend("chain-32", machines=4, jobs=2)
    assert _children() <= before


class _Flaky:
    """engine_sim's simulator, but a design with every SP on partition 1 raises a bug (not its
    error), and one with SPs on both partitions is refused (its error)."""

    error = ENGINE_SIMULATOR.error

    def reference_calibration(self):
        return ENGINE_SIMULATOR.reference_calibration()

    def max_throughput(self, workload, design, **kw):
        if set(design.procedures.values()) == {1}:
            raise ZeroDivisionError("a bug in the simulator")
        if set(design.procedures.values()) == {0, 1}:
            raise self.error("refused")
        return ENGINE_SIMULATOR.max_throughput(workload, design, **kw)

    def run_once(self, workload, design, **kw):
        return ENGINE_SIMULATOR.run_once(workload, design, **kw)


def test_a_bug_in_a_worker_is_raised_here_and_a_refusal_is_kept():
    w = load_workload("tpcdi-trade").with_cluster(2, 1)
    g = WorkloadGraph.from_workload(w)
    before = _children()
    runs = SimulationRuns.of(w, g, Weights(), simulator=_Flaky(), jobs=3)  # this process and 2 workers
    zeros_s = np.zeros(g.n_state, dtype=np.int64)
    good, bad = np.zeros(g.n_proc, dtype=np.int64), np.ones(g.n_proc, dtype=np.int64)
    mixed = good.copy()
    mixed[0] = 1
    try:
        asked = [runs.ask_max(p, zeros_s, 40, 0.05) for p in (good, bad, mixed)]
        runs.prefetch(asked, AHEAD_MIN_EVENTS - 1)  # too little work each to hand over
        assert runs._ready == {} and _children() == before
        runs.prefetch(asked, AHEAD_MIN_EVENTS)
        assert len(runs._ready) == 2  # the first is left to this process, which asks it next
        assert runs.max_throughput(good, zeros_s, 40, 0.05).throughput_tps > 0
        with pytest.raises(ZeroDivisionError, match="a bug in the simulator"):  # run here again, raised here
            runs.max_throughput(bad, zeros_s, 40, 0.05)
        with pytest.raises(ENGINE_SIMULATOR.error, match="refused"):
            runs.max_throughput(mixed, zeros_s, 40, 0.05)
        assert runs.runs == 3
        assert len(_children() - before) == 2  # the workers, until the runs close
    finally:
        runs.close()
    assert _children() <= before


def test_how_many_workers_a_pick_may_use(monkeypatch):
    monkeypatch.setattr(parallel_runs, "usable_cores", lambda: 64)
    assert pick_processes(None) == parallel_runs.MAX_PROCESSES
    assert pick_processes(3) == 3
    assert pick_processes(1000) == parallel_runs.MAX_PROCESSES  # a typo forks no thousand processes
    monkeypatch.setattr(parallel_runs, "usable_cores", lambda: 2)
    assert pick_processes(None) == 2
    monkeypatch.setattr(parallel_runs, "usable_cores", lambda: 64)
    with serial_picks():
        assert pick_processes(None) == 1 and pick_processes(4) == 1
    assert pick_processes(None) == parallel_runs.MAX_PROCESSES
    monkeypatch.setattr(parallel_runs, "fork_is_safe", lambda: False)
    assert pick_processes(None) == 1 and pick_processes(4) == 1


FORK_SAFETY = """
import _thread, sys, threading, time
from advisor.parallel_runs import fork_is_safe
said = [fork_is_safe()]
stop = threading.Event()
for name in ("advisor-spinner", "someone-elses-thread"):
    t = threading.Thread(target=stop.wait, name=name, daemon=True)
    t.start()
    said.append(fork_is_safe())
stop.set(); t.join()
said.append(fork_is_safe())
_thread.start_new_thread(lambda: time.sleep(30), ())  # a thread `threading` does not list (as execnet starts its own)
time.sleep(0.2)
said.append(fork_is_safe())
print(said)
"""


def test_forking_is_safe_only_beside_our_own_threads():
    done = subprocess.run([sys.executable, "-c", FORK_SAFETY], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    # alone; with the spinner; with another thread too; that one ended (the spinner too);
    # with a thread started by `_thread`
    assert done.stdout.split() == ["[True,", "True,", "False,", "True,", "False]"]


def test_a_simulator_of_the_callers_own_runs_in_this_process():
    from tests.advisor.test_pick_judge import CountingSimulator

    counted = CountingSimulator()
    rec = recommend("chain-32", machines=4, simulator=counted)  # jobs not given
    serial = CountingSimulator()
    again = recommend("chain-32", machines=4, simulator=serial, jobs=1)
    assert counted.calls == serial.calls and counted.calls["max_throughput"] > 10
    assert rec.design.to_json() == again.design.to_json()


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_a_bad_jobs_is_one_line(bad):
    from advisor.errors import AdvisorError

    with pytest.raises(AdvisorError, match="jobs must be an integer >= 1"):
        recommend("tpcdi-trade", machines=2, jobs=bad)


def test_the_cli_gives_the_same_design_with_any_jobs(tmp_path):
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"design-{jobs}.json"
        done = subprocess.run([sys.executable, "-m", "advisor", "recommend", "linear-road", "--machines", "2",
                               "--jobs", jobs, "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        outs.append(json.loads(out.read_text()))
    assert outs[0] == outs[1]
    bad = subprocess.run([sys.executable, "-m", "advisor", "recommend", "linear-road", "--jobs", "0"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "--jobs" in bad.stderr


def _slow_square(x: int) -> int:
    import time

    time.sleep(x / 100)
    return x * x


def _fails() -> None:
    raise ZeroDivisionError("in the forked call")


def test_a_call_ahead_answers_raises_and_leaves_nothing():
    from advisor.parallel_runs import CallAhead

    before = _children()
    with CallAhead(_slow_square, 7) as ahead:
        assert _children() - before  # it runs in a process of its own meanwhile
        assert ahead.get() == 49
    with CallAhead(_fails) as ahead, pytest.raises(ZeroDivisionError, match="in the forked call"):
        ahead.get()
    with pytest.raises(KeyboardInterrupt):
        with CallAhead(_slow_square, 3000):  # 30 s: ended on the way out, not waited for
            raise KeyboardInterrupt
    assert _children() <= before


def test_sigterm_to_the_cli_ends_its_workers_and_writes_nothing(tmp_path):
    import signal
    import time

    out = tmp_path / "design.json"
    command = subprocess.Popen([sys.executable, "-m", "advisor", "recommend", "chain-32", "--machines", "8",
                                "--jobs", "2", "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    me = psutil.Process(command.pid)
    workers: list = []
    deadline = time.monotonic() + 60
    while not workers and command.poll() is None and time.monotonic() < deadline:
        workers = me.children(recursive=True)  # its one-machine search or its pick's worker
        time.sleep(0.02)
    assert workers, "the command ended before it forked a worker"
    command.send_signal(signal.SIGTERM)
    _, err = command.communicate(timeout=60)
    assert command.returncode == 143 and err.strip() == "terminated", (command.returncode, err[-2000:])
    psutil.wait_procs(workers, timeout=10)
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
    assert not out.exists()


def test_an_answer_is_ready_when_its_own_request_is_done():
    """A round's quick answer is not held back by a slow one handed over with it (the pick asks
    in order, and takes each as soon as it is there)."""
    import time

    from advisor.parallel_runs import RunPool

    with RunPool(_slow_square, 2) as pool:
        slow, quick = pool.submit([300, 1])  # 3 s and 10 ms
        started = time.perf_counter()
        assert quick.get() == (True, 1)
        assert time.perf_counter() - started < 2.0
        assert slow.get() == (True, 90000)


def test_a_round_is_shared_between_this_process_and_the_workers():
    """`prefetch` hands the workers all but this process's share of a round (the first and
    every `jobs`-th question after it), which the pick runs here as it asks them; with
    `here_first=False` (the caller does other work meanwhile) it hands them all."""
    w = load_workload("chain-32").with_cluster(4, None)
    graph = WorkloadGraph.from_workload(w)
    rng = np.random.default_rng(5)
    designs = [(rng.integers(0, 16, graph.n_proc), rng.integers(0, 16, graph.n_state)) for _ in range(5)]
    for jobs, here_first, handed in ((2, True, [1, 3]), (3, True, [1, 2, 4]), (2, False, [0, 1, 2, 3, 4])):
        runs = SimulationRuns.of(w, graph, Weights(), simulator=ENGINE_SIMULATOR, jobs=jobs)
        try:
            asked = [runs.ask_max(p, s, 40, 0.05) for p, s in designs]
            runs.prefetch(asked, AHEAD_MIN_EVENTS, here_first=here_first)
            assert set(runs._ready) == {asked[k][0] for k in handed}
            answers = [runs.max_throughput(p, s, 40, 0.05).throughput_tps for p, s in designs]
        finally:
            runs.close()
        with serial_picks():
            alone = SimulationRuns.of(w, graph, Weights(), simulator=ENGINE_SIMULATOR)
            assert answers == [alone.max_throughput(p, s, 40, 0.05).throughput_tps for p, s in designs]


def _maybe_fails(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative: {x}")
    return _slow_square(x)


def test_side_by_side_answers_come_in_the_items_order_as_here():
    """`each_side_by_side` hands the items out in the order `first` (the slowest first), but
    answers in the items' order, as one process does, an exception as its (False, exception)."""
    from advisor.parallel_runs import each_side_by_side

    items, first = [5, -1, 0, 30, 2], [3, 0, 4, 1, 2]
    before = _children()
    here = each_side_by_side(_maybe_fails, items, 1)
    there = each_side_by_side(_maybe_fails, items, 2, first)
    assert _children() <= before  # the workers ended with the batch
    for answers in (here, there):
        assert [value for ok, value in answers if ok] == [25, 0, 900, 4]
        assert [(ok, type(value), str(value)) for ok, value in answers][1] == (False, ValueError, "negative: -1")
    with pytest.raises(ValueError, match="every one of the 5 items once"):
        each_side_by_side(_maybe_fails, items, 2, [0, 0, 1, 2, 3])


def _plan_figures(rec) -> tuple:
    """Everything a migration plan answers: each design weighed, with its figures, the pick,
    the frontier and the design recommended."""
    plan = rec.migration
    return ([(r.label, r.megabytes, r.estimated_tps, r.predicted_tps, r.cost) for r in plan.reachable],
            plan.chosen.label, plan.best.label, plan.judged_by, plan.to_dict(), rec.design.to_json())


def test_a_migration_plan_is_the_same_simulated_in_workers(monkeypatch):
    """`recommend(current=...)` simulates the plan's designs side by side with `jobs` > 1 (in
    an order of its own: the slowest by the estimate first) and answers as with one process."""
    from advisor.parallel_runs import RunPool

    handed: list[int] = []
    submit = RunPool.submit

    def counting_submit(self, requests):
        handed.append(len(requests))
        return submit(self, requests)

    monkeypatch.setattr(RunPool, "submit", counting_submit)
    deployed = recommend("tpcdi-trade", machines=4, objective="cost").baselines["round-robin"]
    alone = recommend("tpcdi-trade", current=deployed, jobs=1)
    assert handed == []
    before = _children()
    side_by_side = recommend("tpcdi-trade", current=deployed, jobs=2)
    simulated = [r for r in side_by_side.migration.reachable if r.predicted_tps is not None]
    assert len(simulated) >= 4 and handed[-1] == len(simulated)  # the plan's designs went to the workers
    assert _plan_figures(side_by_side) == _plan_figures(alone)
    assert _children() <= before
