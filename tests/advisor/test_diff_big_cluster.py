"""`diff` (and `check`) of designs on a big cluster within the limits: the renaming that keeps
state in place was solved on a machines x machines matrix, every machine renamed in turn, so
30,000 machines took 90 s and 7 GB and 100,000 were a MemoryError (an internal error)."""
from __future__ import annotations

import json

from advisor.cli import run_app


def _moved_to(design: dict, machine: int, per_machine: int) -> dict:
    """The design with what it places on partition p of machine 0 moved to that partition of
    `machine` (the same design, its machines named otherwise)."""
    def where(place: dict) -> dict:
        if "partition" not in place:
            return place
        p = place["partition"]
        return {"machine": machine, "partition": machine * per_machine + p % per_machine}
    out = {k: v for k, v in design.items() if k not in ("cost", "provenance")}
    for kind in ("procedures", "state"):
        out[kind] = {name: where(place) for name, place in design[kind].items()}
    return out


def test_a_design_renamed_on_100000_machines_is_aligned_back_with_nothing_moved(tmp_path, capsys):
    current = tmp_path / "current.json"
    assert run_app(["recommend", "bank-transfer", "--machines", "100000", "--partitions-per-machine", "2",
                    "--objective", "cost", "--out", str(current)]) == 0
    placed = json.loads(current.read_text())
    assert {p["machine"] for kind in ("procedures", "state") for p in placed[kind].values()} == {0}
    new = tmp_path / "new.json"
    new.write_text(json.dumps(_moved_to(placed, 77_777, 2)))
    capsys.readouterr()
    assert run_app(["diff", "--current", str(current), "-d", str(new), "bank-transfer", "--json"]) == 0
    out, err = capsys.readouterr()
    said = json.loads(out)
    assert err == "" and said["relabelled"] and said["bytes_moved"] == 0 and said["moves"] == []
    assert run_app(["diff", "--current", str(current), "-d", str(new), "bank-transfer", "--json",
                    "--no-relabel"]) == 0
    assert json.loads(capsys.readouterr().out)["bytes_moved"] > 0  # without the renaming, all of it moves
