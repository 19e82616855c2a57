"""`advisor check --since` reads each state item's table among its graph's names: a spec's table
`Trade@Type` beside a table `Trade`, with `Trade@Type` split into fragments and a hot tuple
`Trade@Type@7` (a spec at a design's granularity, `Trade` kept whole). Cut at the first '@',
the hot tuple read as key `Type@7` of `Trade`, so `Trade` was both whole and split and the
source was refused as "another granularity" than itself; the table `Trade@Type` itself, gone
from the source, read as a hot tuple of `Trade` the same way."""
from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.api import recommend
from costmodel.granularity import fragment_name, tuple_name, workload_at
from costmodel.workload import Workload
from workload_edits import AT_TABLE, TABLE, tpcdi_trade_with_an_at_table
from reports.drift import check_drift

pytestmark = pytest.mark.integration

HOT = tuple_name(AT_TABLE, 7)


@pytest.fixture(scope="module")
def spec() -> Workload:
    return tpcdi_trade_with_an_at_table()


def test_since_reads_the_hot_tuple_as_one_of_its_own_table(spec: Workload):
    """The spec at a design's items: `Trade@Type` in 2 fragments and its hot tuple
    `Trade@Type@7`, every other table (`Trade` too) whole."""
    items = [t for t in spec.table_names if t != AT_TABLE] + [fragment_name(AT_TABLE, i) for i in (0, 1)] + [HOT]
    at_items = workload_at(spec, items)
    assert {HOT, TABLE} <= set(at_items.table_names)
    design = recommend(at_items, machines=2, objective="cost").design
    result = check_drift(design, at_items, since=at_items)  # was: "--since holds state at another granularity"
    assert result.within and not result.changes and result.compared_with is not None


def test_a_gone_at_table_is_judged_without_not_another_granularity(spec: Workload):
    """A design placing `Trade@Type` whole, against the spec without it: the table is gone (it
    read as a hot tuple of `Trade`: "different granularities", exit 2)."""
    design = recommend(spec, machines=2, objective="cost").design
    now = replace(spec, tables=tuple(t for t in spec.tables if t.name != AT_TABLE),
                  procedures=tuple(replace(p, accesses=tuple(a for a in p.accesses if a.table != AT_TABLE))
                                   for p in spec.procedures))
    assert check_drift(design, now).gone == [AT_TABLE]
