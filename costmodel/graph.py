"""The state/processing graph of section 6.2: processing nodes (SPs) and state nodes
(tables, fragments or tuples), with processing-to-state and processing-to-processing edges.

Array-backed: the names live here, the numbers in a `costmodel.CostGraph`, and the METIS
input is built as CSR straight from the edge arrays (no per-edge Python objects).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from costmodel import CostGraph
from costmodel.workload import DEFAULT_COST_UNIT_US, Workload


@dataclass
class WorkloadGraph:
    """Names and arrays of one workload's graph.

    Processing node i is `proc_names[i]`; state node j is `state_names[j]` and belongs to
    table `state_tables[j]`. `cost` holds the weights and edges the cost model scores.
    """

    name: str
    proc_names: list[str]
    state_names: list[str]
    state_tables: list[str]
    state_read_mostly: np.ndarray
    cost: CostGraph
    source_sha256: str = ""
    nested: tuple[tuple[str, ...], ...] = ()
    # seconds of CPU per unit of processing load (None: the spec's cost units, priced by the
    # calibration's cost_unit_s) and transactions per batch of each SP (None: one each)
    load_unit_s: float | None = None
    proc_txns: np.ndarray | None = None
    # CPU microseconds per unit of a spec's SP cost (its `[input] cost_unit_us`): the
    # calibration prices a unit at the default, so a spec's other unit scales that price
    cost_unit_us: float = DEFAULT_COST_UNIT_US
    _proc_index: dict[str, int] = field(default=None, repr=False)
    _state_index: dict[str, int] = field(default=None, repr=False)
    # each state item's `state_kind`, worked out at the first ask (a migration plan asks for
    # every moved item of thousands of designs: parsing the names was 21 of a 91 s `check`)
    _state_kinds: list[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.state_read_mostly = np.asarray(self.state_read_mostly, dtype=bool)
        self._proc_index = {n: i for i, n in enumerate(self.proc_names)}
        self._state_index = {n: i for i, n in enumerate(self.state_names)}

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_workload(cls, workload: Workload) -> "WorkloadGraph":
        """Table-granularity graph of a spec: edge weight = expected rows per batch.

        Each window is one more state node after the tables, owned by its SP: a write edge
        for the tuples the owner inserts per batch (its input tuples), a read edge for the
        rows it declares reading; its bytes are the full window's memory."""
        procs = workload.procedure_names
        tables = workload.table_names
        windows = workload.window_names
        states = tables + windows
        p_index = {n: i for i, n in enumerate(procs)}
        t_index = {n: i for i, n in enumerate(states)}
        ps_proc, ps_state, ps_weight, ps_write = [], [], [], []
        # merge repeated accesses of one SP to one table in one mode into a single edge
        merged: dict[tuple[int, int, bool], float] = {}
        # windows: state nodes after the tables; the owner writes its input tuples into them
        # and reads them through its declared read accesses
        t_index.update({w.name: len(tables) + k for k, w in enumerate(workload.windows)})
        for p in workload.procedures:
            for a in p.accesses:
                key = (p_index[p.name], t_index[a.table], a.mode == "write")
                merged[key] = merged.get(key, 0.0) + a.expected_rows
        for w in workload.windows:  # the owner inserts each batch's tuples into its window
            key = (p_index[w.procedure], t_index[w.name], True)
            merged[key] = merged.get(key, 0.0) + workload.input_tuples(w.procedure)
        for (pi, ti, w), weight in merged.items():
            ps_proc.append(pi); ps_state.append(ti); ps_write.append(w); ps_weight.append(weight)
        pp: dict[tuple[int, int], float] = {}
        for s in workload.streams:
            key = (p_index[s.source], p_index[s.target])
            pp[key] = pp.get(key, 0.0) + s.tuples
        cluster = workload.cluster
        group = group_of(procs, workload.nested)
        cost = CostGraph(
            proc_load=[p.cost for p in workload.procedures],
            state_bytes=[t.bytes for t in workload.tables]
            + [workload.window_bytes(w) for w in workload.windows],
            ps_proc=ps_proc, ps_state=ps_state, ps_weight=ps_weight, ps_write=ps_write,
            pp_src=[k[0] for k in pp], pp_dst=[k[1] for k in pp], pp_weight=list(pp.values()),
            machines=cluster.machines, partitions_per_machine=cluster.partitions_per_machine,
            capacity=cluster.machine_capacity,
            memory_limit_bytes=None if cluster.machine_memory_mb is None
            else cluster.machine_memory_mb * 2**20,
            proc_group=group,
            state_owner=[-1] * len(tables) + [p_index[w.procedure] for w in workload.windows],
        )
        read_mostly = [t.read_mostly for t in workload.tables] + [False] * len(windows)
        return cls(workload.name, procs, states, states, np.array(read_mostly, dtype=bool), cost,
                   workload.sha256, workload.nested, cost_unit_us=float(workload.input.cost_unit_us))

    def with_cluster(self, machines: int | None, partitions_per_machine: int | None,
                     capacity=None, memory_limit_bytes=None) -> "WorkloadGraph":
        """This graph on another cluster; keeps what still fits (`CostGraph.with_cluster`)."""
        cost = self.cost.with_cluster(machines, partitions_per_machine, capacity,
                                      memory_limit_bytes)
        if cost is self.cost:
            return self
        return replace(self, cost=cost)

    # -- lookups --------------------------------------------------------------------------
    @property
    def n_proc(self) -> int:
        return len(self.proc_names)

    @property
    def n_state(self) -> int:
        return len(self.state_names)

    @property
    def n_nodes(self) -> int:
        return self.n_proc + self.n_state

    def proc_index(self, name: str) -> int:
        return self._proc_index[name]

    def state_index(self, name: str) -> int:
        return self._state_index[name]

    def has_procedure(self, name: str) -> bool:
        return name in self._proc_index

    def has_state(self, name: str) -> bool:
        """Whether the graph places a state item of this name (a design of another trace or
        granularity can name items it does not)."""
        return name in self._state_index

    def is_window(self, j: int) -> bool:
        """Whether state item j is owned by an SP (a window)."""
        return bool(self.cost.state_owner[j] >= 0)

    @property
    def window_names(self) -> list[str]:
        """The owned state items (windows), in state order."""
        return [self.state_names[j] for j in self.cost.owned_state]

    def state_kind(self, j: int) -> str:
        """What state item j is: "window" (owned by an SP), "fragment" (`T#i`), "tuple"
        (`T@KEY`) or "table" (also a table named `T#0` beside a table `T`: a graph holds a
        table's items or the table, never both)."""
        if self._state_kinds is None:
            self._state_kinds = [self._kind_of(k) for k in range(len(self.state_names))]
        return self._state_kinds[j]

    def _kind_of(self, j: int) -> str:
        from costmodel.granularity import fragment_parts

        if self.is_window(j):
            return "window"
        table = self.table_of(j)
        if table == self.state_names[j]:
            return "table"  # (a hot tuple's key keeps its '#': `T@order#12` is a tuple of T)
        return "fragment" if fragment_parts(self.state_names[j], (table,)) else "tuple"

    def table_of(self, j: int) -> str:
        """The table state item j belongs to (`costmodel.granularity.table_among` this
        graph's state items)."""
        from costmodel.granularity import table_among

        return table_among(self.state_names[j], self._state_index)

    def window_owners(self) -> dict[str, str]:
        """Window name -> the SP that owns it."""
        return {self.state_names[j]: self.proc_names[o] for j, o in enumerate(self.cost.state_owner) if o >= 0}

    def owner_of(self, state: str) -> str | None:
        """The SP that owns a state item (a window), or None for free state."""
        owner = int(self.cost.state_owner[self._state_index[state]])
        return self.proc_names[owner] if owner >= 0 else None

    # -- views ----------------------------------------------------------------------------
    def adjacency(self, ps_scale: float = 1.0, pp_scale: float = 1.0):
        """Symmetric CSR over all nodes (processing first, then state); see `adjacency`."""
        return adjacency(self.cost, ps_scale, pp_scale)

    def to_networkx(self):
        """A networkx DiGraph for exploration (not used on the search's hot path): streams
        from the sending SP to the receiving one, accesses from the SP to the state (an SP
        that reads and writes an item has one edge, `write` true, the rows summed). Each state
        node's `table` is the table it belongs to (`table_of`; a fragment's table, not itself)."""
        import networkx as nx

        g = nx.DiGraph(name=self.name)
        c = self.cost
        for i, n in enumerate(self.proc_names):
            g.add_node(n, kind="processing", load=float(c.proc_load[i]))
        for j, n in enumerate(self.state_names):
            owner = int(c.state_owner[j])
            extra = {"owner": self.proc_names[owner]} if owner >= 0 else {}
            g.add_node(n, kind="window" if owner >= 0 else "state", bytes=float(c.state_bytes[j]),
                       table="" if owner >= 0 else self.table_of(j),
                       read_mostly=bool(self.state_read_mostly[j]), **extra)
        for p, s, w, wr in zip(c.ps_proc, c.ps_state, c.ps_weight, c.ps_write):
            a, b = self.proc_names[p], self.state_names[s]
            if g.has_edge(a, b):
                g[a][b]["weight"] += float(w)
                g[a][b]["write"] = g[a][b]["write"] or bool(wr)
            else:
                g.add_edge(a, b, kind="processing-state", weight=float(w), write=bool(wr))
        for s, d, w in zip(c.pp_src, c.pp_dst, c.pp_weight):
            a, b = self.proc_names[s], self.proc_names[d]
            if g.has_edge(a, b):
                g[a][b]["weight"] += float(w)
            else:
                g.add_edge(a, b, kind="processing-processing", weight=float(w))
        return g


# Above this many matrix entries (twice the edges) `adjacency_arrays` leaves the CSR to scipy:
# its import is then a small part of the work, and its conversion the lighter in memory.
NUMPY_CSR_MAX_ENTRIES = 1_000_000


@dataclass
class Adjacency:
    """A symmetric CSR matrix as its three arrays (what METIS reads): row i's neighbours are
    `indices[indptr[i]:indptr[i + 1]]`, ascending, with weights `data` there."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    def to_scipy(self):
        """The same matrix as a scipy.sparse CSR matrix."""
        import scipy.sparse as sp

        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)


def adjacency(cost: CostGraph, ps_scale: float = 1.0, pp_scale: float = 1.0):
    """Symmetric CSR over all nodes (a scipy.sparse csr_matrix), duplicate edges summed, each
    kind scaled. Node ids: processing i -> i, state j -> n_proc + j."""
    return adjacency_arrays(cost, ps_scale, pp_scale).to_scipy()


def adjacency_arrays(cost: CostGraph, ps_scale: float = 1.0, pp_scale: float = 1.0) -> Adjacency:
    """`adjacency` as plain arrays, built with numpy alone up to NUMPY_CSR_MAX_ENTRIES. Why:
    the search calls METIS on every recommendation, and importing scipy.sparse costs a
    command ~0.1 s. The weights are those scipy's sum of duplicates gives, bit for bit: a
    pair with at most two entries sums the same in either order; a graph with a pair of more
    is summed by scipy itself."""
    n_proc = cost.n_proc
    n = n_proc + cost.n_state
    index = np.int32 if n < 2**31 - 1 else np.int64
    loops = cost.pp_src == cost.pp_dst
    pp_src, pp_dst, pp_w = cost.pp_src[~loops], cost.pp_dst[~loops], cost.pp_weight[~loops]
    ps_p = cost.ps_proc.astype(index)
    ps_s = (cost.ps_state + n_proc).astype(index)
    rows = np.concatenate([ps_p, ps_s, pp_src.astype(index), pp_dst.astype(index)])
    cols = np.concatenate([ps_s, ps_p, pp_dst.astype(index), pp_src.astype(index)])
    del ps_p, ps_s
    ps_w = cost.ps_weight * ps_scale
    pp_w = pp_w * pp_scale
    data = np.concatenate([ps_w, ps_w, pp_w, pp_w])
    if rows.size <= NUMPY_CSR_MAX_ENTRIES:
        order = np.lexsort((cols, rows))  # by row, then column
        r, c = rows[order], cols[order]
        first = np.ones(r.size, dtype=bool)  # the first entry of each (row, column) pair
        first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
        starts = np.flatnonzero(first)
    if rows.size > NUMPY_CSR_MAX_ENTRIES or (r.size and int(np.diff(np.append(starts, r.size)).max()) > 2):
        import scipy.sparse as sp  # large, or summing three or more: scipy, in its own order

        m = sp.coo_matrix((data, (rows, cols)), shape=(n, n)).tocsr()
        m.sum_duplicates()
        return Adjacency(m.indptr, m.indices, m.data, (n, n))
    summed = np.add.reduceat(data[order], starts) if r.size else data
    indptr = np.zeros(n + 1, dtype=index)
    np.cumsum(np.bincount(r[starts], minlength=n), out=indptr[1:])
    return Adjacency(indptr, c[starts], summed, (n, n))


def subgraph(cost: CostGraph, procs: np.ndarray, states: np.ndarray, machines: int) -> CostGraph:
    """The part of a graph on some SPs and state items, as its own graph over `machines`
    identical machines with no memory limit (edges leaving the part are dropped; an owned
    item whose owner is outside the part becomes free)."""
    p_map = np.full(cost.n_proc, -1)
    p_map[procs] = np.arange(procs.size)
    s_map = np.full(cost.n_state, -1)
    s_map[states] = np.arange(states.size)
    ps = (p_map[cost.ps_proc] >= 0) & (s_map[cost.ps_state] >= 0)
    pp = (p_map[cost.pp_src] >= 0) & (p_map[cost.pp_dst] >= 0)
    return CostGraph(
        proc_load=cost.proc_load[procs], state_bytes=cost.state_bytes[states],
        ps_proc=p_map[cost.ps_proc[ps]], ps_state=s_map[cost.ps_state[ps]],
        ps_weight=cost.ps_weight[ps], ps_write=cost.ps_write[ps],
        pp_src=p_map[cost.pp_src[pp]], pp_dst=p_map[cost.pp_dst[pp]], pp_weight=cost.pp_weight[pp],
        machines=machines, partitions_per_machine=1, proc_group=cost.proc_group[procs],
        state_owner=np.where(cost.state_owner[states] >= 0,
                             p_map[np.maximum(cost.state_owner[states], 0)], -1),
    )


def group_of(names: list[str], nested) -> np.ndarray:
    """proc_group array of a graph: group index of each SP named in `nested`, else -1."""
    index = {n: i for i, n in enumerate(names)}
    group = np.full(len(names), -1, dtype=np.int64)
    for g, members in enumerate(nested):
        group[[index[m] for m in members]] = g
    return group


def useful_machines(cost: CostGraph) -> int:
    """Machines a design can use to any benefit: one per SP (state carries no load), plus
    enough to hold all state under a memory limit."""
    m = cost.n_proc
    if cost.memory_limit_bytes is not None and cost.memory_limit_bytes > 0:
        m += math.ceil(float(cost.state_bytes.sum()) / cost.memory_limit_bytes)
    return max(1, min(cost.machines, m))


def drop_idle_machines(cost: CostGraph) -> tuple[CostGraph, np.ndarray]:
    """The graph on only the machines a design can use (the fastest ones), the others kept
    as idle capacity so the cost is unchanged; and which machines were kept. Keeps a search
    linear in nodes plus machines however large the cluster."""
    used = useful_machines(cost)
    if used == cost.machines:
        return cost, np.arange(cost.machines)
    kept = np.sort(np.argsort(-cost.capacity, kind="stable")[:used])
    idle = np.ones(cost.machines, dtype=bool)
    idle[kept] = False
    return cost.with_cluster(used, cost.partitions_per_machine, cost.capacity[kept],
                             cost.memory_limit_bytes,
                             np.concatenate([cost.idle_capacity, cost.capacity[idle]])), kept
