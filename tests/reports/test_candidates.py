"""reports.candidates: the changes proposed for a bottleneck follow from the design (what is
hot, what is read across machines, which streams can merge), and `apply()` makes each one."""
from __future__ import annotations

from dataclasses import replace

import pytest

from costmodel.graph import WorkloadGraph
from costmodel import Weights
from costmodel.simple_designs import round_robin_design
from reports.bottleneck import simulated_bottleneck
from reports.candidates import candidate_changes, design_for
from reports.transforms import mergeable_pairs

KINDS = {"split", "partition", "replicate", "merge"}


def read_across_machines(workload, design) -> dict[str, float]:
    """Rows per batch of each table read or written by an SP on another machine (by hand)."""
    out: dict[str, float] = {}
    for p in workload.procedures:
        for a in p.accesses:
            where = design.state[a.table]
            if where is not None and design.machine_of_partition(where) != design.procedure_machine(p.name):
                out[a.table] = out.get(a.table, 0.0) + a.expected_rows
    return out


def far_design(workload):
    """Round robin, with every table moved to the machine after its first accessor's: every
    table is reached across machines."""
    d = round_robin_design(workload)
    n = d.n_partitions
    return replace(d, state={t: (p + 1) % n for t, p in d.state.items()})


@pytest.fixture(scope="module")
def graph(tpcdi_trade):
    return WorkloadGraph.from_workload(tpcdi_trade)


def changes(workload, design, graph, replicated=()):
    return candidate_changes(workload, design, graph, simulated_bottleneck(design, graph), replicated)


def test_every_candidate_is_well_formed_and_applies(tpcdi_trade, graph):
    design = far_design(tpcdi_trade)
    found = changes(tpcdi_trade, design, graph)
    assert found
    procs = {p.name for p in tpcdi_trade.procedures}
    total_cost = sum(p.cost for p in tpcdi_trade.procedures)
    for kind, target, text, reason, apply in found:
        assert kind in KINDS and text and reason
        changed, replicated = apply()
        assert isinstance(replicated, tuple)
        if kind in ("split", "partition"):
            copies = [p for p in changed.procedures if p.name.startswith(f"{target}#")]
            assert 2 <= len(copies) <= design.n_partitions
            assert target not in {p.name for p in changed.procedures}
            assert f"{len(copies)}" in text
            assert sum(p.cost for p in changed.procedures) == pytest.approx(total_cost)
        elif kind == "merge":
            a, b = target.split("+")
            assert {a, b} <= procs and len(changed.procedures) == len(procs) - 1
        else:  # replicate: a design change only
            assert changed is None and replicated == (target,)


def test_split_candidates_are_for_the_hot_sp_and_the_heaviest_one(tpcdi_trade, graph):
    design = far_design(tpcdi_trade)
    b = simulated_bottleneck(design, graph)
    heaviest = max(tpcdi_trade.procedures, key=lambda p: graph.cost.proc_load[graph.proc_names.index(p.name)])
    targets = {t for k, t, *_ in changes(tpcdi_trade, design, graph) if k in ("split", "partition")}
    assert b.hot_procedure in targets or heaviest.name in targets
    assert targets <= {b.hot_procedure, heaviest.name}


def test_replication_is_proposed_for_exactly_the_read_mostly_tables_read_across_machines(tpcdi_trade, graph):
    design = far_design(tpcdi_trade)
    far = read_across_machines(tpcdi_trade, design)
    read_mostly = {t.name for t in tpcdi_trade.tables if t.read_mostly}
    proposed = [t for k, t, *_ in changes(tpcdi_trade, design, graph) if k == "replicate"]
    assert set(proposed) == set(far) & read_mostly
    assert proposed == sorted(proposed, key=lambda t: -far[t])  # most rows across machines first
    # a table already replicated is not proposed again, and every change keeps it replicated
    done = proposed[0]
    again = changes(tpcdi_trade, design, graph, replicated=(done,))
    assert done not in [t for k, t, *_ in again if k == "replicate"]
    assert all(done in apply()[1] for *_, apply in again)


def test_a_design_with_nothing_across_machines_gets_no_replication_or_merge(tpcdi_trade, graph):
    one = round_robin_design(tpcdi_trade, 1, 1)
    found = changes(tpcdi_trade, one, graph)
    assert not [c for c in found if c[0] in ("replicate", "merge")]


def test_a_merge_is_proposed_only_for_the_heaviest_cut_stream_when_mergeable(tpcdi_trade, graph,
                                                                              tpcdi_round_robin):
    design = tpcdi_round_robin
    b = simulated_bottleneck(design, graph)
    merges = [t for k, t, *_ in changes(tpcdi_trade, design, graph) if k == "merge"]
    mergeable = b.move is not None and (b.move[0], b.move[1]) in set(mergeable_pairs(tpcdi_trade))
    assert merges == ([f"{b.move[0]}+{b.move[1]}"] if mergeable else [])


def test_design_for_replicates_the_named_tables_and_places_every_other(tpcdi_trade):
    read_mostly = [t.name for t in tpcdi_trade.tables if t.read_mostly][:2]
    d = design_for(tpcdi_trade, 2, 1, Weights(0.3, 0.1, 0.6), replicated=(*read_mostly, "NoSuchTable"))
    assert (d.machines, d.partitions_per_machine) == (2, 1)
    assert {t for t, p in d.state.items() if p is None} == set(read_mostly)
    assert all(0 <= p < 2 for t, p in d.state.items() if p is not None)
    assert set(d.procedures) == {p.name for p in tpcdi_trade.procedures}
    assert d.method.endswith("+replicate:" + ",".join(read_mostly))
    full = WorkloadGraph.from_workload(tpcdi_trade.with_cluster(2, 1))
    assert d.cost.total == pytest.approx(d.score(full, Weights(0.3, 0.1, 0.6)).total)
