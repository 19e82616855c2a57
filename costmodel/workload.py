"""The workload: a dataflow of stored procedures, the tables they touch, and the cluster.

Plain frozen records; `advisor.sources` reads them from TOML and checks them.
"""
from __future__ import annotations

import heapq
import html
import numbers
from dataclasses import asdict, dataclass, field, replace
from graphlib import CycleError, TopologicalSorter

from costmodel.errors import SpecError

KEY_DISTRIBUTIONS = ("uniform", "zipf:<theta>", "sequential", "input:<field>")
# what the search, the simulator and the engine can hold: past these a number is refused up
# front in one line instead of ending in a MemoryError, an overflow or a hang
MAX_MACHINES = 1_000_000
MAX_PARTITIONS = 1_000_000
MAX_PARTITIONS_PER_MACHINE = 4_096  # (4 x 250,000 took 48 s and 3.6 GB to search)
MAX_TABLE_ROWS = 10**15
MAX_ROW_BYTES = 10**9
# tuples in a batch, rows an access touches and tuples a stream carries per batch: far past
# anything the engine runs in its bound, low enough that every product stays a finite number
MAX_BATCH_SIZE = 1_000_000
# input batches per second, offered (the simulator's --rate) or declared ([input] rate): past
# these the figures overflow (a time window's timestamps, the declared tuples/s)
MIN_RATE_BPS, MAX_RATE_BPS = 1e-6, 1e9
MAX_PER_BATCH = 10**9
MAX_COST_UNIT_US = 1_000_000  # engine CPU microseconds per unit of SP cost: 1 s


@dataclass(frozen=True)
class Table:
    name: str
    rows: int
    row_bytes: int
    key: str
    read_mostly: bool = False

    def __post_init__(self) -> None:
        numeric = all(isinstance(v, numbers.Real) for v in (self.rows, self.row_bytes))  # else: `check_workload`
        if numeric and (self.rows > MAX_TABLE_ROWS or self.row_bytes > MAX_ROW_BYTES):
            raise SpecError(f"table {self.name!r}: at most {MAX_TABLE_ROWS:.0e} rows of at most "
                            f"{MAX_ROW_BYTES:,} bytes, got {self.rows:g} rows of {self.row_bytes:g} bytes")

    @property
    def bytes(self) -> int:
        return self.rows * self.row_bytes


@dataclass(frozen=True)
class Access:
    """One declared state access of a procedure, per batch."""

    table: str
    mode: str  # "read" | "write"
    rows: float  # rows touched per batch
    keys: str = "uniform"  # uniform | zipf:<theta> | sequential | input:<field>
    probability: float = 1.0  # chance that a batch performs this access

    @property
    def expected_rows(self) -> float:
        return self.rows * self.probability

    @property
    def key_kind(self) -> str:
        return self.keys.split(":", 1)[0]

    @property
    def key_param(self) -> str | None:
        return self.keys.split(":", 1)[1] if ":" in self.keys else None


@dataclass(frozen=True)
class Procedure:
    name: str
    cost: float  # processing cost per batch, relative units
    accesses: tuple[Access, ...] = ()
    partition_key: str | None = None  # data-parallel: sub-batches split on this input field
    code: str | None = None  # name of bundled real procedure code, if any
    oltp: bool = False  # invoked by a client, not by a stream


@dataclass(frozen=True)
class Stream:
    source: str
    target: str
    tuples: float  # tuples per batch
    tuple_bytes: int = 64


@dataclass(frozen=True)
class Window:
    """A sliding window (dissertation 3.3.5): a finite, ordered part of a stream, private to
    the SP that owns it. Each execution of the owner stages its input tuples; once `slide`
    tuples (or seconds) are staged the window slides: the oldest tuples expire and the staged
    ones become active. Only consecutive executions of the owner read or write it."""

    name: str
    procedure: str  # the owning SP
    size: float  # tuples (kind "tuple") or seconds (kind "time")
    slide: float  # 0 < slide <= size; slide == size is a tumbling window
    kind: str = "tuple"  # "tuple" | "time"
    tuple_bytes: int = 32
    max_tuples: int | None = None  # memory estimate for a time window (else from [input] rate)

    @property
    def tumbling(self) -> bool:
        return self.slide == self.size


def cluster_text(machines: int, partitions_per_machine: int) -> str:
    """How every output names a cluster: "4 machines x 1 partition", "1 machine x 2 partitions"
    (partitions per machine)."""
    def counted(n: int, what: str) -> str:
        return f"{n:,} {what}{'' if n == 1 else 's'}"

    return f"{counted(machines, 'machine')} x {counted(partitions_per_machine, 'partition')}"


def check_cluster_size(machines: int | None, partitions_per_machine: int | None,
                       error: type[Exception] = SpecError) -> None:
    """Refuse (`error`, one line) a cluster beyond what anything here builds; None: not known
    yet (the source's own, checked when it is)."""
    m, ppm = machines or 1, partitions_per_machine or 1
    if m > MAX_MACHINES or ppm > MAX_PARTITIONS_PER_MACHINE or m * ppm > MAX_PARTITIONS:
        raise error(f"a cluster has at most {MAX_MACHINES:,} machines, {MAX_PARTITIONS_PER_MACHINE:,} "
                    f"partitions per machine and {MAX_PARTITIONS:,} partitions in all, got "
                    f"{cluster_text(m, ppm)}")


@dataclass(frozen=True)
class Cluster:
    machines: int = 1
    partitions_per_machine: int = 1
    machine_memory_mb: float | None = None
    machine_capacity: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        check_cluster_size(self.machines, self.partitions_per_machine)

    @property
    def partitions(self) -> int:
        return self.machines * self.partitions_per_machine


DEFAULT_COST_UNIT_US = 100.0  # CPU time the engine spends per unit of declared SP cost


@dataclass(frozen=True)
class InputSpec:
    batch_size: int = 10
    rate: float | None = None  # input batches per second, if fixed
    fields: tuple[str, ...] = ()
    cost_unit_us: float = DEFAULT_COST_UNIT_US  # engine CPU microseconds per unit of SP cost, per batch


@dataclass(frozen=True)
class Workload:
    name: str
    tables: tuple[Table, ...]
    procedures: tuple[Procedure, ...]
    streams: tuple[Stream, ...] = ()
    nested: tuple[tuple[str, ...], ...] = ()
    windows: tuple[Window, ...] = ()
    input: InputSpec = field(default_factory=InputSpec)
    cluster: Cluster = field(default_factory=Cluster)
    description: str = ""
    source: str = ""  # where it was read from
    sha256: str = ""  # digest of the source text
    assumed: tuple[str, ...] = ()  # rebuilt from statistics: what the trace could not tell

    # -- lookups -------------------------------------------------------------------------
    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def procedure(self, name: str) -> Procedure:
        for p in self.procedures:
            if p.name == name:
                return p
        raise KeyError(name)

    def window(self, name: str) -> Window:
        for w in self.windows:
            if w.name == name:
                return w
        raise KeyError(name)

    def windows_of(self, procedure: str) -> tuple[Window, ...]:
        """The windows an SP owns (declaration order)."""
        return tuple(w for w in self.windows if w.procedure == procedure)

    @property
    def window_names(self) -> list[str]:
        return [w.name for w in self.windows]

    def input_tuples(self, procedure: str) -> float:
        """Tuples an SP receives per batch: its input streams, or the input batch at a border."""
        incoming = [s.tuples for s in self.streams if s.target == procedure]
        return float(sum(incoming)) if incoming else float(self.input.batch_size)

    def window_tuples(self, window: Window) -> float:
        """Tuples a window holds when full: its size for a tuple window; for a time window
        `max_tuples`, else size seconds x [input] rate x the owner's tuples per batch."""
        if window.kind == "tuple":
            return float(window.size)
        if window.max_tuples is not None:
            return float(window.max_tuples)
        rate = self.input.rate or 0.0
        return window.size * rate * self.input_tuples(window.procedure)

    def window_bytes(self, window: Window) -> float:
        """Memory of a full window (active tuples; staged ones are at most one slide more)."""
        return self.window_tuples(window) * window.tuple_bytes

    @property
    def from_statistics(self) -> bool:
        return bool(self.assumed)

    @property
    def procedure_names(self) -> list[str]:
        return [p.name for p in self.procedures]

    @property
    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    def topological_order(self) -> list[str]:
        """Procedures in dataflow order (ties broken by declaration order)."""
        return dataflow_order([p.name for p in self.procedures],
                              [(s.source, s.target) for s in self.streams])

    def with_cluster(self, machines: int | None = None,
                     partitions_per_machine: int | None = None) -> "Workload":
        cluster = self.cluster
        for label, value in (("machines", machines), ("partitions per machine", partitions_per_machine)):
            if value is not None and (not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1):
                raise SpecError(f"{label} must be an integer >= 1, got {value!r}")  # (was taken, refused later)
        machines = None if machines is None else int(machines)
        partitions_per_machine = None if partitions_per_machine is None else int(partitions_per_machine)
        if machines is not None:
            cap = cluster.machine_capacity
            if cap is not None and len(cap) != machines:
                cap = None
            cluster = replace(cluster, machines=machines, machine_capacity=cap)
        if partitions_per_machine is not None:
            cluster = replace(cluster, partitions_per_machine=partitions_per_machine)
        return replace(self, cluster=cluster)

    # -- notebook display ----------------------------------------------------------------
    def to_frame(self):
        """One row per procedure: cost, key, tables read and written, streams in and out."""
        import pandas as pd

        self._check()
        rows = []
        for p in self.procedures:
            rows.append({
                "procedure": p.name, "cost": p.cost, "partition_key": p.partition_key,
                "reads": ", ".join(a.table for a in p.accesses if a.mode == "read"),
                "writes": ", ".join(a.table for a in p.accesses if a.mode == "write"),
                "rows_per_batch": sum(a.expected_rows for a in p.accesses),
                "inputs": ", ".join(s.source for s in self.streams if s.target == p.name),
                "outputs": ", ".join(s.target for s in self.streams if s.source == p.name),
            })
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        """One line (the dataclass's listed every table, SP and stream whole: 50 KB at 100
        SPs); `to_frame()` and the notebook's table show them."""
        counts = ", ".join(f"{len(items):,} {what}{'' if len(items) == 1 else 's'}" for items, what in (
            (self.procedures, "SP"), (self.tables, "table"), (self.streams, "stream"), (self.windows, "window"))
            if isinstance(items, (tuple, list)))
        source = f", from {self.source!r:.120}" if self.source else ""
        return f"Workload({self.name!r:.80}: {counts}{source})"

    def _check(self) -> None:
        """Changed in Python (`dataclasses.replace`): held to what a spec could say, one
        SpecError line (`procedures=("x",)` was an AttributeError from the table's rows)."""
        from costmodel.spec_reader import check_workload  # (it reads and writes this module's types)

        check_workload(self)

    def _repr_html_(self) -> str:
        """Never raises (a notebook shows it): a workload changed into one no spec could hold
        renders as the one line that says why, as a Design does."""
        e = html.escape
        try:
            self._check()
        except SpecError as exc:
            return f"<p><b>Not a valid workload:</b> {e(str(exc))}</p>"
        rows = "".join(
            f"<tr><td>{e(p.name)}</td><td>{p.cost:g}</td><td>"
            + ", ".join(f"{e(a.mode)} {e(a.table)} ({a.rows:g} rows, {e(a.keys)})" for a in p.accesses)
            + "</td></tr>"
            for p in self.procedures
        )
        return (
            f"<b>Workload {e(self.name)}</b>: {len(self.procedures)} procedures, "
            f"{len(self.tables)} tables, {len(self.streams)} streams, cluster "
            f"{self.cluster.machines}x{self.cluster.partitions_per_machine}"
            f"<table><tr><th>procedure</th><th>cost</th><th>accesses</th></tr>{rows}</table>"
        )


def input_access_keys(workload: Workload) -> dict[str, dict[str, str]]:
    """Per SP, the tables it reaches by a field of its input tuple (`input:FIELD`), what
    data-parallel lanes split on: every trace's manifest carries it (`access_keys`), so the
    workload rebuilt from the trace's statistics can run the same lanes as its spec."""
    return {p.name: keyed for p in workload.procedures
            if (keyed := {a.table: a.keys for a in p.accesses if a.key_kind == "input"})}


def workload_as_plain(workload: Workload) -> dict:
    """The spec as plain data (dicts, lists, numbers) with its dataflow order and its input
    keyed accesses (`input_access_keys`): what traces.synth reads, since traces must not
    import the advisor."""
    spec = asdict(workload)
    spec["topological_order"] = workload.topological_order()
    spec["access_keys"] = input_access_keys(workload)
    return spec


# -- dataflow order (graphlib) ----------------------------------------------------------------

def dataflow_cycle(edges: list[tuple[str, str]]) -> list[str] | None:
    """A cycle among the (source, target) stream edges, as [a, b, ..., a], or None.

    The search starts from the sources in the order they first appear and follows each
    node's edges in declaration order, so the same spec always names the same cycle."""
    sorter: TopologicalSorter = TopologicalSorter()
    for source, _ in edges:
        sorter.add(source)
    for source, target in edges:
        sorter.add(target, source)
    try:
        sorter.prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return None


def dataflow_order(names: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """`names` in an order where every edge's source comes before its target; of the names
    ready at each step, the one declared first goes next. A cycle is a SpecError naming it."""
    rank = {name: i for i, name in enumerate(names)}
    sorter: TopologicalSorter = TopologicalSorter({name: () for name in names})
    for source, target in edges:
        sorter.add(target, source)
    try:
        sorter.prepare()
    except CycleError as exc:
        raise SpecError(f"cycle in the dataflow: {' -> '.join(exc.args[1])}") from None
    ready: list[tuple[int, str]] = []
    out: list[str] = []
    while sorter.is_active():
        for name in sorter.get_ready():
            heapq.heappush(ready, (rank[name], name))
        _, name = heapq.heappop(ready)
        out.append(name)
        sorter.done(name)
    return out
