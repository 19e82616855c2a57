"""Statistics in a notebook: what a trace's manifest says is shown, never run."""
import pandas as pd

from traces.statistics import Statistics


def test_statistics_render_a_hostile_manifest_escaped_in_a_notebook():
    frame = pd.DataFrame({"name": ["<script>x</script>"]})
    stats = Statistics(frame, frame, frame, frame,
                       manifest={"granularity": "<img src=x onerror=alert(1)>", "batches": 3,
                                 "source_trace": "</b><script>alert(2)</script>"})
    out = stats._repr_html_()
    assert "<script>" not in out and "<img" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out and "&lt;script&gt;" in out


def test_statistics_of_no_path_is_one_trace_error_line():
    # `load_statistics(None)` was pathlib's TypeError ("expected str, bytes or os.PathLike
    # object, not NoneType"), naming neither the argument nor what it takes
    import pytest

    from reports.statistics_view import StatisticsView
    from traces import load_statistics
    from traces.errors import TraceError

    for load in (load_statistics, StatisticsView.load):
        for wrong in (None, 5):
            with pytest.raises(TraceError, match=f"^expected a file path, got {wrong}$"):
                load(wrong)


def _statistics(n: int) -> Statistics:
    """Statistics of `n` procedures, SP{i} costing i + 1 us a run (as the aggregate writes them)."""
    names = [f"SP{i}" for i in range(n)]
    procedures = pd.DataFrame({"procedure": names, "invocations": 500, "mean_cost_us": [i + 1.0 for i in range(n)],
                               "p95_cost_us": [i + 2.0 for i in range(n)], "abort_rate": 0.0})
    procedure_state = pd.DataFrame({"procedure": names, "state": [f"T{i}" for i in range(n)], "rows": 10})
    streams = pd.DataFrame({"from_procedure": names[:-1], "to_procedure": names[1:], "tuples": 5})
    state = pd.DataFrame({"state": [f"T{i}" for i in range(n)]})
    return Statistics(procedures, procedure_state, streams, state,
                      manifest={"workload": "w", "granularity": "table", "batches": 500, "procedures": names})


def test_statistics_print_as_one_line_naming_their_counts():
    # the dataclass's repr printed the four DataFrames and the manifest: 53 lines at 100 SPs
    from reports.statistics_view import StatisticsView

    for text in (repr(_statistics(100)), repr(StatisticsView(_statistics(100)))):
        assert "\n" not in text and len(text) < 300
        assert "100 procedures, 100 state items, 100 procedure-state edges, 99 stream edges" in text
        assert "500 batches" in text


def test_the_cost_figure_of_many_procedures_draws_the_costliest_at_a_readable_size():
    # at 100 procedures the figure was 62 in wide: a strip no label could be read in
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from reports.statistics_view import MAX_BARS, StatisticsView

    ax = StatisticsView(_statistics(100)).plot()
    drawn = [t.get_text() for t in ax.get_xticklabels()]
    assert drawn == [f"SP{i}" for i in range(99, 99 - MAX_BARS, -1)]  # the costliest, costliest first
    assert f"the {MAX_BARS} costliest of 100 procedures" in ax.get_title()
    assert ax.figure.get_size_inches()[0] <= 16
    small = StatisticsView(_statistics(5)).plot()
    assert [t.get_text() for t in small.get_xticklabels()] == [f"SP{i}" for i in range(5)]
    assert small.get_title().startswith("procedures in the trace")
    plt.close("all")
