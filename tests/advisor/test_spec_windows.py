"""Windows in the spec: a good one parses with its owner; every bad one gets one line naming
the window and the problem, exit status 2."""
import pytest

from advisor.cli import run_app
from costmodel.errors import SpecError
from costmodel.spec_reader import parse_workload
from window_specs import recent_bids_spec

SPEC = recent_bids_spec()


def test_window_parses_with_owner_and_memory():
    w = parse_workload(SPEC, "w.toml")
    win = w.window("RecentBids")
    assert (win.procedure, win.size, win.slide, win.kind, win.tuple_bytes) == ("Trend", 100, 10, "tuple", 32)
    assert w.windows_of("Trend") == (win,) and w.windows_of("Ingest") == ()
    assert w.window_bytes(win) == 100 * 32
    assert w.input_tuples("Trend") == 4 and w.input_tuples("Ingest") == 10
    assert not win.tumbling


def test_time_window_memory_from_rate_or_max_tuples():
    time_window = SPEC.replace("slide = 10", 'slide = 2\nkind = "time"').replace("size = 100", "size = 6")
    with pytest.raises(SpecError, match="needs max_tuples or an \\[input\\] rate"):
        parse_workload(time_window, "w.toml")
    w = parse_workload(time_window.replace("batch_size = 10", "batch_size = 10\nrate = 50"), "w.toml")
    assert w.window_tuples(w.windows[0]) == 6 * 50 * 4
    w = parse_workload(time_window.replace("slide = 2", "slide = 2\nmax_tuples = 500"), "w.toml")
    assert w.window_bytes(w.windows[0]) == 500 * 32


BAD = [
    (('procedure = "Trend"', 'procedure = "Nobody"'), "windows[0] 'RecentBids': unknown owner procedure 'Nobody'"),
    (("slide = 10", "slide = 0"), "windows[0] 'RecentBids': slide must be > 0 and <= size (100), got 0"),
    (("slide = 10", "slide = -5"), "windows[0] 'RecentBids': slide must be > 0 and <= size (100), got -5"),
    (("slide = 10", "slide = 101"), "windows[0] 'RecentBids': slide must be > 0 and <= size (100), got 101"),
    (('name = "RecentBids"', 'name = "Bids"'), "windows[0] 'Bids': window name 'Bids' clashes with a table"),
    (('mode = "write", rows = 1', 'mode = "write", rows = 1 }, { table = "RecentBids", mode = "read", rows = 1'),
     "procedures[0] 'Ingest'.accesses[1]: window 'RecentBids' is private to its owner 'Trend'"),
    (('table = "RecentBids", mode = "read"', 'table = "RecentBids", mode = "write"'),
     "window 'RecentBids': its owner inserts each batch's tuples itself"),
    (('slide = 10', 'slide = 10\nkind = "count"'), "kind must be 'tuple' or 'time'"),
    # a full window holds at most 1e15 tuples: size 1e300 s at rate 1e9 held infinitely many bytes
    (('slide = 10', 'slide = 1e300\nkind = "time"'), "holds inf tuples when full (size seconds x [input] rate"),
    (('size = 100', 'size = 10000000000000000'), "windows[0] 'RecentBids': holds 1e+16 tuples when full (its size)"),
    (('slide = 10', 'slide = 10\ntuple_bytes = 1000000001'), "tuple_bytes must be <= 1000000000"),
]


@pytest.mark.parametrize("change, expected", BAD)
def test_bad_window_names_the_problem(change, expected):
    text = SPEC.replace(*change)
    assert text != SPEC
    if "1e300" in text:  # a time window as long as that, its input at the highest rate
        text = text.replace("size = 100", "size = 1e300").replace("batch_size = 10", "batch_size = 10\nrate = 1e9")
    with pytest.raises(SpecError) as err:
        parse_workload(text, "w.toml")
    assert expected in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("change, expected", BAD[:6])
def test_cli_refuses_bad_window_with_one_line_exit_2(tmp_path, capsys, change, expected):
    bad = tmp_path / "bad.toml"
    bad.write_text(SPEC.replace(*change))
    assert run_app(["recommend", str(bad), "--out", str(tmp_path / "d.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and expected in err and "Traceback" not in err
    assert not (tmp_path / "d.json").exists()
