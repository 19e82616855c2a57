"""Bad inputs the fuzzer found in traces, statistics and the aggregation's options: each is one
line (TraceError on the API, exit 2 on the command line), never a traceback, and nothing
already written is lost. No Spark: the options are refused before a session starts, and the
statistics are written by hand (`write_statistics`)."""
from __future__ import annotations

import contextlib
import copy
import json
import re
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from advisor.cli import run_app
from advisor.statistics_workload import workload_from_statistics
from costmodel.errors import UserError
from costmodel.workload import workload_as_plain
from traces.errors import TraceError
from traces.granularity import MAX_FRAGMENTS, MAX_HOT_TUPLES, Granularity, parse_granularity
from traces.statistics import TABLES, Statistics, read_statistics_arrow, write_statistics
from traces.synth import synthesize
from traces.trace_checks import validate_trace


def one_error_line(capsys) -> str:
    """The command's stderr is exactly one `error:` line, without a traceback."""
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


# -- traces ---------------------------------------------------------------------------------------

def _set(data: dict, path: str, value) -> dict:
    data = copy.deepcopy(data)
    *head, last = path.split(".")
    node = data
    for key in head:
        node = node.setdefault(key, {})
    node[last] = value
    return data


HUGE_IN_TRACE = [
    ("batches", 10**30, "'batches' must be at most 9,223,372,036,854,775,807, got 10000000000000"),
    ("tables.DimDate.rows", 10**30, "'tables.DimDate.rows' must be at most 1,000,000,000,000,000, got 1000"),
    ("tables.DimDate.row_bytes", 10**20, "'tables.DimDate.row_bytes' must be at most 1,000,000,000, got 1000"),
    ("cluster.machines", 10**30, "'cluster.machines' must be at most 1,000,000, got 1000"),
    ("input.batch_size", 10**30, "'input.batch_size' must be at most 1,000,000, got 1000"),
    ("batch_size", 10**7, "'batch_size' must be at most 1,000,000, got 10000000"),
    ("input.cost_unit_us", 1e300, "'input.cost_unit_us' must be at most 1,000,000, got 1e+300"),
    ("default_row_bytes", 10**20, "'default_row_bytes' must be at most 1,000,000,000, got 1000"),
    ("nested", [["TradeInsert", "AccountLookup"], ["AccountLookup", "SecurityLookup"]],
     "'nested[1]': procedure 'AccountLookup' is already in nested[0]"),
    # validated and aggregated, then refused by every command that read the statistics
    ("nested", [["nope"]], "'nested[0]': procedure 'nope' is not in 'procedures'"),
    # validated, then an internal error in the statistics' last step, after the Spark job
    ("procedures", ["TradeInsert", "AccountLookup", "TradeInsert"],
     "'procedures[2]': procedure 'TradeInsert' is named twice"),
    ("windows", {"W": {"procedure": "TradeInsert", "size": 10**400, "slide": 1}},
     "manifest window 'W': size must be at most 9,223,372,036,854,775,807"),
]


@pytest.mark.parametrize("path, value, message", HUGE_IN_TRACE, ids=[c[0] for c in HUGE_IN_TRACE])
def test_a_trace_manifest_value_past_its_bound_is_one_line(trace, tmp_path, capsys, path, value, message):
    manifest = json.loads((trace / "_trace.json").read_text())
    (trace / "_trace.json").write_text(json.dumps(_set(manifest, path, value)))
    with pytest.raises(TraceError, match=re.escape(message)):
        validate_trace(trace)
    stats = tmp_path / "stats"
    for argv in (["trace", "validate", str(trace)], ["trace", "aggregate", str(trace), "--out", str(stats)]):
        assert run_app(argv) == 2
        assert message in one_error_line(capsys)
    assert not stats.exists()


def test_a_manifest_integer_json_cannot_read_is_one_line(trace, tmp_path, capsys):
    """An integer of 5,000 digits: Python's JSON refuses it with a ValueError of its own."""
    text = (trace / "_trace.json").read_text()
    huge, n = re.subn(r'"batches": \d+', '"batches": ' + "9" * 5000, text, count=1)
    assert n == 1
    (trace / "_trace.json").write_text(huge)
    with pytest.raises(TraceError, match="_trace.json: not valid JSON .*4300 digits"):
        validate_trace(trace)
    assert run_app(["trace", "validate", str(trace)]) == 2
    assert "not valid JSON" in one_error_line(capsys)


def test_synth_refuses_a_cost_unit_its_own_trace_would_be_refused_for(tpcdi_trade, tmp_path, capsys):
    out = tmp_path / "t"
    assert run_app(["trace", "synth", "tpcdi-trade", "--batches", "5", "--out", str(out),
                    "--cost-unit-us", "2e6"]) == 2
    assert "--cost-unit-us must be a number > 0 and <= 1e+06, got 2000000.0" in one_error_line(capsys)
    assert not out.exists()
    synthesize(workload_as_plain(tpcdi_trade), out, batches=2, cost_unit_us=1e6)
    assert validate_trace(out).rows["txns"] > 0  # the bound itself makes a good trace


# -- aggregation options --------------------------------------------------------------------------

@pytest.mark.parametrize("granularity, hot, message", [
    ("tuple", 0, f"--hot-tuples must be an integer from 1 to {MAX_HOT_TUPLES:,} with tuple granularity "
                 "(without hot tuples, use fragment:N), got 0"),
    ("tuple:4", 1_000_000_000, f"--hot-tuples must be an integer from 1 to {MAX_HOT_TUPLES:,}"),
    ("fragment:100000000", 100, "granularity 'fragment:100000000': the fragment count (per table) must be "
                                f"an integer from 1 to {MAX_FRAGMENTS:,}"),
    ("tuple:70000", 5, f"the fragment count (per table) must be an integer from 1 to {MAX_FRAGMENTS:,}"),
])
def test_aggregation_options_past_their_bounds_are_one_line_before_spark(
        good_trace, tmp_path, capsys, granularity, hot, message):
    """(A unit test: starting Spark here would fail it.)"""
    from traces.aggregate import aggregate, check_options

    with pytest.raises(TraceError, match=re.escape(message)):
        check_options(granularity, hot)
    stats = tmp_path / "stats"
    assert run_app(["trace", "aggregate", str(good_trace), "--out", str(stats), "--granularity",
                    granularity, "--hot-tuples", str(hot)]) == 2
    assert message in one_error_line(capsys)
    assert not stats.exists()
    with pytest.raises(TraceError, match="must be an integer from 1 to"):  # the API too
        aggregate(good_trace, stats, granularity, hot, progress=None)


def test_a_granularity_made_by_hand_is_held_to_the_same_bounds(good_trace, tmp_path):
    from traces.aggregate import aggregate

    for gran in (Granularity("tuple", 8, 0), Granularity("fragment", MAX_FRAGMENTS + 1)):
        with pytest.raises(TraceError, match="must be an integer from 1 to"):
            aggregate(good_trace, tmp_path / "stats", gran, progress=None)
    assert parse_granularity("fragment:65536") == Granularity("fragment", MAX_FRAGMENTS)
    assert parse_granularity("tuple:2", MAX_HOT_TUPLES) == Granularity("tuple", 2, MAX_HOT_TUPLES)
    assert parse_granularity("table", 0) == Granularity("table")  # hot tuples matter to tuple only


class _DeadSpark:
    """A session whose JVM died with the job: stopping it cannot reach the JVM."""

    stopped = 0

    def stop(self):
        _DeadSpark.stopped += 1
        raise ConnectionRefusedError(111, "Connection refused")


def test_stopping_a_dead_session_never_hides_the_job_error(good_trace, tmp_path, capsys, monkeypatch):
    import traces.aggregate as job

    def failing_run(*_args):
        raise TraceError(f"{good_trace}: the Spark job failed: java.lang.OutOfMemoryError")

    monkeypatch.setattr(job, "_session", lambda *_args: (_DeadSpark(), True))
    monkeypatch.setattr(job, "StageWatcher", lambda *_args: contextlib.nullcontext())
    monkeypatch.setattr(job, "_run", failing_run)
    stats = tmp_path / "stats"
    stats.mkdir()
    (stats / "_stats.json").write_text('{"format": "advisor.stats/1"}')  # kept as it was
    _DeadSpark.stopped = 0
    with pytest.raises(TraceError, match="the Spark job failed: java.lang.OutOfMemoryError"):
        job.aggregate(good_trace, stats, progress=None)
    assert _DeadSpark.stopped == 1
    assert run_app(["trace", "aggregate", str(good_trace), "--out", str(stats), "--quiet"]) == 2
    assert "the Spark job failed: java.lang.OutOfMemoryError" in one_error_line(capsys)
    assert (stats / "_stats.json").read_text() == '{"format": "advisor.stats/1"}'
    with pytest.raises(ConnectionRefusedError):  # with no error to keep, a failed stop is not hidden
        job._stop(_DeadSpark())


# -- statistics -----------------------------------------------------------------------------------

def _frame(name: str, rows: list[dict]) -> pd.DataFrame:
    schema = TABLES[name]
    filled = [{f.name: row.get(f.name, "" if str(f.type) == "string" else 0) for f in schema} for row in rows]
    return pd.DataFrame(filled, columns=schema.names)


@pytest.fixture(scope="module")
def good_stats(tmp_path_factory):
    """A small statistics directory written as the format says: SP0 -> SP1 -> SP2, each with its
    own table, 10 batches, every SP once per batch."""
    procs = _frame("procedures", [{"procedure": p, "invocations": 10, "commits": 10, "total_cost_us": 3000,
                                   "mean_cost_us": 300.0, "p50_cost_us": 300.0, "p95_cost_us": 300.0}
                                  for p in ("SP0", "SP1", "SP2")])
    procs["p50_work_us"] = None
    ps = _frame("procedure_state", [{"procedure": f"SP{i}", "state": f"T{i}", "table": f"T{i}", "reads": 10,
                                     "writes": 10, "read_rows": 10, "write_rows": 10, "rows": 20, "txns": 10,
                                     "probability": 1.0} for i in range(3)])
    streams = _frame("streams", [{"from_procedure": f"SP{i}", "to_procedure": f"SP{i + 1}", "flows": 10,
                                  "batches": 10, "tuples": 100, "bytes": 3200} for i in range(2)])
    state = _frame("state", [{"state": f"T{i}", "table": f"T{i}", "kind": "table", "fragment": -1,
                              "reads": 10, "writes": 10, "read_rows": 10, "write_rows": 10, "heat": 20,
                              "estimated_bytes": 64000.0} for i in range(3)])
    state["key"] = None
    manifest = {"workload": "chain3", "granularity": "table", "kind": "table", "batches": 10,
                "procedures": ["SP0", "SP1", "SP2"], "nested": [],
                "tables": {f"T{i}": {"rows": 1000, "row_bytes": 64} for i in range(3)},
                "default_row_bytes": 100, "input": {"batch_size": 10, "cost_unit_us": 100.0},
                "cluster": {"machines": 2, "partitions_per_machine": 1}}
    out = tmp_path_factory.mktemp("stats") / "good"
    write_statistics(Statistics(procs, ps, streams, state, manifest), out)
    return out


@pytest.fixture
def stats(good_stats, tmp_path):
    copy_ = tmp_path / "stats"
    shutil.copytree(good_stats, copy_)
    return copy_


def test_the_hand_made_statistics_are_a_workload(good_stats):
    w = workload_from_statistics(good_stats)
    assert list(w.procedure_names) == ["SP0", "SP1", "SP2"] and w.cluster.machines == 2


HUGE_IN_STATS = [
    ("batches", 10**30, "'batches' must be at most 9,223,372,036,854,775,807, got 1000"),
    ("batches", 1e300, "'batches' must be at most 9,223,372,036,854,775,807, got 1e+300"),
    ("batches", 31, "'batches' must be at most the 30 invocations of procedures.parquet (a batch runs at "
                    "least one), got 31"),
    ("tables.T0.rows", 10**20, "'tables.T0.rows' must be at most 1,000,000,000,000,000, got 1000"),
    ("tables.T0.row_bytes", 10**20, "'tables.T0.row_bytes' must be at most 1,000,000,000, got 1000"),
    ("default_row_bytes", 10**20, "'default_row_bytes' must be at most 1,000,000,000, got 1000"),
    ("input.batch_size", 10**20, "'input.batch_size' must be at most 1,000,000, got 1000"),
    ("input.cost_unit_us", 1e300, "'input.cost_unit_us' must be at most 1,000,000, got 1e+300"),
    ("input.cost_unit_us", 1_000_001, "'input.cost_unit_us' must be at most 1,000,000, got 1000001"),
    ("nested", [["SP0", "SP1"], ["SP1", "SP2"]], "'nested[1]': procedure 'SP1' is already in nested[0]"),
    ("nested", [["SP0"]], "'nested[0]': a nested group must list at least two procedure names, got ['SP0']"),
    ("cluster.machine_capacity", [], "'cluster.machine_capacity' must be a list of 2 numbers, one per machine, got []"),
    ("cluster.machine_capacity", [1, 2, 3], "'cluster.machine_capacity' must be a list of 2 numbers, one per "
                                            "machine, got [1, 2, 3]"),
    ("cluster.machine", 2, "'cluster.machine': not a cluster field (those are machine_capacity, "
                           "machine_memory_mb, machines, partitions_per_machine)"),
    ("nested", [["SP0", "SP1"], []], "'nested[1]': a nested group must list at least two procedure names, got []"),
]


@pytest.mark.parametrize("path, value, message", HUGE_IN_STATS,
                         ids=[f"{c[0]}={c[1]!s:.12}" for c in HUGE_IN_STATS])
def test_a_statistics_manifest_a_spec_would_refuse_is_one_line(stats, capsys, path, value, message):
    manifest = json.loads((stats / "_stats.json").read_text())
    (stats / "_stats.json").write_text(json.dumps(_set(manifest, path, value)))
    with pytest.raises(TraceError, match=re.escape(message)):
        read_statistics_arrow(stats)
    with pytest.raises(UserError):
        workload_from_statistics(stats)
    assert run_app(["recommend", str(stats), "--machines", "2"]) == 2
    assert message in one_error_line(capsys)


def _duplicate_row(table: str, row: int):
    """Row `row` of the table once more, at its end."""
    def change(stats):
        t = pq.read_table(stats / f"{table}.parquet")
        pq.write_table(pa.concat_tables([t, t.slice(row, 1)]), stats / f"{table}.parquet")
    return change


def _state_kind(stats):
    t = pq.read_table(stats / "state.parquet")
    kinds = t.column("kind").to_pylist()
    kinds[2] = "bogus"
    pq.write_table(t.set_column(t.schema.get_field_index("kind"), "kind", pa.array(kinds)),
                   stats / "state.parquet")


BAD_ROWS = [
    (_duplicate_row("procedures", 1), "procedures.parquet: row 3: a second row for procedure 'SP1'"),
    (_duplicate_row("state", 0), "state.parquet: row 3: a second row for state 'T0'"),
    (_duplicate_row("procedure_state", 1),
     "procedure_state.parquet: row 3: a second row for procedure 'SP1', state 'T1'"),
    (_duplicate_row("streams", 0),
     "streams.parquet: row 2: a second row for from_procedure 'SP0', to_procedure 'SP1'"),
    (_state_kind, "state.parquet: column 'kind', row 2: must be one of 'table', 'fragment', 'tuple', "
                  "'window', got 'bogus'"),
]


@pytest.mark.parametrize("change, message", BAD_ROWS, ids=["dup-procedure", "dup-state", "dup-procedure-state",
                                                           "dup-stream", "state-kind"])
def test_statistics_rows_a_spec_would_refuse_are_one_line(stats, capsys, change, message):
    change(stats)
    with pytest.raises(TraceError, match=re.escape(message)):
        read_statistics_arrow(stats)
    assert run_app(["recommend", str(stats), "--machines", "2"]) == 2
    assert message in one_error_line(capsys)


def _set_column(table: str, column: str, value):
    """Every row's `column` of `table` set to `value` (a count the trace could overflow into)."""
    def change(stats):
        t = pq.read_table(stats / f"{table}.parquet")
        i = t.schema.get_field_index(column)
        pq.write_table(t.set_column(i, column, pa.array([value] * t.num_rows, t.schema.field(i).type)),
                       stats / f"{table}.parquet")
    return change


@pytest.mark.parametrize("change, message", [
    (_set_column("procedure_state", "read_rows", 10**18), "SP0 -> T0: 1e+17 rows a batch, past what any run"),
    (_set_column("streams", "tuples", 10**18), "stream SP0 -> SP1: 1e+17 tuples a batch, past what any run"),
    # recommend and run took these, validate refused the first: each command alike now
    (_set_column("streams", "bytes", 2**62), "stream SP0 -> SP1: 46,116,860,184,273,880 bytes a tuple"),
    (_set_column("procedures", "abort_rate", 2.0),
     "procedures.parquet: column 'abort_rate', row 0: a share, must be from 0 to 1, got 2"),
    (_set_column("procedure_state", "probability", 2.0),
     "procedure_state.parquet: column 'probability', row 0: a share, must be from 0 to 1, got 2"),
    # what no check of the statistics' own sees, the spec's rules do (the workload rebuilt from
    # them): SPs of 100 s a batch and more (recommend predicted 0 tuples/s, simulate refused them)
    (_set_column("procedures", "p50_cost_us", 1e12), "not one a spec could declare: "),
], ids=["rows", "tuples", "tuple-bytes", "abort-rate", "probability", "cost"])
def test_statistics_past_what_a_run_can_take_are_one_line(stats, tmp_path, capsys, change, message):
    design = tmp_path / "d.json"
    assert run_app(["recommend", str(stats), "--machines", "2", "--objective", "cost", "--out", str(design)]) == 0
    capsys.readouterr()
    change(stats)
    assert run_app(["recommend", str(stats), "--machines", "2"]) == 2
    assert message in one_error_line(capsys)
    for command in (["evaluate", "--design", str(design), str(stats)],
                    ["simulate", "--design", str(design), str(stats), "--batches", "20"],
                    ["validate", "--design", str(design), str(stats), "--sim", "--batches", "20"]):
        assert run_app(command) == 2, command
        assert message in one_error_line(capsys)


def test_an_output_inside_the_statistics_or_trace_it_reads_is_refused(stats, good_trace, tmp_path, capsys):
    """`recommend` and `simulate` refused such a path; `tune`, `run --trace-out`, `trace
    aggregate` and `trace synth` (of statistics) wrote into their own input."""
    before = sorted(p.name for p in stats.iterdir())
    design = tmp_path / "d.json"
    assert run_app(["recommend", str(stats), "--machines", "2", "--objective", "cost", "--out", str(design)]) == 0
    capsys.readouterr()
    for command, inside in (
            (["tune", str(stats), "--machines", "2", "--rounds", "0", "--out", str(stats / "sub")], stats),
            (["run", "--design", str(design), str(stats), "--batches", "5", "--in-process",
              "--trace-out", str(stats / "tr")], stats),
            (["trace", "synth", str(stats), "--batches", "5", "--out", str(stats / "tr"), "--quiet"], stats),
            (["trace", "aggregate", str(good_trace), "--out", str(good_trace / "stats"), "--quiet"], good_trace)):
        assert run_app(command) == 2, command
        assert f"is inside this command's input {inside}" in one_error_line(capsys)
    assert sorted(p.name for p in stats.iterdir()) == before and not (good_trace / "stats").exists()


def test_an_aggregate_output_inside_a_trace_given_as_a_file_uri_is_refused(good_trace, capsys):
    """Given as `file://` (or `file://localhost/`), the trace was not seen as the output's
    input: `trace aggregate file:///t --out /t/stats` wrote the statistics into the trace."""
    before = sorted(p.name for p in good_trace.iterdir())
    for uri in (good_trace.as_uri(), f"file://localhost{good_trace}"):
        assert run_app(["trace", "aggregate", uri, "--out", str(good_trace / "stats"), "--quiet"]) == 2, uri
        assert "is inside this command's input" in one_error_line(capsys)
    assert sorted(p.name for p in good_trace.iterdir()) == before


def test_a_statistics_integer_json_cannot_read_is_one_line(stats, capsys):
    text = (stats / "_stats.json").read_text()
    (stats / "_stats.json").write_text(text.replace('"batches": 10', '"batches": ' + "9" * 5000, 1))
    assert run_app(["recommend", str(stats), "--machines", "2"]) == 2
    assert "_stats.json: not valid JSON" in one_error_line(capsys)


@pytest.mark.parametrize("granularity", ["table", "fragment:4"])
def test_hot_tuples_with_another_granularity_is_refused_not_ignored(good_trace, tmp_path, capsys, granularity):
    from traces.aggregate import check_options

    with pytest.raises(TraceError, match=r"--hot-tuples applies to --granularity tuple\[:N\] only"):
        check_options(granularity, 5)
    assert check_options(granularity, None).kind == granularity.split(":")[0]
    assert check_options("tuple", None).hot_tuples == 100  # the default, where it applies
    stats = tmp_path / "stats"
    assert run_app(["trace", "aggregate", str(good_trace), "--out", str(stats), "--granularity", granularity,
                    "--hot-tuples", "5"]) == 2
    assert "--hot-tuples applies to --granularity tuple[:N] only" in one_error_line(capsys)
    assert not stats.exists()


@pytest.mark.parametrize("values, message", [
    (["300", "300", "300"], None),  # numbers written as text: cast, as every other column is
    (["fast", "fast", "fast"], "procedures.parquet: unexpected column types"),
    ([[1], [1], [1]], "procedures.parquet: unexpected column types"),
], ids=["numeric-text", "text", "list"])
def test_a_work_column_of_another_type_is_cast_or_refused_in_one_line(stats, capsys, values, message):
    """`p50_work_us` held as text or lists reached `max()` before the cast: an internal error."""
    t = pq.read_table(stats / "procedures.parquet")
    i = t.schema.get_field_index("p50_work_us")
    pq.write_table(t.set_column(i, "p50_work_us", pa.array(values)), stats / "procedures.parquet")
    if message is None:
        assert read_statistics_arrow(stats)[0]["procedures"].column("p50_work_us").to_pylist() == [300.0] * 3
        return
    with pytest.raises(TraceError, match=re.escape(message)):
        read_statistics_arrow(stats)
    assert run_app(["recommend", str(stats), "--machines", "2"]) == 2
    assert message in one_error_line(capsys)


@pytest.mark.parametrize("value, shown", [(-5.0, "-5"), (float("nan"), "nan"), (float("-inf"), "-inf")])
def test_a_work_column_negative_or_nan_for_every_procedure_is_refused_not_read_as_untimed(stats, capsys, value,
                                                                                          shown):
    """Only zeros say nothing was timed: -5 (or NaN) for every SP passed `max() > 0` as untimed."""
    t = pq.read_table(stats / "procedures.parquet")
    i = t.schema.get_field_index("p50_work_us")
    pq.write_table(t.set_column(i, "p50_work_us", pa.array([value] * t.num_rows)), stats / "procedures.parquet")
    message = f"procedures.parquet: column 'p50_work_us', row 0: must be a finite number >= 0, got {shown}"
    with pytest.raises(TraceError, match=re.escape(message)):
        read_statistics_arrow(stats)
    assert run_app(["recommend", str(stats), "--machines", "2"]) == 2
    assert message in one_error_line(capsys)


def test_a_work_column_of_zeros_is_still_read_as_untimed(stats):
    t = pq.read_table(stats / "procedures.parquet")
    i = t.schema.get_field_index("p50_work_us")
    pq.write_table(t.set_column(i, "p50_work_us", pa.array([0.0] * t.num_rows)), stats / "procedures.parquet")
    assert read_statistics_arrow(stats)[0]["procedures"].column("p50_work_us").null_count == t.num_rows


def test_an_output_that_is_a_looping_link_beside_an_input_directory_is_one_line(stats, good_trace, tmp_path,
                                                                                 capsys):
    """With a statistics or trace directory among the inputs, the output was resolved to see
    whether it lies inside one: a link looping on itself raised RuntimeError, an internal error."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for command in (["recommend", str(stats), "--machines", "2", "--out", str(loop)],
                    ["tune", str(stats), "--machines", "2", "--rounds", "0", "--out", str(loop)],
                    ["trace", "aggregate", str(good_trace), "--out", str(loop), "--quiet"]):
        assert run_app(command) == 2, command
        assert "a symbolic link that loops" in one_error_line(capsys)
    assert loop.is_symlink()
