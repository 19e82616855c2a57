"""A spec seen at a design's granularity (fragments, hot tuples): the key mass is split the
way the engine routes rows, and nothing is lost or invented."""
from __future__ import annotations

import zlib

import pytest

from costmodel.errors import DesignError
from costmodel.granularity import base_table, workload_at
from advisor.sources import load_workload


def _expected_rows(workload, procedure: str, table_prefix: str) -> float:
    return sum(a.expected_rows for a in workload.procedure(procedure).accesses
               if a.table.split("#")[0].split("@")[0] == table_prefix)


def test_a_table_design_leaves_the_workload_as_it_is():
    w = load_workload("online-bidding")
    assert workload_at(w, w.table_names) is w


def test_fragments_keep_every_rows_expected_count_and_the_tables_size():
    w = load_workload("online-bidding")  # Items, zipf 0.6 keys
    names = [f"Items#{i}" for i in range(4)]
    got = workload_at(w, names)
    assert [t.name for t in got.tables] == names
    assert sum(t.rows for t in got.tables) == pytest.approx(w.table("Items").rows, abs=4)
    for p in w.procedures:
        assert _expected_rows(got, p.name, "Items") == pytest.approx(_expected_rows(w, p.name, "Items"))
    # zipf: key 0 (the hottest) lands in the fragment crc32("0") mod 4, which gets more than its
    # quarter of a zipf access, and exactly the key count of a uniform one
    hot = f"Items#{zlib.crc32(b'0') % 4}"
    bid = {a.table: a.expected_rows for a in got.procedure("Bid").accesses}
    assert bid[hot] > 0.25 * sum(bid.values())


def test_an_access_of_the_fewest_rows_a_spec_may_say_splits_without_dividing_by_zero():
    # 5e-324 rows: the chance of touching a fragment underflowed to 0 and the rows were divided by
    # it (recommend --data-parallel, and any fragment design of such a spec: an internal error)
    from dataclasses import replace

    w = load_workload("online-bidding")
    bid = w.procedure("Bid")
    tiny = replace(w, procedures=tuple(replace(p, accesses=tuple(replace(a, rows=5e-324) for a in p.accesses))
                                       if p is bid else p for p in w.procedures))
    got = workload_at(tiny, [f"Items#{i}" for i in range(4)])
    accesses = got.procedure("Bid").accesses
    assert accesses and all(a.rows > 0 and 0 <= a.probability <= 1 for a in accesses)


def test_a_hot_tuple_takes_its_keys_mass_from_its_fragment():
    w = load_workload("online-bidding")
    names = ["Items@0"] + [f"Items#{i}" for i in range(2)]
    got = workload_at(w, names)
    bid = {a.table: a for a in got.procedure("Bid").accesses}
    assert got.table("Items@0").rows == 1
    zipf_total = sum(k ** -0.6 for k in range(1, 10_001))
    assert bid["Items@0"].expected_rows == pytest.approx(7.5 / zipf_total, rel=1e-6)
    assert sum(a.expected_rows for a in bid.values()) == pytest.approx(7.5)


@pytest.mark.parametrize("names, message", [
    (["Items#0", "Items#2"], "not Items#1"),
    (["Items", "Items#0"], "both whole and in parts"),
    (["Items@3"], "not its other rows"),
    (["Items#0", "Ghost#0"], "not a table of workload"),
])
def test_a_design_that_does_not_split_a_table_cleanly_is_refused(names, message):
    with pytest.raises(DesignError, match=message):
        workload_at(load_workload("online-bidding"), names)


def test_base_table_names_the_table_of_every_item():
    assert [base_table(n) for n in ("Items", "Items#3", "Items@42", "a#b#1")] == \
        ["Items", "Items", "Items", "a#b"]
