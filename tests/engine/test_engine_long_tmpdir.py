"""A long TMPDIR (a test runner's, a nested build directory): the kernel takes a Unix socket
path of at most 107 bytes, so the engine makes its socket directories (its own and
multiprocessing's) in /tmp, runs, and leaves nothing behind in either place. Where /tmp cannot
take them either, the run ends in one line that says to shorten TMPDIR."""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from costmodel import temp_dirs
from costmodel.design import Design
from costmodel.temp_dirs import TempDirError, socket_dir_base
from engine_sim.engine.transport import longest_socket_name

ADVISOR = [sys.executable, "-m", "advisor"]
PREFIXES = ("eng-", "engs-", "pymp-")


def _long_dir(tmp_path: Path) -> Path:
    folder = tmp_path / ("long-temporary-directory-" * 5)
    folder.mkdir()
    assert len(str(folder)) > temp_dirs.UNIX_SOCKET_PATH_MAX - 20  # no socket name fits under it
    return folder


def _owned_by(pid: int) -> list[Path]:
    found = []
    for folder in Path(temp_dirs.SHORT_TEMP_DIR).glob("*"):
        if folder.name.startswith(PREFIXES):
            try:
                if (folder / temp_dirs.OWNER_FILE).read_text().strip() == str(pid):
                    found.append(folder)
            except OSError:
                continue
    return found


def test_socket_directories_go_where_their_paths_fit(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", "/tmp")
    assert socket_dir_base("engs-", 11) == "/tmp"
    monkeypatch.setattr(tempfile, "tempdir", str(_long_dir(tmp_path)))
    assert socket_dir_base("engs-", 11) == temp_dirs.SHORT_TEMP_DIR
    monkeypatch.setattr(temp_dirs, "SHORT_TEMP_DIR", "/no/such/directory")
    with pytest.raises(TempDirError, match="set TMPDIR to a shorter directory"):
        socket_dir_base("engs-", 11)


def test_the_longest_socket_name_counts_every_partition():
    assert longest_socket_name(1) == len("driver.sock")
    assert longest_socket_name(12345) == len("p12344.sock")


@pytest.mark.process
def test_a_run_under_a_long_tmpdir_runs_and_leaves_nothing(tmp_path):
    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1}).save(tmp_path / "d.json")
    long_tmp = _long_dir(tmp_path)
    proc = subprocess.Popen([*ADVISOR, "run", "move-micro", "--design", str(design), "--batches", "200"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(long_tmp)})
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert re.search(r"history check\s+ok", out), out
    assert not [p.name for p in long_tmp.iterdir() if p.name.startswith(PREFIXES)]
    assert not _owned_by(proc.pid)


@pytest.mark.process
def test_no_place_for_the_sockets_is_one_error(tmp_path, monkeypatch):
    from advisor.sources import load_workload
    from engine_sim.engine import run_workload

    long_tmp = _long_dir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(long_tmp))
    monkeypatch.setattr(temp_dirs, "SHORT_TEMP_DIR", "/no/such/directory")
    design = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    with pytest.raises(TempDirError, match=str(long_tmp)):
        run_workload(load_workload("move-micro"), design, batches=20, in_process=False)
    assert not [p.name for p in long_tmp.iterdir() if p.name.startswith(PREFIXES)]
