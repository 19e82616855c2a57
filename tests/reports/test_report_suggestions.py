"""reports.transforms and reports.suggestions: changes applied to a copy of the spec keep the
work the same, and every suggestion's gain is what the simulator predicts for the change."""
from __future__ import annotations

import copy

import pytest

from advisor.api import recommend
from advisor.sources import load_workload
from costmodel.errors import UserError
from costmodel.graph import WorkloadGraph
from costmodel.spec_reader import parse_workload
from costmodel.spec_writer import workload_to_toml
from costmodel.workload import Access, Procedure, Stream, Table, Workload, InputSpec
from reports.predict import predicted_tps
from reports.suggestions import MIN_GAIN, suggest
from reports.transforms import (ChangeError, merge_procedures, mergeable_pairs, replicate_design,
                                split_key, split_procedure)
from costmodel import Weights

pytestmark = pytest.mark.integration

FIXED = Weights(alpha=0.3, beta=0.1, gamma=0.6)


def rows(w: Workload) -> float:
    return sum(a.expected_rows for p in w.procedures for a in p.accesses)


def valid_spec(w: Workload) -> Workload:
    """The changed workload is a spec the parser accepts (and a graph can be built of it)."""
    back = parse_workload(workload_to_toml(w))
    WorkloadGraph.from_workload(back)
    return back


@pytest.fixture(scope="module")
def tpcdi(tpcdi_trade):
    return tpcdi_trade


def test_split_keeps_the_work_and_fragments_co_partitioned_tables(tpcdi):
    key, why = split_key(tpcdi.procedure("SecurityLookup"), tpcdi)
    assert key == "security_id" and "DimSecurity" in why
    w = split_procedure(tpcdi, "SecurityLookup", 3)
    valid_spec(w)
    copies = [p for p in w.procedures if p.name.startswith("SecurityLookup#")]
    assert len(copies) == 3 and all(p.partition_key == "security_id" for p in copies)
    assert sum(p.cost for p in w.procedures) == pytest.approx(sum(p.cost for p in tpcdi.procedures))
    assert rows(w) == pytest.approx(rows(tpcdi))
    # DimSecurity is keyed by the split key: one fragment per copy, each copy reads its own
    frags = [t for t in w.tables if t.name.startswith("DimSecurity#")]
    assert len(frags) == 3 and sum(t.rows for t in frags) >= tpcdi.table("DimSecurity").rows
    for i, p in enumerate(copies):
        assert [a.table for a in p.accesses] == [f"DimSecurity#{i}"]
    # the stream into and out of the SP is divided among the copies
    into = [s for s in w.streams if s.target.startswith("SecurityLookup#")]
    assert sum(s.tuples for s in into) == pytest.approx(10)
    assert {s.source for s in into} == {"DateTimeLookup"}


def test_split_twice_on_one_key_keeps_copies_aligned():
    w = Workload("k", (Table("T", 100, 10, "k"),),
                 (Procedure("A", 2.0, (Access("T", "read", 4, "input:k"),), partition_key="k"),
                  Procedure("B", 2.0, (Access("T", "write", 4, "input:k"),), partition_key="k")),
                 (Stream("A", "B", 8),), input=InputSpec(fields=("k",)))
    w2 = split_procedure(split_procedure(w, "A", 2), "B", 2)
    valid_spec(w2)
    assert sorted((s.source, s.target) for s in w2.streams) == [("A#0", "B#0"), ("A#1", "B#1")]
    assert sum(s.tuples for s in w2.streams) == pytest.approx(8)
    # the table was fragmented by the first split; B's copies each write their own fragment
    assert {a.table for p in w2.procedures if p.name == "B#1" for a in p.accesses} == {"T#1"}



def test_tables_named_like_fragments_beside_their_stem_are_no_earlier_split():
    # a workload holds a table's items or the table, never both (`costmodel.granularity.table_among`):
    # beside a table `T`, tables `T#0` and `T#1` are tables of their own, each split with the SP.
    # The split read them as an earlier split of `T` and gave copy i table `T#i` alone.
    w = Workload("k", (Table("T", 100, 10, "k"), Table("T#0", 100, 10, "k"), Table("T#1", 100, 10, "k")),
                 (Procedure("A", 2.0, (Access("T#0", "read", 4, "input:k"), Access("T#1", "read", 4, "input:k")),
                            partition_key="k"),),
                 input=InputSpec(fields=("k",)))
    w2 = split_procedure(w, "A", 2)
    valid_spec(w2)
    assert {a.table for p in w2.procedures if p.name == "A#1" for a in p.accesses} == {"T#0#1", "T#1#1"}
    assert rows(w2) == pytest.approx(rows(w))

def test_new_names_are_none_of_the_workloads_sps_tables_or_windows():
    # a table `A#0` and an SP `T#0` beside the SP `A` and the table `T` it splits, a table `A+B`
    # beside the pair merged: the copy, the fragment and the merged SP took those names, and the
    # changed copy was refused ("the name is also a table's"), which ended `tune` and `report`
    w = Workload("k", (Table("T", 100, 10, "k"), Table("A#0", 100, 10, "k"), Table("A+B", 100, 10, "k")),
                 (Procedure("A", 2.0, (Access("T", "write", 4, "input:k"),), partition_key="k"),
                  Procedure("B", 1.0, (Access("A#0", "read", 1), Access("A+B", "read", 1))),
                  Procedure("T#0", 1.0)),
                 (Stream("A", "B", 8),), input=InputSpec(fields=("k",)))
    split = valid_spec(split_procedure(w, "A", 2))
    assert {"A#0~2", "A#1"} <= set(split.procedure_names) and {"T#0~2", "T#1"} <= set(split.table_names)
    merged = valid_spec(merge_procedures(w, "A", "B"))
    assert "A+B~2" in merged.procedure_names


@pytest.mark.parametrize("where", ["access", "other SP's access", "stream"])
def test_a_split_that_would_share_out_zero_rows_or_tuples_is_no_change(where):
    # 5e-324 (the smallest number a spec may say) halved is 0.0, which no spec may say: the copy
    # was refused ("rows must be > 0") and `tune` and `report` ended on it
    tiny = {w: 5e-324 if w == where else 4.0 for w in ("access", "other SP's access", "stream")}
    w = Workload("k", (Table("T", 100, 10, "k"),),
                 (Procedure("A", 2.0, (Access("T", "write", tiny["access"], "input:k"),), partition_key="k"),
                  Procedure("B", 1.0, (Access("T", "read", tiny["other SP's access"]),))),
                 (Stream("A", "B", tiny["stream"]),), input=InputSpec(fields=("k",)))
    with pytest.raises(ChangeError, match="too few rows or tuples a batch to share among 2 copies"):
        split_procedure(w, "A", 2)
    valid_spec(w)  # the workload itself is one a spec may say


def test_merge_joins_a_pair_that_always_runs_together(tpcdi):
    assert ("AccountLookup", "TradeInsert") in mergeable_pairs(tpcdi)
    w = merge_procedures(tpcdi, "AccountLookup", "TradeInsert")
    valid_spec(w)
    merged = w.procedure("AccountLookup+TradeInsert")
    assert merged.cost == pytest.approx(3.0) and len(merged.accesses) == 2
    assert len(w.streams) == 2 and rows(w) == pytest.approx(rows(tpcdi))
    with pytest.raises(ChangeError):
        merge_procedures(tpcdi, "DateTimeLookup", "TradeInsert")


def test_a_merge_past_a_specs_largest_cost_is_no_change(tpcdi):
    # two SPs at half the largest cost a spec allows each: the merged one would cost more than
    # any spec may say, and `tune` and `report` failed on its copy ("cost must be <= 1000000")
    from dataclasses import replace

    heavy = replace(tpcdi, procedures=tuple(replace(p, cost=600_000.0) if p.name in ("AccountLookup", "TradeInsert")
                                            else p for p in tpcdi.procedures))
    with pytest.raises(ChangeError, match="more than a spec's"):
        merge_procedures(heavy, "AccountLookup", "TradeInsert")


def test_two_sps_of_two_nested_transactions_are_no_pair_to_merge():
    # A -> B with A nested with C and B with D: the fused A+B was in both groups, the changed
    # copy was refused ("procedure 'A+B' is already in nested[0]") and `tune` and `report` ended on it
    w = Workload("n", (Table("T", 100, 10, "k"),),
                 tuple(Procedure(n, 1.0, (Access("T", "write", 1),)) for n in "ABCD"),
                 (Stream("A", "B", 8),), nested=(("A", "C"), ("B", "D")))
    assert mergeable_pairs(w) == []
    with pytest.raises(ChangeError, match="in two nested transactions"):
        merge_procedures(w, "A", "B")
    # one nested transaction, or one SP in none: the fused SP takes the group's place
    for nested in ((("A", "C"),), (("A", "B", "C"),)):
        one = Workload("n", w.tables, w.procedures, w.streams, nested=nested)
        assert mergeable_pairs(one) == [("A", "B")]
        valid_spec(merge_procedures(one, "A", "B"))


def test_replicate_changes_only_that_table(tpcdi):
    r = recommend(tpcdi, baselines=False)
    d = replicate_design(r.design, r.graph, "DimDate")
    assert d.state["DimDate"] is None and r.design.state["DimDate"] is not None
    assert {k: v for k, v in d.state.items() if k != "DimDate"} == {
        k: v for k, v in r.design.state.items() if k != "DimDate"}
    assert d.cost == d.score(r.graph)


def test_changes_to_unknown_names_are_user_errors(tpcdi):
    for call in (lambda: split_procedure(tpcdi, "Nope", 2), lambda: split_procedure(tpcdi, "TradeInsert", 1)):
        with pytest.raises(UserError) as info:
            call()
        assert info.value.exit_code == 2


@pytest.fixture(scope="module")
def suggested(tpcdi):
    """TPC-DI on 8 machines, the design the old fixed weights give (the hot SP unsplit: room
    to improve) and its suggestions: computed once, each test works on a copy."""
    w = tpcdi.with_cluster(machines=8)
    design = recommend(w, weights=FIXED, baselines=False, objective="cost").design
    return w, design, suggest(w, design)


def test_suggestion_gain_is_the_simulated_gain_of_the_changed_spec(suggested):
    w, design, result = copy.deepcopy(suggested)
    assert result.bottleneck.hot_procedure == "SecurityLookup"
    best = result.best
    assert best is not None and best.kind in ("split", "partition") and best.gain > 0
    # recompute independently: the simulator on the original and on the changed copy
    before = predicted_tps(w, design)
    after = predicted_tps(best.workload, best.design)
    assert best.gain == pytest.approx(after / before - 1, rel=1e-9)
    assert best.workload is not w and "SecurityLookup" in w.procedure_names  # the original is untouched
    gains = [s.gain for s in result]
    assert gains == sorted(gains, reverse=True)
    frame = result.to_frame()
    assert len(frame) == len(result) and "<table>" in result._repr_html_()


def test_statistics_only_suggestions_use_the_cost_model(tmp_path):
    r = recommend("tpcdi-trade", baselines=False)
    # a design that reads a read-mostly table across machines
    d = r.design
    d.state["DimDate"] = (d.procedures["DateTimeLookup"] + 1) % d.n_partitions
    d.cost = d.score(r.graph)
    result = suggest(None, d, r.graph)
    kinds = {(s.kind, s.target) for s in result}
    assert ("replicate", "DimDate") in kinds
    s = next(s for s in result if s.target == "DimDate")
    assert s.gain is None and s.cost_after < s.cost_before


def test_a_change_predicted_slower_than_the_start_is_not_suggested(tpcdi):
    # the throughput pick on 4 machines: splitting or merging its SPs is predicted slower
    # (-12 % and -31 % were shown as suggestions before)
    w = tpcdi.with_cluster(machines=4)
    design = recommend(w, baselines=False).design
    result = suggest(w, design)
    assert result.not_helping, "the case this test is about: changes that do not help"
    assert all(s.gain >= MIN_GAIN for s in result.items)  # (a +0 % change was suggested that tune refused)
    assert all(s.gain < MIN_GAIN for s in result.not_helping)
    if not result.items:
        assert result.best is None
        assert result.note.startswith("No change is predicted to help")
        assert result.not_helping[0].text in result.note


def test_the_note_counts_every_copy_count_tried():
    """linear-road on 2 machines: PositionReport is split into 2, 3 and 4 copies, each its own
    recommend; only the best copy count is listed, but the note says three were tried."""
    w = load_workload("linear-road").with_cluster(machines=2)
    design = recommend(w, baselines=False).design
    result = suggest(w, design)
    splits = [s for s in result.items + result.not_helping if s.kind == "split"]
    assert len(splits) == 1  # the best copy count only
    assert result.tried == 3
    if not result.items:
        assert result.note.startswith("No change is predicted to help by 1% or more: 3 tried")


@pytest.mark.parametrize("workload, design, said", [
    ("rec", 5, r"^design must be a Design or its JSON file, got 5"),  # an AttributeError on .weights
    ("rec", None, r"^design must be a Design or its JSON file, got None"),
    (5, "rec", r"^workload must be a Workload, a bundled name, a spec file, statistics or None, got 5"),
])
def test_suggest_given_the_wrong_kind_of_argument_says_so_in_one_line(tmp_path, workload, design, said):
    from advisor.errors import AdvisorError

    rec = recommend("tpcdi-trade", machines=2, objective="cost")
    with pytest.raises(AdvisorError, match=said):
        suggest(rec.workload if workload == "rec" else workload, rec.design if design == "rec" else design)
    # a name and the design's file are what the verbs take
    path = rec.design.save(tmp_path / "d.json")
    assert suggest("tpcdi-trade", str(path)).bottleneck == suggest(rec.workload, rec.design).bottleneck


def test_suggest_refuses_a_min_gain_tune_refuses():
    from advisor.errors import AdvisorError

    rec = recommend("tpcdi-trade", machines=2, objective="cost")
    with pytest.raises(AdvisorError, match=r"^min_gain must be a number in \[0, 10\), got -1"):
        suggest(rec.workload, rec.design, min_gain=-1)
