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
