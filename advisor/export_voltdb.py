"""VoltDB DDL for a design (`advisor export --format voltdb`).

VoltDB is H-Store's commercial descendant, so a design's table placement carries over as
partitioning columns and single-partition procedures. What VoltDB cannot say (streams,
windows, nested transactions, numbered partitions and machines, data-parallel lanes) is
returned as a list and written as a comment block at the top of the file, never dropped.

Decisions: VoltDB hashes every partitioned table's rows over all partitions, so a table the
design keeps whole on one partition is partitioned on its key (the nearest VoltDB has) and
listed; a replicated table gets no PARTITION statement (VoltDB's default is replicated).
A procedure is single-partition when every access it makes to a partitioned table is keyed
by one and the same input field (co-partitioned rows hash alike) and it writes no replicated
table; any other is multi-partition. Columns and procedure bodies are placeholders: a spec
knows a table's key, rows and bytes per row, not its columns or SQL.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from costmodel.design import Design
from costmodel.workload import Procedure, Workload
from costmodel.granularity import fragment_parts, table_among

VARCHAR_MAX = 1_048_576  # VoltDB's longest VARCHAR
KEY_BYTES = 8  # the key column, a BIGINT
# words VoltDB's SQL reserves that a spec name could plausibly be: such a name gets a `_`
RESERVED = frozenset("""ALL AND AS ASC BETWEEN BY CASE CHECK COLUMN COUNT CREATE CURRENT DATE
DEFAULT DELETE DESC DISTINCT DROP END EXISTS FROM FULL GROUP HAVING IN INDEX INNER INSERT INTO
IS JOIN KEY LEFT LIMIT MAX MIN NOT NULL OFFSET ON OR ORDER OUTER PARTITION POSITION PRIMARY
PROCEDURE RIGHT ROW ROWS SELECT SET STREAM SUM TABLE TIME TIMESTAMP TO UNION UNIQUE UPDATE USER
VALUE VALUES VIEW WHEN WHERE WINDOW WITH
ADD ALTER ANY ARRAY BIGINT BINARY BOOLEAN BOTH CALL CAST CHAR CHARACTER CONSTRAINT CROSS DECIMAL
DOUBLE ELSE EXCEPT FALSE FLOAT FOR FOREIGN FUNCTION GRANT IF INT INTEGER INTERSECT LIKE
NATURAL NUMERIC OF REAL REFERENCES SMALLINT THEN TINYINT TRUE VARBINARY VARCHAR""".split())


def escaped(text: str) -> str:
    r"""`text` with no character that ends a line or that XML 1.0 cannot carry, so that a name
    from a statistics directory (which may hold any) cannot end an SQL comment, break a CSV
    row or make GraphML unreadable: a backslash is written `\\`, and a control character
    (U+0000-U+001F, U+007F-U+009F), a line or paragraph separator, a surrogate, U+FFFE and
    U+FFFF as `\uXXXX`. Names without these come out unchanged; two names never collide."""
    if text.isprintable() and "\\" not in text:
        return text  # the common case: nothing to escape (printable excludes every one above)
    return "".join("\\\\" if ch == "\\" else f"\\u{ord(ch):04X}" if _unsafe(ch) else ch for ch in text)


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") or ch in "\ufffe\uffff"


class Identifiers:
    """Spec names as VoltDB identifiers (letters, digits, `_`; not a reserved word), unique
    within one namespace when `unique`, case aside (VoltDB's identifiers ignore case: `Orders`
    and `ORDERS` were two CREATE TABLEs of one table); every rename is remembered so the
    export can say so."""

    def __init__(self, unique: bool = True) -> None:
        self.unique = unique
        self.names: dict[str, str] = {}
        self.renamed: list[tuple[str, str]] = []
        self._taken: set[str] = set()  # the identifiers given, upper-cased

    def __call__(self, name: str) -> str:
        if name in self.names:
            return self.names[name]
        ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
        if not ident[:1].isalpha():
            ident = f"x_{ident}"
        if ident.upper() in RESERVED:
            ident += "_"
        base, n = ident, 2
        while self.unique and ident.upper() in self._taken:
            ident, n = f"{base}_{n}", n + 1
        self.names[name] = ident
        self._taken.add(ident.upper())
        if ident != name:
            self.renamed.append((name, ident))
        return ident


@dataclass
class TableLayout:
    """A base table of the workload with the design's placement of its items."""

    name: str
    key: str
    rows: int
    row_bytes: int
    items: dict[str, int | None]  # state item (T, T#i, T@KEY) -> partition, None: replicated

    @property
    def partitioned(self) -> bool:
        return any(p is not None for p in self.items.values())


def table_layouts(design: Design, workload: Workload) -> dict[str, TableLayout]:
    """Base tables in declaration order; a workload at fragment or tuple granularity (its
    tables are `T#i` and `T@KEY`) is folded back into its tables T. A table the workload
    names `T#0` beside a table `T` is a table of its own, not a fragment of T (a workload at
    a design's granularity holds a table's items or the table, never both)."""
    out: dict[str, TableLayout] = {}
    names = {*workload.table_names, *workload.window_names}  # every state item's name, as the graph's
    for t in workload.tables:
        name = table_among(t.name, names)
        layout = out.setdefault(name, TableLayout(name, t.key, 0, t.row_bytes, {}))
        layout.rows += t.rows
        layout.items[t.name] = design.state[t.name]
    return out


def placement_notes(layout: TableLayout, ppm: int) -> list[str]:
    """What VoltDB cannot keep of one partitioned table's placement."""
    t, items, key = layout.name, layout.items, layout.key
    placed = {p for p in items.values() if p is not None}
    # its fragments `T#i` (a table `T#0` of its own is none, nor a hot tuple `T@k#3`): the rest are hot tuples
    fragments = {i for i in items if i != t and fragment_parts(i, (t,))}
    notes = []
    if None in items.values():
        notes.append(f"table {t}: the design replicates some of its items and places others, VoltDB "
                     f"replicates a whole table or none (partitioned on {key})")
    if len(placed) == 1:
        p = placed.pop()
        notes.append(f"table {t}: the design keeps it on partition {p} (machine {p // ppm}), VoltDB "
                     f"cannot pin a table to a partition: partitioned on {key}, its rows hashed over "
                     "every partition")
    elif fragments:
        where = ", ".join(f"{i}->{'replicated' if p is None else p}" for i, p in items.items() if i in fragments)
        notes.append(f"table {t}: the design's fragments ({where}) follow crc32(key) mod N, VoltDB "
                     f"hashes {key} with its own function over its own partitions")
    hot = [i for i in items if i != t and i not in fragments]
    if hot:
        notes.append(f"table {t}: hot tuples {', '.join(hot)} have partitions of their own in the "
                     "design, VoltDB places a row by the hash of its key only")
    return notes


def folded_into(layouts: dict[str, TableLayout]) -> dict[str, str]:
    """Each state item -> the base table (a key of `layouts`) it was folded into (a window: none)."""
    return {item: layout.name for layout in layouts.values() for item in layout.items}


def routing(proc: Procedure, layouts: dict[str, TableLayout]) -> tuple[str | None, str | None, str]:
    """(table, input field, why) of a single-partition procedure, or (None, None, why not)."""
    base = folded_into(layouts)
    accesses = [(base[a.table], a) for a in proc.accesses if a.table in base]
    if not accesses:
        return None, None, "it touches no table (only its windows or no state)"
    replicated_writes = [t for t, a in accesses if a.mode == "write" and not layouts[t].partitioned]
    if replicated_writes:
        return None, None, (f"it writes replicated table {replicated_writes[0]}, which only a "
                            "multi-partition procedure may do")
    keyed = [(t, a) for t, a in accesses if layouts[t].partitioned]
    if not keyed:
        return None, None, ("it reads replicated tables only (a single-partition procedure needs "
                            "a partitioned table)")
    fields = {a.key_param if a.key_kind == "input" else None for _, a in keyed}
    if len(fields) == 1 and None not in fields:
        field = fields.pop()
        return keyed[0][0], field, f"every access to a partitioned table is keyed by input field {field}"
    how = ", ".join(dict.fromkeys(f"{t} keyed {a.keys}" for t, a in keyed))
    return None, None, f"its accesses to partitioned tables are not keyed by one input field ({how})"


def voltdb_ddl(design: Design, workload: Workload) -> tuple[str, list[str]]:
    """The DDL text and what VoltDB cannot express of the design (also in the text's header).
    `design` must be checked against `workload` first (`Design.arrays` on its graph)."""
    ppm = design.partitions_per_machine
    tables, columns, procs = Identifiers(), Identifiers(unique=False), Identifiers()
    layouts = table_layouts(design, workload)
    notes = [f"machine placement: the design numbers {design.n_partitions} partitions on "
             f"{design.machines} machines ({ppm} per machine) and puts every item on one of them, "
             "VoltDB assigns partitions to hosts and rows to partitions itself"]
    body: list[str] = []
    for layout in layouts.values():
        name, key = tables(layout.name), columns(layout.key)
        payload = min(VARCHAR_MAX, max(1, layout.row_bytes - KEY_BYTES))
        payload_col = "payload_data" if key.lower() == "payload" else "payload"
        body += ["", f"-- {layout.name} ({layout.rows:,} rows x {layout.row_bytes:,} bytes), design: "
                 + ", ".join(f"{'' if i == layout.name else f'{i} '}"
                             + ("replicated" if p is None else f"partition {p} (machine {p // ppm})")
                             for i, p in layout.items.items()),
                 f"CREATE TABLE {name} (", f"    {key} BIGINT NOT NULL,",
                 f"    {payload_col} VARCHAR({payload})", ");"]
        if layout.row_bytes - KEY_BYTES > VARCHAR_MAX:
            notes.append(f"table {layout.name}: rows of {layout.row_bytes:,} bytes exceed VoltDB's "
                         f"longest VARCHAR ({VARCHAR_MAX:,}), payload capped")
        if layout.partitioned:
            body.append(f"PARTITION TABLE {name} ON COLUMN {key};")
            notes += placement_notes(layout, ppm)
    for p in workload.procedures:
        body += [""] + procedure_ddl(p, layouts, tables, columns, procs)
    notes.append("procedure placement: the design runs "
                 + ", ".join(f"{n} on partition {p}" for n, p in design.procedures.items())
                 + ", VoltDB runs a single-partition procedure where its parameter hashes and a "
                   "multi-partition one across all partitions")
    notes += dataflow_notes(design, workload)
    notes += [f"name '{old}' written as {new} (VoltDB identifiers)"
              for old, new in tables.renamed + columns.renamed + procs.renamed]
    # names reach comments and notes as they are: escaped, none ends a comment (leaving the
    # rest of its line as SQL) or splits a note the command prints on one line
    lines = [escaped(line) for line in header(design, workload, notes) + body]
    return "\n".join(lines) + "\n", [escaped(n) for n in notes]


def procedure_ddl(p: Procedure, layouts: dict[str, TableLayout],
                  tables: Identifiers, columns: Identifiers, procs: Identifiers) -> list[str]:
    """A CREATE PROCEDURE with placeholder SQL (or FROM CLASS when it touches no table)."""
    table, _, why = routing(p, layouts)
    name = procs(p.name)
    if table is not None:
        t, k = tables(table), columns(layouts[table].key)
        return [f"-- {p.name}: single-partition: {why}, passed as its parameter 0",
                f"CREATE PROCEDURE {name} PARTITION ON TABLE {t} COLUMN {k} AS",
                f"    SELECT COUNT(*) FROM {t} WHERE {k} = ?;"]
    base = folded_into(layouts)
    first = next((base[a.table] for a in p.accesses if a.table in base), None)
    if first is None:
        return [f"-- {p.name}: multi-partition, {why}: a Java class of that name must be loaded",
                f"CREATE PROCEDURE FROM CLASS sstore.procedures.{name};"]
    return [f"-- {p.name}: multi-partition, {why}",
            f"CREATE PROCEDURE {name} AS", f"    SELECT COUNT(*) FROM {tables(first)};"]


def dataflow_notes(design: Design, workload: Workload) -> list[str]:
    """S-Store's streaming parts, which VoltDB has no DDL for."""
    notes = [f"stream {s.source} -> {s.target} ({s.tuples:g} tuples per batch): VoltDB does not "
             f"trigger a procedure with another's output, the client must call {s.target}"
             for s in workload.streams]
    if workload.streams:
        notes.append("batch order and dataflow order: VoltDB orders the calls of each partition, "
                     "not the batches of a dataflow")
    if workload.input.batch_size > 1:
        notes.append(f"atomic batches of {workload.input.batch_size} tuples: a VoltDB call is one "
                     "transaction, so a batch must be one call (its keys on one partition)")
    notes += [f"window {w.name} (owned by {w.procedure}, {w.kind}-based, size {w.size:g}, slide "
              f"{w.slide:g}): VoltDB has no sliding windows, not created" for w in workload.windows]
    notes += [f"nested transaction ({', '.join(g)}): VoltDB commits each procedure call alone"
              for g in workload.nested]
    notes += [f"data-parallel lanes: {sp} runs one lane per partition holding a fragment of {t}, "
              "VoltDB has no lanes" for sp, t in design.data_parallel.items()]
    return notes


def header(design: Design, workload: Workload, notes: list[str]) -> list[str]:
    """The comment block at the top of the file: what it is, and what it cannot say."""
    method = f" (method {design.method})" if design.method else ""
    lines = [f"-- VoltDB DDL for a design of workload {workload.name}{method}, written by `advisor export`",
             f"-- deployment.xml: <cluster hostcount=\"{design.machines}\" "
             f"sitesperhost=\"{design.partitions_per_machine}\" kfactor=\"0\"/>",
             "-- Columns are placeholders where the spec does not know them: each table has its",
             "-- partitioning key (BIGINT NOT NULL) and one payload column sized from its bytes per row.",
             "-- Procedure bodies are placeholder SQL: replace them with the procedure's statements.",
             "-- A table with no PARTITION TABLE statement is replicated (VoltDB's default)."]
    lines += [f"-- assumed (rebuilt from statistics): {a}" for a in workload.assumed]
    lines += ["--", f"-- NOT EXPRESSIBLE in VoltDB ({len(notes)}): the design's intent that this DDL "
              "does not carry out"]
    lines += [f"--   - {n}" for n in notes]
    return lines
