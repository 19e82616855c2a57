"""A workload and a design compiled into what the engine executes: scheduling units (one SP,
or one nested group whose SPs commit together), their lanes (one per partition for a
data-parallel SP, else one), where each unit runs, its streams in and out, and the key
generators of every declared access. Every process builds the same plan from the same input.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from costmodel.lanes import LaneRoute, lane_routes
from costmodel.design import Design
from costmodel.errors import DesignError
from costmodel.workload import Stream, Workload
from engine_sim.engine.errors import EngineError
from engine_sim.engine.keys import KeyGen
from engine_sim.engine.row_routing import RowRouter
from engine_sim.engine.windows import WindowSpec

DRIVER = -1  # node id of the driver (client, central scheduler, recovery coordinator)


@dataclass
class AccessPlan:
    table: str
    mode: str
    rows: float
    probability: float
    keys: KeyGen | None  # None for a read of the owner's window (its newest `rows` tuples)

    @property
    def window(self) -> bool:
        return self.keys is None


@dataclass
class ProcPlan:
    name: str
    index: int
    base: int
    unit: str
    accesses: list[AccessPlan]
    code: object | None  # a generator function (ctx, batch) from engine_sim.workloads
    oltp: bool
    pk_index: int | None  # input field index of the data-parallel key
    outputs: list[Stream]  # streams leaving this SP
    tables: tuple[str, ...]  # tables it declares (for partition sets of real code)
    work_us: float = 0.0  # CPU work per declared batch: cost x cost_unit_us (declared SPs only)
    windows: tuple[str, ...] = ()  # the windows it owns: each execution steps them first
    input_tuples: float = 0.0  # declared tuples a batch brings it: the input batch, or its streams'


@dataclass
class Unit:
    """What one procedure scheduler schedules: an SP, or a nested group run as one txn."""

    name: str
    members: tuple[str, ...]  # in dataflow order
    base: int
    lanes: tuple[int, ...]  # partition of each lane (sub-batch); one lane unless data-parallel
    upstream: tuple[str, ...]  # units feeding it
    outputs: tuple[tuple[str, str, str], ...]  # (from member, to member, to unit) leaving it
    border: bool
    sink: bool
    oltp: bool
    dp: bool
    static_partitions: frozenset[int] = frozenset()
    lane_partitions: tuple = ()  # per lane: the partitions every txn of the lane locks
    route: LaneRoute | None = None  # the design's lanes (else: the key modulo every partition)

    def handoffs_from(self, partition: int) -> int:
        """The MOVEs a batch for this unit sent from `partition` counts: one where its base is
        elsewhere, or, data-parallel, one for each lane elsewhere (every lane gets its sub-batch,
        empty or not), as the simulator counts them (it counted one for all the lanes)."""
        if self.dp:
            return sum(1 for p in self.lanes if p != partition)
        return int(self.base != partition)

    def partitions_of(self, lane: int) -> frozenset[int]:
        return self.lane_partitions[lane] if self.lane_partitions else self.static_partitions

    def lane_of(self, value: int) -> int:
        """The lane of a tuple whose data-parallel key field holds `value`."""
        return self.route.lane_of_key(value) if self.route else value % len(self.lanes)

    def split(self, tuples, key_index: int) -> list[list]:
        """The sub-batch of each lane: `tuples` dealt out by their data-parallel key."""
        if self.route:
            return self.route.split(tuples, key_index)
        out: list[list] = [[] for _ in self.lanes]
        for t in tuples:
            out[t[key_index] % len(out)].append(t)
        return out

    @property
    def nested(self) -> bool:
        return len(self.members) > 1


@dataclass
class Plan:
    workload: Workload
    design: Design
    router: RowRouter  # which partition each row lives on
    procs: dict[str, ProcPlan]
    units: dict[str, Unit]
    unit_order: list[str]
    fields: tuple[str, ...]
    field_domains: tuple[int, ...]
    batch_size: int
    scale: float  # batch_size / declared batch size: rows and tuples per batch scale with it
    seed: int
    n_partitions: int
    machine_of: tuple[int, ...]
    scheduler: str
    move: str
    recovery: str
    data_parallel: bool
    code_module: object | None = None  # workload-level hooks (initial rows, input generator)
    tuple_bytes: dict[tuple[str, str], int] = field(default_factory=dict)
    dp_pk: dict[str, int] = field(default_factory=dict)  # data-parallel table -> key field index
    abort_rate: float = 0.0  # injected aborts (tests of restart and purge)
    windows: dict[str, WindowSpec] = field(default_factory=dict)  # on their owners' partitions
    restart_limit: int = 100

    @property
    def borders(self) -> list[str]:
        return [u for u in self.unit_order if self.units[u].border]

    @property
    def sinks(self) -> list[str]:
        return [u for u in self.unit_order if self.units[u].sink]

    @property
    def oltp_units(self) -> list[str]:
        return [u for u in self.unit_order if self.units[u].oltp]

    def scheduler_node(self, unit: str) -> int:
        """DLS: beside the unit's base partition; central: at the driver."""
        return DRIVER if self.scheduler == "central" else self.units[unit].base

    def logged(self, unit: str, kind: str = "stream") -> bool:
        """Does a committed txn of this unit go to the command log?"""
        if self.recovery == "off":
            return False
        if self.recovery == "strong" or kind == "oltp":
            return True
        return kind == "stream" and self.units[unit].border

    def machine(self, node: int) -> int:
        return 0 if node == DRIVER else self.machine_of[node]


def build_plan(workload: Workload, design: Design, *, seed: int = 0, batch_size: int | None = None,
               scheduler: str = "dls", move: str = "rpc", recovery: str = "weak",
               data_parallel: bool = False) -> Plan:
    from engine_sim.workloads import resolve_code, workload_module

    n = design.n_partitions
    fields = tuple(workload.input.fields)
    field_index = {f: i for i, f in enumerate(fields)}
    tables = {t.name: t.rows for t in workload.tables}
    windows = window_specs(workload, design)
    owners = {w.procedure for w in workload.windows}
    try:  # the design's data-parallel SPs: lanes where their table's fragments are
        routes = lane_routes(workload, design)
    except DesignError as exc:
        raise EngineError(str(exc)) from None
    # --data-parallel: every SP with a partition key, over every partition
    dp_procs = {p.name for p in workload.procedures
                if data_parallel and p.partition_key and not p.oltp and p.name not in owners
                and not any(p.name in g for g in workload.nested) and p.name not in routes}
    for name in dp_procs:
        pk = workload.procedure(name).partition_key
        if pk not in field_index:
            raise EngineError(f"procedure {name!r}: partition_key {pk!r} is not an input field "
                              f"(fields: {', '.join(fields) or 'none'})")
    dp_tables = frozenset(a.table for p in workload.procedures if p.name in dp_procs for a in p.accesses)
    state = {name: part for name, part in design.state.items() if name not in windows}
    router = RowRouter(tables, state, n, dp_tables, {w: spec.partition for w, spec in windows.items()})

    group_of = {m: g for g in workload.nested for m in g}
    topo = workload.topological_order()
    unit_of = {name: (group_of[name][0] if name in group_of else name) for name in topo}
    # a group is named after its first member in dataflow order
    for g in workload.nested:
        first = min(g, key=topo.index)
        for m in g:
            unit_of[m] = first
    zipf_cache: dict = {}
    procs: dict[str, ProcPlan] = {}
    for i, p in enumerate(workload.procedures):
        accesses = []
        for a in p.accesses:
            if a.table in windows:  # the owner reads its own window (the spec checked who)
                accesses.append(AccessPlan(a.table, a.mode, a.rows, a.probability, None))
                continue
            kind, _, param = a.keys.partition(":")
            if kind == "input" and param not in field_index:
                raise EngineError(f"procedure {p.name!r}: keys {a.keys!r} name a field that the input "
                                  f"does not declare (fields: {', '.join(fields) or 'none'})")
            accesses.append(AccessPlan(a.table, a.mode, a.rows, a.probability,
                                       KeyGen(a.keys, tables[a.table], field_index.get(param), zipf_cache)))
        code = resolve_code(p.code, p.name) if p.code else None
        procs[p.name] = ProcPlan(
            name=p.name, index=i, base=design.procedures[p.name], unit=unit_of[p.name],
            accesses=accesses, code=code, oltp=p.oltp,
            pk_index=(field_index[routes[p.name].field] if p.name in routes
                      else field_index.get(p.partition_key) if p.name in dp_procs else None),
            outputs=[s for s in workload.streams if s.source == p.name],
            tables=tuple(dict.fromkeys(a.table for a in p.accesses)),
            work_us=0.0 if p.code else float(p.cost) * workload.input.cost_unit_us,
            windows=tuple(w.name for w in workload.windows_of(p.name)),
            input_tuples=float(sum(s.tuples for s in workload.streams if s.target == p.name)
                               or workload.input.batch_size))

    units: dict[str, Unit] = {}
    order: list[str] = []
    for name in topo:
        u = unit_of[name]
        if u in units:
            continue
        members = tuple(m for m in topo if unit_of[m] == u)
        upstream = tuple(dict.fromkeys(unit_of[s.source] for s in workload.streams
                                       if s.target in members and unit_of[s.source] != u))
        outputs = tuple((s.source, s.target, unit_of[s.target]) for s in workload.streams
                        if s.source in members and unit_of[s.target] != u)
        base = procs[members[0]].base
        oltp = all(procs[m].oltp for m in members)
        route = routes.get(name) if len(members) == 1 else None
        dp = (name in dp_procs or route is not None) and len(members) == 1
        parts = {base}
        for m in members:
            parts.add(procs[m].base)
            parts.update(_access_partitions(workload.procedure(m), router))
        lane_parts: tuple = ()
        if route is not None:  # a lane locks its own partition for the table it splits on
            proc = workload.procedure(name)
            lane_parts = tuple(
                frozenset({lane}).union(*(_access_partitions(proc, router, only=t)
                                          for t in procs[name].tables
                                          if t != route.table and t not in route.co_tables))
                for lane in route.lanes)
        elif dp:
            proc = workload.procedure(members[0])
            per_lane = []
            for k in range(n):
                lp = {k}
                for t in procs[members[0]].tables:
                    keyed = all(a.keys.startswith("input:") for a in proc.accesses if a.table == t)
                    if t in dp_tables and keyed:
                        continue
                    lp.update(_access_partitions(proc, router, only=t))
                per_lane.append(frozenset(lp))
            lane_parts = tuple(per_lane)
        units[u] = Unit(name=u, members=members, base=base,
                        lanes=(route.lanes if route else tuple(range(n)) if dp else (base,)),
                        upstream=upstream, route=route,
                        outputs=outputs, border=not upstream and not oltp,
                        sink=not outputs and not oltp, oltp=oltp, dp=dp,
                        static_partitions=frozenset(parts), lane_partitions=lane_parts)
        order.append(u)
    placed = set()
    for u in order:
        late = [up for up in units[u].upstream if up not in placed]
        if late:
            raise EngineError(f"nested group {' + '.join(units[u].members)} is fed by {late[0]!r}, which "
                              f"depends on the group itself: a nested group must be contiguous in the dataflow")
        placed.add(u)

    module = workload_module([p.code for p in workload.procedures if p.code])
    size = int(batch_size or workload.input.batch_size)
    domains = []
    for f in fields:
        rows = [tables[a.table] for p in workload.procedures for a in p.accesses
                if a.keys == f"input:{f}" and a.table in tables]
        if rows:
            domains.append(max(rows))
        elif any(p.partition_key == f for p in workload.procedures):
            domains.append(max(16, 2 * n))
        else:
            domains.append(1000)
    return Plan(
        workload=workload, design=design, router=router, procs=procs, units=units,
        unit_order=order, fields=fields, field_domains=tuple(domains), batch_size=size,
        scale=size / max(workload.input.batch_size, 1), seed=seed, n_partitions=n,
        machine_of=tuple(design.machine_of_partition(p) for p in range(n)),
        scheduler=scheduler, move=move, recovery=recovery, data_parallel=data_parallel,
        code_module=module,
        tuple_bytes={(s.source, s.target): s.tuple_bytes for s in workload.streams},
        dp_pk={a.table: field_index[p.partition_key] for p in workload.procedures
               if p.name in dp_procs for a in p.accesses},
        windows=windows,
    )


def window_specs(workload: Workload, design: Design) -> dict[str, WindowSpec]:
    """Every window on its owner's partition. A design that places a window elsewhere (or
    replicates it) is refused: a window is private state of its owner (dissertation 3.3.5)."""
    out = {}
    for w in workload.windows:
        if w.procedure not in design.procedures:
            continue  # check_design reports the unplaced owner
        owner = workload.procedure(w.procedure)
        if owner.oltp:
            raise EngineError(f"window {w.name!r}: its owner {w.procedure!r} is an OLTP procedure; "
                              f"a window needs a streaming owner that runs once per batch")
        home = design.procedures[w.procedure]
        if w.name in design.state and design.state[w.name] != home:
            raise EngineError(f"design places window {w.name!r} on partition {design.state[w.name]!r}, "
                              f"but its owner {w.procedure!r} runs on partition {home}: "
                              f"a window lives on its owner's partition")
        out[w.name] = WindowSpec.from_window(w, home, workload.input.rate)
    return out


def _access_partitions(proc, router: RowRouter, only: str | None = None) -> set[int]:
    """Partitions a procedure's declared accesses can touch: where its tables live; for a
    replicated table, none when it only reads (the local copy) and all when it writes."""
    parts: set[int] = set()
    for a in proc.accesses:
        if only is not None and a.table != only:
            continue
        if router.replicated(a.table):
            if a.mode == "write" or proc.code is not None:  # code may write what it reads
                parts.update(router.all)
        else:
            parts.update(router.table_partitions(a.table))
    return parts
