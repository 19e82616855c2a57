"""A trace of a spec `advisor tune` split (its tables `DimSecurity#0`, `DimSecurity#1`: tables of
their own, which read like fragments of a table `DimSecurity`) validates and aggregates into
statistics whose tables are the spec's, and the deployed design is checked against them.
Validation refused such a trace as naming fragments of `DimSecurity`: the manifest's
`spec_tables` now says which names are the spec's tables. A foreign trace naming `Dim#3` is
still refused (tests/traces/test_table_names_read_as_items.py)."""
from __future__ import annotations

import json

import pytest

from advisor.statistics_workload import workload_from_statistics
from costmodel.simple_designs import round_robin_design
from costmodel.workload import Workload, workload_as_plain
from reports.transforms import split_procedure
from traces import load_statistics
from traces.aggregate import aggregate
from traces.errors import TraceError
from traces.synth import synthesize
from traces.trace_checks import validate_trace

SPLIT = ("DimSecurity#0", "DimSecurity#1")


@pytest.fixture(scope="module")
def tuned(tpcdi_trade) -> Workload:
    """tpcdi-trade after tune's change 'partition SecurityLookup on security_id (2 copies)'."""
    w = split_procedure(tpcdi_trade, "SecurityLookup", 2)
    assert set(SPLIT) <= set(w.table_names) and "DimSecurity" not in w.table_names
    return w


def test_a_synthetic_trace_of_a_tuned_spec_declares_its_tables_and_validates(tuned, tmp_path):
    synthesize(workload_as_plain(tuned), tmp_path / "t", batches=10, seed=1)
    assert set(SPLIT) <= set(validate_trace(tmp_path / "t").tables)
    manifest = json.loads((tmp_path / "t" / "_trace.json").read_text())
    assert manifest["spec_tables"] == list(tuned.table_names)


def test_spec_tables_that_are_no_list_of_names_is_one_line(tuned, tmp_path):
    synthesize(workload_as_plain(tuned), tmp_path / "t", batches=5, seed=1)
    manifest_file = tmp_path / "t" / "_trace.json"
    manifest_file.write_text(json.dumps({**json.loads(manifest_file.read_text()), "spec_tables": "DimSecurity#0"}))
    with pytest.raises(TraceError, match=r"'spec_tables' must be a list of table names, got 'DimSecurity#0'"):
        validate_trace(tmp_path / "t")


@pytest.mark.integration
def test_an_engine_trace_of_a_tuned_spec_aggregates_into_its_tables(spark, tuned, tmp_path):
    from engine_sim.engine import run_workload
    from reports.drift import check_drift
    from traces.spark_trace_checks import validate_with_spark

    deployed = round_robin_design(tuned, 4, 1)
    run_workload(tuned, deployed, batches=20, in_process=True, trace_out=tmp_path / "trace")
    aggregate(tmp_path / "trace", tmp_path / "stats", spark=spark, progress=None)
    state = load_statistics(tmp_path / "stats")["state"]
    assert list(state["state"]) == list(state["table"]) == list(tuned.table_names)
    assert set(state["kind"]) == {"table"}
    assert workload_from_statistics(tmp_path / "stats").table_names == tuned.table_names

    checked = check_drift(deployed, tmp_path / "stats")  # the design deployed, against its own trace
    assert not checked.unplaced and not checked.gone and checked.ratio is not None

    assert set(SPLIT) <= set(validate_with_spark(str(tmp_path / "trace"), spark).tables)  # in place too
    assert json.loads((tmp_path / "trace" / "_trace.json").read_text())["spec_tables"] == list(tuned.table_names)
