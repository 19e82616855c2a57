"""The busy-time estimate of a workload's designs: `costmodel.busy_time` given what the graph
alone does not hold (each SP's priced work, whether it runs code, the dataflow's order).

Why a module of its own: the pick's screening, the simulator-guided search and the bench all
estimate designs of one workload many times; the per-SP inputs are built once here, and the
three of them price a design the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from costmodel.busy_time import DEFAULT_TUPLE_BYTES, BusyInputs, BusyPrices, BusyTime, SpTraits, busy_times
from costmodel.window_work import window_work
from costmodel.workload import DEFAULT_COST_UNIT_US

WINDOW_BATCHES = 200  # batches a window's maintenance is averaged over (a few slides at least)
MEMO_DESIGNS = 50_000  # designs an estimate remembers (a search revisits a quarter to a third)
# busy times (floats) the remembered designs keep, all told: past it a design is still
# remembered as priced (`priced` and so every climb's budget are the same) but priced again
# when met. Why: each keeps a busy time per partition, and 50,000 designs of 98,304
# partitions (`recommend -m 24 -p 4096`, within the cluster limits) held 39 GB
MEMO_FLOATS = 32_000_000
_PRICED_BEFORE = object()  # a remembered design whose busy times were not kept
CHUNK = 128  # designs priced in one call of `busy_times` (the gain levels off above a few dozen)
# busy times of one call of `busy_times`, at most: fewer designs a call on a big cluster (128
# designs of 1,000,000 partitions made arrays of a GB each, 6.8 GB in all at the peak)
CHUNK_FLOATS = 4_000_000


@dataclass
class BusyEstimate:
    """Prices every design of one workload graph: `estimate(proc, state)` -> BusyTime."""

    graph: object  # costmodel.graph.WorkloadGraph
    prices: BusyPrices
    traits: SpTraits
    batch_size: int
    lock_waits: bool = True  # distributed transactions' waits for each other's locks
    priced: int = field(default=0, init=False)  # designs priced so far (not answered from the memo): the work
    _memo: dict = field(default_factory=dict, init=False, repr=False)
    _memo_floats: int = field(default=0, init=False, repr=False)  # busy times the memo keeps (MEMO_FLOATS)
    _inputs: BusyInputs | None = field(default=None, init=False, repr=False)  # built at the first design

    @classmethod
    def of(cls, graph, workload, params) -> "BusyEstimate":
        """The estimate of `graph` (a WorkloadGraph of `workload`) on the cluster `params`
        describes (a simulator's SimParams)."""
        prices = BusyPrices.from_params(params)
        return cls(graph, prices, sp_traits(graph, workload, params), workload.input.batch_size)

    def estimate(self, proc_part, state_part) -> BusyTime:
        return self.estimate_many([(proc_part, state_part)])[0]

    def estimate_many(self, designs) -> list[BusyTime]:
        """`estimate` of each (proc, state) in `designs`, in order, the ones not remembered
        priced together (`costmodel.busy_time.busy_times`: the same figures, a fraction of
        the time). `priced` counts as if they were priced one after the other."""
        out: list[BusyTime | None] = [None] * len(designs)
        slots: dict[tuple, int] = {}  # a design priced here and remembered: its slot
        todo: list[tuple[list[int], np.ndarray, np.ndarray, tuple | None]] = []
        for i, (proc_part, state_part) in enumerate(designs):
            proc_part = np.asarray(proc_part, dtype=np.int64)
            state_part = np.asarray(state_part, dtype=np.int64)
            key = (proc_part.tobytes(), state_part.tobytes())
            found = self._memo.get(key)
            if found is not None and found is not _PRICED_BEFORE:
                out[i] = found
            elif key in slots:
                todo[slots[key]][0].append(i)
            else:
                if found is None:
                    self.priced += 1
                remembered = found is None and len(self._memo) + len(slots) < MEMO_DESIGNS
                if remembered:
                    slots[key] = len(todo)
                todo.append(([i], proc_part, state_part, key if remembered else None))
        if self._inputs is None and todo:
            self._inputs = BusyInputs.of(self.graph.cost, self.prices, self.traits)
        step = max(1, min(CHUNK, CHUNK_FLOATS // max(1, self.graph.cost.n_partitions)))
        for first in range(0, len(todo), step):
            chunk = todo[first:first + step]
            partition, coordinator, link = busy_times(
                self.graph.cost, np.stack([t[1] for t in chunk]), np.stack([t[2] for t in chunk]),
                self.prices, self.traits, self.lock_waits, self._inputs)
            priced = BusyTime.each(partition, coordinator, self.batch_size, link)
            for (places, _p, _s, key), found in zip(chunk, priced):
                if key is not None:
                    floats = partition.shape[1] + coordinator.shape[1] + link.shape[1]
                    kept = self._memo_floats + floats <= MEMO_FLOATS
                    self._memo_floats += floats if kept else 0
                    self._memo[key] = found if kept else _PRICED_BEFORE
                for i in places:
                    out[i] = found
        return out

    def throughput_tps(self, proc_part, state_part) -> float:
        return self.estimate(proc_part, state_part).throughput_tps


def sp_traits(graph, workload, params) -> SpTraits:
    """Each SP's work per batch as the simulator prices it (declared cost at the workload's
    cost unit, nothing for code, window maintenance at its owner), code, topological rank."""
    unit_s = float(workload.input.cost_unit_us) / DEFAULT_COST_UNIT_US * params.cost_unit_s
    rank_of = {n: i for i, n in enumerate(workload.topological_order())}
    work, code, rank = [], [], []
    known = set(workload.procedure_names)
    for i, name in enumerate(graph.proc_names):
        if name not in known:  # a graph richer than its workload: priced as declared
            work.append(float(graph.cost.proc_load[i]) * unit_s)
            code.append(False)
            rank.append(len(rank_of) + i)
            continue
        p = workload.procedure(name)
        seconds = 0.0 if p.code is not None else p.cost * unit_s
        for w in workload.windows_of(name):
            seconds += float(window_work(workload, w, WINDOW_BATCHES, 1.0, params).seconds.mean())
        work.append(seconds)
        code.append(p.code is not None)
        rank.append(rank_of.get(name, len(rank_of) + i))
    fed = {s.target for s in workload.streams}
    batch = float(workload.input.batch_size)
    input_tuples = np.array([batch if n in known and n not in fed else 0.0 for n in graph.proc_names])
    return SpTraits(np.array(work), np.array(code, dtype=bool), np.array(rank),
                    input_tuples=input_tuples, edge_bytes=_edge_bytes(graph, workload),
                    presence=_access_presence(graph, workload))


def _access_presence(graph, workload) -> np.ndarray:
    """Each state access edge's chance to happen in a batch (in the graph's edge order): one of
    the declared accesses it merges (an SP's accesses to one table in one mode) happens, as
    the simulator draws them. Why: a nested group's or code's round to a partition runs only
    where an access there does; voter-leaderboard's DeleteContestant reaches two tables with
    probability 0.01, and the estimate held every partition a round trip longer than the
    simulator on such designs (17 %). An edge the workload does not name (a window's, a
    richer graph's) happens every batch."""
    absent: dict[tuple[str, str, bool], float] = {}
    for p in workload.procedures:
        for a in p.accesses:
            key = (p.name, a.table, a.mode == "write")
            absent[key] = absent.get(key, 1.0) * (1.0 - a.probability)
    cost, procs, states = graph.cost, graph.proc_names, graph.state_names
    return np.array([1.0 - absent.get((procs[i], states[j], bool(w)), 0.0)
                     for i, j, w in zip(cost.ps_proc, cost.ps_state, cost.ps_write)], dtype=float)


def _edge_bytes(graph, workload) -> np.ndarray:
    """Bytes a batch of each stream edge of the graph (in its order): its streams' tuples x
    tuple_bytes, as the simulator serialises and sends them (the estimate took 64 bytes a
    tuple whatever the spec said: 10,000-byte tuples were predicted 1.8x fast). An edge the
    workload does not name (a richer graph) keeps the default tuple size."""
    declared: dict[tuple[str, str], float] = {}
    for s in workload.streams:
        declared[(s.source, s.target)] = declared.get((s.source, s.target), 0.0) + s.tuples * s.tuple_bytes
    cost, names = graph.cost, graph.proc_names
    return np.array([declared.get((names[a], names[b]), w * DEFAULT_TUPLE_BYTES)
                     for a, b, w in zip(cost.pp_src, cost.pp_dst, cost.pp_weight)], dtype=float)


def estimate_throughput(graph, workload, proc_part, state_part, params) -> float:
    """One design's estimated tuples per second (builds the per-SP inputs: for many designs
    of one workload, keep a `BusyEstimate`)."""
    return BusyEstimate.of(graph, workload, params).throughput_tps(proc_part, state_part)
