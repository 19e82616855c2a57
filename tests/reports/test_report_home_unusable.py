"""`advisor report` where HOME cannot hold matplotlib's directory (a service account's missing
or read-only HOME): the report is written and nothing but the command's own lines is said.
matplotlib then works from a temporary directory of its own, as it should, but said so in two
lines on every drawing command."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration  # runs the CLI in a process of its own


def report(tmp_path, **env):
    """`python -m advisor report` of move-micro's recommendation, HOME under a plain file (no
    directory can be made there, even by root); (exit status, stderr)."""
    (tmp_path / "file").write_text("")
    design = tmp_path / "mm.json"
    run = dict(os.environ, HOME=str(tmp_path / "file" / "home"), ADVISOR_CACHE_DIR="off", **env)
    for key in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        if key not in env:
            run.pop(key, None)
    for argv in (["recommend", "move-micro", "--out", str(design)],
                 ["report", "-d", str(design), "move-micro", "--out", str(tmp_path / "r.html")]):
        proc = subprocess.run([sys.executable, "-m", "advisor", *argv], capture_output=True, text=True,
                              timeout=300, env=run)
    assert (tmp_path / "r.html").stat().st_size > 0
    return proc.returncode, proc.stderr


def test_matplotlibs_own_lines_about_an_unusable_home_are_left_out(tmp_path):
    code, err = report(tmp_path)
    assert code == 0, err
    assert "matplotlib" not in err.lower() and "MPLCONFIGDIR" not in err
    assert all(line.startswith("report: ") for line in err.strip().splitlines())  # its progress only


def test_a_mplconfigdir_the_user_set_that_cannot_be_used_is_still_said(tmp_path):
    # theirs to mend: matplotlib's lines stay (what the test above would see without the fix)
    code, err = report(tmp_path, MPLCONFIGDIR=str(tmp_path / "file" / "mpl"))
    assert code == 0, err
    assert "Matplotlib created a temporary cache directory" in err
