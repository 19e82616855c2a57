"""Compile (workload, design, options) into the flat tables the event loop reads.

Everything that does not depend on the simulated time is decided here, once, with numpy:
which partition and machine every procedure runs on, where its scheduler lives, which
accesses are local and which need a remote fragment round, and every batch's partition
service time (sampled from the declared access probabilities and a service-time jitter).
The event loop then only does per-batch arithmetic and list indexing. The result is a
`CompiledPlan` of `CompiledUnit`s: the simulator's form, not the real engine's
`engine_sim.engine.plan.Plan`.

Units. A procedure is a unit; the procedures of a nested transaction form one unit (they
commit together, so they are one transaction whose control code runs on the first member's
partition). Streams between units are edges; a stream inside a unit is not a MOVE.

Scaling. A spec declares rows and stream tuples per batch at its `input.batch_size`; a
different `batch_size` scales both linearly. The declared `cost` is per batch (fixed work).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from costmodel.lanes import LaneRoute, lane_routes
from costmodel.design import Design, unplaced_message
from costmodel.errors import DesignError
from costmodel.granularity import fragment_shares, tables_among, workload_at
from costmodel.workload import DEFAULT_COST_UNIT_US, MAX_BATCH_SIZE, Workload
from engine_sim.sim.errors import SimError
from costmodel.sim_params import SimParams
from costmodel.window_work import WindowWork, window_work

SCHEDULERS = ("dls", "central")
MIN_BATCHES = 10  # the fewest batches a run simulates (fewer say nothing of a steady state)
# the most: every batch's service times are drawn up front, a few arrays of this length per SP
# (a billion batches asked for 745 GiB; a steady state shows within a few thousand)
MAX_BATCHES = 1_000_000
MAX_PARTITIONS = 16_384  # a cluster's partitions: a million took minutes only to set up
MOVES = ("rpc", "txn")


def check_simulated_partitions(n_partitions: int) -> None:
    """Refuse a cluster the simulator cannot model, in one line: a caller that simulates late
    (a report) asks first, before any work or progress line."""
    if n_partitions > MAX_PARTITIONS:
        raise SimError(f"the simulator models at most {MAX_PARTITIONS:,} partitions (it builds every "
                       f"partition's state, used or not), got {n_partitions:,}")


@dataclass
class Round:
    """One dependent fragment round of a distributed transaction (a nested group's member, a
    MOVE transaction's insert): a Frag to each partition of `work` in parallel, doing that
    much work there, each request carrying `payload_bytes`; the round ends with the last
    FragReply."""

    work: dict[int, float]
    payload_bytes: float

    @property
    def parts(self) -> tuple[int, ...]:
        return tuple(self.work)


@dataclass
class DistSpec:
    """How one batch's transaction of a unit runs when it locks several partitions, as the
    engine runs it (`engine/twophase.py`): lock every partition of `parts` one after another
    in ascending order (its own in its turn), the lock request to a remote partition carrying
    the work `ship[q]` a declared SP knows before it runs; then the body on the base partition
    (`exec_s`), the dependent `rounds`, and 2PC with every remote partition."""

    base: int
    parts: tuple[int, ...]  # every partition it locks, ascending: the engine's lock order
    exec_s: float  # work on the base partition (control code + its own accesses)
    ship: dict[int, float]  # work done at a remote partition when it grants the lock
    rounds: tuple[Round, ...] = ()


@dataclass
class CompiledUnit:
    name: str
    members: tuple[str, ...]
    base: int
    machine: int  # node (site) it runs on: its partition's machine, or the partition's own site
    sched: int  # node of its procedure scheduler
    n_inputs: int  # upstream units; 0 = fed by the input stream
    out_edges: list[int] = field(default_factory=list)
    in_bytes: float = 0.0  # input data per batch
    out_bytes: float = 0.0  # output data per batch (all outgoing streams)
    service: list[float] = field(default_factory=list)  # per batch, when single-sited
    post: list[float] | None = None  # per batch: partition work after the commit is reported
    dist: list[DistSpec | None] | None = None  # per batch; None = never distributed
    window_s: list[float] | None = None  # per batch: window maintenance (part of `service`)
    share: float = 1.0  # a data-parallel lane: its share of the batch's tuples
    lane_tables: frozenset[str] = frozenset()  # ... and the split tables it holds its fragments of


@dataclass
class Edge:
    src: int
    dst: int
    name: str
    tuples: float
    bytes: float
    crosses_partition: bool
    crosses_machine: bool  # between the two units' partitions' machines
    streams: int = 1  # streams (from SP, to SP) merged into this edge: the engine's MOVE count
    msg_share: float = 1.0  # of the one invocation message between the two SPs' schedulers
    # (lanes: the engine's scheduler merges every lane's output into one message, so the
    # lane-to-lane edges share its fixed cost by their shares of the key mass)
    move_txns: tuple[DistSpec, ...] | None = None  # move="txn" across partitions: one per stream


@dataclass
class CompiledPlan:
    workload: str
    machines: int
    partitions_per_machine: int
    part_machine: list[int]  # the node (site) of each partition: its machine, or itself
    units: list[CompiledUnit]
    edges: list[Edge]
    sources: list[int]
    sinks: list[int]
    batches: int
    batch_size: int
    scheduler: str
    move: str
    params: SimParams
    input_bytes: float
    nodes: int  # sites (machines, or partitions), plus the central scheduler's own node
    node_machine: list[int]  # machine of each node (-1: the central scheduler's own node)
    batch_rows: list[float]  # rows each batch accesses, over all SPs
    windows: list[WindowWork] = field(default_factory=list)

    @property
    def n_partitions(self) -> int:
        return len(self.part_machine)


def check_options(scheduler: str, move: str) -> None:
    if scheduler not in SCHEDULERS:
        raise SimError(f"unknown scheduler {scheduler!r} (choose {' or '.join(SCHEDULERS)})")
    if move not in MOVES:
        raise SimError(f"unknown MOVE implementation {move!r} (choose {' or '.join(MOVES)})")


def _check_design(workload: Workload, design: Design) -> None:
    n = design.n_partitions
    missing = [p for p in workload.procedure_names if p not in design.procedures]
    missing += [t for t in workload.table_names if t not in design.state]
    # a window need not be placed: it lives on its owner's partition whatever a design says
    known = set(workload.table_names) | set(workload.window_names)
    if missing:
        raise SimError(unplaced_message(design, missing, workload.name))
    extra = [p for p in design.procedures if p not in set(workload.procedure_names)]
    extra += [t for t in design.state if t not in known]
    if extra:
        raise SimError(f"design places {extra[0]!r}, which workload {workload.name!r} does not have")
    for name, p in list(design.procedures.items()) + list(design.state.items()):
        if p is not None and not 0 <= p < n:
            raise SimError(f"design puts {name!r} on partition {p}, outside 0..{n - 1}")


def _jitter(rng: np.random.Generator, cv: float, n: int) -> np.ndarray:
    """Mean-one multiplicative noise with coefficient of variation `cv` (lognormal)."""
    if cv <= 0:
        return np.ones(n)
    sigma2 = math.log(1 + cv * cv)
    return rng.lognormal(-sigma2 / 2, math.sqrt(sigma2), n)


def compile_plan(workload: Workload, design: Design, *, params: SimParams, scheduler: str,
                 move: str, batches: int, batch_size: int | None, seed: int) -> CompiledPlan:
    check_options(scheduler, move)
    if isinstance(batches, bool) or not isinstance(batches, numbers.Integral):  # "300" or nan reached a comparison
        raise SimError(f"batches must be an integer, got {batches!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral)):
        raise SimError(f"batch size must be an integer >= 1 or None (the spec's), got {batch_size!r}")
    if batches < MIN_BATCHES:
        raise SimError(f"batches must be at least {MIN_BATCHES}, got {batches}")
    if batches > MAX_BATCHES:
        raise SimError(f"batches must be at most {MAX_BATCHES:,} for the simulator (it draws every batch's "
                       f"service times up front), got {batches:,}")
    try:
        design.check_fields()  # one built in Python: as a file would be read
    except DesignError as exc:
        raise SimError(str(exc)) from None
    check_simulated_partitions(design.n_partitions)
    try:  # a design of fragments or hot tuples is judged against the spec split the same way
        routes = lane_routes(workload, design)
        workload = workload_at(workload, design.state)
    except DesignError as exc:
        raise SimError(str(exc)) from None
    _check_design(workload, design)
    spec_bs = workload.input.batch_size
    bs = spec_bs if batch_size is None else int(batch_size)
    if bs < 1:
        raise SimError(f"batch size must be >= 1, got {batch_size}")
    if bs > MAX_BATCH_SIZE:  # as a spec's and the engine's: past it the figures are nonsense
        raise SimError(f"batch size must be at most {MAX_BATCH_SIZE:,}, got {bs:,}")
    scale = bs / spec_bs
    ppm = design.partitions_per_machine
    if params.site_per_partition:  # every partition a site of its own (the bundled engine)
        part_machine = list(range(design.n_partitions))
    else:
        part_machine = [p // ppm for p in range(design.n_partitions)]
    n_sites = max(part_machine) + 1
    # the central scheduler's node: a node of its own (index `machines`) or one of the machines
    central = n_sites if params.central_machine < 0 else part_machine[
        min(params.central_machine, design.machines - 1) * ppm]
    nodes = n_sites + (1 if scheduler == "central" and central == n_sites else 0)
    node_machine = [part_machine.index(n) // ppm for n in range(n_sites)] + [-1]
    P = params

    # -- units -----------------------------------------------------------------------------
    order = workload.topological_order()
    rank = {n: i for i, n in enumerate(order)}
    group_of: dict[str, tuple[str, ...]] = {}
    for group in workload.nested:
        members = tuple(sorted(group, key=rank.get))
        for m in members:
            group_of[m] = members
    units: list[CompiledUnit] = []
    unit_of: dict[str, list[int]] = {}  # SP -> its unit, or its lanes' units (data-parallel)
    for name in order:
        if name in unit_of:
            continue
        if name in routes:
            sched = part_machine[design.procedures[name]] if scheduler == "dls" else central
            unit_of[name] = _lane_units(units, routes[name], part_machine, sched)
            continue
        members = group_of.get(name, (name,))
        base = design.procedures[members[0]]
        m = part_machine[base]
        units.append(CompiledUnit(" + ".join(members), members, base, m,
                          m if scheduler == "dls" else central, 0))
        for mem in members:
            unit_of[mem] = [len(units) - 1]

    # -- edges (streams between units, merged per unit pair) -------------------------------
    merged: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for s in workload.streams:  # a lane sends its share to every lane downstream, by key
        for a in unit_of[s.source]:
            for b in unit_of[s.target]:
                if a == b:
                    continue
                t = s.tuples * scale * units[a].share * units[b].share
                merged.setdefault((a, b), []).append((t, t * s.tuple_bytes))
    edges: list[Edge] = []
    for (a, b), streams in merged.items():
        ua, ub = units[a], units[b]
        tuples = sum(t for t, _ in streams)
        nbytes = sum(n for _, n in streams)
        e = Edge(a, b, f"{ua.name}->{ub.name}", tuples, nbytes, ua.base != ub.base,
                 ua.base // ppm != ub.base // ppm, streams=len(streams), msg_share=ua.share * ub.share)
        if move == "txn" and e.crosses_partition and not (ua.lane_tables or ub.lane_tables):
            # the engine's MOVE transaction: based on the producer's partition, it pops the
            # batch from its stream table, pushes it into the consumer's by a fragment, 2PC
            # (to or from a data-parallel lane the engine sends an RPC whatever --move says:
            # priced as one, a lanes design read 6x slower than it ran)
            e.move_txns = tuple(
                DistSpec(ua.base, tuple(sorted((ua.base, ub.base))), P.txn_overhead_s + t * P.row_write_s,
                         {}, (Round({ub.base: P.fragment_s + t * P.row_write_s}, n),))
                for t, n in streams)
        ua.out_edges.append(len(edges))
        ub.n_inputs += 1
        ub.in_bytes += nbytes
        ua.out_bytes += nbytes
        edges.append(e)
    sources = [i for i, u in enumerate(units) if u.n_inputs == 0]
    sinks = [i for i, u in enumerate(units) if not u.out_edges]
    in_tuple_bytes = 16 * max(len(workload.input.fields), 1)
    input_bytes = bs * in_tuple_bytes
    for i in sources:
        units[i].in_bytes = input_bytes * units[i].share

    # -- per-batch service times -----------------------------------------------------------
    n_all = design.n_partitions
    batch_rows = np.zeros(batches)
    window_names = set(workload.window_names)
    table_of = tables_among(workload.table_names)  # (the spec split at the design's items)
    works: list[WindowWork] = []
    for ui, u in enumerate(units):
        rng = np.random.default_rng([seed, ui])
        procs = [workload.procedure(mname) for mname in u.members]
        # the engine runs cost x cost_unit_us of CPU for a declared SP; code does its own work
        unit_us = float(workload.input.cost_unit_us)
        cost = sum(p.cost for p in procs if p.code is None) * unit_us / DEFAULT_COST_UNIT_US * u.share
        tuples_in = (sum(edges[k].tuples for k in range(len(edges)) if edges[k].dst == ui)
                     if u.n_inputs else bs * u.share)
        tuples_out = sum(edges[k].tuples for k in u.out_edges)
        # sending the commit notification back to the scheduler is the partition thread's job
        same = u.machine == u.sched
        ack_send = P.local_msg_cpu_s if same else (
            P.msg_cpu_s + (u.out_bytes * P.ser_byte_s if move == "rpc" else 0.0))
        fixed = (P.txn_overhead_s + cost * P.cost_unit_s + tuples_in * P.tuple_in_s
                 + tuples_out * P.tuple_out_s + ack_send)
        accesses, member_of = _unit_accesses(u, procs, design, table_of)
        # the partitions every transaction of the unit locks (engine: Unit.static_partitions):
        # its members' partitions and every partition holding a table they declare; a
        # replicated table is read locally and written everywhere (code: locked everywhere)
        locked = {u.base} | (set() if u.lane_tables else {design.procedures[m] for m in u.members})
        # where each access goes: None = the base partition, else a tuple of partitions
        targets: list[tuple[int, ...] | None] = []
        for a, mi in zip(accesses, member_of):
            if a.table in window_names:  # the owner's own window: always local
                targets.append(None)
                continue
            where = design.state[a.table]
            if where is None:
                if a.mode == "write" or procs[mi].code is not None:
                    locked.update(range(n_all))
                targets.append(None if a.mode == "read" or n_all == 1
                               else tuple(q for q in range(n_all) if q != u.base))
            else:
                locked.add(where)
                targets.append(None if where == u.base else (where,))
        row_s = [(a.rows * scale) * (P.row_write_s if a.mode == "write" else P.row_read_s)
                 for a in accesses]
        present = np.ones((len(accesses), batches), dtype=bool)
        for k, a in enumerate(accesses):
            if a.probability < 1.0:
                present[k] = rng.random(batches) < a.probability
        noise = _jitter(rng, P.service_cv, batches)
        local_rows = np.zeros(batches)
        rows_touched = np.zeros(batches)
        for k, t in enumerate(targets):
            if t is None or len(t) > 1:  # replicated writes also update the local copy
                local_rows += present[k] * row_s[k]
            rows_touched += present[k] * (accesses[k].rows * scale)
        unit_works = [window_work(workload, w, batches, scale, P)
                      for m in u.members for w in workload.windows_of(m)]
        if unit_works:
            u.window_s = (sum(w.seconds for w in unit_works) * noise).tolist()
            local_rows += sum(w.seconds for w in unit_works)
            rows_touched += sum(w.rows for w in unit_works)
            works += unit_works
        batch_rows += rows_touched
        service = (fixed + local_rows) * noise
        u.service = service.tolist()
        if P.txn_after_commit_s or P.row_after_commit_s:
            u.post = ((P.txn_after_commit_s + rows_touched * P.row_after_commit_s) * noise).tolist()
        if len(locked) == 1:
            continue  # single-sited on every batch
        # declared single SP: its remote work ships with the lock requests; a nested group (or
        # code) sends one fragment round per member with remote work, after the locks
        shipped = len(procs) == 1 and procs[0].code is None
        parts = tuple(sorted(locked))
        u.dist = [None] * batches
        cache: dict[tuple, DistSpec] = {}
        remote = [k for k, t in enumerate(targets) if t is not None]
        probabilistic = [k for k in remote if accesses[k].probability < 1.0]
        pbits = present[probabilistic].T.tolist() if probabilistic else [[]] * batches
        for b in range(batches):
            key = tuple(pbits[b])
            spec = cache.get(key)
            if spec is None:
                steps = [(member_of[k], targets[k], row_s[k]) for k in remote if present[k, b]]
                spec = _dist_spec(u.base, parts, steps, shipped, P)
                cache[key] = spec
            u.dist[b] = DistSpec(spec.base, spec.parts, u.service[b], spec.ship, spec.rounds)
    return CompiledPlan(workload.name, design.machines, ppm, part_machine, units, edges, sources,
                sinks, batches, bs, scheduler, move, params, input_bytes, nodes, node_machine,
                batch_rows.tolist(), works)


def _lane_units(units: list[CompiledUnit], route: LaneRoute, part_machine: list[int],
                sched: int) -> list[int]:
    """One unit per lane of a data-parallel SP, each with its share of the key mass. Every
    lane's scheduler is the SP's one scheduler on node `sched` (the engine's: beside the SP's
    own partition, or central): it sends each lane its sub-batch and takes each lane's commit."""
    shares = fragment_shares(route.table_rows, f"input:{route.field}", len(route.fragment_partitions))
    split = frozenset((route.table, *route.co_tables))
    out = []
    for k, part in enumerate(route.lanes):
        m = part_machine[part]
        share = sum(shares[i] for i in route.lane_fragments(k))
        units.append(CompiledUnit(f"{route.procedure}[lane p{part}]", (route.procedure,), part, m,
                          sched, 0, share=share, lane_tables=split))
        out.append(len(units) - 1)
    return out


def _unit_accesses(u: CompiledUnit, procs: list, design: Design,
                   table_of: dict[str, str]) -> tuple[list, list[int]]:
    """The accesses a unit makes per batch, with the member each belongs to. A lane reaches
    only the fragments of its split tables on its own partition (their key mass is its
    share already) and does its share of every other access. `table_of`: each item of the
    split workload -> its table (`tables_among` its names: a spec's `Trade@Type@7` is no
    item of a split `Trade`)."""
    accesses, member_of = [], []
    for i, p in enumerate(procs):
        for a in p.accesses:
            if u.lane_tables and table_of.get(a.table, a.table) in u.lane_tables:
                if design.state.get(a.table) != u.base:
                    continue
            elif u.share != 1.0:
                a = replace(a, rows=a.rows * u.share)
            accesses.append(a)
            member_of.append(i)
    return accesses, member_of


def _dist_spec(base: int, parts: tuple[int, ...], steps: list[tuple[int, tuple[int, ...], float]],
               shipped: bool, P: SimParams) -> DistSpec:
    """Where a distributed transaction's remote work happens: `steps` are its remote accesses
    this batch (member index, partitions, work at each). Every remote partition serving a lock
    request or a fragment does `fragment_s` of fixed work."""
    ship = {q: P.fragment_s for q in parts if q != base}
    if shipped:
        for _, targets, work in steps:
            for q in targets:
                ship[q] += work
        return DistSpec(base, parts, 0.0, ship, ())
    rounds: list[Round] = []
    by_member: dict[int, dict[int, float]] = {}
    for member, targets, work in steps:
        got = by_member.setdefault(member, {})
        for q in targets:
            got[q] = got.get(q, P.fragment_s) + work
    for member in sorted(by_member):
        rounds.append(Round(dict(sorted(by_member[member].items())), P.control_bytes))
    return DistSpec(base, parts, 0.0, ship, tuple(rounds))
