"""A spec's table named `Trade@Type` beside a table `Trade`, at tuple granularity, through the
paths that read an item's table from its name: lanes, the simulator's lane accesses, the
report's spreading of a whole-table design over the design's items, and a migration's row
sizes. Each read `Trade@Type@KEY` (and the table `Trade@Type` itself) cut at the first '@',
so as `Trade`'s: the data-parallel SP keyed on `Trade` was refused (its accesses to "Trade"
mixed two key kinds), a spread design put `Trade@Type`'s hot tuples where `Trade` was, and a
migration copied them at `Trade`'s row size."""
from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.migration import copy_seconds, diff
from costmodel.design import Design
from costmodel.granularity import fragment_name, tables_among, workload_at
from costmodel.graph import WorkloadGraph
from costmodel.lanes import lane_routes, lane_tables
from costmodel.sim_params import SimParams
from costmodel.workload import Workload
from workload_edits import AT_TABLE, TABLE, tpcdi_trade_with_an_at_table
from engine_sim.sim.compiled import _unit_accesses, compile_plan
from reports.compared import _at_items

LANE_SP = "DateTimeLookup"  # keys DimDate by its input, TradeType by zipf: a lane SP on `Trade`
HOT = ("0", "3")  # hot keys of `Trade@Type`
PARTS = 4


@pytest.fixture(scope="module")
def spec() -> Workload:
    return tpcdi_trade_with_an_at_table()


@pytest.fixture(scope="module")
def tuple_design(spec: Workload) -> Design:
    """A tuple-granularity design: every table in PARTS fragments, fragment i on partition i,
    `Trade@Type`'s hot tuples on partitions of their own choosing, `DateTimeLookup` in lanes."""
    state = {fragment_name(t, i): i for t in spec.table_names for i in range(PARTS)}
    state |= {f"{AT_TABLE}@{k}": (int(k) + 1) % PARTS for k in HOT}
    return Design(spec.name, 2, PARTS // 2, {p: 0 for p in spec.procedure_names}, state,
                  data_parallel={LANE_SP: TABLE})


def test_the_lane_sp_splits_on_trade_not_on_the_at_table(spec: Workload, tuple_design: Design):
    assert lane_tables(spec)[LANE_SP] == TABLE  # (the first of its keyed tables, as declared)
    route = lane_routes(spec, tuple_design)[LANE_SP]
    assert (route.table, route.table_rows) == (TABLE, spec.table(TABLE).rows)  # (not with its rows)
    assert AT_TABLE not in route.co_tables


def test_a_lane_reaches_every_item_of_the_at_table(spec: Workload, tuple_design: Design):
    """A lane does only its own fragments of `Trade`, and its share of `Trade@Type`'s items,
    wherever they are (they were skipped unless on the lane's partition, as items of `Trade`)."""
    plan = compile_plan(spec, tuple_design, params=SimParams(), scheduler="dls", move="rpc",
                        batches=20, batch_size=None, seed=1)
    split = workload_at(spec, tuple_design.state)
    table_of = tables_among(split.table_names)
    at_items = {n for n, t in table_of.items() if t == AT_TABLE}
    assert {f"{AT_TABLE}@{k}" for k in HOT} < at_items
    lanes = [u for u in plan.units if u.lane_tables]
    assert len(lanes) == PARTS
    for u in lanes:
        accesses, _ = _unit_accesses(u, [split.procedure(m) for m in u.members], tuple_design, table_of)
        reached = {a.table for a in accesses}
        assert at_items <= reached
        assert {n for n in reached if table_of[n] == TABLE} == {fragment_name(TABLE, u.base)}


def test_a_whole_table_design_spreads_over_the_at_tables_items(spec: Workload, tuple_design: Design):
    """The report's comparison puts a table-level design's `Trade@Type` items where it places
    `Trade@Type`, not where it places `Trade` (and keeps every item)."""
    graph = WorkloadGraph.from_workload(workload_at(spec, tuple_design.state))
    whole = Design(spec.name, 2, PARTS // 2, {p: 1 for p in spec.procedure_names},
                   {t: (0 if t == TABLE else 3) for t in spec.table_names})
    spread = _at_items(whole, tuple_design, graph)
    assert set(spread.state) == set(tuple_design.state)
    table_of = tables_among(tuple_design.state)
    assert all(spread.state[n] == whole.state[table_of[n]] for n in spread.state)
    assert {spread.state[f"{AT_TABLE}@{k}"] for k in HOT} == {whole.state[AT_TABLE]} != {whole.state[TABLE]}


def test_a_migrated_hot_tuple_is_copied_at_its_own_tables_row_size(spec: Workload, tuple_design: Design):
    assert spec.table(AT_TABLE).row_bytes != spec.table(TABLE).row_bytes  # (else the test proves nothing)
    graph = WorkloadGraph.from_workload(workload_at(spec, tuple_design.state))
    item = f"{AT_TABLE}@{HOT[0]}"
    moved = replace(tuple_design, state={**tuple_design.state, item: (tuple_design.state[item] + 2) % PARTS})
    params = SimParams()
    d = diff(tuple_design, moved, graph, params, workload=spec, relabel=False)
    assert [m.name for m in d.state_moves] == [item]
    by_table = {m.name: float(spec.table(AT_TABLE).row_bytes) for m in d.moves}
    assert d.copy_seconds == pytest.approx(copy_seconds(d.moves, tuple_design, params, by_table))
    as_trade = {m.name: float(spec.table(TABLE).row_bytes) for m in d.moves}
    assert copy_seconds(d.moves, tuple_design, params, as_trade) != pytest.approx(d.copy_seconds)
