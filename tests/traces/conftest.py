"""Fixtures of the trace tests: one good synthetic trace, and a fresh copy of it per test to
break."""
import shutil

import pytest

from costmodel.workload import workload_as_plain
from traces.synth import synthesize


@pytest.fixture(scope="module")
def good_trace(tpcdi_trade, tmp_path_factory):
    out = tmp_path_factory.mktemp("good") / "trace"
    synthesize(workload_as_plain(tpcdi_trade), out, batches=30, seed=5)
    return out


@pytest.fixture
def trace(good_trace, tmp_path):
    """A copy of the good trace that the test may change."""
    copy = tmp_path / "trace"
    shutil.copytree(good_trace, copy)
    return copy
