"""A fast analytical estimate of a design's throughput: each partition's and each machine's
busy time per batch, priced in seconds, and the batch rate the busiest one allows.

Why: the alpha/beta/gamma cost is what METIS cuts and what the dissertation reports, but it
charges a remote access or a MOVE to nobody, so it cannot tell which of two designs runs
faster when the bottleneck is a partition that holds state others reach. This estimate
charges work where the engine does it, as the simulator prices it:

- a transaction is an SP, or a nested group of SPs (one transaction whose body runs on the
  partition of its first member); its body on that base partition: fixed overhead, its work,
  its tuples in and out, the rows it reads and writes locally, window maintenance;
- a distributed transaction (state on other partitions, a member elsewhere, a replicated
  table written) takes its locks one partition after another in ascending order, each a
  round trip that carries a declared SP's remote work; then its body, one fragment round per
  member with remote work (a group or code), prepare and vote, and the commit. Every
  partition it locks is held from its lock to the commit, so a partition locked early is
  held for every later lock's round trip as well;
- every message costs its sender's and its receiver's machine the message handling (a MOVE
  between machines also the (de)serialisation of its bytes, and its time on the sender's
  outgoing link), and every transaction costs its machine the scheduling and the commit
  notification;
- a distributed transaction that waits for a later lock holds its earlier partitions meanwhile
  (`costmodel.lock_waits`): first-order lock waits, priced at the rate the design sustains.

Beyond those waits nothing queues here (no latency bound, no queue of several waiters), so it
is close to an upper bound of the simulator's throughput that ranks designs, not a prediction of
the engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from costmodel.arrays import OrderedSums, sorted_unique, unique_and_positions
from costmodel.lock_waits import LockSuffixes, hold_with_lock_waits
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
    bandwidth_Bps: float = float("inf")  # a machine's outgoing link (inf: no link is ever busy)

    @property
    def remote_rtt_s(self) -> float:
        """A request and its reply between machines: two messages, each handled at both ends."""
        return 2 * self.latency_s + 4 * self.msg_cpu_s

    @property
    def local_rtt_s(self) -> float:
        return 2 * self.local_latency_s + 4 * self.local_msg_cpu_s

    @classmethod
    def from_params(cls, params) -> "BusyPrices":
        """The prices of a simulator's parameters (an engine_sim SimParams, read by name)."""
        return cls(
            txn_s=params.txn_overhead_s + params.txn_after_commit_s, cost_unit_s=params.cost_unit_s,
            row_read_s=params.row_read_s, row_write_s=params.row_write_s, tuple_in_s=params.tuple_in_s,
            tuple_out_s=params.tuple_out_s, fragment_s=params.fragment_s, prepare_s=params.prepare_s,
            commit_s=params.commit_s, msg_cpu_s=params.msg_cpu_s, local_msg_cpu_s=params.local_msg_cpu_s,
            latency_s=params.net_latency_s, local_latency_s=params.local_latency_s,
            ser_byte_s=params.ser_byte_s, sched_s=params.sched_s, ack_s=params.ack_s,
            bandwidth_Bps=params.bandwidth_Bps)


@dataclass
class BusyTime:
    """Busy seconds per batch of every partition and of every machine's coordinator (never
    changed once made: a climb reads each one's bottleneck many times)."""

    partition: np.ndarray
    coordinator: np.ndarray
    batch_size: int
    link: np.ndarray | None = None  # busy seconds per batch of each machine's outgoing link

    @cached_property
    def bottleneck_s(self) -> float:
        link = 0.0 if self.link is None else self.link.max(initial=0.0)
        return float(max(self.partition.max(initial=0.0), self.coordinator.max(initial=0.0), link))

    @classmethod
    def each(cls, partition: np.ndarray, coordinator: np.ndarray, batch_size: int,
             link: np.ndarray) -> list["BusyTime"]:
        """A BusyTime for each row (design) of `busy_times`' arrays, its `bottleneck_s` found for
        all rows at once (the same value: a maximum is exact in any order). Why: a climb reads
        the bottleneck of every design it prices, and three reductions per design were 3 % of
        `recommend` on 150 SPs."""
        rows = partition.max(axis=1, initial=0.0).tolist()
        coordinators = coordinator.max(axis=1, initial=0.0).tolist()
        links = link.max(axis=1, initial=0.0).tolist()
        out = []
        for part, coord, sent, p, c, s in zip(partition, coordinator, link, rows, coordinators, links):
            busy = cls(part, coord, batch_size, sent)
            busy.__dict__["bottleneck_s"] = float(max(p, c, s))  # what the cached property keeps
            out.append(busy)
        return out

    @property
    def throughput_tps(self) -> float:
        """Tuples per second the busiest partition or coordinator allows."""
        b = self.bottleneck_s
        return float("inf") if b <= 0 else self.batch_size / b

    @property
    def bottleneck(self) -> str:
        p, c = int(np.argmax(self.partition)), int(np.argmax(self.coordinator))
        if self.link is not None and self.link.size and self.link.max() > max(self.partition[p], self.coordinator[c]):
            return f"network link of machine {int(np.argmax(self.link))}"
        if self.partition[p] >= self.coordinator[c]:
            return f"partition {p}"
        return f"coordinator of machine {c}"


@dataclass(frozen=True)
class SpTraits:
    """What the graph does not say about each SP and the estimate needs (from the workload):

    work_s: its own work per batch in seconds (declared cost priced at the workload's cost
    unit, window maintenance; an SP running code is charged none, as the simulator does);
    code: runs code, so its remote work goes in fragment rounds after the locks, and a
    replicated table it reads is locked everywhere;
    rank: its place in the dataflow's topological order (a group's first member is its base).
    """

    work_s: np.ndarray
    code: np.ndarray
    rank: np.ndarray
    # tuples a batch brings an SP no stream feeds (its input batch; None: none counted), and
    # each stream edge's bytes a batch in the graph's edge order (None: the default tuple size)
    input_tuples: np.ndarray | None = None
    edge_bytes: np.ndarray | None = None
    # each state access edge's chance to happen in a batch (any of its declared accesses), in
    # the graph's edge order (None: every one, every batch)
    presence: np.ndarray | None = None

    @classmethod
    def declared(cls, graph: CostGraph, prices: "BusyPrices") -> "SpTraits":
        """Every SP declared (no code), priced at the default cost unit, in graph order."""
        n = graph.n_proc
        return cls(graph.proc_load * prices.cost_unit_s, np.zeros(n, dtype=bool), np.arange(n))


@dataclass(frozen=True)
class BusyInputs:
    """What `busy_time` needs of a workload that no design changes (built once per graph,
    prices and traits: a search prices thousands of designs of one graph)."""

    unit: np.ndarray  # each SP's transaction: itself, or its nested group's first member
    is_unit: np.ndarray
    shipped: np.ndarray  # a declared lone SP ships its remote work with its lock requests
    inner: np.ndarray  # a stream edge inside one transaction (no MOVE)
    move_cross_s: np.ndarray  # a MOVE's cost at each end when it crosses machines
    link_s: np.ndarray  # a MOVE's time on its sender's outgoing link when it crosses machines
    owned: np.ndarray  # an access to owned state (a window): always its owner's, local
    e_unit: np.ndarray  # each access's transaction
    row_s: np.ndarray  # each access's rows, priced
    locks_everywhere: np.ndarray  # an access that locks every partition when its table is replicated
    body_s: np.ndarray  # each transaction's body before its local rows
    commit_msg_s: np.ndarray  # the commit notification to its scheduler
    log_absent: np.ndarray  # each access's log chance of not happening in a batch (-inf: always)
    # precomputed per graph, so that a call of `busy_times` does not build them per design:
    any_owned: bool = False  # some access is to owned state (else `where` is the state's partition)
    e_fragment: np.ndarray | None = None  # an access whose transaction runs fragment rounds (`of` sets it)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)  # arrays built at a first call

    def tiled_units(self, n_designs: int, n_proc: int) -> np.ndarray:
        """Each access's transaction keyed by design, design * n_proc + transaction, for
        `n_designs` rows (flat, designs x accesses). Why: the same for every call with as many
        designs or fewer, so built once for the most designs seen and sliced (row d of it is
        design d's whatever the count); it keeps one such array, as large as a call made."""
        have = self._cache.get("e_unit")
        if have is None or have.shape[0] < n_designs:
            have = np.arange(n_designs)[:, None] * n_proc + self.e_unit
            self._cache["e_unit"] = have
        return have[:n_designs].ravel()

    @classmethod
    def of(cls, graph: CostGraph, prices: BusyPrices, traits: SpTraits) -> BusyInputs:
        P, n_proc = prices, graph.n_proc
        unit = np.arange(n_proc)
        if graph.has_groups:
            groups = graph.proc_group
            for g in sorted_unique(groups[groups >= 0]):
                members = np.flatnonzero(groups == g)
                unit[members] = members[np.argmin(traits.rank[members])]
        n_members = np.bincount(unit, minlength=n_proc)
        inner = unit[graph.pp_src] == unit[graph.pp_dst]
        w_edge = np.where(inner, 0.0, graph.pp_weight)
        tuples_in = np.bincount(unit[graph.pp_dst], weights=w_edge, minlength=n_proc)
        tuples_out = np.bincount(unit[graph.pp_src], weights=w_edge, minlength=n_proc)
        if traits.input_tuples is not None:  # a source's input batch, as the simulator charges it
            tuples_in = tuples_in + np.bincount(unit, weights=traits.input_tuples, minlength=n_proc)
        edge_bytes = graph.pp_weight * P.tuple_bytes if traits.edge_bytes is None else traits.edge_bytes
        is_unit = unit == np.arange(n_proc)
        e_proc, e_state = graph.ps_proc, graph.ps_state
        owned = graph.state_owner[e_state] >= 0 if graph.has_owned_state else np.zeros(e_proc.size, bool)
        body = P.txn_s + traits.work_s + tuples_in * P.tuple_in_s + tuples_out * P.tuple_out_s
        return cls(
            unit=unit, is_unit=is_unit, shipped=(n_members == 1) & ~traits.code, inner=inner,
            move_cross_s=P.msg_cpu_s + edge_bytes * P.ser_byte_s, link_s=edge_bytes / P.bandwidth_Bps,
            owned=owned, e_unit=unit[e_proc],
            row_s=np.where(owned, 0.0, graph.ps_weight * np.where(graph.ps_write, P.row_write_s, P.row_read_s)),
            locks_everywhere=graph.ps_write | traits.code[e_proc],
            body_s=np.bincount(unit, weights=body - np.where(is_unit, 0.0, P.txn_s), minlength=n_proc),
            commit_msg_s=P.local_msg_cpu_s * is_unit, log_absent=_log_absent(traits.presence, e_proc.size),
            any_owned=bool(owned.any()), e_fragment=~((n_members == 1) & ~traits.code)[unit[e_proc]])


def _log_absent(presence: np.ndarray | None, n_edges: int) -> np.ndarray:
    if presence is None:
        return np.full(n_edges, -np.inf)
    with np.errstate(divide="ignore"):
        return np.log1p(-np.clip(np.asarray(presence, dtype=float), 0.0, 1.0))


def busy_time(graph: CostGraph, proc_part, state_part, prices: BusyPrices = BusyPrices(),
              batch_size: int = 10, traits: SpTraits | None = None, lock_waits: bool = True,
              inputs: BusyInputs | None = None) -> BusyTime:
    """The busy time per batch of each partition and machine under a design (global partition
    arrays in the graph's node order; REPLICATED state is on every partition; owned state, a
    window, is on its owner's partition whatever the array says). `lock_waits=False` leaves
    out the waits of distributed transactions for each other's locks (to see what they cost).
    `inputs`: `BusyInputs.of(graph, prices, traits)`, for many designs of one graph."""
    partition, coordinator, link = busy_times(graph, np.asarray(proc_part, dtype=np.int64)[None, :],
                                        np.asarray(state_part, dtype=np.int64)[None, :], prices, traits,
                                        lock_waits, inputs)
    return BusyTime(partition[0], coordinator[0], batch_size, link[0])


def busy_times(graph: CostGraph, proc_parts: np.ndarray, state_parts: np.ndarray,
               prices: BusyPrices = BusyPrices(), traits: SpTraits | None = None, lock_waits: bool = True,
               inputs: BusyInputs | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`busy_time` of K designs at once (rows of `proc_parts` and `state_parts`): the busy
    seconds per batch of each design's partitions (K x partitions), coordinators and outgoing
    links (K x machines each).

    Why: a climb prices every neighbour of a design, each a few dozen array operations on
    arrays of a few dozen entries, so the time went into the calls, not the arithmetic. Here
    every array holds all K designs, each entry keyed by its design, and every sum adds the
    same terms in the same order as one design alone (sums along a transaction's locks run
    row by row, `LockSuffixes`): each design's figures are the same to the last digit."""
    P = prices
    traits = traits or SpTraits.declared(graph, P)
    k = inputs or BusyInputs.of(graph, P, traits)
    procs = np.asarray(proc_parts, dtype=np.int64)
    states = np.asarray(state_parts, dtype=np.int64)
    K, n_proc = procs.shape
    ppm, n_machines = graph.partitions_per_machine, graph.machines
    n_parts = n_machines * ppm
    ks = np.arange(K)[:, None]  # each row's design
    busy = OrderedSums(K * n_parts)
    coord = OrderedSums(K * n_machines)

    # transactions: an SP, or a nested group run on its first member's partition
    base = procs[:, k.unit]  # each SP's transaction's base partition (K x SPs)
    base_of = base.ravel()  # by (design, SP) = design * n_proc + SP

    # streams: a MOVE across machines costs both ends
    src_m, dst_m = base[:, graph.pp_src] // ppm, base[:, graph.pp_dst] // ppm
    move_s = np.where(src_m != dst_m, k.move_cross_s, P.local_msg_cpu_s)
    move_s = np.where(k.inner, 0.0, move_s).ravel()
    coord.add(ks * n_machines + src_m, move_s)
    coord.add(ks * n_machines + dst_m, move_s)
    coord.add(ks * n_machines + base[:, k.is_unit] // ppm, P.sched_s + P.ack_s)
    # and its bytes occupy the sender's outgoing link
    link = OrderedSums(K * n_machines)
    crosses = (src_m != dst_m) & ~k.inner
    link.add((ks * n_machines + src_m)[crosses], np.broadcast_to(k.link_s, crosses.shape)[crosses])
    link = link.sums().reshape(K, n_machines)

    # accesses: where each runs; owned state (a window) is its owner's, always local
    e_proc, e_state = graph.ps_proc, graph.ps_state
    n_edges = e_proc.size
    e_unit = k.tiled_units(K, n_proc)  # each access's transaction, by design (flat, K x accesses)
    # (`take` along rows, not `procs[:, index]`: that returns the designs x accesses array in
    # column order, and every flat view of it below was a transposing copy, most of the time)
    e_base = procs.take(k.e_unit, axis=1)  # its transaction's base (`base[:, e_proc]` in one gather)
    where = states.take(e_state, axis=1)
    if k.any_owned:
        where = np.where(k.owned, e_base, where)
    # no design with a replicated item (tested on designs x items, not x accesses): every
    # replicated mask below would be empty, so none is made
    any_replicated = bool((states == REPLICATED).any())
    replicated = where == REPLICATED if any_replicated else None
    local = where == e_base
    if any_replicated:
        local |= replicated  # a replicated table's local copy is read or written here
    # each transaction's local rows: every access's, 0.0 where remote (a sum started at 0.0
    # is never -0.0, and adding 0.0 to it changes no bit: the bins add the local accesses'
    # rows in the same order as a mask of them would, without copying one of designs x accesses)
    body = np.bincount(e_unit, weights=np.where(local, k.row_s, 0.0).ravel(), minlength=K * n_proc)
    body = ((k.body_s + body.reshape(K, n_proc)) + k.commit_msg_s).ravel()

    # the partitions each transaction locks besides its base, keyed (design, transaction,
    # partition): its members', the state it reaches, every partition for a replicated table
    # written (or read by code)
    lock = [((ks * n_proc + k.unit) * n_parts + procs).ravel()]
    remote = np.flatnonzero(~local)  # the remote accesses, flat (a sixth of them or so)
    remote_e = remote % n_edges  # each one's access
    remote_where = where.ravel()[remote]
    remote_key = e_unit[remote] * n_parts + remote_where  # each remote access's (design, transaction, partition)
    remote_s = k.row_s[remote_e]
    lock.append(remote_key)
    # remote work per (transaction, partition): rows done there (a replicated write: on all).
    # A remote access's partition is never its transaction's base, so only the replicated
    # writes' keys are filtered
    rw_key, rw_s = remote_key, remote_s
    if any_replicated:
        everywhere = sorted_unique(e_unit.reshape(K, n_edges)[replicated & k.locks_everywhere])
        if everywhere.size and n_parts > 1:
            lock.append((everywhere[:, None] * n_parts + np.arange(n_parts)[None, :]).ravel())
        rep_k, rep_a = np.nonzero(replicated & graph.ps_write)
        if rep_k.size and n_parts > 1:
            rep_txn = rep_k * n_proc + k.e_unit[rep_a]
            rep_key = np.repeat(rep_txn * n_parts, n_parts) + np.tile(np.arange(n_parts), rep_k.size)
            rep_s = np.repeat(k.row_s[rep_a], n_parts)
            keep = rep_key % n_parts != base_of[rep_key // n_parts]
            rw_key, rw_s = np.concatenate([rw_key, rep_key[keep]]), np.concatenate([rw_s, rep_s[keep]])
    # the locks, in (design, transaction, partition) order, and where each remote work's is
    pairs, rw_at = unique_and_positions(np.concatenate(lock), K * n_proc * n_parts, rw_key)
    txn, pq = pairs // n_parts, pairs % n_parts  # (design, transaction) and partition of each lock
    design = txn // n_proc
    lock_base = base_of[txn]
    foreign = pq != lock_base
    dist = np.bincount(txn[foreign], minlength=K * n_proc) > 0
    single = np.flatnonzero(np.tile(k.is_unit, K) & ~dist)
    single_part = single // n_proc * n_parts + base_of[single]  # (design, partition)
    busy.add(single_part, body[single])
    if not dist.any():
        return busy.sums().reshape(K, n_parts), coord.sums().reshape(K, n_machines), link

    work_at = OrderedSums(pairs.size)
    work_at.add(rw_at, rw_s)
    work_at = work_at.sums()

    # each locked partition's round trip with the base: between machines or inside one
    cross = (pq // ppm) != (lock_base // ppm)
    rtt = np.where(cross, P.remote_rtt_s, P.local_rtt_s)
    shipped = np.tile(k.shipped, K)
    lock_step = np.where(foreign, rtt + P.fragment_s + np.where(shipped[txn], work_at, 0.0), 0.0)
    # fragment rounds (group or code): one per member with remote work, as long as its slowest;
    # a round to a partition happens in a batch only where one of its accesses there does (an
    # access with a probability: the round trip priced at that chance, its rows as expected)
    rounds = np.zeros(K * n_proc)
    fr = k.e_fragment[remote_e]  # (of the remote accesses, in their flat order)
    if fr.any():
        fr_e = remote_e[fr]
        mp, inv = np.unique(((remote[fr] // n_edges) * n_proc + e_proc[fr_e]) * n_parts + remote_where[fr],
                            return_inverse=True)
        w_mp = np.bincount(inv, weights=remote_s[fr])
        present = 1.0 - np.exp(np.bincount(inv, weights=k.log_absent[fr_e]))
        m_of, q_of = mp // n_parts, mp % n_parts  # (design, member) and partition
        member_machine = base_of[m_of] // ppm
        step = present * (np.where(q_of // ppm != member_machine, P.remote_rtt_s, P.local_rtt_s)
                          + P.fragment_s) + w_mp
        longest = np.zeros(K * n_proc)
        np.maximum.at(longest, m_of, step)
        rounds = np.bincount((ks * n_proc + k.unit).ravel(), weights=longest, minlength=K * n_proc)
    prepare = np.zeros(K * n_proc)
    np.maximum.at(prepare, txn[foreign], rtt[foreign] + P.prepare_s)
    tail = body + rounds + prepare + P.commit_s  # from the last lock to the commit

    # a partition is held from its lock (ascending order) to the commit: its own lock step and
    # every later one, then the tail. Only the distributed transactions' holds count, so the
    # sums run over their locks alone: a lock of a single-sited transaction is its base, of
    # step 0.0, and a running sum of steps >= 0 (so never -0.0) is the same to the last bit
    # without it (`LockSuffixes` adds each design's steps from its last lock)
    in_dist = dist[txn]
    d = np.flatnonzero(in_dist)  # whole transactions, in order
    txn_d, design_d = txn[d], design[d]
    seg_end = np.append(np.flatnonzero(np.diff(txn_d)) + 1, txn_d.size)  # one past each transaction's last
    next_txn = np.repeat(seg_end, np.diff(seg_end, prepend=0))
    suffixes = LockSuffixes(next_txn, design_d, np.searchsorted(design_d, np.arange(K)))
    hold = suffixes(lock_step[d]) + tail[txn_d]

    # the coordinator's messages: lock request and reply, prepare and vote, decide, fragments
    msg_s = np.where(cross, P.msg_cpu_s, P.local_msg_cpu_s) * 5
    sel = in_dist & foreign
    coord.add((design * n_machines + lock_base // ppm)[sel], msg_s[sel])
    coord.add((design * n_machines + pq // ppm)[sel], msg_s[sel])
    if fr.any():
        frag_s = 2 * np.where(q_of // ppm != member_machine, P.msg_cpu_s, P.local_msg_cpu_s) * present
        m_design = m_of // n_proc * n_machines
        coord.add(m_design + member_machine, frag_s)
        coord.add(m_design + q_of // ppm, frag_s)
    coord = coord.sums()

    # a partition is also held while its transaction waits for a later lock (lock waits)
    if lock_waits:
        hold = hold_with_lock_waits(txn_d, pq[d], hold, next_txn, busy.sums(), single_part, body[single],
                                     coord.reshape(K, n_machines).max(axis=1, initial=0.0),
                                     design=design_d, n_parts=n_parts, suffixes=suffixes)
    busy.add(design_d * n_parts + pq[d], hold)
    return busy.sums().reshape(K, n_parts), coord.reshape(K, n_machines), link
