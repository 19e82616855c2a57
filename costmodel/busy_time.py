"""A fast analytical estimate of a design's throughput: each partition's and each machine's
busy time per batch, priced in seconds, and the batch rate the busiest one allows.

Why: the alpha/beta/gamma cost is what METIS cuts and what the dissertation reports, but it
charges a remote access or a MOVE to nobody, so it cannot tell which of two designs runs
faster when the bottleneck is a partition that holds state others reach. This estimate
charges work where the engine does it, as the simulator prices it:

- an SP's own transaction on its base partition (fixed overhead, its work, its tuples in and
  out, the rows it reads and writes locally);
- a distributed transaction (an SP reaching state on other partitions, or a replicated table
  it writes) holds its base partition and every participant from the lock to the commit: the
  body, the remote work, a round trip for the locks and one for prepare and vote, the commit;
- a MOVE between machines costs its sender's and its receiver's coordinator the message and
  the (de)serialisation of its bytes; every transaction costs its machine's coordinator the
  scheduling and the commit notification.

Nothing queues in this estimate (no contention, no latency bound), so it is an upper bound of
the simulator's throughput that ranks designs, not a prediction of the engine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodel.model import REPLICATED
from costmodel.problem import CostGraph

DEFAULT_TUPLE_BYTES = 64.0  # bytes of a stream tuple when the graph does not say


@dataclass(frozen=True)
class BusyPrices:
    """Seconds of partition or coordinator time per unit of work (the simulator's prices)."""

    txn_s: float = 50e-6
    cost_unit_s: float = 100e-6
    row_read_s: float = 0.5e-6
    row_write_s: float = 1e-6
    tuple_in_s: float = 0.3e-6
    tuple_out_s: float = 0.5e-6
    fragment_s: float = 15e-6
    prepare_s: float = 10e-6
    commit_s: float = 10e-6
    msg_cpu_s: float = 1.5e-6
    local_msg_cpu_s: float = 0.3e-6
    latency_s: float = 100e-6
    local_latency_s: float = 5e-6
    ser_byte_s: float = 0.5e-9
    sched_s: float = 3e-6
    ack_s: float = 1e-6
    tuple_bytes: float = DEFAULT_TUPLE_BYTES

    @classmethod
    def from_params(cls, params) -> "BusyPrices":
        """The prices of a simulator's parameters (an engine_sim SimParams, read by name)."""
        return cls(
            txn_s=params.txn_overhead_s + params.txn_after_commit_s, cost_unit_s=params.cost_unit_s,
            row_read_s=params.row_read_s, row_write_s=params.row_write_s, tuple_in_s=params.tuple_in_s,
            tuple_out_s=params.tuple_out_s, fragment_s=params.fragment_s, prepare_s=params.prepare_s,
            commit_s=params.commit_s, msg_cpu_s=params.msg_cpu_s, local_msg_cpu_s=params.local_msg_cpu_s,
            latency_s=params.net_latency_s, local_latency_s=params.local_latency_s,
            ser_byte_s=params.ser_byte_s, sched_s=params.sched_s, ack_s=params.ack_s)


@dataclass
class BusyTime:
    """Busy seconds per batch of every partition and of every machine's coordinator."""

    partition: np.ndarray
    coordinator: np.ndarray
    batch_size: int

    @property
    def bottleneck_s(self) -> float:
        return float(max(self.partition.max(initial=0.0), self.coordinator.max(initial=0.0)))

    @property
    def throughput_tps(self) -> float:
        """Tuples per second the busiest partition or coordinator allows."""
        b = self.bottleneck_s
        return float("inf") if b <= 0 else self.batch_size / b

    @property
    def bottleneck(self) -> str:
        p, c = int(np.argmax(self.partition)), int(np.argmax(self.coordinator))
        if self.partition[p] >= self.coordinator[c]:
            return f"partition {p}"
        return f"coordinator of machine {c}"


def busy_time(graph: CostGraph, proc_part, state_part, prices: BusyPrices = BusyPrices(),
              batch_size: int = 10) -> BusyTime:
    """The busy time per batch of each partition and machine under a design (global partition
    arrays in the graph's node order; REPLICATED state is on every partition)."""
    proc_part = np.asarray(proc_part, dtype=np.int64)
    state_part = np.asarray(state_part, dtype=np.int64)
    ppm = graph.partitions_per_machine
    n_parts = graph.machines * ppm
    P = prices
    busy = np.zeros(n_parts)
    coord = np.zeros(graph.machines)

    # tuples in and out of each SP, and the MOVEs that cross machines
    tuples_in = np.bincount(graph.pp_dst, weights=graph.pp_weight, minlength=graph.n_proc)
    tuples_out = np.bincount(graph.pp_src, weights=graph.pp_weight, minlength=graph.n_proc)
    src_m, dst_m = proc_part[graph.pp_src] // ppm, proc_part[graph.pp_dst] // ppm
    remote_move = src_m != dst_m
    move_s = np.where(remote_move, P.msg_cpu_s + graph.pp_weight * P.tuple_bytes * P.ser_byte_s,
                      P.local_msg_cpu_s)
    np.add.at(coord, src_m, move_s)
    np.add.at(coord, dst_m, move_s)
    # every transaction: scheduled and acknowledged on its machine's coordinator
    np.add.at(coord, proc_part // ppm, P.sched_s + P.ack_s)

    # each access: where it runs, and the partitions a transaction reaches beyond its own
    e_proc, e_state = graph.ps_proc, graph.ps_state
    rows = graph.ps_weight
    row_s = rows * np.where(graph.ps_write, P.row_write_s, P.row_read_s)
    where = state_part[e_state]
    base = proc_part[e_proc]
    replicated = where == REPLICATED
    local = (where == base) | (replicated & ~graph.ps_write)
    exec_s = (P.txn_s + graph.proc_load * P.cost_unit_s + tuples_in * P.tuple_in_s
              + tuples_out * P.tuple_out_s)
    exec_s += np.bincount(e_proc[local], weights=row_s[local], minlength=graph.n_proc)

    # participants: (SP, partition) pairs other than its base; a replicated write reaches all
    remote = ~local & ~replicated
    pairs = [e_proc[remote] * n_parts + where[remote]]
    rep_w = np.flatnonzero(replicated & graph.ps_write)
    if rep_w.size:
        every = np.arange(n_parts)
        pairs.append((e_proc[rep_w][:, None] * n_parts + every[None, :]).ravel())
    groups = graph.proc_group
    if graph.has_groups:  # a group is one transaction: its members' partitions take part
        for g in np.unique(groups[groups >= 0]):
            members = np.flatnonzero(groups == g)
            parts = np.unique(proc_part[members])
            if parts.size > 1:
                pairs.append((members[:, None] * n_parts + parts[None, :]).ravel())
    pairs = np.unique(np.concatenate(pairs)) if pairs else np.zeros(0, dtype=np.int64)
    pair_proc, pair_part = pairs // n_parts, pairs % n_parts
    keep = pair_part != proc_part[pair_proc]
    pair_proc, pair_part = pair_proc[keep], pair_part[keep]
    n_remote = np.bincount(pair_proc, minlength=graph.n_proc)
    cross = np.zeros(graph.n_proc, dtype=bool)
    cross[pair_proc[pair_part // ppm != proc_part[pair_proc] // ppm]] = True

    # remote rows run on their holders inside the hold; the hold adds two round trips and 2PC
    remote_rows = np.bincount(e_proc[remote], weights=row_s[remote], minlength=graph.n_proc)
    rtt = np.where(cross, 2 * P.latency_s + 4 * P.msg_cpu_s, 2 * P.local_latency_s + 4 * P.local_msg_cpu_s)
    hold = exec_s + remote_rows + 2 * (rtt + P.fragment_s) + P.prepare_s + P.commit_s
    dist = n_remote > 0
    per_txn = np.where(dist, hold, exec_s)
    np.add.at(busy, proc_part, per_txn)
    np.add.at(busy, pair_part, hold[pair_proc])  # a participant is held as long as the base
    np.add.at(coord, proc_part // ppm, np.where(dist, 4 * n_remote * P.msg_cpu_s, 0.0))
    return BusyTime(busy, coord, batch_size)
