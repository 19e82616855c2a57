"""Why `advisor tune` stops with no change to try: a change that was refused is named with the
refusal's reason, and the generic reason stands only where there was no such change."""
from __future__ import annotations

import pytest

from advisor.api import recommend
from advisor.cli import run_app
from costmodel.spec_writer import write_workload
from costmodel.workload import Access, Cluster, Procedure, Stream, Table, Workload
from reports.suggestions import suggest

pytestmark = pytest.mark.integration


def two_machines(costs: tuple[float, ...], nested: tuple[tuple[str, ...], ...] = (),
                 machines: int = 2) -> Workload:
    """A -> B (and C, D), each SP alone on a table keyed by no input field: no key to split on
    and no read-mostly table, so the merge of the cut stream's pair is the only change."""
    names = "ABCD"[:len(costs)]
    return Workload("apart", tuple(Table(f"T{n}", 100, 10, "id") for n in names),
                    tuple(Procedure(n, c, (Access(f"T{n}", "write", 1),)) for n, c in zip(names, costs)),
                    (Stream("A", "B", 8),), nested=nested, cluster=Cluster(machines, 1))


@pytest.mark.parametrize("costs, nested, why", [
    ((600_000.0, 600_000.0), (), "A -> B: one SP would cost 1.2e+06 a batch, more than a spec's 1,000,000"),
    ((10.0, 10.0, 1.0, 1.0), (("A", "C"), ("B", "D")), "A -> B: in two nested transactions (A, C and B, D)"),
])
def test_a_merge_that_does_not_apply_is_named_with_its_reason(costs, nested, why):
    """It was "no cut stream joins a mergeable pair", beside a cut stream between the two."""
    w = two_machines(costs, nested)
    result = suggest(w, recommend(w, baselines=False).design)
    assert result.bottleneck.move[:2] == ("A", "B"), "the case this test is about: A -> B cut"
    assert not result.items and not result.not_helping
    assert f"merge A and B into one SP does not apply ({why}" in result.note
    assert result.note.startswith("No change to try: no SP has a key to split on, no read-mostly table")
    assert "mergeable pair" not in result.note


def test_tune_says_why_it_did_not_merge(tmp_path, capsys):
    spec = write_workload(two_machines((600_000.0, 600_000.0)), tmp_path / "apart.toml")
    assert run_app(["tune", str(spec), "--machines", "2", "--rounds", "1"]) == 0
    stopped = [line for line in capsys.readouterr().out.splitlines() if line.startswith("stopped: ")]
    assert len(stopped) == 1 and "more than a spec's 1,000,000" in stopped[0], stopped
    assert "mergeable pair" not in stopped[0]


def test_with_no_stream_cut_the_generic_reason_stands():
    w = two_machines((1.0, 1.0), machines=1)
    result = suggest(w, recommend(w, baselines=False).design)
    assert result.bottleneck.move is None and not result.items and not result.not_helping
    assert result.note == ("No change to try: no SP has a key to split on, no read-mostly table is "
                           "accessed across machines, and no cut stream joins a mergeable pair.")
