"""The search's exact shortcuts give what the long way gives, to the last bit: the exhaustive
optimum read off the SP assignments (state placed per item) against enumerating SPs and state
together, and the tabu search's swap totals against applying the two moves."""
from dataclasses import replace

import numpy as np
import pytest

from advisor import exhaustive
from advisor.move_totals import MoveTotals
from advisor.search import contract_groups
from advisor.sources import load_workload
from costmodel import Weights, machine_memory
from costmodel.graph import WorkloadGraph, drop_idle_machines
from costmodel.spec_reader import bundled_workloads

WEIGHTS = (Weights(0.3, 0.1, 0.6), Weights(0.8, 0.1, 0.1), Weights(0.05, 0.6, 0.35))


def _graphs():
    """Every bundled spec on 2 and 3 machines, one and two partitions a machine, as the
    search sees it (plain) and as the baseline does (nested groups contracted, idle machines
    dropped), plus unequal machines: the enumeration's three orders."""
    for name in sorted(bundled_workloads()):
        w = load_workload(name)
        for machines, ppm in ((2, 1), (3, 1), (2, 2)):
            g = WorkloadGraph.from_workload(w.with_cluster(machines, ppm)).cost
            yield f"{name} {machines}x{ppm}", g
            units = drop_idle_machines(contract_groups(g)[0].with_cluster(machines, 1))[0]
            yield f"{name} {machines} units", units
            yield f"{name} {machines}x{ppm} unequal", replace(g, capacity=np.linspace(1.0, 2.0, g.machines))


def _full_enumeration(graph, weights, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(exhaustive, "_optimum_by_processing", lambda *args: None)
        return exhaustive.exhaustive_optimum(graph, weights, limit=200_000)


def test_exhaustive_optimum_by_processing_is_the_full_enumerations_design(monkeypatch):
    compared = 0
    for label, g in _graphs():
        for weights in WEIGHTS:
            full = _full_enumeration(g, weights, monkeypatch)
            fast = exhaustive.exhaustive_optimum(g, weights, limit=200_000)
            if full is None:
                assert fast is None, label
                continue
            compared += 1
            assert fast[2] == pytest.approx(full[2], abs=1e-12), label
            assert fast[0].tolist() == full[0].tolist() and fast[1].tolist() == full[1].tolist(), label
    assert compared >= 150  # the corpus really reaches the enumeration


def test_exhaustive_optimum_under_a_memory_limit_the_per_item_choice_breaks(monkeypatch):
    """Every table wants the machine of its SP; a limit that leaves the biggest table alone
    on its machine breaks that choice, and only the full enumeration finds the split."""
    g = WorkloadGraph.from_workload(load_workload("tpcdi-trade").with_cluster(2, 1)).cost
    weights = Weights(0.8, 0.1, 0.1)
    unlimited = exhaustive.exhaustive_optimum(g, weights)
    limit = float(g.state_bytes.max()) * 1.001
    assert machine_memory(g, unlimited[1]).max() > limit  # the per-item choice breaks it
    limited = replace(g, memory_limit_bytes=limit)
    fast = exhaustive.exhaustive_optimum(limited, weights)
    full = _full_enumeration(limited, weights, monkeypatch)
    assert full is not None and fast is not None
    assert fast[0].tolist() == full[0].tolist() and fast[1].tolist() == full[1].tolist()
    assert (machine_memory(limited, fast[1]) <= limited.memory_limit_bytes).all()
    assert fast[2] > unlimited[2]  # the limit did bind


def test_swap_totals_are_the_totals_after_applying_both_moves():
    """Every pair's total, priced together, is to the last bit the total after applying the
    two moves one after the other (pairs that share state or a stream included)."""
    rng = np.random.default_rng(3)
    checked = 0
    for name in ("tpcdi-trade", "linear-road", "streaming-ledger", "chain-32", "bank-transfer", "voter-leaderboard"):
        for machines in (2, 4, 7):
            g = WorkloadGraph.from_workload(load_workload(name).with_cluster(machines, 1)).cost
            ev = MoveTotals(g, Weights(*rng.dirichlet([1, 1, 1])))
            for _ in range(10):
                ev.reset(rng.integers(0, g.machines, g.n_proc))
                us, vs = (np.array(x) for x in zip(*[rng.choice(g.n_proc, 2, replace=False) for _ in range(6)]))
                keep = ev.part[us] != ev.part[vs]
                us, vs = us[keep], vs[keep]
                if us.size == 0:
                    continue
                before = ev.part.copy()
                together = ev.swap_totals(us, vs)
                assert (ev.part == before).all()  # nothing applied
                for u, v, swapped in zip(us.tolist(), vs.tolist(), together.tolist()):
                    ev.reset(before)
                    pu, pv = int(ev.part[u]), int(ev.part[v])
                    ev.apply(u, pv)
                    ev.apply(v, pu)
                    assert swapped == ev.total, (name, machines, u, v)
                    checked += 1
                ev.reset(before)
    assert checked >= 400
