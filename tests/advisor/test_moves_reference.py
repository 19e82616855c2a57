"""The moves off a partition (`advisor.design_moves._moves_off`) and the batch of busy times
an estimate makes (`BusyTime.each`) against the code they replaced, bit for bit: the climbs
take the first of equals, so the same moves in the same order, labels included, and the same
bottleneck of every design are what keeps every answer the same."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import advisor.design_moves as design_moves
from advisor.design_moves import busiest_partition_moves, plateau_moves, private_state, touched_state
from advisor.sources import load_workload
from costmodel import REPLICATED
from costmodel.busy_time import BusyTime
from costmodel.graph import WorkloadGraph

WORKLOADS = ("window-micro", "tpcdi-trade", "linear-road", "voter-leaderboard", "streaming-ledger", "chain-32")


def reference_moves_off(graph, proc, state, private, touched, hot, n_parts, busy):
    """`_moves_off` as it was before the moves were built per SP (23d3c2b), with the crowded
    partition's targets as they were found then."""
    c = graph.cost
    on_hot = np.flatnonzero(proc == hot)
    crowded = on_hot.size * (n_parts - 1) > design_moves.CROWDED_MOVES
    stand_ins = design_moves._machine_stand_ins(graph, busy) if crowded else None
    for i in on_hot:
        for q in (range(n_parts) if stand_ins is None else reference_crowded_targets(
                graph, proc, state, touched, stand_ins, int(i))):
            if q == hot:
                continue
            for kind, items in (("", private[i]), (" with all its state", touched[i])):
                if kind and np.array_equal(items, private[i]):
                    continue
                p2, s2 = proc.copy(), state.copy()
                p2[i] = q
                s2[private[i]] = q
                if items.size:
                    s2[items] = np.where(s2[items] == REPLICATED, REPLICATED, q)
                yield f"{graph.proc_names[i]}{kind} -> partition {q}", p2, s2
    users = {}
    for p, j in zip(c.ps_proc, c.ps_state):
        users.setdefault(int(j), set()).add(int(proc[p]))
    for j in np.flatnonzero((state == hot) & (c.state_owner < 0)):
        for q in sorted(users.get(int(j), set()) - {hot}):
            s2 = state.copy()
            s2[j] = q
            yield f"{graph.state_names[j]} -> partition {q}", proc, s2


def reference_crowded_targets(graph, proc, state, touched, stand_ins, i):
    """`_crowded_targets` as it was (23d3c2b)."""
    c = graph.cost
    places = set(stand_ins)
    peers = set(c.pp_dst[c.pp_src == i].tolist()) | set(c.pp_src[c.pp_dst == i].tolist())
    mine = touched[i]
    if mine.size:
        peers |= set(c.ps_proc[np.isin(c.ps_state, mine)].tolist())
        places |= {int(q) for q in state[mine] if q != REPLICATED}
    places |= {int(proc[j]) for j in peers}
    return sorted(places)


def designs(g: WorkloadGraph, rng: np.random.Generator, count: int):
    """Random designs (some with replicated tables, two with everything on partition 0, so
    that the crowded partition's targets are taken, one of them with replicated tables), each
    with random busy times."""
    c = g.cost
    n_parts = c.machines * c.partitions_per_machine
    for k in range(count):
        proc = np.zeros(c.n_proc, dtype=np.int64) if k % 4 == 0 else rng.integers(0, n_parts, c.n_proc)
        state = rng.integers(0, n_parts, c.n_state)
        if k % 3 == 1:
            state[rng.random(c.n_state) < 0.3] = REPLICATED
        owned = c.state_owner >= 0
        state[owned] = proc[c.state_owner[owned]]
        busy = np.round(rng.random(n_parts) * 4) / 4  # ties, so a second partition is near the busiest
        yield proc, state, SimpleNamespace(partition=busy)


def as_bytes(moves) -> list[tuple[str, bytes, bytes]]:
    return [(label, np.asarray(p).tobytes(), np.asarray(s).tobytes()) for label, p, s in moves]


@pytest.mark.parametrize("name", WORKLOADS)
@pytest.mark.parametrize("machines,ppm", [(4, 1), (2, 3), (40, 1)])
def test_the_moves_off_the_busiest_are_the_earlier_codes_bit_for_bit(name, machines, ppm, monkeypatch):
    g = WorkloadGraph.from_workload(load_workload(name).with_cluster(machines, ppm))
    private, touched = private_state(g), touched_state(g)
    rng = np.random.default_rng(machines * 10 + ppm)
    compared = 0
    for proc, state, load in designs(g, rng, 8):
        new = [as_bytes(busiest_partition_moves(g, proc, state, private, touched, load)),
               as_bytes(plateau_moves(g, proc, state, private, touched, load))]
        with monkeypatch.context() as m:
            m.setattr(design_moves, "_moves_off", reference_moves_off)
            old = [as_bytes(busiest_partition_moves(g, proc, state, private, touched, load)),
                   as_bytes(plateau_moves(g, proc, state, private, touched, load))]
        assert new == old
        compared += len(new[0]) + len(new[1])
    assert compared > 30  # the designs really reach the moves


@pytest.mark.parametrize("seed", range(20))
def test_busy_times_made_together_have_each_ones_bottleneck(seed):
    rng = np.random.default_rng(seed)
    k, parts, machines = int(rng.integers(1, 9)), int(rng.integers(1, 40)), int(rng.integers(1, 9))
    partition = rng.random((k, parts)) * rng.choice([0.0, 1.0, 1e-3])
    coordinator = rng.random((k, machines)) * rng.choice([0.0, 1.0, 2.0])
    link = rng.random((k, machines)) * rng.choice([0.0, 1.0, 3.0])
    partition[rng.random((k, parts)) < 0.3] = 0.0
    together = BusyTime.each(partition, coordinator, 10, link)
    for row, busy in enumerate(together):
        alone = BusyTime(partition[row].copy(), coordinator[row].copy(), 10, link[row].copy())
        assert busy.bottleneck_s == alone.bottleneck_s and busy.throughput_tps == alone.throughput_tps
        assert busy.partition.tobytes() == alone.partition.tobytes() and busy.link.tobytes() == alone.link.tobytes()
