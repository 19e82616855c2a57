"""Dataflow changes keep windows with one owner: an owner is never split (its window belongs to
one SP's consecutive executions), and a merge hands the window to the merged SP."""
import pytest

from costmodel.graph import WorkloadGraph
from costmodel.spec_reader import parse_workload
from reports.transforms import ChangeError, merge_procedures, split_key, split_procedure
from window_specs import procedure, reads, spec_text, stream, table, window, writes

SPEC = spec_text("wchanges", table("T", rows=1000, row_bytes=10),
                 procedure("Ingest", 3.0, writes("T", 1, keys="input:k"), partition_key="k"),
                 procedure("Trend", 0.5, reads("Recent", 5), partition_key="k"),
                 stream("Ingest", "Trend", 4),
                 window("Recent", "Trend", size=100, slide=10),
                 fields=("k",))


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
