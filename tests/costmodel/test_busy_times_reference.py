"""`costmodel.busy_time.busy_times` against the code it replaced, bit for bit: the climbs take
the first of equals and compare exact figures, so every design's busy times must be the same
to the last bit, not merely close. The reference is `busy_times` as it was at d553a52 (before
the distributed transactions' holds were summed over their own locks only), with the lock
waits as they were then (`test_lock_waits.hold_by_lock_pairs`)."""
from __future__ import annotations


import numpy as np
import pytest

from advisor.busy_estimate import BusyEstimate
from advisor.placement import place_state
from advisor.sources import load_workload
from costmodel.arrays import OrderedSums, sorted_unique
from costmodel.busy_time import BusyInputs, BusyPrices, SpTraits, busy_times
from costmodel.graph import WorkloadGraph
from costmodel.model import REPLICATED
from costmodel.problem import CostGraph
from engine_sim.sim import Calibration
from test_lock_waits import TransposedSuffixes, hold_by_lock_pairs
from workload_edits import scale_workload


def suffix_within(step: np.ndarray, next_txn: np.ndarray, design: np.ndarray | None = None) -> np.ndarray:
    """`suffix_within` as it was: a flat running sum for one design, else by columns."""
    if design is None or design.size == 0 or design[0] == design[-1]:
        suffix = np.zeros(step.size + 1)
        suffix[:-1] = np.cumsum(step[::-1])[::-1]
        return suffix[:-1] - suffix[next_txn]
    return TransposedSuffixes(next_txn, design)(step)


hold_with_lock_waits = hold_by_lock_pairs


def busy_times_before(graph: CostGraph, proc_parts: np.ndarray, state_parts: np.ndarray,
               prices: BusyPrices = BusyPrices(), traits: SpTraits | None = None, lock_waits: bool = True,
               inputs: BusyInputs | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`busy_time` of K designs at once (rows of `proc_parts` and `state_parts`): the busy
    seconds per batch of each design's partitions (K x partitions), coordinators and outgoing
    links (K x machines each).

    Why: a climb prices every neighbour of a design, each a few dozen array operations on
    arrays of a few dozen entries, so the time went into the calls, not the arithmetic. Here
    every array holds all K designs, each entry keyed by its design, and every sum adds the
    same terms in the same order as one design alone (sums along a transaction's locks run
    row by row, `suffix_within`): each design's figures are the same to the last digit."""
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
    e_unit = ks * n_proc + k.e_unit  # each access's transaction, by design (K x accesses)
    e_base = base[:, e_proc]
    row_s = np.repeat(k.row_s[None, :], K, axis=0)
    where = np.where(k.owned, e_base, states[:, e_state])
    replicated = where == REPLICATED
    local = (where == e_base) | replicated  # a replicated table's local copy is read or written here
    body = k.body_s + np.bincount(e_unit[local], weights=row_s[local], minlength=K * n_proc).reshape(K, n_proc)
    body = (body + k.commit_msg_s).ravel()

    # the partitions each transaction locks besides its base, keyed (design, transaction,
    # partition): its members', the state it reaches, every partition for a replicated table
    # written (or read by code)
    lock = [((ks * n_proc + k.unit) * n_parts + procs).ravel()]
    remote = ~local
    lock.append((e_unit * n_parts + where)[remote])
    everywhere = sorted_unique(e_unit[replicated & k.locks_everywhere])
    if everywhere.size and n_parts > 1:
        lock.append((everywhere[:, None] * n_parts + np.arange(n_parts)[None, :]).ravel())
    pairs = sorted_unique(np.concatenate(lock))
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

    # remote work per (transaction, partition): rows done there (a replicated write: on all)
    rw_key, rw_s = [(e_unit * n_parts + where)[remote]], [row_s[remote]]
    rep_k, rep_a = np.nonzero(replicated & graph.ps_write)
    if rep_k.size and n_parts > 1:
        rep_txn = rep_k * n_proc + k.e_unit[rep_a]
        rw_key.append(np.repeat(rep_txn * n_parts, n_parts) + np.tile(np.arange(n_parts), rep_k.size))
        rw_s.append(np.repeat(k.row_s[rep_a], n_parts))
    rw_key, rw_s = np.concatenate(rw_key), np.concatenate(rw_s)
    keep = rw_key % n_parts != base_of[rw_key // n_parts]
    work_at = OrderedSums(pairs.size)
    work_at.add(np.searchsorted(pairs, rw_key[keep]), rw_s[keep])
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
    fr = ~k.shipped[k.unit[e_proc]] & remote
    if fr.any():
        mp, inv = np.unique(((ks * n_proc + e_proc) * n_parts + where)[fr], return_inverse=True)
        w_mp = np.bincount(inv, weights=row_s[fr])
        present = 1.0 - np.exp(np.bincount(inv, weights=np.broadcast_to(k.log_absent, fr.shape)[fr]))
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
    # every later one, then the tail
    seg_end = np.append(np.flatnonzero(np.diff(txn)) + 1, txn.size)  # one past each transaction's last
    next_txn = np.repeat(seg_end, np.diff(seg_end, prepend=0))
    held = suffix_within(lock_step, next_txn, design) + tail[txn]
    in_dist = dist[txn]

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
    d = np.flatnonzero(in_dist)
    hold = held[d]
    if lock_waits:
        hold = hold_with_lock_waits(txn[d], pq[d], hold, np.searchsorted(d, next_txn[d]),
                                     busy.sums(), single_part, body[single],
                                     coord.reshape(K, n_machines).max(axis=1, initial=0.0),
                                     design=design[d], n_parts=n_parts)
    busy.add(design[d] * n_parts + pq[d], hold)
    return busy.sums().reshape(K, n_parts), coord.reshape(K, n_machines), link


def random_designs(g: WorkloadGraph, n: int, rng: np.random.Generator):
    """Random designs: half with the state placed by the advisor's rule, a third with some
    tables replicated, a few crowded onto two partitions (long lock lists); windows with their
    owner."""
    c = g.cost
    n_parts = c.n_partitions
    for k in range(n):
        spread = n_parts if k % 5 else min(2, n_parts)
        proc = rng.integers(0, spread, c.n_proc)
        state = rng.integers(0, spread, c.n_state)
        if k % 2:
            state = place_state(c, proc, state)
        if k % 3 == 0:
            state[rng.random(state.size) < 0.3] = REPLICATED
        owned = c.state_owner >= 0
        state[owned] = proc[c.state_owner[owned]]
        yield proc, state




CASES = [("voter-leaderboard", 4), ("linear-road", 8), ("tpcdi-trade", 2), ("streaming-ledger", 4),
         ("window-micro", 2), ("chain-32", 4), ("shared40", None), ("gen40", None)]


@pytest.mark.parametrize("name, machines", CASES)
def test_busy_times_are_what_they_were_to_the_last_bit(name, machines):
    """Batches of random designs (one design alone, a few, a climb's chunk), with and without
    lock waits, priced by `busy_times` and by the code it replaced: equal bytes."""
    w = scale_workload(name) if machines is None else load_workload(name).with_cluster(machines)
    g = WorkloadGraph.from_workload(w)
    estimate = BusyEstimate.of(g, w, Calibration.reference().params)
    inputs = BusyInputs.of(g.cost, estimate.prices, estimate.traits)
    rng = np.random.default_rng(sum(map(ord, name)))
    designs = list(random_designs(g, 60, rng))
    assert_priced_as_before(g, estimate, inputs, designs, ((0, 1), (1, 3), (4, 56)))


def assert_priced_as_before(g: WorkloadGraph, estimate: BusyEstimate, inputs: BusyInputs, designs: list,
                            chunks) -> None:
    """Each chunk (first, size) of `designs` priced at once, with and without lock waits, by
    `busy_times` and by the reference (building its own inputs): equal bytes."""
    for first, size in chunks:
        procs = np.stack([p for p, _ in designs[first:first + size]])
        states = np.stack([s for _, s in designs[first:first + size]])
        for lock_waits in (True, False):
            got = busy_times(g.cost, procs, states, estimate.prices, estimate.traits, lock_waits, inputs)
            want = busy_times_before(g.cost, procs, states, estimate.prices, estimate.traits, lock_waits)
            for a, b in zip(got, want):
                assert a.shape == b.shape and a.tobytes() == b.tobytes()


def test_busy_times_of_declared_sps_are_what_they_were():
    """The default traits and prices (no workload): the same bytes."""
    w = load_workload("linear-road").with_cluster(4)
    c = WorkloadGraph.from_workload(w).cost
    rng = np.random.default_rng(5)
    procs = rng.integers(0, c.n_partitions, (9, c.n_proc))
    states = rng.integers(0, c.n_partitions, (9, c.n_state))
    for a, b in zip(busy_times(c, procs, states), busy_times_before(c, procs, states)):
        assert a.tobytes() == b.tobytes()
