"""The history check and the serial replay over a spooled history, in bounded memory.

A run of a million batches leaves tens of millions of accesses: the in-memory checker
(checker.py) builds its whole serialization graph from them. Here the history is read from
the spool three times, holding only compact summaries:

1. every record once, in arrival order: the run's counts (commits, aborts, MOVEs...), the
   window-isolation check (per execution), the migrations (a handful), and one compact entry
   per committed execution, external-sorted by its serial priority - the commit timestamp
   and first index of its node, as `checker.serial_order` breaks ties (a nested group is one
   node: its members are held back until the group is complete, then keyed together);
2. the sorted entries, node by node: the graph is proved acyclic by showing that every edge
   goes forward in that order. Conflict edges join accesses of one partition in position
   order, so it suffices that each partition's positions rise along the order (state: the
   last position per partition); batch-order edges need each SP lane's batches not to fall
   (state: the last batch per lane); a dataflow edge src@b -> dst@b fails when dst already
   ran batch b or later; a migration needs the designs before it on one side and the rest
   on the other (state: the highest design seen on each side). When every edge goes forward
   the order is a topological order in which no other node is ever ready first, so it is
   exactly the order `serial_order` picks. Exactly-once counts sit in one byte per (SP lane,
   batch), window order in the last batch per window, eras in the migrations' batches;
3. the sorted entries again, one transaction at a time, into the serial re-execution.

Whenever step 2 meets anything its summaries cannot decide - an edge going backward (which
may or may not close a cycle), a nested group split or repeated, a window touched without a
position - the history is checked by the in-memory checker instead, so every verdict and
message is exactly the one it gives; only then does memory grow with the history.

That fallback is the last resort for histories a correct run does not record. Measured (issue
23): 171 runs, every bundled workload (1,000 batches; boundaries-1sp, boundaries-32sp and
chain-32 300) under every option that changes the history - nested groups, windows, OLTP
requests, injected aborts, data-parallel lanes, MOVE transactions, the central scheduler, a
crash with strong and weak recovery, a live migration - in-process and multi-process: not one
fell back. Why each trigger needs an incorrect history: a partition runs one transaction at a
time and its commit timestamps are Lamport clocks it advances on every commit (a distributed
transaction's timestamp exceeds every participant's clock at its vote, and each participant
observes it before it runs anything else), so positions rise along the commit order on every
partition; an SP's next batch and the downstream SP's batch start only after the commit they
wait for, with its clock; a nested group commits as one transaction with one timestamp; a
window lives on its owner's partition, so touching it gives a position there; a migration
commits after the old design drained and before the new one starts. So an edge going backward,
a group repeated or split, or a window touched without a position means the run is already
wrong (a repeated batch after a crash, say), and its verdict needs the graph: the cycle the
in-memory checker names. (A window owned by an OLTP procedure used to fall back too; its
requests now step the window in the walk as stream batches do.)
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from engine_sim.engine.checker import TE, CheckResult, Dataflow
from engine_sim.engine.spool import SortedRuns

# entry fields, after the sort key (node ts, node first index, own index)
_TS, _FIRST, _IDX, _KIND, _PROC, _BATCH, _LANE, _GROUP, _POS, _ERA, _WIN = range(11)


@dataclass
class HistoryCounts:
    """What the run's result counts in its history (runner._result's figures)."""

    committed: int = 0  # committed SP executions (stream and OLTP)
    distributed_txns: int = 0
    moves: int = 0
    aborts: int = 0
    restarts: int = 0
    move_txns: int = 0

    def add(self, r) -> None:
        commit = r.status == "commit"
        if commit and r.kind in ("stream", "oltp"):
            self.committed += 1
            self.moves += sum(int(o[3]) for o in r.outputs)  # (one per lane elsewhere: Unit.handoffs_from)
        if r.child == 0:
            if commit:
                if len(r.partitions) > 1 and r.kind in ("stream", "oltp", "move"):
                    self.distributed_txns += 1
                if r.kind == "stream":
                    self.restarts += r.restarts
                if r.kind == "move":
                    self.move_txns += 1
            elif r.status == "abort":
                self.aborts += 1


@dataclass
class StreamVerdict:
    check: CheckResult  # violations as the in-memory checker words them; `order` left empty
    counts: HistoryCounts
    serial_digest: str = ""  # "" when the check failed or the replay could not run
    serial_error: str = ""  # why the serial re-execution could not run (SerialError)
    streamed: bool = True  # False: the in-memory checker decided (see the module docstring)
    executions: int = 0
    peak_held: int = 0  # most execution entries held in memory at once while sorting
    notes: list[str] = field(default_factory=list)  # why it fell back


def _label(kind: str, proc: str, batch: int, lane: int) -> str:
    return TE(id=None, procedure=proc, batch=batch, lane=lane, kind=kind).label()


class _Bitmaps:
    """Executions per key and batch, one byte each (batches outside the run in a dict), and
    the keys executed more than once with how often."""

    def __init__(self, batches: int):
        self.batches = batches
        self.seen: dict[tuple, bytearray] = {}
        self.outside: dict[tuple, int] = {}
        self.repeats: dict[tuple, int] = {}

    def add(self, key: tuple, b: int) -> bool:
        """Count (key, b); True when it was counted before."""
        if 0 <= b < self.batches:
            row = self.seen.get(key)
            if row is None:
                row = self.seen[key] = bytearray(self.batches)
            if not row[b]:
                row[b] = 1
                return False
        else:
            n = self.outside.get((key, b), 0) + 1
            self.outside[(key, b)] = n
            if n == 1:
                return False
        self.repeats[(*key, b)] = self.repeats.get((*key, b), 1) + 1
        return True

    def first_missing(self, key: tuple) -> int | None:
        row = self.seen.get(key)
        if row is None:
            return 0 if self.batches else None
        i = row.find(0)
        return None if i < 0 else i


class _Fallback(Exception):
    """Step 2 cannot decide this history with its summaries."""


def check_spooled(history, plan, batches: int, flow: Dataflow, work_dir: str | Path,
                  plans: list | None = None, run_size: int = 100_000,
                  with_order: bool = False) -> StreamVerdict:
    """Check the history read from `history` (re-iterable: a spool) and, when it is correct,
    re-execute it serially under `plan` (None: no replay); `work_dir` holds the sorted runs
    (the caller removes it). `with_order` fills the result's `order` (indexes into
    `history.executions(history)`, as the in-memory checker gives it): for tests, it grows
    with the history."""
    counts = HistoryCounts()
    runs = SortedRuns(work_dir, "executions", run_size)
    group_size = {m: len(g) for g in flow.nested for m in g}
    open_groups: dict[object, list] = {}
    migrations: list[tuple] = []
    window_isolation = None
    idx = 0

    def emit_group(members: list) -> None:
        ts = min(e[0] for e in members)
        first = min(e[1] for e in members)
        for e in members:
            runs.add((ts, first, *e[1:]))

    for r in history:
        counts.add(r)
        if r.status != "commit" or r.kind not in ("stream", "oltp", "migration"):
            continue
        i = idx
        idx += 1
        win = ()
        if flow.windows:
            touched = {}
            for part, table, _key, mode, _n in r.accesses:
                owner = flow.windows.get(table)
                if owner is None:
                    continue
                if r.procedure != owner:
                    if window_isolation is None:
                        verb = "wrote" if mode == "write" else "read"
                        window_isolation = (f"window {table!r} is private to {owner}: "
                                            f"{_label(r.kind, r.procedure, r.batch, r.lane)} {verb} it")
                    break
                touched[table] = part
            win = tuple(touched.items())
        entry = (r.commit_ts, i, r.kind, r.procedure, r.batch, r.lane, r.group,
                 tuple(r.positions.items()), r.era, win)
        if r.kind == "migration":
            migrations.append(entry)
        if r.group is None:
            runs.add((r.commit_ts, i, *entry[1:]))
            continue
        members = open_groups.setdefault(r.group, [])
        members.append(entry)
        if len(members) >= group_size.get(r.procedure, 0) > 0:
            emit_group(open_groups.pop(r.group))
    for members in open_groups.values():
        emit_group(members)
    runs.finish()
    verdict = StreamVerdict(CheckResult(True, []), counts, executions=idx,
                            peak_held=runs.peak_buffered)
    try:
        violations = _walk(runs, flow, batches, migrations, window_isolation)
    except _Fallback as why:
        verdict.streamed = False
        verdict.notes.append(str(why))
        return _in_memory(history, plan, batches, flow, plans, verdict)
    ok = not violations
    order = [e[_IDX] for e in runs] if with_order else []
    verdict.check = CheckResult(ok, violations, idx, 0, order)
    if ok and plan is not None:
        _replay(verdict, _steps(runs, plan), plan, plans)
    return verdict


def _eras(migrations: list[tuple]) -> tuple[list[int], str | None]:
    """The migrations' batches, or the violation of `checker._eras`'s first test."""
    bounds: list[int] = []
    for k, m in enumerate(sorted(migrations, key=lambda e: e[_ERA - 1]), 1):
        era, batch = m[_ERA - 1], m[_BATCH - 1]
        if era != k or (bounds and batch <= bounds[-1]):
            return bounds, (f"migrations out of sequence: {_label('migration', m[_PROC - 1], batch, m[_LANE - 1])} "
                            f"switches to design {era}")
        bounds.append(batch)
    return bounds, None


def _nodes(runs):
    """The sorted entries, one list per node (a nested group's members together)."""
    node, key = [], None
    for e in runs:
        k = (e[_TS], e[_FIRST])
        if k != key and node:
            yield node
            node = []
        key = k
        node.append(e)
    if node:
        yield node


def _walk(runs, flow: Dataflow, batches: int, migrations: list, window_isolation) -> list[str]:
    """Step 2 (module docstring): the violations, or _Fallback."""
    bounds, era_sequence = _eras(migrations)
    group_of = {m: g for g in flow.nested for m in g}
    downstream: dict[str, list[str]] = {}
    for src, dst in flow.streams:
        downstream.setdefault(src, []).append(dst)
    lanes = flow.lanes
    lanes_seen = dict(lanes)  # lanes per SP: the dataflow's, or more where a history has them
    part_max: dict = {}
    last_batch: dict[tuple, int] = {}
    runs_once = _Bitmaps(batches)  # (proc, lane) -> stream executions
    requests = _Bitmaps(batches)  # (proc,) -> OLTP requests applied
    groups = _Bitmaps(batches)  # (group, lane) -> nested group instances
    max_mig_era = -1  # highest design a processed migration switched to
    max_te_era = -1  # highest design a processed execution ran under
    era_violation = None  # (index, message): the first execution by index
    window_last: dict[str, tuple] = {}  # window -> (batch, label) of the owner's last step
    window_first: dict[str, list] = {}  # window -> [a batch, b batch, a label, b label, resolved]

    def step_windows(e: tuple) -> None:
        """The owner's step of each window it touched, in the walk order: on the window's
        partition that is the position order (positions rise along the walk, or it fell back)."""
        b = e[_BATCH]
        for table, part in e[_WIN]:
            if dict(e[_POS]).get(part) is None:
                raise _Fallback(f"window {table!r} touched without a position")
            label = _label(e[_KIND], e[_PROC], b, e[_LANE])
            prev = window_last.get(table)
            window_last[table] = (b, label)
            first = window_first.get(table)
            if first is not None and not first[4] and b == first[0] + 1:
                first[4] = True  # the batch the gap misses comes later: out of order
            if prev is not None and b != prev[0] + 1 and first is None:
                window_first[table] = [prev[0], b, prev[1], label, b <= prev[0]]

    for node in _nodes(runs):
        # every edge from an earlier node into this one must exist only forward
        for e in node:
            for part, pos in e[_POS]:
                top = part_max.get(part)
                if top is not None and pos <= top:
                    raise _Fallback(f"{_label(e[_KIND], e[_PROC], e[_BATCH], e[_LANE])}: positions on "
                                    f"partition {part} fall along the commit order")
            kind, proc, b = e[_KIND], e[_PROC], e[_BATCH]
            if kind == "migration":
                if max_te_era >= e[_ERA]:
                    raise _Fallback("an execution of a later design precedes a migration")
                continue
            if e[_ERA] < max_mig_era:
                raise _Fallback("an execution of an earlier design follows a migration")
            if kind != "stream":
                continue
            if last_batch.get((proc, e[_LANE]), -1) > b:
                raise _Fallback(f"{proc} batches fall along the commit order")
            for dst in downstream.get(proc, ()):
                if any(last_batch.get((dst, k), -1) >= b for k in range(lanes_seen.get(dst, 1))):
                    raise _Fallback(f"{dst} ran batch {b} or later before {proc} ran it")
            g = group_of.get(proc)
            if g is not None:
                names = sorted(x[_PROC] for x in node if x[_KIND] == "stream" and x[_BATCH] == b
                               and x[_LANE] == e[_LANE])
                if e[_GROUP] is None or names != sorted(g):
                    raise _Fallback(f"nested group {'+'.join(g)} batch {b} not one transaction")
        # this node's own bookkeeping
        seen_groups = set()
        for e in node:
            kind, proc, b, lane = e[_KIND], e[_PROC], e[_BATCH], e[_LANE]
            for part, pos in e[_POS]:
                top = part_max.get(part)
                if top is None or pos > top:
                    part_max[part] = pos
            if kind == "migration":
                max_mig_era = max(max_mig_era, e[_ERA])
                continue
            max_te_era = max(max_te_era, e[_ERA])
            if era_sequence is None and e[_ERA] != bisect_right(bounds, b) and (
                    era_violation is None or e[_IDX] < era_violation[0]):
                era_violation = (e[_IDX], f"{_label(kind, proc, b, lane)} ran under design {e[_ERA]}, "
                                          f"but its batch belongs to design {bisect_right(bounds, b)} "
                                          f"(migrations at batches {bounds or 'none'})")
            if kind == "oltp":  # an OLTP owner's requests step its window like stream batches
                requests.add((proc,), b)
                step_windows(e)
                continue
            runs_once.add((proc, lane), b)
            if lane >= lanes_seen.get(proc, 1):
                lanes_seen[proc] = lane + 1
            if last_batch.get((proc, lane), -1) < b:
                last_batch[(proc, lane)] = b
            g = group_of.get(proc)
            if g is not None and (g, b, lane) not in seen_groups:
                seen_groups.add((g, b, lane))
                if groups.add((g, lane), b):
                    raise _Fallback(f"nested group {'+'.join(g)} batch {b} committed twice")
            step_windows(e)
    out: list[str] = []
    for (proc, b), n in sorted((k, v) for k, v in requests.repeats.items()):
        out.append(f"OLTP request {proc} #{b} applied {n} times")
    for (proc, b, lane), n in sorted(((k[0], k[2], k[1]), v) for k, v in runs_once.repeats.items()):
        out.append(f"exactly-once violated: {proc} processed batch {b}"
                   f"{f' (lane {lane})' if lane else ''} {n} times")
    for proc in flow.procedures:
        if proc in flow.oltp:
            continue
        missing = [(b, lane) for lane in range(lanes.get(proc, 1))
                   if (b := runs_once.first_missing((proc, lane))) is not None]
        if missing:
            b, lane = min(missing)
            out.append(f"exactly-once violated: {proc} never committed batch {b}"
                       f"{f' (lane {lane})' if lane else ''}")
            break
    if era_sequence is not None:
        out.append(era_sequence)
    elif era_violation is not None:
        out.append(era_violation[1])
    if window_isolation is not None:
        out.append(window_isolation)
    elif window_first:
        table = min(window_first)
        a_batch, _b_batch, a_label, b_label, disorder = window_first[table]
        what = "out of batch order" if disorder else f"with a gap (batch {a_batch + 1} missing)"
        out.append(f"window {table!r}: its owner's executions reach it {what}: {b_label} after {a_label}")
    return out


def _steps(runs, plan):
    """Step 3's input: one serial step per node, in order (serial.steps_from, streamed)."""
    from engine_sim.engine.serial import SerialStep

    for node in _nodes(runs):
        e = node[0]
        if e[_KIND] == "migration":
            yield SerialStep("migration", e[_PROC], e[_BATCH], e[_ERA])
            continue
        unit = e[_PROC] if e[_KIND] == "oltp" else plan.procs[e[_PROC]].unit
        yield SerialStep(e[_KIND], unit, e[_BATCH], e[_LANE])


def _replay(verdict: StreamVerdict, steps, plan, plans) -> None:
    from engine_sim.engine.serial import SerialError, SerialExecution

    try:
        verdict.serial_digest = SerialExecution(plan, plans).run(steps).digest()
    except SerialError as exc:
        verdict.serial_error = str(exc)


def _in_memory(history, plan, batches: int, flow: Dataflow, plans, verdict: StreamVerdict) -> StreamVerdict:
    """The in-memory checker and replay over the whole history (checker.py, serial.py)."""
    from engine_sim.engine.checker import check_history
    from engine_sim.engine.history import executions
    from engine_sim.engine.serial import steps_from

    tes = executions(history)
    check = check_history(tes, flow, range(batches))
    verdict.check = check
    verdict.peak_held = max(verdict.peak_held, len(tes))
    if check.ok and plan is not None:
        _replay(verdict, iter(steps_from(tes, check.order, plan)), plan, plans)
    return verdict
