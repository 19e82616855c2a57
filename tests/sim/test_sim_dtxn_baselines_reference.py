"""engine_sim.sim.dtxn against the code it replaced (`test_sim_dtxn_reference.py`'s oracle,
`bind_distributed_path` at 489f25b) on the designs that run the most distributed
transactions: the round-robin, random and hash-by-table baselines of bundled and generated
workloads (Linear Road's windows among them) on 4 to 8 machines, under either scheduler and either kind of
MOVE, with the engine's sites or without, open loop (light and overloading) and closed loop
(few and many batches in flight). Every field of the result, every timeline and counter of
the model and the count of events must be the same to the last bit."""
from __future__ import annotations

import pytest

import engine_sim.sim.model as model_module
from advisor.baselines import baseline_design
from advisor.sources import load_workload
from costmodel import Weights
from costmodel.graph import WorkloadGraph
from costmodel.sim_params import SimParams
from engine_sim.sim.compiled import compile_plan
from test_sim_dtxn_reference import Counting, bind_distributed_path_before, run
from workload_edits import scale_workload

BASELINES = ("round-robin", "random", "hash-by-table")
LOADS = ((5.0, None), (5000.0, None), (100_000.0, None), (None, 4), (None, 32))

# (workload, machines (None: the generated case's own cluster), scheduler, move, sites)
CASES = [("linear-road", 8, "dls", "txn", False), ("linear-road", 4, "central", "rpc", True),
         ("tpcdi-trade", 8, "dls", "rpc", False), ("tpcdi-trade", 4, "dls", "txn", True),
         ("voter-leaderboard", 6, "central", "txn", False), ("streaming-ledger", 8, "dls", "rpc", True),
         ("chain-32", 6, "central", "rpc", False), ("bank-transfer", 4, "dls", "rpc", False),
         ("online-bidding", 4, "dls", "txn", True),
         ("gen40", None, "dls", "rpc", False), ("gen40", None, "central", "txn", True),
         ("shared40", None, "dls", "txn", False)]


def baseline_runs(name, machines, scheduler, move, sites):
    """(baseline, plan, rate, in_flight) of each baseline design at each load."""
    w = scale_workload(name) if machines is None else load_workload(name).with_cluster(machines)
    g = WorkloadGraph.from_workload(w)
    params = SimParams(site_per_partition=sites)
    for k, kind in enumerate(BASELINES):
        d = baseline_design(kind, g, Weights(0.3, 0.1, 0.6), seed=k)
        plan = compile_plan(w, d, params=params, scheduler=scheduler, move=move, batches=40,
                            batch_size=None, seed=11 + k)
        for rate, in_flight in LOADS:
            yield kind, plan, rate, in_flight


@pytest.mark.parametrize("name, machines, scheduler, move, sites", CASES)
def test_the_baselines_run_what_they_ran_to_the_last_bit(name, machines, scheduler, move, sites):
    distributed = 0
    for kind, plan, rate, in_flight in baseline_runs(name, machines, scheduler, move, sites):
        want = run(plan, rate, in_flight, bind_distributed_path_before)
        assert run(plan, rate, in_flight, model_module.bind_distributed_path) == want, (kind, rate, in_flight)
        seen = Counting()
        assert run(plan, rate, in_flight, model_module.bind_distributed_path, seen) == want, (kind, rate, in_flight)
        distributed += seen.seen
    assert distributed > 0  # the designs ran distributed transactions
