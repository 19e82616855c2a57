"""A command's summary names at most 16 partitions or machines on a line, and how many more
(`--json` has every one): a line per partition was 2,000 characters at 100 partitions."""
from __future__ import annotations

import pytest

from costmodel.text import PER_PART_SHOWN, first_of
from engine_sim.engine.metrics import RunResult
from engine_sim.sim.result import SimResult



def test_first_of_names_the_first_and_counts_the_rest():
    items = [f"p{i}" for i in range(20)]
    assert first_of(items[:PER_PART_SHOWN]) == ", ".join(items[:PER_PART_SHOWN])
    assert first_of(items) == ", ".join(items[:16]) + ", ... (4 more; --json has every one)"
    assert first_of(items, " ", shown=2) == "p0 p1 ... (18 more; --json has every one)"


@pytest.mark.parametrize("parts", [4, 100])
def test_a_run_summary_names_at_most_16_partitions_a_line(parts):
    r = RunResult(1000.0, 100.0, 1.0, 2.0, 0, 0, "ok", "d", 10, 0, 0, [0.25] * parts, 2.0,
                  partition_held_s=[0.5] * parts, machines=parts)
    lines = {line.split("  ")[0]: line for line in r.describe()}
    for label in ("partition busy", "partition held"):
        assert lines[label].count(" p") == min(parts, PER_PART_SHOWN)
        assert ("(84 more; --json has every one)" in lines[label]) == (parts == 100)


def test_a_simulation_summary_names_at_most_16_machines():
    r = SimResult(1000.0, 100.0, 1.0, 2.0, 0, 0, [0.5] * 40, machine_utilisation=[0.5] * 40, machines=40,
                  batches=10, input_rate=100.0)
    line = next(x for x in r.describe() if "machine utilisation" in x)
    assert line.count(":50%") == PER_PART_SHOWN and "(24 more; --json has every one)" in line
