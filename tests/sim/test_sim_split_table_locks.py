"""A table split into hash fragments and hot tuples over several partitions: the simulator
locks what the engine locks.

The engine locks, for every transaction of an SP, every partition holding a table the SP
declares (`engine/twophase.py`: a lane's transactions meet in the same lock queues, which is
how they commit in batch order), not only the partitions of the keys a batch draws. So a
split table makes its SP distributed on every batch, even on the batches whose keys all fall
on the SP's own partition. These tests run the engine and read its trace to show that, and
hold the simulator to the same count: a simulator that drew each batch's partitions from its
keys would predict single-sited batches the engine does not run."""
from __future__ import annotations

import pyarrow.dataset as ds
import pytest

from costmodel.design import Design
from costmodel.workload import Access, InputSpec, Procedure, Stream, Table, Workload
from engine_sim.engine import run_workload
from engine_sim.engine.row_routing import RowRouter
from engine_sim.sim import run_once

pytestmark = pytest.mark.integration

BATCHES = 40


def hot_writer() -> Workload:
    """Writer writes one Accounts row a batch, its keys zipf (key 0 takes most of them);
    Reader reads one uniform row of the same table."""
    tables = (Table("Accounts", 1000, 64, "id"), Table("Log", 1000, 64, "id"))
    procs = (Procedure("Reader", 1.0, (Access("Accounts", "read", 1),)),
             Procedure("Writer", 1.0, (Access("Accounts", "write", 1, keys="zipf:3"),
                                       Access("Log", "write", 1, keys="sequential"))))
    return Workload("split-locks", tables, procs, (Stream("Reader", "Writer", 10),),
                    input=InputSpec(batch_size=10))


def split_design(w: Workload) -> Design:
    """The hot tuple and fragment 0 with Writer on partition 1, fragment 1 on partition 0."""
    return Design(w.name, 2, 1, {"Reader": 0, "Writer": 1},
                  {"Accounts@0": 1, "Accounts#0": 1, "Accounts#1": 0, "Log": 1})


def key_partitions_per_txn(trace_dir, router: RowRouter, procedure: str) -> list[tuple[set[int], set[int]]]:
    """For each committed transaction of `procedure`: (partitions its keys live on, partitions
    it locked), read off the engine's trace."""
    txns = ds.dataset(f"{trace_dir}/txns", format="parquet").to_table().to_pylist()
    accesses = ds.dataset(f"{trace_dir}/accesses", format="parquet").to_table().to_pylist()
    keyed: dict[int, set[int]] = {}
    for a in accesses:
        if a["table"] == "Accounts":
            keyed.setdefault(a["txn_id"], set()).add(router.row_partition("Accounts", a["key"]))
    return [(keyed.get(t["txn_id"], set()), set(t["partitions"])) for t in txns
            if t["procedure"] == procedure and t["status"] == "commit"]


def test_a_split_table_makes_every_batch_distributed_on_the_engine_and_the_simulator(tmp_path):
    w = hot_writer()
    d = split_design(w)
    trace = tmp_path / "trace"
    engine = run_workload(w, d, batches=BATCHES, in_process=True, seed=3, trace_out=trace)
    assert engine.history_check == "ok"
    router = RowRouter({t.name: t.rows for t in w.tables}, d.state, d.n_partitions)
    writer = key_partitions_per_txn(trace, router, "Writer")
    assert len(writer) == BATCHES
    on_own = [keys for keys, _ in writer if keys == {1}]
    # most batches' keys fall on Writer's own partition alone, yet every one locked both
    assert len(on_own) > BATCHES // 2
    assert all(locked == {0, 1} for _, locked in writer)
    sim = run_once(w, d, in_flight=8, batches=BATCHES, seed=3)
    assert sim.procedures["Writer"]["distributed"] == BATCHES
    assert sim.procedures["Reader"]["distributed"] == BATCHES  # it reads both halves too
    assert sim.distributed_txns == engine.distributed_txns == 2 * BATCHES


def test_a_whole_table_on_the_sps_partition_stays_single_sited_on_both():
    w = hot_writer()
    d = Design(w.name, 2, 1, {"Reader": 0, "Writer": 1}, {"Accounts": 1, "Log": 1})
    engine = run_workload(w, d, batches=BATCHES, in_process=True, seed=3)
    sim = run_once(w, d, in_flight=8, batches=BATCHES, seed=3)
    assert engine.distributed_txns == sim.distributed_txns == BATCHES  # Reader's, every batch
    assert sim.procedures["Writer"]["distributed"] == 0


def test_the_split_tables_simulation_is_the_same_for_a_seed():
    w = hot_writer()
    d = split_design(w)
    first, again = (run_once(w, d, in_flight=8, batches=BATCHES, seed=5) for _ in range(2))
    assert first.throughput_tps == again.throughput_tps
    assert first.distributed_txns == again.distributed_txns
    assert first.partition_busy_s == again.partition_busy_s
