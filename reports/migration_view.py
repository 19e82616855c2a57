"""The report's migration section: what moving the deployed design to this one takes."""
from __future__ import annotations

from advisor.migration import DesignDiff, place_label

MAX_MOVE_ROWS = 200  # a report lists at most this many moves (the diff's JSON has them all)


def migration_context(diff: DesignDiff | None, deployed_label: str = "the deployed design") -> dict | None:
    """Template data: the summary lines and one row per move (first MAX_MOVE_ROWS)."""
    if diff is None:
        return None
    rows = [{"kind": m.kind, "name": m.name, "from": place_label(m.from_partition, m.from_machine),
             "to": place_label(m.to_partition, m.to_machine),
             "mb": "-" if m.kind == "procedure" else f"{m.bytes / 1e6:,.3f}"}
            for m in diff.moves[:MAX_MOVE_ROWS]]
    return {"deployed": deployed_label, "summary": diff.summary(), "rows": rows,
            "more": max(len(diff.moves) - MAX_MOVE_ROWS, 0)}
