"""The sensitivity table on a dataflow of realistic size: each swept design said by what it
places on another machine than A (machines renamed first), not as a wall of every name."""
from __future__ import annotations

from dataclasses import replace

import pytest

import reports.report_context as report_module
from advisor.api import recommend
from advisor.sources import load_graph
from reports.sensitivity import machine_changes, sensitivity

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def base():
    return recommend("tpcdi-trade", machines=4, baselines=False, objective="cost").design


def renamed(design, machine_of: dict[int, int]):
    """`design` with its machines renamed (the same design, other numbers)."""
    ppm = design.partitions_per_machine
    move = lambda p: None if p is None else machine_of.get(p // ppm, p // ppm) * ppm + p % ppm  # noqa: E731
    return replace(design, procedures={n: move(p) for n, p in design.procedures.items()},
                   state={n: move(p) for n, p in design.state.items()})


def test_renamed_machines_change_nothing_and_a_moved_sp_is_named(base):
    graph = load_graph("tpcdi-trade")
    used = sorted({p // base.partitions_per_machine for p in base.procedures.values()})
    assert len(used) >= 2
    swapped = renamed(base, {used[0]: used[1], used[1]: used[0]})
    assert swapped.procedures != base.procedures
    assert machine_changes(base, swapped, graph) == []
    sp, where = sorted(base.procedures.items())[0]
    now = swapped.procedures[sp] // base.partitions_per_machine
    elsewhere = next(m for m in range(base.machines) if m != now)
    moved = replace(swapped, procedures={**swapped.procedures, sp: elsewhere * base.partitions_per_machine})
    changes = machine_changes(base, moved, graph)
    assert len(changes) == 1 and changes[0].startswith(f"{sp} m{where // base.partitions_per_machine}->m")


def test_an_item_made_replicated_is_named_as_on_all_machines(base):
    graph = load_graph("tpcdi-trade")
    name, where = next((n, p) for n, p in sorted(base.state.items()) if p is not None)
    copied = replace(base, state={**base.state, name: None})
    assert machine_changes(base, copied, graph) == [f"{name} m{where // base.partitions_per_machine}->all"]


def test_the_report_names_differences_past_a_small_dataflow(base, monkeypatch):
    graph = load_graph("tpcdi-trade")
    sens = sensitivity("tpcdi-trade", machines=4, shares=(0.05, 0.95))
    assert len(sens.designs) >= 2  # the sweep's ends choose another design here
    small = report_module._sensitivity_context(sens, sens.designs["A"], graph)
    assert small["sensitivity_in_full"] and all("{" in d["groups"] for d in small["sensitivity_designs"])
    monkeypatch.setattr(report_module, "GROUPS_IN_FULL", 5)
    large = report_module._sensitivity_context(sens, sens.designs["A"], graph)
    assert not large["sensitivity_in_full"]
    rows = {d["letter"]: d["groups"] for d in large["sensitivity_designs"]}
    assert "full assignment" in rows["A"]
    for letter, design in sens.designs.items():
        if letter != "A":
            changes = machine_changes(sens.designs["A"], design, graph)
            assert rows[letter].startswith(f"{len(changes):,} of ") and changes[0] in rows[letter]
