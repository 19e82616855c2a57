"""A small windowed spec that several test modules share (not a test module): Ingest writes
Bids and feeds Trend, which owns the tuple window RecentBids over Ingest's output."""
from __future__ import annotations

RECENT_BIDS = """
name = "w"
[input]
batch_size = 10
[[tables]]
name = "Bids"
rows = 100
row_bytes = 10
key = "k"
[[procedures]]
name = "Ingest"
cost = 3.0
accesses = [ { table = "Bids", mode = "write", rows = 1 } ]
[[procedures]]
name = "Trend"
cost = 0.5
accesses = [ { table = "RecentBids", mode = "read", rows = 5 } ]
[[streams]]
from = "Ingest"
to = "Trend"
tuples = TUPLES
[[windows]]
name = "RecentBids"
procedure = "Trend"
size = SIZE
slide = SLIDE
"""


def recent_bids_spec(tuples: float = 4, size: float = 100, slide: float = 10) -> str:
    """The spec's TOML text: Ingest sends `tuples` per batch to Trend's window of `size`
    tuples sliding by `slide`."""
    return (RECENT_BIDS.replace("TUPLES", str(tuples)).replace("SIZE", str(size))
            .replace("SLIDE", str(slide)))
