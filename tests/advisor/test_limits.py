"""Numbers too large for the search, the simulator or the engine to hold are refused up front
in one line naming the limit, never a MemoryError, an overflow or a hang."""
import json

import pytest

from advisor.cli import run_app
from costmodel.design import Design
from costmodel.errors import DesignError, SpecError
from costmodel.spec_reader import parse_workload
from advisor.sources import load_workload
from costmodel.spec_writer import workload_to_toml
from costmodel.workload import MAX_MACHINES, MAX_PARTITIONS, MAX_PARTITIONS_PER_MACHINE


def test_a_cluster_past_the_limits_is_refused():
    w = load_workload("tpcdi-trade")
    assert w.with_cluster(MAX_MACHINES, 1).cluster.machines == MAX_MACHINES
    with pytest.raises(SpecError, match="at most 1,000,000 machines, 4,096 partitions per machine"):
        w.with_cluster(MAX_MACHINES + 1)
    with pytest.raises(SpecError, match="4,096 partitions per machine"):
        w.with_cluster(4, MAX_PARTITIONS_PER_MACHINE + 1)
    with pytest.raises(SpecError, match="1,000,000 partitions in all"):
        w.with_cluster(MAX_PARTITIONS // 1000 + 1, 1000)


@pytest.mark.parametrize("argv", [
    ["recommend", "tpcdi-trade", "--machines", "100000000", "--objective", "cost"],
    ["recommend", "tpcdi-trade", "--machines", "4", "--partitions-per-machine", "100000000"],
])
def test_the_cli_refuses_a_huge_cluster_at_once(argv, capsys):
    assert run_app(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: a cluster has at most") and err.count("\n") == 1


def test_a_spec_table_too_large_is_refused():
    toml = workload_to_toml(load_workload("move-micro")).replace("rows = 10000", "rows = 10000000000000000", 1)
    with pytest.raises(SpecError, match="table 'T1': at most 1e\\+15 rows"):
        parse_workload(toml, "huge.toml")


def test_a_design_file_for_a_huge_cluster_is_refused(tmp_path):
    d = Design("move-micro", 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})
    data = json.loads(d.to_json())
    data["cluster"]["machines"] = 10**7
    with pytest.raises(DesignError, match="at most 1,000,000 machines"):
        Design.from_dict(data, "d.json")
