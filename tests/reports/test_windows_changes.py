"""Dataflow changes keep windows with one owner: an owner is never split (its window belongs to
one SP's consecutive executions), and a merge hands the window to the merged SP."""
import pytest

from advisor.graph import WorkloadGraph
from advisor.spec import parse_workload
from reports.transforms import ChangeError, merge_procedures, split_key, split_procedure

SPEC = """
name = "wchanges"
[input]
batch_size = 10
fields = ["k"]
[[tables]]
name = "T"
rows = 1000
row_bytes = 10
key = "k"
[[procedures]]
name = "Ingest"
cost = 3.0
partition_key = "k"
accesses = [ { table = "T", mode = "write", rows = 1, keys = "input:k" } ]
[[procedures]]
name = "Trend"
cost = 0.5
partition_key = "k"
accesses = [ { table = "Recent", mode = "read", rows = 5 } ]
[[streams]]
from = "Ingest"
to = "Trend"
tuples = 4
[[windows]]
name = "Recent"
procedure = "Trend"
size = 100
slide = 10
"""


def test_a_window_owner_has_no_split_key_and_cannot_be_split():
    w = parse_workload(SPEC, "w.toml")
    key, why = split_key(w.procedure("Trend"), w)
    assert key is None and "owns window Recent" in why
    with pytest.raises(ChangeError, match="Trend: owns window 'Recent'"):
        split_procedure(w, "Trend", 2, "k")
    # an SP without a window still splits on its declared key
    assert split_key(w.procedure("Ingest"), w)[0] == "k"
    assert "Ingest#0" in split_procedure(w, "Ingest", 2).procedure_names


def test_a_merge_hands_the_window_to_the_merged_sp():
    w = parse_workload(SPEC, "w.toml")
    merged = merge_procedures(w, "Ingest", "Trend")
    (window,) = merged.windows
    assert window.procedure == "Ingest+Trend" and merged.windows_of("Ingest+Trend") == (window,)
    g = WorkloadGraph.from_workload(merged)
    j = g.state_index("Recent")
    assert g.proc_names[int(g.cost.state_owner[j])] == "Ingest+Trend"
