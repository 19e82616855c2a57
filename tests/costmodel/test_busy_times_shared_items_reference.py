"""`costmodel.busy_time.busy_times` against itself as it was at 0000df7 (before the designs x
accesses arrays were gathered along rows and the locks numbered by marking), bit for bit, on
graphs of many state items each shared by many SPs: hash fragments and hot tuples of the
generated dataflows' tables (what `recommend` prices at `fragment:N` or `tuple:N --hot-tuples`),
as well as the cases `test_busy_times_reference` prices. The climbs take the first of equals
and compare exact figures, so close is not enough."""
from __future__ import annotations

import numpy as np
import pytest

from advisor.busy_estimate import BusyEstimate
from advisor.sources import load_workload
from costmodel.arrays import OrderedSums, sorted_unique
from costmodel.busy_time import BusyInputs, BusyPrices, SpTraits, busy_times
from costmodel.granularity import fragment_name, tuple_name, workload_at
from costmodel.graph import WorkloadGraph
from costmodel.lock_waits import LockSuffixes, hold_with_lock_waits
from costmodel.model import REPLICATED
from costmodel.problem import CostGraph
from engine_sim.sim import Calibration
from test_busy_times_reference import random_designs
from workload_edits import scale_workload


def busy_times_at_0000df7(graph: CostGraph, proc_parts: np.ndarray, state_parts: np.ndarray,
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
    e_unit = ks * n_proc + k.e_unit  # each access's transaction, by design (K x accesses)
    e_base = base[:, e_proc]
    row_s = np.broadcast_to(k.row_s, e_base.shape)  # (a view: masks of it copy what they take)
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
    remote_key = (e_unit * n_parts + where)[remote]  # each remote access's (design, transaction, partition)
    lock.append(remote_key)
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
    rw_key, rw_s = [remote_key], [row_s[remote]]
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


def at_items(workload, fragments: int, hot: int):
    """`workload` with each table split into `fragments` hash fragments and `hot` hot tuples
    (keys 1..hot), as a design at that granularity names them."""
    names = [n for t in workload.tables
             for n in [fragment_name(t.name, i) for i in range(fragments)]
             + [tuple_name(t.name, key) for key in range(1, hot + 1)]]
    return workload_at(workload, names)


def neighbours(g: WorkloadGraph, n: int, rng: np.random.Generator):
    """A climb's chunk: a few designs and their neighbours, each an SP or a state item or two
    moved (a hot item reached by many SPs changes many transactions' locks at once)."""
    c = g.cost
    owned = c.state_owner >= 0
    centres = list(random_designs(g, 3, rng))
    for i in range(n):
        proc, state = (a.copy() for a in centres[i % 3])
        for _ in range(int(rng.integers(1, 3))):
            if rng.random() < 0.3:
                proc[rng.integers(c.n_proc)] = rng.integers(c.n_partitions)
            else:
                state[rng.integers(c.n_state)] = rng.integers(c.n_partitions)
        state[owned] = proc[c.state_owner[owned]]
        yield proc, state


CASES = [("shared40", 4, 12), ("gen40", 8, 0), ("shared100", 2, 6), ("gen40", 2, 20),
         ("voter-leaderboard@4", 3, 8), ("linear-road@8", 4, 0), ("streaming-ledger@4", 2, 4),
         ("window-micro@2", 3, 4)]


def _workload(case: str):
    if "@" in case:
        name, machines = case.split("@")
        return load_workload(name).with_cluster(int(machines))
    return scale_workload(case)


@pytest.mark.parametrize("case, fragments, hot", CASES)
def test_busy_times_of_many_shared_items_are_what_they_were(case, fragments, hot):
    """Random designs and climbs' chunks of neighbours (one design, a few, 128 at once), with
    and without lock waits: the same bytes as the code at 0000df7."""
    w = at_items(_workload(case), fragments, hot)
    g = WorkloadGraph.from_workload(w)
    estimate = BusyEstimate.of(g, w, Calibration.reference().params)
    inputs = BusyInputs.of(g.cost, estimate.prices, estimate.traits)
    rng = np.random.default_rng(sum(map(ord, case)) + fragments + hot)
    designs = list(random_designs(g, 40, rng)) + list(neighbours(g, 128, rng))
    for first, size in ((0, 1), (1, 3), (4, 36), (40, 128)):
        procs = np.stack([p for p, _ in designs[first:first + size]])
        states = np.stack([s for _, s in designs[first:first + size]])
        for lock_waits in (True, False):
            got = busy_times(g.cost, procs, states, estimate.prices, estimate.traits, lock_waits, inputs)
            want = busy_times_at_0000df7(g.cost, procs, states, estimate.prices, estimate.traits, lock_waits)
            for a, b in zip(got, want):
                assert a.shape == b.shape and a.tobytes() == b.tobytes()


def test_busy_times_of_declared_sps_at_fragments_are_what_they_were():
    """The default traits and prices (no workload), every table in 8 fragments: the same bytes."""
    c = WorkloadGraph.from_workload(at_items(scale_workload("shared40"), 8, 0)).cost
    rng = np.random.default_rng(11)
    procs = rng.integers(0, c.n_partitions, (20, c.n_proc))
    states = rng.integers(0, c.n_partitions, (20, c.n_state))
    states[::4, ::3] = REPLICATED
    for a, b in zip(busy_times(c, procs, states), busy_times_at_0000df7(c, procs, states)):
        assert a.tobytes() == b.tobytes()
