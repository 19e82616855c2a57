"""The designs of the dissertation's four distributed experiments (section 4.6), built by
hand as the paper describes them: the chain over the cluster, the procedure-boundaries
tables in contiguous runs, the MOVE pair on two machines and the TPC-DI table groups.

The experiments themselves (`scenarios.py`) run them; tests and benchmarks use them where a
known, simple design of these workloads is what they need.
"""
from __future__ import annotations

from costmodel.design import Design
from costmodel.workload import Workload


def chain_design(workload: Workload, machines: int, partitions_per_machine: int = 4) -> Design:
    """SP i and its table on partition i*n/32: tables spread evenly, schedulers with them."""
    n = machines * partitions_per_machine
    order = workload.topological_order()
    procs = {p: i * n // len(order) for i, p in enumerate(order)}
    state = {a.table: procs[p] for p in order for a in workload.procedure(p).accesses}
    return Design(workload.name, machines, partitions_per_machine, procs, state, method="chain")


def tables_then_procedures(workload: Workload, table_partition: dict[str, int], machines: int,
                           partitions_per_machine: int) -> Design:
    """Tables where given; each SP on the partition of the first table it touches."""
    procs = {p.name: table_partition[p.accesses[0].table] for p in workload.procedures}
    return Design(workload.name, machines, partitions_per_machine, procs, dict(table_partition))


def boundaries_design(workload: Workload, partitions: int) -> Design:
    """Tables T1..T16 in contiguous runs over `partitions` partitions; those partitions
    spread evenly over 4 machines (one machine when there is a single partition)."""
    machines = 1 if partitions == 1 else 4
    ppm = partitions // machines
    tables = [f"T{i + 1}" for i in range(16)]
    table_partition = {t: i * partitions // len(tables) for i, t in enumerate(tables)}
    return tables_then_procedures(workload, table_partition, machines, ppm)


def move_design(workload: Workload) -> Design:
    """SP1 with T1 on machine 0, SP2 with T2 on machine 1."""
    return Design(workload.name, 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})


TPCDI_TABLES = {"DimDate": 0, "DimTime": 0, "StatusType": 0, "TradeType": 0,
                "DimSecurity": 1, "DimAccount": 2, "DimTrade": 3}


def tpcdi_design(workload: Workload, machines: int) -> Design:
    """Each table group on its own partition (4 partitions on 1 machine, or 1 on each of 4);
    each SP with its tables; the single big SP on partition 0."""
    return tables_then_procedures(workload, TPCDI_TABLES, machines, 4 // machines)
