"""The `unit` tier is what it says: conftest gives these tests the marker, and a unit test
that starts a process fails."""
from __future__ import annotations

import multiprocessing
import subprocess
import sys

import pytest


def test_this_module_is_in_the_unit_tier(request):
    assert request.node.get_closest_marker("unit") is not None


def test_a_unit_test_cannot_start_a_subprocess():
    with pytest.raises(AssertionError, match="a unit test started a subprocess"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_a_unit_test_cannot_start_a_multiprocessing_process():
    with pytest.raises(AssertionError, match="a unit test started a multiprocessing process"):
        multiprocessing.get_context("spawn").Process(target=print).start()


@pytest.mark.process
def test_a_test_marked_process_may_start_one():
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
