"""`costmodel.busy_time.busy_times` against the code `test_busy_times_reference` keeps (d553a52's,
which gives the same bytes as 0000df7's, before the designs x accesses arrays were gathered
along rows and the locks numbered by marking), bit for bit, on graphs of many state items each
shared by many SPs: hash fragments and hot tuples of the generated dataflows' tables (what
`recommend` prices at `fragment:N` or `tuple:N --hot-tuples`), as well as the bundled
dataflows'. The climbs take the first of equals and compare exact figures, so close is not
enough."""
from __future__ import annotations

import numpy as np
import pytest

from advisor.busy_estimate import BusyEstimate
from advisor.sources import load_workload
from costmodel.busy_time import BusyInputs, busy_times
from costmodel.granularity import fragment_name, tuple_name, workload_at
from costmodel.graph import WorkloadGraph
from costmodel.model import REPLICATED
from engine_sim.sim import Calibration
from test_busy_times_reference import assert_priced_as_before, busy_times_before, random_designs
from workload_edits import scale_workload


def at_items(workload, fragments: int, hot: int):
    """`workload` with each table split into `fragments` hash fragments and `hot` hot tuples
    (keys 1..hot), as a design at that granularity names them."""
    names = [n for t in workload.tables
             for n in [fragment_name(t.name, i) for i in range(fragments)]
             + [tuple_name(t.name, key) for key in range(1, hot + 1)]]
    return workload_at(workload, names)


def neighbours(g: WorkloadGraph, n: int, rng: np.random.Generator):
    """A climb's chunk: a few designs and their neighbours, each an SP or a state item or two
    moved (a hot item reached by many SPs changes many transactions' locks at once)."""
    c = g.cost
    owned = c.state_owner >= 0
    centres = list(random_designs(g, 3, rng))
    for i in range(n):
        proc, state = (a.copy() for a in centres[i % 3])
        for _ in range(int(rng.integers(1, 3))):
            if rng.random() < 0.3:
                proc[rng.integers(c.n_proc)] = rng.integers(c.n_partitions)
            else:
                state[rng.integers(c.n_state)] = rng.integers(c.n_partitions)
        state[owned] = proc[c.state_owner[owned]]
        yield proc, state


CASES = [("shared40", 4, 12), ("gen40", 8, 0), ("shared100", 2, 6), ("gen40", 2, 20),
         ("voter-leaderboard@4", 3, 8), ("linear-road@8", 4, 0), ("streaming-ledger@4", 2, 4),
         ("window-micro@2", 3, 4)]


def _workload(case: str):
    if "@" in case:
        name, machines = case.split("@")
        return load_workload(name).with_cluster(int(machines))
    return scale_workload(case)


@pytest.mark.parametrize("case, fragments, hot", CASES)
def test_busy_times_of_many_shared_items_are_what_they_were(case, fragments, hot):
    """Random designs and climbs' chunks of neighbours (one design, a few, 128 at once), with
    and without lock waits: the same bytes as the reference."""
    w = at_items(_workload(case), fragments, hot)
    g = WorkloadGraph.from_workload(w)
    estimate = BusyEstimate.of(g, w, Calibration.reference().params)
    inputs = BusyInputs.of(g.cost, estimate.prices, estimate.traits)
    rng = np.random.default_rng(sum(map(ord, case)) + fragments + hot)
    designs = list(random_designs(g, 40, rng)) + list(neighbours(g, 128, rng))
    assert_priced_as_before(g, estimate, inputs, designs, ((0, 1), (1, 3), (4, 36), (40, 128)))


def test_busy_times_of_declared_sps_at_fragments_are_what_they_were():
    """The default traits and prices (no workload), every table in 8 fragments: the same bytes."""
    c = WorkloadGraph.from_workload(at_items(scale_workload("shared40"), 8, 0)).cost
    rng = np.random.default_rng(11)
    procs = rng.integers(0, c.n_partitions, (20, c.n_proc))
    states = rng.integers(0, c.n_partitions, (20, c.n_state))
    states[::4, ::3] = REPLICATED
    for a, b in zip(busy_times(c, procs, states), busy_times_before(c, procs, states)):
        assert a.tobytes() == b.tobytes()
