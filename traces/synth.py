"""Synthetic traces of any size from a workload spec, streamed to Parquet chunk by chunk.

The spec comes in as plain data (the dict of `dataclasses.asdict(Workload)` plus its
`topological_order`), because `traces` does not import the advisor. What is honoured:

- every batch runs every procedure once, in dataflow order, one transaction each;
  durations are `cost * cost_unit_us` with mean-preserving log-normal noise;
- with `abort_rate` > 0 an execution aborts (and is retried once, restarts = 1);
- each declared access happens with its probability and touches `rows` rows per batch
  (a fractional part is a Bernoulli draw); keys follow the declared distribution:
  `uniform`, `zipf:theta` (bounded Zipf, key 0 hottest), `sequential` (a counter per
  access that runs across batches) or `input:field` (the field of input tuple j of the
  batch, the same value for every procedure that reads that field in that batch);
  repeated keys of one transaction on one table become one access row with `rows` > 1;
- each stream moves `tuples` tuples per batch (fractional part Bernoulli), `tuple_bytes` each;
- a window's owner inserts the tuples it receives in the batch (its streams' tuples of that
  batch, or `batch_size` at a border) into the window, one write row (key = the first tuple's
  sequence, rows = the tuples), and when the window slides reads the active window, one read
  row (`traces.windows`); its declared reads of the window read the active window too.

Generation is vectorized with numpy per chunk of batches (about `chunk_rows` access rows),
each chunk with its own seeded generator, so the same seed gives the same trace.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from traces.errors import TraceError
from traces.keys import ZipfSampler, parse_keys
# microseconds per unit of cost: the spec's bound, which a trace's manifest is held to (and far
# below the 1e9 past which a duration overflows int64)
from costmodel.workload import DEFAULT_COST_UNIT_US, MAX_COST_UNIT_US
from traces.windows import WindowReplay, spec_windows
from traces.writer import TraceWriter

DEFAULT_CHUNK_ROWS = 1 << 20


@dataclass(frozen=True)

class SynthSummary:
    out: Path
    batches: int
    txns: int
    accesses: int
    flows: int
    seconds: float


@dataclass
class _AccessPlan:
    proc_index: int
    table: str
    table_rows: int
    mode: str
    rows: float
    probability: float
    kind: str
    param: str | None
    zipf: ZipfSampler | None = None
    next_sequential: int = 0


class _Plan:
    """The spec compiled into arrays and samplers."""

    def __init__(self, spec: Mapping[str, Any]):
        try:
            self.name = str(spec.get("name", "workload"))
            self.tables = {t["name"]: t for t in spec["tables"]}
            self.procs = [p["name"] for p in spec["procedures"]]
            self.costs = np.array([float(p["cost"]) for p in spec["procedures"]])
            order = spec.get("topological_order") or self.procs
            self.topo = [self.procs.index(n) for n in order]
            inp = spec.get("input") or {}
            self.batch_size = int(inp.get("batch_size", 10))
            self.rate = inp.get("rate")
            cluster = spec.get("cluster") or {}
            self.partitions = int(cluster.get("machines", 1)) * int(
                cluster.get("partitions_per_machine", 1))
            self.streams = [(self.procs.index(s["source"]), self.procs.index(s["target"]),
                             float(s["tuples"]), int(s.get("tuple_bytes", 64)))
                            for s in spec.get("streams", [])]
            self.windows = spec_windows(spec)
            self.replays = [WindowReplay(w) for w in self.windows]
            window_index = {w.name: k for k, w in enumerate(self.windows)}
            self.window_reads: list[tuple[int, int, float, float]] = []  # window, proc, rows, p
            self.accesses: list[_AccessPlan] = []
            field_domain: dict[str, int] = {}
            for pi, p in enumerate(spec["procedures"]):
                for a in p.get("accesses", []):
                    if a["table"] in window_index:  # the owner reading its active window
                        self.window_reads.append((window_index[a["table"]], pi, float(a["rows"]),
                                                  float(a.get("probability", 1.0))))
                        continue
                    kind, param = parse_keys(a.get("keys", "uniform"))
                    n = max(int(self.tables[a["table"]]["rows"]), 1)
                    plan = _AccessPlan(pi, a["table"], n, a["mode"], float(a["rows"]),
                                       float(a.get("probability", 1.0)), kind, param)
                    if kind == "zipf":
                        plan.zipf = ZipfSampler(n, float(param))
                    elif kind == "input":
                        field_domain[param] = max(field_domain.get(param, 1), n)
                    elif kind not in ("uniform", "sequential"):
                        raise TraceError(f"{self.name}: unknown key distribution {kind!r}")
                    self.accesses.append(plan)
            self.field_domain = field_domain
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, TraceError):
                raise
            raise TraceError(f"synthetic trace: the workload description is incomplete: {exc!r}") from None

    @property
    def rows_per_batch(self) -> float:
        return sum(a.rows * a.probability for a in self.accesses)


MAX_SYNTH_BATCHES = 10_000_000  # as a traced engine run's (`engine_sim.engine.runner.MAX_RUN_BATCHES`)
# access rows one batch may draw: a batch is drawn whole (about 55 bytes a row at its peak here),
# so a spec's 1e9 rows an access took 50 GB and was killed for memory, with nothing said
MAX_SYNTH_ROWS_PER_BATCH = 10_000_000
MAX_TRACE_SPAN_US = float(2 ** 62)  # a trace's last batch starts within half of int64's microseconds
SECONDS_A_YEAR = 365.25 * 24 * 3600


def synthesize(spec: Mapping[str, Any], out: str | Path, batches: int, seed: int = 0, *,
               abort_rate: float = 0.0, cost_unit_us: float | None = None, noise: float = 0.1,
               chunk_rows: int = DEFAULT_CHUNK_ROWS,
               progress: Callable[[str], None] | None = None) -> SynthSummary:
    """Write a trace of `batches` input batches of the workload `spec` to directory `out`.
    `cost_unit_us` None: the spec's own `[input] cost_unit_us` (else 100), as the engine runs
    it (a spec at 1,000 us a unit was traced at 100, and its statistics predicted 7.9x fast)."""
    from_spec = cost_unit_us is None
    if from_spec:
        cost_unit_us = float((spec.get("input") or {}).get("cost_unit_us", DEFAULT_COST_UNIT_US))
    if isinstance(batches, bool) or not isinstance(batches, int) or not 1 <= batches <= MAX_SYNTH_BATCHES:
        # (10**20 ran until killed, on its way to filling the disk)
        raise TraceError(f"--batches must be an integer from 1 to {MAX_SYNTH_BATCHES:,} (the engine's own "
                         f"limit for a run), got {batches}")
    if not 0.0 <= abort_rate < 1.0:
        raise TraceError(f"abort rate must be in [0, 1), got {abort_rate}")
    if not (math.isfinite(cost_unit_us) and 0 < cost_unit_us <= MAX_COST_UNIT_US):
        # (a spec file's is refused as it is read; one built in Python reaches this. Said as "the
        # spec's" only when it is: `--cost-unit-us 0` was called the spec's)
        said = "the spec's [input] cost_unit_us" if from_spec else "--cost-unit-us"
        raise TraceError(f"{said} must be a number > 0 and <= {MAX_COST_UNIT_US:g}, got {cost_unit_us}")
    if not (math.isfinite(noise) and noise >= 0):
        raise TraceError(f"noise must be a number >= 0, got {noise}")
    plan = _Plan(spec)
    most = sum(math.ceil(a.rows) for a in plan.accesses)
    if most > MAX_SYNTH_ROWS_PER_BATCH:
        raise TraceError(f"{plan.name}: a batch draws up to {most:,} access rows (the accesses' rows), more than "
                         f"the {MAX_SYNTH_ROWS_PER_BATCH:,} a synthetic trace holds in memory at once")
    started = time.perf_counter()
    chunk_batches = int(max(1, min(batches, chunk_rows // max(1.0, plan.rows_per_batch))))
    if plan.rate:
        interval_us = 1e6 / float(plan.rate)
    else:
        interval_us = max(1.0, 2.0 * float(plan.costs.sum()) * cost_unit_us)
    if batches * interval_us > MAX_TRACE_SPAN_US:
        # (at the lowest rate, 1e-6 batches/s, 9.3 million batches overflowed the int64
        # microsecond timestamps: a trace of garbage times, exit 0)
        raise TraceError(f"--batches {batches:,} at {1e6 / interval_us:g} batches/s spans "
                         f"{batches * interval_us / 1e6 / SECONDS_A_YEAR:,.0f} years, more than a trace's "
                         f"microsecond timestamps hold: at most {int(MAX_TRACE_SPAN_US // interval_us):,} "
                         f"batches at this rate")
    metadata = {
        "created_by": "traces.synth",
        "workload": plan.name,
        "workload_sha256": spec.get("sha256", ""),
        "seed": seed,
        "batches": batches,
        "abort_rate": abort_rate,
        "cost_unit_us": cost_unit_us,
        "noise": noise,
        "input": {**{k: v for k, v in (spec.get("input") or {}).items()
                     if k in ("batch_size", "rate", "fields") and v},
                  "cost_unit_us": cost_unit_us, "durations": "work"},
        "procedures": plan.procs,
        "tables": {n: {"rows": int(t["rows"]), "row_bytes": int(t["row_bytes"]),
                       "key": t.get("key"), "read_mostly": bool(t.get("read_mostly", False))}
                   for n, t in plan.tables.items()},
        # the spec's tables by name: a `T#0` of a spec `advisor tune` split is a table, no fragment
        "spec_tables": list(plan.tables),
        "streams": [{"from": plan.procs[s], "to": plan.procs[d], "tuples": t, "tuple_bytes": b}
                    for s, d, t, b in plan.streams],
        "nested": [list(g) for g in spec.get("nested", [])],
        # what a trace cannot show: the SPs clients invoke, and the input field an SP splits by
        "oltp": [p["name"] for p in spec.get("procedures", []) if p.get("oltp")],
        "partition_keys": {p["name"]: p["partition_key"] for p in spec.get("procedures", [])
                           if p.get("partition_key")},
        # the accesses keyed by a field of the SP's input tuple (what data-parallel lanes split
        # on), as the engine's traces say them
        "access_keys": dict(spec.get("access_keys") or {}),
        "cluster": dict(spec.get("cluster") or {}),
        "windows": {w.name: w.to_manifest() for w in plan.windows},
    }
    with TraceWriter(out, metadata) as writer:
        for chunk, b0 in enumerate(range(0, batches, chunk_batches)):
            b1 = min(batches, b0 + chunk_batches)
            rng = np.random.default_rng([seed, chunk])
            txns, accesses, flows = _chunk(plan, rng, b0, b1, interval_us, abort_rate,
                                           cost_unit_us, noise)
            writer.write("txns", txns)
            writer.write("accesses", accesses)
            writer.write("flows", flows)
            if progress is not None:
                progress(f"batches {b1}/{batches}: {writer.rows['accesses']:,} access rows")
        rows = dict(writer.rows)
    return SynthSummary(Path(out), batches, rows["txns"], rows["accesses"], rows["flows"],
                        time.perf_counter() - started)


# -- one chunk of batches ----------------------------------------------------------------------

def _strings(names: list[str], indices: np.ndarray) -> pa.Array:
    """A string column from small-integer codes, built in C++ (no Python objects per row)."""
    dictionary = pa.DictionaryArray.from_arrays(pa.array(indices.astype(np.int32)),
                                                pa.array(names, pa.string()))
    return dictionary.cast(pa.string())


def _durations(rng, cost: float, unit: float, noise: float, n: int) -> np.ndarray:
    if cost <= 0:
        return np.zeros(n, dtype=np.int64)
    factor = np.exp(noise * rng.standard_normal(n) - noise * noise / 2.0)
    return np.maximum(np.rint(cost * unit * factor), 1).astype(np.int64)


def _chunk(plan: _Plan, rng: np.random.Generator, b0: int, b1: int, interval_us: float,
           abort_rate: float, unit: float, noise: float):
    n_b = b1 - b0
    batch = np.arange(b0, b1, dtype=np.int64)
    n_p = len(plan.procs)
    fields = {f: rng.integers(0, d, size=(n_b, plan.batch_size)) for f, d in
              sorted(plan.field_domain.items())}

    # transactions, in dataflow order inside each batch
    cursor = np.rint(batch * interval_us).astype(np.int64)
    aborted = np.zeros((n_p, n_b), dtype=bool)
    t_id, t_proc, t_batch, t_start, t_end, t_abort = [], [], [], [], [], []
    for pi in plan.topo:
        if abort_rate > 0:
            aborted[pi] = rng.random(n_b) < abort_rate
        dur_abort = _durations(rng, plan.costs[pi], unit, noise, n_b)
        dur = _durations(rng, plan.costs[pi], unit, noise, n_b)
        first_id = 2 * (batch * n_p + pi)
        a = aborted[pi]
        if a.any():
            t_id.append(first_id[a]); t_proc.append(np.full(a.sum(), pi)); t_batch.append(batch[a])
            t_start.append(cursor[a]); t_end.append(cursor[a] + dur_abort[a])
            t_abort.append(np.ones(a.sum(), dtype=bool))
            cursor = np.where(a, cursor + dur_abort, cursor)
        t_id.append(first_id + 1); t_proc.append(np.full(n_b, pi)); t_batch.append(batch)
        t_start.append(cursor.copy()); t_end.append(cursor + dur)
        t_abort.append(np.zeros(n_b, dtype=bool))
        cursor = cursor + dur
    ids = np.concatenate(t_id)
    order = np.argsort(ids, kind="stable")
    procs = np.concatenate(t_proc)[order]
    is_abort = np.concatenate(t_abort)[order]
    base = (procs % max(plan.partitions, 1)).astype(np.int32)
    is_retry = (~is_abort) & aborted[procs, np.concatenate(t_batch)[order] - b0]
    txns = pa.table({
        "txn_id": ids[order],
        "procedure": _strings(plan.procs, procs),
        "batch_id": np.concatenate(t_batch)[order],
        "base_partition": base,
        "partitions": pa.ListArray.from_arrays(np.arange(base.size + 1, dtype=np.int32),
                                               pa.array(base)),
        "start_us": np.concatenate(t_start)[order],
        "end_us": np.concatenate(t_end)[order],
        "status": _strings(["commit", "abort"], is_abort.astype(np.int8)),
        "restarts": is_retry.astype(np.int32),
    })

    # state accesses
    tables = list(plan.tables)
    a_txn, a_table, a_key, a_mode, a_rows = [], [], [], [], []
    for acc in plan.accesses:
        whole = math.floor(acc.rows)
        frac = acc.rows - whole
        count = np.full(n_b, whole, dtype=np.int64)
        if frac > 0:
            count += rng.random(n_b) < frac
        if acc.probability < 1.0:
            count[rng.random(n_b) >= acc.probability] = 0
        total = int(count.sum())
        if total == 0:
            continue
        b_idx = np.repeat(np.arange(n_b), count)
        if acc.kind == "uniform":
            keys = rng.integers(0, acc.table_rows, size=total)
        elif acc.kind == "zipf":
            keys = acc.zipf.sample(rng, total)
        elif acc.kind == "sequential":
            keys = (acc.next_sequential + np.arange(total, dtype=np.int64)) % acc.table_rows
            acc.next_sequential = (acc.next_sequential + total) % acc.table_rows
        else:  # input field: row j of the batch reads the field of input tuple j
            j = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
            keys = fields[acc.param][b_idx, j % plan.batch_size] % acc.table_rows
        rows = np.ones(total, dtype=np.int64)
        if acc.kind != "sequential" and n_b * acc.table_rows < 2**62:
            combined, rows = np.unique(b_idx * acc.table_rows + keys, return_counts=True)
            b_idx, keys = combined // acc.table_rows, combined % acc.table_rows
        txn = 2 * ((b0 + b_idx) * n_p + acc.proc_index) + 1
        a_txn.append(txn); a_key.append(keys); a_rows.append(rows.astype(np.int64))
        a_table.append(np.full(txn.size, tables.index(acc.table)))
        a_mode.append(np.full(txn.size, acc.mode == "write"))
        retried = aborted[acc.proc_index, b_idx]
        if retried.any():  # the aborted execution did the same accesses before it aborted
            a_txn.append(txn[retried] - 1); a_key.append(keys[retried])
            a_rows.append(rows[retried].astype(np.int64))
            a_table.append(np.full(int(retried.sum()), tables.index(acc.table)))
            a_mode.append(np.full(int(retried.sum()), acc.mode == "write"))

    # stream flows
    f_batch, f_from, f_to, f_tuples, f_bytes = [], [], [], [], []
    counts = []
    for src, dst, tuples, tuple_bytes in plan.streams:
        whole = math.floor(tuples)
        count = np.full(n_b, whole, dtype=np.int64)
        if tuples - whole > 0:
            count += rng.random(n_b) < tuples - whole
        counts.append(count)
        moved = count > 0
        f_batch.append(batch[moved]); f_tuples.append(count[moved])
        f_bytes.append(count[moved] * tuple_bytes)
        f_from.append(np.full(int(moved.sum()), src)); f_to.append(np.full(int(moved.sum()), dst))
    if f_batch:
        flows = pa.table({
            "batch_id": np.concatenate(f_batch),
            "from_procedure": _strings(plan.procs, np.concatenate(f_from)),
            "to_procedure": _strings(plan.procs, np.concatenate(f_to)),
            "tuples": np.concatenate(f_tuples),
            "bytes": np.concatenate(f_bytes),
        })
    else:
        flows = {"batch_id": [], "from_procedure": [], "to_procedure": [], "tuples": [],
                 "bytes": []}

    # window accesses (after the flows: an owner inserts the tuples it received)
    received = {}
    for (src, dst, _, _), count in zip(plan.streams, counts):
        received[dst] = received.get(dst, 0) + count
    names = tables + [w.name for w in plan.windows]
    for k, (win, replay) in enumerate(zip(plan.windows, plan.replays)):
        pi = plan.procs.index(win.procedure)
        n_in = received.get(pi, np.full(n_b, plan.batch_size, dtype=np.int64))
        declared = np.zeros(n_b, dtype=np.int64)
        for wk, rpi, rows, probability in plan.window_reads:
            if wk == k:
                declared += _counts(rng, rows, probability, n_b)
        starts = np.rint(batch * interval_us) / 1e6
        keys, rows_, mode_ = [], [], []
        txn_b = []
        for i in range(n_b):
            first, read = replay.step(float(starts[i]), int(n_in[i]))
            if n_in[i]:
                txn_b.append(i); keys.append(first); rows_.append(int(n_in[i])); mode_.append(True)
            if read:  # the active window's aggregate, kept in its metadata row (key -1)
                txn_b.append(i); keys.append(-1); rows_.append(1); mode_.append(False)
            if declared[i] and replay.staged_from > replay.active_from:  # the newest ones
                n = int(min(declared[i], replay.staged_from - replay.active_from))
                txn_b.append(i); keys.append(replay.staged_from - n); rows_.append(n)
                mode_.append(False)
        if not txn_b:
            continue
        b_idx = np.asarray(txn_b, dtype=np.int64)
        txn = 2 * ((b0 + b_idx) * n_p + pi) + 1
        w_key, w_rows = np.asarray(keys, dtype=np.int64), np.asarray(rows_, dtype=np.int64)
        w_mode = np.asarray(mode_, dtype=bool)
        retried = aborted[pi, b_idx]
        a_txn += [txn, txn[retried] - 1]; a_key += [w_key, w_key[retried]]
        a_rows += [w_rows, w_rows[retried]]; a_mode += [w_mode, w_mode[retried]]
        a_table += [np.full(txn.size, len(tables) + k), np.full(int(retried.sum()), len(tables) + k)]
    if a_txn:
        accesses = pa.table({
            "txn_id": np.concatenate(a_txn),
            "table": _strings(names, np.concatenate(a_table)),
            "key": pc.cast(pa.array(np.concatenate(a_key)), pa.string()),
            "mode": _strings(["read", "write"], np.concatenate(a_mode).astype(np.int8)),
            "rows": np.concatenate(a_rows),
        })
    else:
        accesses = {"txn_id": [], "table": [], "key": [], "mode": [], "rows": []}
    return txns, accesses, flows


def _counts(rng: np.random.Generator, rows: float, probability: float, n: int) -> np.ndarray:
    """Rows per batch of a declared access: the fractional part and the probability drawn."""
    whole = math.floor(rows)
    count = np.full(n, whole, dtype=np.int64)
    if rows - whole > 0:
        count += rng.random(n) < rows - whole
    if probability < 1.0:
        count[rng.random(n) >= probability] = 0
    return count
