"""The history checker: is a recorded execution a correct streaming schedule?

A history is a list of committed transaction executions (TEs): which SP ran which batch (and
sub-batch lane), where each one stood in each partition's serial order, and which rows it
read and wrote there. It is correct when
- every (SP, batch) of the expected batches committed exactly once (per lane);
- every nested group committed all of its SPs or none, in one transaction, and no other
  transaction's access falls between the group's accesses on any partition (isolation);
- every window (dissertation 3.3.5) is touched only by its owner SP (isolation), and the
  owner's executions reach it in batch order, one batch after the other with no gap (the
  window's contents are the owner's consecutive batches);
- where the run migrated to another design (kind "migration", at a batch boundary), every
  execution ran under the design its batch belongs to, and the migration stands between the
  two designs' executions in the serialization graph (it moved their rows);
- the serialization graph is acyclic: conflict edges (two accesses to one row, one a write,
  in partition order), batch-order edges (an SP's batches in order) and dataflow-order edges
  (within a batch, upstream SP before downstream SP). An acyclic graph means the execution is
  equivalent to a serial schedule meeting both ordering constraints (dissertation 3.2.2).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TE:
    id: object  # unique, hashable
    procedure: str
    batch: int
    lane: int = 0
    kind: str = "stream"  # stream | oltp
    group: object | None = None  # nested group instance
    positions: dict = field(default_factory=dict)  # partition -> sortable position
    accesses: list = field(default_factory=list)  # (partition, table, key, mode)
    ts: int = 0  # commit timestamp: breaks ties in the serial order (the real order, if legal)
    era: int = 0  # the design it ran under (a migration: the design it switched to)

    def label(self) -> str:
        lane = f"/{self.lane}" if self.lane else ""
        return f"{self.procedure}@{self.batch}{lane}" if self.kind != "oltp" else \
            f"{self.procedure}(oltp #{self.batch})"


@dataclass
class Dataflow:
    """What the ordering constraints are built from (the workload, without the rest)."""

    procedures: list[str]
    streams: list[tuple[str, str]]
    nested: list[tuple[str, ...]] = field(default_factory=list)
    oltp: set[str] = field(default_factory=set)
    lanes: dict[str, int] = field(default_factory=dict)  # data-parallel SP -> lanes
    windows: dict[str, str] = field(default_factory=dict)  # window -> its owner SP

    @classmethod
    def from_workload(cls, workload, lanes: dict[str, int] | None = None) -> "Dataflow":
        return cls([p.name for p in workload.procedures],
                   [(s.source, s.target) for s in workload.streams],
                   [tuple(g) for g in workload.nested],
                   {p.name for p in workload.procedures if p.oltp}, dict(lanes or {}),
                   {w.name: w.procedure for w in getattr(workload, "windows", ())})


@dataclass
class CheckResult:
    ok: bool
    violations: list[str]
    nodes: int = 0
    edges: int = 0
    order: list[int] = field(default_factory=list)  # a serial order (indices into the TEs)

    def __str__(self) -> str:
        return "ok" if self.ok else self.violations[0]


def check_history(tes: list[TE], flow: Dataflow, batches: range | None = None) -> CheckResult:
    violations: list[str] = []
    _exactly_once(tes, flow, batches, violations)
    _eras(tes, violations)
    _nesting(tes, flow, violations)
    _windows(tes, flow, violations)
    edges = _edges(tes, flow)
    cycle = _find_cycle(tes, edges)
    order: list[int] = []
    if cycle:
        violations.append("serialization graph has a cycle: " + cycle)
    else:
        order = serial_order(tes, edges)
        if order is None:
            violations.append("nested group not serializable: no serial order runs its SPs together")
            order = []
    return CheckResult(not violations, violations, len(tes), len(edges), order)


def serial_order(tes: list[TE], edges) -> list[int] | None:
    """A topological order of the serialization graph in which each nested group's SPs stand
    together (the group is one transaction): the serial schedule the history is equivalent
    to. Among transactions the graph leaves unordered the earliest commit timestamp goes
    first, so the order is the real commit order wherever that is legal. None when merging
    the groups closes a cycle."""
    import heapq

    node_of: list[int] = []
    members: list[list[int]] = []
    index: dict = {}
    for i, te in enumerate(tes):
        key = ("g", te.group) if te.group is not None else ("t", i)
        n = index.get(key)
        if n is None:
            n = index[key] = len(members)
            members.append([])
        members[n].append(i)
        node_of.append(n)
    succ: list[set] = [set() for _ in members]
    indeg = [0] * len(members)
    for a, b in edges:
        na, nb = node_of[a], node_of[b]
        if na != nb and nb not in succ[na]:
            succ[na].add(nb)
            indeg[nb] += 1
    prio = [(min(tes[i].ts for i in ms), ms[0]) for ms in members]
    ready = [(prio[n], n) for n in range(len(members)) if indeg[n] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, n = heapq.heappop(ready)
        order.extend(members[n])
        for nb in succ[n]:
            indeg[nb] -= 1
            if indeg[nb] == 0:
                heapq.heappush(ready, (prio[nb], nb))
    return order if len(order) == len(tes) else None


# -- exactly once ------------------------------------------------------------------------------

def _exactly_once(tes, flow, batches, out) -> None:
    counts: dict[tuple, int] = {}
    requests: dict[tuple, int] = {}
    for te in tes:
        if te.kind == "migration":
            continue
        if te.kind == "oltp":
            requests[(te.procedure, te.batch)] = requests.get((te.procedure, te.batch), 0) + 1
            continue
        key = (te.procedure, te.batch, te.lane)
        counts[key] = counts.get(key, 0) + 1
    for (proc, b), n in sorted(requests.items()):
        if n > 1:
            out.append(f"OLTP request {proc} #{b} applied {n} times")
    for (proc, b, lane), n in sorted(counts.items()):
        if n > 1:
            out.append(f"exactly-once violated: {proc} processed batch {b}"
                       f"{f' (lane {lane})' if lane else ''} {n} times")
    if batches is None:
        return
    for proc in flow.procedures:
        if proc in flow.oltp:
            continue
        for b in batches:
            for lane in range(flow.lanes.get(proc, 1)):
                if (proc, b, lane) not in counts:
                    out.append(f"exactly-once violated: {proc} never committed batch {b}"
                               f"{f' (lane {lane})' if lane else ''}")
                    return


# -- migrations ----------------------------------------------------------------------------------

def _eras(tes, out) -> None:
    """Designs follow one another at batch boundaries: the k-th migration switches to design k
    at a later batch than the one before it, and every execution ran under the design of its
    batch (a batch at or after a migration's batch, under the design it switched to)."""
    from bisect import bisect_right

    bounds: list[int] = []
    for k, m in enumerate(sorted((te for te in tes if te.kind == "migration"), key=lambda te: te.era), 1):
        if m.era != k or (bounds and m.batch <= bounds[-1]):
            out.append(f"migrations out of sequence: {m.label()} switches to design {m.era}")
            return
        bounds.append(m.batch)
    for te in tes:
        if te.kind != "migration" and te.era != bisect_right(bounds, te.batch):
            out.append(f"{te.label()} ran under design {te.era}, but its batch belongs to design "
                       f"{bisect_right(bounds, te.batch)} (migrations at batches {bounds or 'none'})")
            return


# -- nested transactions ---------------------------------------------------------------------------

def _nesting(tes, flow, out) -> None:
    group_of = {m: g for g in flow.nested for m in g}
    instances: dict[object, list[TE]] = {}
    by_batch: dict[tuple, list[TE]] = {}
    for te in tes:
        g = group_of.get(te.procedure)
        if g is None or te.kind != "stream":
            continue
        by_batch.setdefault((g, te.batch, te.lane), []).append(te)
        instances.setdefault(te.group, []).append(te)
    for (g, b, lane), members in sorted(by_batch.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        names = sorted({te.procedure for te in members})
        if names != sorted(g):
            missing = sorted(set(g) - set(names))
            out.append(f"nested group {'+'.join(g)} not atomic: batch {b} committed "
                       f"{', '.join(names)} but not {', '.join(missing)}")
            return
        if len({te.group for te in members}) > 1 or members[0].group is None:
            out.append(f"nested group {'+'.join(g)} not atomic: batch {b} committed its SPs "
                       f"in separate transactions")
            return
    # isolation: on every partition, nothing else between a group's first and last access
    per_partition: dict[object, list] = {}
    for te in tes:
        for part, pos in te.positions.items():
            per_partition.setdefault(part, []).append((pos, te))
    for part, entries in per_partition.items():
        entries.sort(key=lambda e: e[0])
        spans: dict[object, list[int]] = {}
        for i, (_, te) in enumerate(entries):
            if te.group is not None and te.procedure in group_of:
                spans.setdefault(te.group, []).append(i)
        for gid, idx in spans.items():
            lo, hi = min(idx), max(idx)
            for i in range(lo + 1, hi):
                other = entries[i][1]
                if other.group != gid:
                    first = entries[lo][1]
                    out.append(f"nested group not isolated: {other.label()} ran on partition {part} "
                               f"between SPs of the group of {first.label()}")
                    return


# -- windows ---------------------------------------------------------------------------------------

def _windows(tes, flow, out) -> None:
    """Isolation: no SP but the owner reads or writes a window. Order: on the window's
    partition, the owner's executions that touched it come in batch order, each the batch
    after the previous one (every owner execution steps its window, so a gap is a batch whose
    tuples the window never saw, or saw out of order)."""
    if not flow.windows:
        return
    seen: dict[str, list] = {}
    for te in tes:
        touched = {}
        for part, table, _key, mode in te.accesses:
            owner = flow.windows.get(table)
            if owner is None:
                continue
            if te.procedure != owner:
                verb = "wrote" if mode == "write" else "read"
                out.append(f"window {table!r} is private to {owner}: {te.label()} {verb} it")
                return
            touched[table] = part
        for table, part in touched.items():
            pos = te.positions.get(part)
            seen.setdefault(table, []).append(((0,) if pos is None else (1, pos), te))
    for table, entries in sorted(seen.items()):
        entries.sort(key=lambda e: e[0])
        batches = {te.batch for _, te in entries}
        for (_, a), (_, b) in zip(entries, entries[1:]):
            if b.batch != a.batch + 1:
                what = "out of batch order" if b.batch <= a.batch or a.batch + 1 in batches \
                    else f"with a gap (batch {a.batch + 1} missing)"
                out.append(f"window {table!r}: its owner's executions reach it {what}: "
                           f"{b.label()} after {a.label()}")
                return


# -- the serialization graph -------------------------------------------------------------------------

def _edges(tes, flow) -> dict[tuple[int, int], str]:
    edges: dict[tuple[int, int], str] = {}
    index = {id(te): i for i, te in enumerate(tes)}

    def add(a: TE, b: TE, why: str) -> None:
        ia, ib = index[id(a)], index[id(b)]
        if ia != ib and (ia, ib) not in edges:
            edges[(ia, ib)] = why

    rows: dict[tuple, list] = {}
    for te in tes:
        for part, table, key, mode in te.accesses:
            pos = te.positions.get(part)
            if pos is None:
                continue
            rows.setdefault((part, table, key), []).append((pos, mode, te))
    for (part, table, key), acc in rows.items():
        acc.sort(key=lambda a: a[0])
        last_writer, readers = None, []
        for _, mode, te in acc:
            why = f"conflict on {table}[{key}] at partition {part}"
            if last_writer is not None:
                add(last_writer, te, why)
            if mode == "write":
                for r in readers:
                    add(r, te, why)
                last_writer, readers = te, []
            else:
                readers.append(te)
    by_sp: dict[tuple, list[TE]] = {}
    by_batch: dict[tuple, list[TE]] = {}
    for te in tes:
        if te.kind == "stream":
            by_sp.setdefault((te.procedure, te.lane), []).append(te)
            by_batch.setdefault((te.procedure, te.batch), []).append(te)
    for (proc, lane), seq in by_sp.items():
        seq.sort(key=lambda te: te.batch)
        for a, b in zip(seq, seq[1:]):
            if a.batch != b.batch:
                add(a, b, "batch order")
    for src, dst in flow.streams:
        for (proc, b), ups in by_batch.items():
            if proc != src:
                continue
            for u in ups:
                for d in by_batch.get((dst, b), ()):
                    add(u, d, "dataflow order")
    # a migration moved rows between partitions: the executions of the designs before it come
    # first, those of the designs after it come after (their conflicts are on other partitions)
    for m in (te for te in tes if te.kind == "migration"):
        for te in tes:
            if te.kind != "migration":
                if te.era < m.era:
                    add(te, m, "migration order")
                else:
                    add(m, te, "migration order")
    return edges


def _find_cycle(tes, edges) -> str | None:
    succ: dict[int, list[int]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    color = [0] * len(tes)  # 0 new, 1 on stack, 2 done
    for start in range(len(tes)):
        if color[start]:
            continue
        stack = [(start, iter(succ.get(start, ())))]
        path = [start]
        color[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
                color[node] = 2
                continue
            if color[nxt] == 1:
                cyc = path[path.index(nxt):] + [nxt]
                steps = [f"{tes[a].label()} -[{edges[(a, b)]}]->" for a, b in zip(cyc, cyc[1:])]
                return " ".join(steps) + f" {tes[nxt].label()}"
            if color[nxt] == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(succ.get(nxt, ()))))
    return None
