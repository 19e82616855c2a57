"""Dataflow changes a user (or `advisor tune`) can make to a workload, applied to a copy.

Each function returns a new Workload (the records are frozen; `dataclasses.replace` keeps
everything it does not touch), so a suggestion's gain is measured on the changed copy while
the original stays as it was:

- `split_procedure`: an SP becomes `copies` data-parallel copies over an input field (its
  key); tables keyed by that field are split into as many fragments, one beside each copy;
- `merge_procedures`: two SPs that always run one after the other become one SP (no MOVE);
- `replicate_design`: a read-mostly table is copied to every machine (a design change).
"""
from __future__ import annotations

import math
import re
from dataclasses import replace

from costmodel.design import Design
from costmodel.errors import UserError
from costmodel.granularity import fragment_name, fragment_parts, table_among
from costmodel.procedure_merge import merge_procedure_groups
from costmodel.spec_reader import MAX_PROCEDURE_COST
from costmodel.workload import Access, Procedure, Stream, Table, Workload


class ChangeError(UserError):
    """A change that does not apply to this workload (unknown name, nothing to split on)."""


def _all_names(workload: Workload) -> set[str]:
    """Every name of the workload's SPs, tables and windows: a new name must be none of them (a
    spec gives each its own, so a copy `A#0` beside a table `A#0` was refused by the check of the
    changed copy, and `tune` and `report` ended on that error)."""
    return set(workload.procedure_names) | set(workload.table_names) | set(workload.window_names)


def _fresh(name: str, taken: set[str]) -> str:
    out, n = name, 2
    while out in taken:
        out = f"{name}~{n}"
        n += 1
    taken.add(out)
    return out


def split_key(procedure: Procedure, workload: Workload) -> tuple[str | None, str]:
    """The input field to split an SP on, and where it came from.

    Its declared `partition_key` first; else the input field by which it reaches the table it
    touches most (an `input:<field>` access, or a table keyed by an input field). An SP that
    owns a window has none: its window lives in its consecutive executions, one at a time.
    """
    owned = workload.windows_of(procedure.name)
    if owned:
        return None, f"it owns window {owned[0].name} (private to one SP's consecutive executions)"
    if procedure.partition_key:
        return procedure.partition_key, "declared partition key"
    fields = set(workload.input.fields)
    by_rows: dict[str, float] = {}
    for a in procedure.accesses:
        by_rows[a.table] = by_rows.get(a.table, 0.0) + a.expected_rows
    for table in sorted(by_rows, key=lambda t: -by_rows[t]):
        for a in procedure.accesses:
            if a.table == table and a.key_kind == "input":
                return a.key_param, f"key of {table}, the table it touches most"
        key = workload.table(table).key
        if key in fields:
            return key, f"key of {table}, the table it touches most"
    return None, "no input field reaches its state"


def co_partitioned(table: Table, accesses: list[Access], key: str) -> bool:
    """A table splits with the SP when the SP reaches it by the split key."""
    return table.key == key or any(a.keys == f"input:{key}" for a in accesses)


def _family(names: list[str], procs: dict[str, Procedure], key: str, copies: int) -> bool:
    """True when `names` are the `copies` copies of one earlier split on the same key."""
    if len(names) != copies:
        return False
    stems = {re.sub(r"#\d+$", "", n) for n in names}
    indices = sorted(int(m.group(1)) for n in names if (m := re.search(r"#(\d+)$", n)))
    return (len(stems) == 1 and indices == list(range(copies))
            and all(procs[n].partition_key == key for n in names))


def _aligned_fragments(proc: Procedure, workload: Workload, key: str, copies: int) -> dict[str, tuple[str, int]]:
    """Tables the SP reaches that are already the `copies` fragments of one table split on
    `key` (by an earlier split): name -> (that table, fragment index). A name is read among
    the workload's (`table_among`): a table `T#0` beside a table `T` is one of its own, and a
    hot tuple `T@k#0` is no fragment of a table `T@k`."""
    names = set(workload.table_names)
    stems: dict[str, dict[int, str]] = {}
    for a in proc.accesses:
        table = table_among(a.table, names)
        parts = fragment_parts(a.table, (table,)) if table != a.table else None
        if parts is not None:
            stems.setdefault(table, {})[parts[1]] = a.table
    out = {}
    for stem, members in stems.items():
        if sorted(members) != list(range(copies)):
            continue
        tables = [workload.table(n) for n in members.values()]
        if all(co_partitioned(t, [a for a in proc.accesses if a.table == t.name], key) for t in tables):
            out.update({n: (stem, i) for i, n in members.items()})
    return out


def _merge_accesses(accesses: list[Access]) -> tuple[Access, ...]:
    """Accesses to the same table in the same way become one (rows added)."""
    merged: dict[tuple, Access] = {}
    for a in accesses:
        k = (a.table, a.mode, a.keys, a.probability)
        merged[k] = replace(merged[k], rows=merged[k].rows + a.rows) if k in merged else a
    return tuple(merged.values())


def split_procedure(workload: Workload, name: str, copies: int, key: str | None = None
                    ) -> Workload:
    """`name` becomes `copies` copies `name#0..`, each doing 1/copies of every batch."""
    try:
        proc = workload.procedure(name)
    except KeyError:
        raise ChangeError(f"no procedure {name!r} in workload {workload.name!r}") from None
    if not isinstance(copies, int) or copies < 2:
        raise ChangeError(f"copies must be an integer >= 2, got {copies!r}")
    if workload.windows_of(name):
        raise ChangeError(f"{name}: owns window {workload.windows_of(name)[0].name!r}, which only "
                          "one SP's consecutive executions may touch; it cannot be split")
    if key is None:
        key, _ = split_key(proc, workload)
        if key is None:
            raise ChangeError(f"{name}: no key to split on (declare partition_key)")
    procs = {p.name: p for p in workload.procedures}
    taken = _all_names(workload)  # (the copies' and the fragments' names drawn from it too)
    copy_names = [_fresh(f"{name}#{i}", taken) for i in range(copies)]
    aligned = _aligned_fragments(proc, workload, key, copies)  # fragment -> (its table, its index)
    split_tables = {t.name for t in workload.tables if t.name in {a.table for a in proc.accesses}
                    and t.name not in aligned
                    and co_partitioned(t, [a for a in proc.accesses if a.table == t.name], key)}
    fragments = {t: [_fresh(f"{t}#{i}", taken) for i in range(copies)] for t in sorted(split_tables)}

    tables: list[Table] = []
    for t in workload.tables:
        if t.name in fragments:
            tables += [replace(t, name=f, rows=math.ceil(t.rows / copies)) for f in fragments[t.name]]
        else:
            tables.append(t)

    def spread(a: Access) -> tuple[Access, ...]:
        """Another SP's access to a split table reaches every fragment."""
        if a.table not in fragments:
            return (a,)
        return tuple(replace(a, table=f, rows=a.rows / copies) for f in fragments[a.table])

    procedures: list[Procedure] = []
    for p in workload.procedures:
        if p.name != name:
            procedures.append(replace(p, accesses=tuple(x for a in p.accesses for x in spread(a))))
            continue
        for i, cname in enumerate(copy_names):
            accesses = []
            for a in p.accesses:
                if a.table in fragments:
                    table = fragments[a.table][i]
                elif a.table in aligned:  # an earlier split on this key: copy i keeps fragment i
                    table = fragment_name(aligned[a.table][0], i)
                else:
                    table = a.table
                accesses.append(replace(a, table=table, rows=a.rows / copies))
            accesses = _merge_accesses(accesses)
            procedures.append(replace(p, name=cname, cost=p.cost / copies, accesses=accesses,
                                      partition_key=key))

    streams: list[Stream] = []
    into = [s for s in workload.streams if s.target == name]
    aligned_in = _family([s.source for s in into], procs, key, copies)
    outof = [s for s in workload.streams if s.source == name]
    aligned_out = _family([s.target for s in outof], procs, key, copies)
    for s in workload.streams:
        if s.target == name:
            if aligned_in:  # X#i -> name#i: the earlier split already divided the tuples
                i = int(re.search(r"#(\d+)$", s.source).group(1))
                streams.append(replace(s, target=copy_names[i]))
            else:
                streams += [replace(s, target=c, tuples=s.tuples / copies) for c in copy_names]
        elif s.source == name:
            if aligned_out:
                i = int(re.search(r"#(\d+)$", s.target).group(1))
                streams.append(replace(s, source=copy_names[i]))
            else:
                streams += [replace(s, source=c, tuples=s.tuples / copies) for c in copy_names]
        else:
            streams.append(s)
    nested = tuple(tuple(c for m in g for c in (copy_names if m == name else [m]))
                   for g in workload.nested)
    # a share that is 0.0 (5e-324, a spec's smallest amount, halved) no spec may say: the copy
    # was refused ("rows must be > 0") and `tune` and `report` ended on it
    zero = [f"{p.name} -> {a.table}" for p in procedures for a in p.accesses if a.rows == 0] + \
        [f"stream {s.source} -> {s.target}" for s in streams if s.tuples == 0]
    if zero:
        raise ChangeError(f"{name}: {zero[0]}: too few rows or tuples a batch to share among {copies} copies")
    return replace(workload, tables=tuple(tables), procedures=tuple(procedures),
                   streams=tuple(streams), nested=nested, source="", sha256="")


def _nested_apart(workload: Workload, first: str, second: str) -> tuple[tuple[str, ...], ...]:
    """The two nested transactions `first` and `second` are in, where they are in two different
    ones (else ()): the SP fused of them would be in both, which no spec may say."""
    groups = tuple(next((g for g in workload.nested if n in g), None) for n in (first, second))
    return groups if None not in groups and groups[0] != groups[1] else ()


def mergeable_pairs(workload: Workload) -> list[tuple[str, str]]:
    """(X, Y) with a stream X -> Y where X feeds only Y and Y is fed only by X: they always
    run one after the other, so one SP can do both without a MOVE. Not two SPs of two nested
    transactions (`tune` and `report` ended on the fused SP's "already in nested[0]")."""
    outs: dict[str, list[str]] = {}
    ins: dict[str, list[str]] = {}
    for s in workload.streams:
        outs.setdefault(s.source, []).append(s.target)
        ins.setdefault(s.target, []).append(s.source)
    return [(x, ys[0]) for x, ys in outs.items()
            if len(ys) == 1 and ins.get(ys[0]) == [x]
            and not workload.procedure(x).oltp and not workload.procedure(ys[0]).oltp
            and not _nested_apart(workload, x, ys[0])]


def merge_procedures(workload: Workload, first: str, second: str) -> Workload:
    """`first` and `second` (first -> second) become one SP `first+second`."""
    apart = _nested_apart(workload, first, second)
    if apart:
        raise ChangeError(f"{first} -> {second}: in two nested transactions ({', '.join(apart[0])} and "
                          f"{', '.join(apart[1])}); one SP can be in one only")
    if (first, second) not in mergeable_pairs(workload):
        raise ChangeError(f"{first} -> {second}: not a pair that always runs together "
                          "(one stream between them, no other inputs or outputs)")
    cost = workload.procedure(first).cost + workload.procedure(second).cost
    if cost > MAX_PROCEDURE_COST:  # no spec may say it: `tune` and `report` failed on the merged copy
        raise ChangeError(f"{first} -> {second}: one SP would cost {cost:g} a batch, more than a spec's "
                          f"{MAX_PROCEDURE_COST:,}")
    merged_name = _fresh(f"{first}+{second}", _all_names(workload))
    return merge_procedure_groups(workload, [[first, second]], [merged_name])


def replicate_design(design: Design, graph, table: str) -> Design:
    """The same design with every state item of `table` copied to every machine."""
    items = [n for n, t in zip(graph.state_names, graph.state_tables) if t == table]
    if not items:
        raise ChangeError(f"no state of table {table!r} in workload {graph.name!r}")
    state = dict(design.state)
    for n in items:
        state[n] = None
    out = replace(design, state=state, method=f"{design.method}+replicate:{table}",
                  provenance=dict(design.provenance))
    out.cost = out.score(graph)
    return out
