"""Writers of the same output folder at once, as two terminals or a cron job beside a user
run them: every publish succeeds, the last one wins whole, and nothing is left beside it."""
from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from costmodel.files import discard_dir, publish_dir, staging_dir

pytestmark = pytest.mark.process

MARKER = "_m.json"


def _publish_many(target: str, writer: int, times: int) -> list[str]:
    """Build and publish `target` `times` times; what went wrong, as text (nothing, ideally)."""
    failures = []
    for k in range(times):
        try:
            staged = staging_dir(target, MARKER)
        except Exception as exc:  # (any: the test reports what it was)
            failures.append(f"staging: {type(exc).__name__}: {exc}")
            continue
        (staged / MARKER).write_text(json.dumps([writer, k]))
        (staged / "data").write_text(f"{writer}:{k}")
        try:
            publish_dir(staged, target, MARKER)
        except Exception as exc:
            failures.append(f"publishing: {type(exc).__name__}: {exc}")
            discard_dir(staged)
    return failures


def test_four_processes_publishing_one_folder_all_succeed_and_the_last_wins_whole(tmp_path):
    """Before the lock, 4 processes x 100 publishes here failed 35 times: FileNotFoundError
    (an internal error), ENOTEMPTY, ENOENT, "exists and is not a directory", a record read
    half-written, and 15 `.old` folders left beside the output."""
    target = tmp_path / "out"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.starmap(_publish_many, [(str(target), writer, 40) for writer in range(4)])
    assert [failure for failures in results for failure in failures] == []
    writer, k = json.loads((target / MARKER).read_text())
    assert (target / "data").read_text() == f"{writer}:{k}"  # one writer's folder, whole
    assert os.listdir(tmp_path) == ["out"]
