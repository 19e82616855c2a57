"""The arrays a design is scored on: a graph of processing and state, without names."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def _as(array, dtype) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(array, dtype=dtype))


@dataclass
class CostGraph:
    """Processing nodes 0..P-1 and state nodes 0..S-1 with their two kinds of edges.

    ps_*: processing-to-state edges (weight = rows accessed per batch, or access probability);
    pp_*: processing-to-processing edges (weight = tuples passed per batch).
    proc_group[i]: the nested transaction group of SP i (-1: none). A group is one
    transaction per batch, so a group split across machines makes every access of its SPs
    distributed (the cost model charges them all as cut).
    idle_capacity: capacities of further machines of the cluster that hold nothing (the
    search drops machines the workload cannot use; the load-balancing term still sees them).
    """

    proc_load: np.ndarray
    state_bytes: np.ndarray
    ps_proc: np.ndarray
    ps_state: np.ndarray
    ps_weight: np.ndarray
    ps_write: np.ndarray
    pp_src: np.ndarray
    pp_dst: np.ndarray
    pp_weight: np.ndarray
    machines: int = 1
    partitions_per_machine: int = 1
    capacity: np.ndarray = field(default=None)  # relative CPU capacity per machine
    memory_limit_bytes: float | None = None  # per machine
    proc_group: np.ndarray = field(default=None)
    idle_capacity: np.ndarray = field(default=None)
    state_owner: np.ndarray = field(default=None)  # owning SP of a state item (a window), else -1

    def __post_init__(self) -> None:
        self.proc_load = _as(self.proc_load, np.float64)
        self.state_bytes = _as(self.state_bytes, np.float64)
        self.ps_proc = _as(self.ps_proc, np.int64)
        self.ps_state = _as(self.ps_state, np.int64)
        self.ps_weight = _as(self.ps_weight, np.float64)
        self.ps_write = _as(self.ps_write, bool)
        self.pp_src = _as(self.pp_src, np.int64)
        self.pp_dst = _as(self.pp_dst, np.int64)
        self.pp_weight = _as(self.pp_weight, np.float64)
        if self.machines < 1 or self.partitions_per_machine < 1:
            raise ValueError("machines and partitions_per_machine must be >= 1")
        if self.capacity is None:
            self.capacity = np.ones(self.machines)
        self.capacity = _as(self.capacity, np.float64)
        if self.capacity.shape != (self.machines,):
            raise ValueError(
                f"capacity has {self.capacity.size} entries for {self.machines} machines"
            )
        if np.any(self.capacity <= 0):
            raise ValueError("machine capacities must be > 0")
        if self.proc_group is None:
            self.proc_group = np.full(self.proc_load.size, -1, dtype=np.int64)
        self.proc_group = _as(self.proc_group, np.int64)
        if self.proc_group.shape != self.proc_load.shape:
            raise ValueError(f"proc_group has {self.proc_group.size} entries for "
                             f"{self.proc_load.size} procedures")
        self.idle_capacity = _as(np.zeros(0) if self.idle_capacity is None
                                 else self.idle_capacity, np.float64)
        if np.any(self.idle_capacity <= 0):
            raise ValueError("machine capacities must be > 0")
        self.state_owner = _as(np.full(self.state_bytes.size, -1) if self.state_owner is None
                               else self.state_owner, np.int64)

    @property
    def has_groups(self) -> bool:
        return bool(self.proc_group.size) and bool((self.proc_group >= 0).any())

    @property
    def cluster_machines(self) -> int:
        """Machines of the whole cluster, the idle ones included."""
        return self.machines + int(self.idle_capacity.size)

    @property
    def n_proc(self) -> int:
        return int(self.proc_load.size)

    @property
    def n_state(self) -> int:
        return int(self.state_bytes.size)

    @property
    def n_partitions(self) -> int:
        return self.machines * self.partitions_per_machine

    def with_cluster(self, machines: int, partitions_per_machine: int,
                     capacity=None, memory_limit_bytes=None, idle_capacity=None) -> "CostGraph":
        return CostGraph(
            self.proc_load, self.state_bytes, self.ps_proc, self.ps_state, self.ps_weight,
            self.ps_write, self.pp_src, self.pp_dst, self.pp_weight, machines,
            partitions_per_machine, capacity, memory_limit_bytes, self.proc_group,
            idle_capacity, self.state_owner,
        )
