"""Disk errors are user errors, on a real small disk: a tmpfs mounted for the test (root only;
skipped with the reason where mounting is not allowed). A full target is one line naming the
path and the errno, exit 1; a read-only one (a path the user gave that cannot be written) is
exit 2; either way no traceback, and the previous output is left as it was, with nothing
half-written beside it. A full temporary directory under the engine's logs ends the run the
same way, and the run leaves nothing in it."""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

ADVISOR = [sys.executable, "-m", "advisor"]


@contextlib.contextmanager
def small_disk(where: Path, size: str):
    """A tmpfs of `size` mounted at `where`, unmounted (lazily, if something holds it) after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)


def remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True, capture_output=True)


def fill(disk: Path) -> None:
    """Take every free byte of `disk` (one file, written until the disk refuses a single byte)."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        block = 1 << 16
        while block:
            try:
                os.write(fd, b"\0" * block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                block //= 2
    finally:
        os.close(fd)


def advisor(*args: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([*ADVISOR, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (hidden ones too) with its content."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_one_line(done: subprocess.CompletedProcess, code: int, path: Path, errno_name: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code, done.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert lines[0].startswith("error: ") and str(path) in lines[0] and f"({errno_name})" in lines[0], lines


@pytest.fixture
def disk(tmp_path):
    with small_disk(tmp_path / "disk", "1m") as where:
        yield where


def test_a_full_or_read_only_trace_target_keeps_the_previous_trace(disk):
    out = disk / "trace"
    first = advisor("trace", "synth", "move-micro", "-n", "20", "-o", str(out), "-q")
    assert first.returncode == 0, first.stderr
    fill(disk)
    before = snapshot(disk)
    done = advisor("trace", "synth", "tpcdi-trade", "-n", "2000", "-o", str(out), "-q")
    assert_one_line(done, 1, out, "ENOSPC")
    assert snapshot(disk) == before  # the old trace whole; no staging directory beside it
    (disk / "filler").unlink()
    remount_read_only(disk)
    done = advisor("trace", "synth", "tpcdi-trade", "-n", "20", "-o", str(out), "-q")
    assert_one_line(done, 2, out, "EROFS")
    assert snapshot(disk) == {k: v for k, v in before.items() if k != "filler"}


def test_a_full_or_read_only_design_target_keeps_the_previous_design(disk):
    out = disk / "design.json"
    out.write_text("the previous design\n")
    fill(disk)
    done = advisor("recommend", "move-micro", "--out", str(out))
    assert_one_line(done, 1, out, "ENOSPC")
    assert out.read_text() == "the previous design\n"
    assert sorted(p.name for p in disk.iterdir()) == ["design.json", "filler"]
    (disk / "filler").unlink()
    remount_read_only(disk)
    done = advisor("recommend", "move-micro", "--out", str(out))
    assert_one_line(done, 2, out, "EROFS")
    assert out.read_text() == "the previous design\n" and [p.name for p in disk.iterdir()] == ["design.json"]


def test_a_full_temporary_directory_ends_an_engine_run_in_one_line(tmp_path):
    """TMPDIR on a 256 KiB disk: the run's command logs and history fill it; the run ends in
    one line naming the file and ENOSPC, exit 1, and removes what it wrote there."""
    from costmodel.design import Design

    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1}).save(tmp_path / "d.json")
    with small_disk(tmp_path / "tmp", "256k") as tmp:
        done = advisor("run", "move-micro", "--design", str(design), "--batches", "20000",
                       env={"TMPDIR": str(tmp)})
        assert_one_line(done, 1, tmp, "ENOSPC")
        assert list(tmp.iterdir()) == []


@pytest.mark.slow
def test_a_full_command_log_directory_of_a_partition_is_one_line(tmp_path):
    """A partition process whose command log fills its disk: the driver ends the run with the
    partition's own line (the directory of the logs, the errno), not a second line of its own."""
    from costmodel.design import Design
    from advisor.sources import load_workload
    from engine_sim.engine import run_workload
    from engine_sim.engine.run_options import CommandLogOptions
    from engine_sim.engine.errors import EngineFailure

    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    with small_disk(tmp_path / "logs", "256k") as logs:
        with pytest.raises(EngineFailure) as failed:
            run_workload(load_workload("move-micro"), design, batches=20000, in_process=False,
                         command_log=CommandLogOptions(dir=logs / "run"))
    message = str(failed.value)
    assert failed.value.exit_code == 1 and "\n" not in message
    assert message.startswith("partition ") and str(logs / "run") in message and "(ENOSPC)" in message


@pytest.mark.slow
@pytest.mark.spark
def test_a_full_or_read_only_statistics_target_keeps_the_previous_statistics(disk, tmp_path):
    trace = tmp_path / "trace"
    assert advisor("trace", "synth", "move-micro", "-n", "30", "-o", str(trace), "-q").returncode == 0
    out = disk / "stats"
    first = advisor("trace", "aggregate", str(trace), "-o", str(out), "-q", timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    fill(disk)
    before = snapshot(disk)
    spark_tmp = tmp_path / f"tmp-{uuid.uuid4().hex[:6]}"
    spark_tmp.mkdir()
    done = advisor("trace", "aggregate", str(trace), "-o", str(out), "-q", "--granularity", "fragment:4",
                   env={"TMPDIR": str(spark_tmp)}, timeout=600)
    assert_one_line(done, 1, out, "ENOSPC")
    assert snapshot(disk) == before
    assert list(spark_tmp.iterdir()) == []  # the JVM's files went with it
    (disk / "filler").unlink()
    remount_read_only(disk)
    done = advisor("trace", "aggregate", str(trace), "-o", str(out), "-q", timeout=600)
    assert_one_line(done, 2, out, "EROFS")  # refused before Spark starts
    assert snapshot(disk) == {k: v for k, v in before.items() if k != "filler"}


@pytest.mark.slow
@pytest.mark.spark
def test_a_full_demo_directory_keeps_the_previous_demo(tmp_path):
    with small_disk(tmp_path / "disk", "4m") as disk:
        out = disk / "demo"
        first = advisor("demo", "-o", str(out), "--batches", "40", timeout=900)
        assert first.returncode in (0, 1) and (out / "demo.json").is_file(), first.stderr[-2000:]
        fill(disk)
        before = snapshot(disk)
        done = advisor("demo", "-o", str(out), "--batches", "40", timeout=900)
        assert_one_line(done, 1, out, "ENOSPC")
        assert snapshot(disk) == before
        shutil.rmtree(out)
