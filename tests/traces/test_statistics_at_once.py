"""Statistics read while another command publishes the same directory (`recommend stats/`
beside a cron job's `trace aggregate --out stats/`): every read is one version whole."""
from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path

import pytest

from costmodel.files import publish_dir, staging_dir
from folder_locks import parent_is_locked

pytestmark = pytest.mark.process


def _statistics(path: Path, workload: str, procedures: tuple[str, str]) -> Path:
    """A hand-written statistics directory: two SPs in a chain, a table each."""
    import pandas as pd

    from traces.statistics import TABLES, Statistics, write_statistics

    def frame(name, rows):
        schema = TABLES[name]
        filled = [{f.name: row.get(f.name, "" if str(f.type) == "string" else 0) for f in schema}
                  for row in rows]
        return pd.DataFrame(filled, columns=schema.names)

    first, second = procedures
    procs = frame("procedures", [{"procedure": p, "invocations": 10, "commits": 10, "mean_cost_us": 300.0,
                                  "p50_cost_us": 300.0} for p in procedures])
    ps = frame("procedure_state", [{"procedure": p, "state": f"T{p}", "table": f"T{p}", "read_rows": 10,
                                    "write_rows": 5} for p in procedures])
    streams = frame("streams", [{"from_procedure": first, "to_procedure": second, "tuples": 100}])
    state = frame("state", [{"state": f"T{p}", "table": f"T{p}", "kind": "table", "fragment": -1,
                             "read_rows": 10, "write_rows": 5, "estimated_bytes": 1000.0} for p in procedures])
    state["key"] = None
    manifest = {"workload": workload, "batches": 10, "nested": [],
                "cluster": {"machines": 2, "partitions_per_machine": 1}}
    return write_statistics(Statistics(procs, ps, streams, state, manifest), path)


def _publish_until(sources: list[str], target: str, stop) -> None:
    """Publish copies of `sources` in turn at `target` until `stop` is set."""
    k = 0
    while not stop.is_set():
        staged = staging_dir(target, "_stats.json")
        for file in Path(sources[k % len(sources)]).iterdir():
            if not file.name.startswith("."):
                shutil.copy(file, staged / file.name)
        publish_dir(staged, target, "_stats.json")
        k += 1


@pytest.fixture
def two_versions(tmp_path):
    return (_statistics(tmp_path / "a", "first", ("A1", "A2")),
            _statistics(tmp_path / "b", "second", ("B1", "B2")))


def test_statistics_are_read_under_a_lock_that_publishing_waits_for(tmp_path, two_versions, monkeypatch):
    from traces import statistics

    held = []
    digest_file = statistics._digest_file

    def probing(digest, file):
        held.append(parent_is_locked(file.parent))
        digest_file(digest, file)

    monkeypatch.setattr(statistics, "_digest_file", probing)
    statistics.read_statistics_arrow(two_versions[0])
    assert held == [True] * 4  # every table read while no publisher could rename


def test_recommend_reads_one_version_whole_while_another_process_publishes(tmp_path, two_versions):
    """Before the lock, 88 `recommend live/` here beside a loop publishing two statistics
    there: 4 wrote a design of one version's SPs under the other's workload name (exit 0), 60
    said a table was missing, not Parquet, or named SPs the other tables lacked."""
    from advisor import load_workload

    live = tmp_path / "live"
    shutil.copytree(two_versions[0], live)
    whole = {("first", ("A1", "A2")), ("second", ("B1", "B2"))}
    context = multiprocessing.get_context("fork")
    stop = context.Event()
    writer = context.Process(target=_publish_until, args=([str(p) for p in two_versions], str(live), stop))
    writer.start()
    try:
        seen = []
        for _ in range(40):
            try:
                workload = load_workload(live)
                seen.append((workload.name, tuple(p.name for p in workload.procedures)))
            except Exception as exc:  # (any: the test reports what it was)
                seen.append(f"{type(exc).__name__}: {exc}")
    finally:
        stop.set()
        writer.join(30)
        if writer.is_alive():
            writer.kill()
    assert writer.exitcode == 0
    assert [read for read in seen if read not in whole] == []  # (which it met: timing; each whole)
