"""A workload rebuilt from statistics: what a user who brings a trace instead of a spec gets,
so the simulator and the engine run a statistics directory exactly as they run a spec.

Every state item of the statistics (a table, a fragment `T#i`, a hot tuple `T@KEY`, a window)
becomes a state item of the workload with its own name, so a design at any granularity places
exactly the workload's items. What the statistics say, and how it becomes the workload:

- an SP's cost: where the trace times the SP's own work apart from the system's (`txns.work_us`,
  as the engine records it), its median over commits x executions per batch (retries
  included), in units of `cost_unit_us`. Otherwise its median duration per execution x
  executions per batch, and then a trace of executions (`durations` "execution", the default:
  the engine's, a real system's) times the whole transaction, so the per-transaction overhead
  and the per-row access time the simulator and the engine charge again are taken off first,
  at the calibration's prices (never below `MIN_WORK_SHARE` of the duration); a trace of work
  (`durations` "work", what `traces.synth` writes) is taken as it is, and so is a trace that
  does not say, when some SP's duration is shorter than that overhead alone (it cannot
  include it). The members of a nested group that report one shared duration (the same
  total) split it evenly;
- an SP's accesses: one read and one write per state item it touched, rows per batch as
  measured, the probability of access = executions touching the item / executions;
- streams: tuples per batch and bytes per tuple as measured;
- tables: rows and row bytes from the trace manifest, else estimated bytes / row bytes;
  read-mostly as the manifest says, else at most 5 % of the rows accessed written;
- windows, nested groups, the cluster (memory limit and capacities included) and the input
  (batch size, rate, fields) from the manifest.

Without `work_us`, how much of a measured duration was the engine's overhead on the tracing
host is not in the statistics: a busy host runs the engine's per-transaction and per-row code slower than its
calibration says, and an SP that touches many rows then looks heavier than it is.
`cost_scenarios` gives the same workload at the two ends of what the durations allow (no overhead
at all; the overhead scaled up until the first SP's work reaches its floor), for a pick that a tie
at the measured costs leaves open.

What a trace cannot tell is assumed, and the workload's `assumed` lists it: the key distribution of
an access (uniform: the simulator does not use keys; the engine draws rows uniformly), unless
the manifest's `access_keys` says an SP reaches a table by a field of its input tuple (what
lets it split into data-parallel lanes); an SP's code (its work is a CPU loop of the measured
length); the input batch size when the trace does not record it (10 tuples, S-Store's default).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.priced_weights import CalibrationSource
from advisor.statistics_costs import (MIN_WORK_SHARE, MeasuredCost, TimedTransactions, measured_work,
                                      overhead_prices, priced_work, sp_cost)
from advisor.statistics_graph import read_mostly_items
from costmodel.errors import SpecError
from costmodel.spec_reader import check_workload
from costmodel.workload import (DEFAULT_COST_UNIT_US, MAX_PER_BATCH, MAX_ROW_BYTES, Access, Cluster, InputSpec,
                              Procedure, Stream, Table, Window, Workload, dataflow_cycle)

DEFAULT_BATCH_SIZE = 10  # tuples per input batch when the trace does not say (S-Store's default)


def workload_from_statistics(stats_dir: str | Path, calibration: CalibrationSource = None,
                             overhead_scale: float = 1.0) -> Workload:
    """The workload of a statistics directory (see the module docstring); `calibration` prices
    the overhead taken off measured execution times (default: the advisor's calibration), and
    `overhead_scale` multiplies those prices (a host busier, or quieter, than calibrated)."""
    return _build(*_read(stats_dir), calibration, overhead_scale)[0]


def overhead_scale_bound(stats_dir: str | Path, calibration: CalibrationSource = None) -> float | None:
    """The largest `overhead_scale` the measured durations allow: where the first SP's work
    reaches its floor (`MIN_WORK_SHARE` of its duration). None when nothing is taken off
    (durations of work, or a calibration without overhead prices)."""
    return _scale_bound(_build(*_read(stats_dir), calibration, 1.0)[1])


def _scale_bound(timings: dict[str, MeasuredCost]) -> float | None:
    bounds = [(1 - MIN_WORK_SHARE) * t.duration_us / t.overhead_us
              for t in timings.values() if t.overhead_us > 0 and t.duration_us > 0]
    return min(bounds) if bounds else None


def cost_scenarios(workload: Workload, calibration: CalibrationSource = None
                   ) -> list[tuple[str, Workload]]:
    """`workload` (rebuilt from the statistics directory it names as its source) with its SP
    costs at the two ends of what the measured durations allow: no engine overhead in them,
    and the overhead at `overhead_scale_bound` times its calibrated price. Everything else
    (cluster, granularity, accesses) stays as `workload` has it. Empty for a spec, and for
    statistics whose durations are work already."""
    from traces.statistics import is_statistics_dir

    source = workload.source
    if not workload.assumed or not source or not is_statistics_dir(source):
        return []
    read = _read(source)
    bound = _scale_bound(_build(*read, calibration, 1.0)[1])
    if bound is None:
        return []
    out = []
    for label, scale in (("no engine overhead in the measured durations", 0.0),
                         (f"the engine overhead at {bound:.2f}x its calibrated price", bound)):
        costs = {p.name: p.cost for p in _build(*read, calibration, scale)[0].procedures}
        procedures = tuple(replace(p, cost=costs.get(p.name, p.cost)) for p in workload.procedures)
        out.append((label, replace(workload, procedures=procedures)))
    return out


def _read(stats_dir: str | Path) -> tuple[dict, dict, str, object]:
    """The statistics' frames, manifest, where they are and their read-mostly flags."""
    from traces.errors import TraceError
    from traces.statistics import read_statistics_arrow

    where = str(stats_dir)
    try:
        tables, manifest = read_statistics_arrow(stats_dir)
    except TraceError as exc:
        raise AdvisorError(str(exc)) from None
    frames = {name: t.to_pandas() for name, t in tables.items()}
    # the reader checked the counts and the manifest's fields (traces.statistics.check_statistics)
    return frames, manifest, where, read_mostly_items(tables["state"], manifest)


def _build(frames: dict, manifest: dict, where: str, read_mostly, calibration,
           overhead_scale: float) -> tuple[Workload, dict[str, MeasuredCost]]:
    """The workload of statistics `_read` returned, and each SP's timed transaction, the
    engine overhead priced at `overhead_scale` times the calibration's (the module docstring
    says what becomes what); a directory no spec could declare is refused by name."""
    batches = float(manifest["batches"])  # checked by the reader: a number > 0
    procs, ps, streams, state = (frames["procedures"], frames["procedure_state"],
                                 frames["streams"], frames["state"])
    names = _procedure_names(procs, ps, streams, state, where)
    known = set(names)
    inp = manifest.get("input") or {}
    batch_told = int(inp.get("batch_size") or 0)
    batch_size = batch_told or DEFAULT_BATCH_SIZE
    assumed = _assumed_of_every_trace(manifest, batch_told=bool(batch_told))
    unit_us = float(inp.get("cost_unit_us") or DEFAULT_COST_UNIT_US)
    durations = inp.get("durations") or "execution"
    prices = overhead_prices(calibration, durations, overhead_scale)
    work_told = measured_work(procs)
    windows = _checked_windows(manifest, known, state, where)
    nested = _nested(manifest.get("nested"), known, where)
    accesses, rows_per_batch = _traced_accesses(procs, ps, names, batches, {w.name for w in windows},
                                                manifest.get("access_keys") or {})
    timed = TimedTransactions.of(names, procs, nested, rows_per_batch, batches)
    prices, work_lines = priced_work(procs, durations, bool(inp.get("durations")), prices, timed, work_told)
    assumed += work_lines
    invoked, split_by = set(manifest.get("oltp") or ()), dict(manifest.get("partition_keys") or {})
    assumed += _roles_unsaid(manifest)
    procedures, timings = [], {}
    for r in procs.itertuples(index=False):
        cost, timings[r.procedure] = sp_cost(r, timed, prices, work_told, unit_us)
        procedures.append(Procedure(r.procedure, cost=cost, accesses=tuple(accesses[r.procedure]),
                                    partition_key=split_by.get(r.procedure), oltp=r.procedure in invoked))

    stream_list = _streams(streams, batches)
    table_list = _tables(state, read_mostly, manifest)
    assumed += _unseen(procedures, table_list, batches)
    assumed += _not_as_traced(procs, manifest, known)
    _within_a_run(procedures, stream_list, where)
    _acyclic(stream_list, where)
    cluster = _cluster(manifest.get("cluster") or {})
    workload = Workload(
        name=str(manifest.get("workload") or Path(where).name), tables=tuple(table_list),
        procedures=tuple(procedures), streams=tuple(stream_list), nested=nested,
        windows=windows, input=_input(inp, batch_size, unit_us),
        cluster=cluster, description=(f"rebuilt from statistics ({manifest.get('granularity')} granularity, "
                                      f"{int(batches):,} batches)"),
        source=where, sha256=str(manifest.get("sha256", "")), assumed=tuple(assumed),
    )
    _declarable(workload, where)
    return workload, timings


def _procedure_names(procs, ps, streams, state, where: str) -> list[str]:
    """The SPs of procedures.parquet, in its order, once the other frames name no other SP
    (and access no item state.parquet lacks)."""
    if procs.empty:
        raise AdvisorError(f"{where}: procedures.parquet has no procedures")
    names = list(procs["procedure"])
    _check_references(set(names), ps, streams, state, where)
    return names


def _assumed_of_every_trace(manifest: dict, batch_told: bool) -> list[str]:
    """What a trace never tells (its keys, beyond those the manifest's access_keys ties to an
    input field; the SPs' code), and the batch size where the trace does not record it."""
    assumed = [("access keys: uniform (a trace's key distribution is not modelled)"
                + ("; those the manifest's access_keys ties to an input field follow it"
                   if manifest.get("access_keys") else "")),
               "procedure code: a CPU loop of the measured work"]
    if not batch_told:
        assumed.append(f"input batch size: {DEFAULT_BATCH_SIZE} tuples (the trace does not record it)")
    return assumed


def _checked_windows(manifest: dict, known: set[str], state, where: str) -> tuple[Window, ...]:
    """The manifest's windows, once state.parquet has exactly those window items."""
    windows = _windows(manifest, known, where, dict(zip(state["state"], state["estimated_bytes"])))
    window_names = {w.name for w in windows}
    window_items = set(state.loc[state["kind"] == "window", "state"])
    if window_names != window_items:
        odd = sorted(window_names ^ window_items)[0]
        raise AdvisorError(f"{where}: _stats.json and state.parquet disagree on window {odd!r} "
                           "(a window must be in both)")
    return windows


def _traced_accesses(procs, ps, names: list[str], batches: float, window_names: set[str],
                     keyed: dict) -> tuple[dict[str, list[Access]], dict[str, dict[str, float]]]:
    """Each SP's accesses (one read and one write per item it touched: rows per batch as
    measured, the probability = executions touching the item / executions), and the rows a
    batch it read and wrote in all (what the overhead taken off its duration is priced by)."""
    invocations = dict(zip(procs["procedure"], procs["invocations"].astype(float)))
    accesses: dict[str, list[Access]] = {n: [] for n in names}
    rows_per_batch: dict[str, dict[str, float]] = {n: {"read": 0.0, "write": 0.0} for n in names}
    for r in ps.itertuples(index=False):
        calls = max(invocations[r.procedure], 1.0)
        probability = min(1.0, float(r.txns) / calls) if r.txns > 0 else 0.0
        if probability <= 0:
            continue
        for mode, total in (("read", r.read_rows), ("write", r.write_rows)):
            if total <= 0 or (mode == "write" and r.state in window_names):
                continue  # a window's inserts are its owner's own (the Window models them)
            per_batch = float(total) / batches
            rows_per_batch[r.procedure][mode] += per_batch
            accesses[r.procedure].append(Access(r.state, mode, per_batch / probability,
                                                _keys_of(keyed, r.procedure, r.table), probability))
    return accesses, rows_per_batch


def _keys_of(keyed: dict, procedure: str, table: str) -> str:
    """A table access keyed by a field of the input tuple, as the manifest's access_keys say
    (an access to a fragment or hot tuple of the table too, as `workload_at` keeps it); else
    the key distribution is not modelled (uniform)."""
    return (keyed.get(procedure) or {}).get(table, "uniform")


def _roles_unsaid(manifest: dict) -> list[str]:
    """The manifest's word for what a trace cannot show (the SPs clients invoke, the input
    field an SP splits by): a trace without it gives neither, and the workload says so."""
    if "oltp" in manifest or "partition_keys" in manifest:
        return []
    return ["no SP invoked by clients (oltp) and none split by an input field (partition_key): "
            "the trace's manifest does not say (traces written before stop 60)"]


def _input(inp: dict, batch_size: int, unit_us: float) -> InputSpec:
    """The input as the manifest records it (rate, fields), at the batch size worked out."""
    rate = inp.get("rate")
    return InputSpec(batch_size=batch_size, rate=float(rate) if rate else None,
                     fields=tuple(inp.get("fields") or ()), cost_unit_us=unit_us)


def _acyclic(streams: list[Stream], where: str) -> None:
    """A hand-edited streams.parquet with a cycle is refused as a spec's cycle is, by every command."""
    cycle = dataflow_cycle([(st.source, st.target) for st in streams])
    if cycle is not None:
        raise AdvisorError(f"{where}: cycle in the dataflow: {' -> '.join(cycle)} (streams.parquet)")


def _declarable(workload: Workload, where: str) -> None:
    """What the checks before the workload miss: refused here, as a spec would be, by every
    command alike."""
    try:
        check_workload(workload)
    except SpecError as exc:
        raise AdvisorError(f"{where}: the workload rebuilt from these statistics is not one a spec "
                           f"could declare: {exc}") from None


def _check_references(known: set[str], ps, streams, state, where: str) -> None:
    """Every SP the accesses and streams name is in procedures.parquet, every item accessed in
    state.parquet (a hand-edited or mixed-up statistics directory is refused by name)."""
    for frame, cols in ((ps, ("procedure",)), (streams, ("from_procedure", "to_procedure"))):
        for col in cols:
            stray = [p for p in frame[col] if p not in known]
            if stray:
                raise AdvisorError(f"{where}: {col} {stray[0]!r} is not in procedures.parquet")
    items = set(state["state"])
    stray = [s for s in ps["state"] if s not in items]
    if stray:
        raise AdvisorError(f"{where}: procedure_state.state {stray[0]!r} is not in state.parquet")


def _streams(streams, batches: float) -> list[Stream]:
    """The streams that carried tuples, per batch, each tuple's bytes as measured (at least 1)."""
    return [Stream(r.from_procedure, r.to_procedure, float(r.tuples) / batches,
                   max(1, int(round(float(r.bytes) / float(r.tuples)))))
            for r in streams.itertuples(index=False) if r.tuples > 0]


def _tables(state, read_mostly, manifest: dict) -> list[Table]:
    """The tables (and fragments, hot tuples) the workload places, windows aside (their owner's):
    rows as the manifest declares them, else from the estimated bytes at the row size it gives."""
    table_info = manifest.get("tables") or {}
    default_row_bytes = manifest.get("default_row_bytes") or 100
    out = []
    for r, flag in zip(state.itertuples(index=False), read_mostly):
        if r.kind == "window":
            continue
        info = table_info.get(r.table) or {}
        row_bytes = int(info.get("row_bytes") or default_row_bytes)
        if r.kind == "table" and info.get("rows") is not None:
            rows = int(info["rows"])
        else:
            rows = max(1, int(round(float(r.estimated_bytes) / row_bytes)))
        out.append(Table(r.state, rows, row_bytes, str(info.get("key") or "key"), read_mostly=bool(flag)))
    return out


def _not_as_traced(procs, manifest: dict, ran: set[str]) -> list[str]:
    """What the workload assumes where the trace shows no normal run: SPs that never committed
    (modelled from their aborted executions as if each committed), and SPs the manifest declares
    that never ran (nothing to place them by: left out)."""
    out = []
    failing = [r.procedure for r in procs.itertuples(index=False) if r.invocations > 0 and r.commits == 0]
    if failing:
        out.append(f"never committed in the trace (every execution aborted): {', '.join(failing[:5])}"
                   f"{' ...' if len(failing) > 5 else ''}; modelled as if each execution committed")
    declared = manifest.get("procedures")
    never_ran = [n for n in declared if isinstance(n, str) and n not in ran] if isinstance(declared, list) else []
    if never_ran:
        out.append(f"declared in the trace's manifest but never ran in it: {', '.join(never_ran[:5])}"
                   f"{' ...' if len(never_ran) > 5 else ''} (not in the statistics: no design places them)")
    return out


def _nested(groups, procs: set[str], where: str) -> tuple[tuple[str, ...], ...]:
    """The manifest's nested groups (their shape checked by the reader); one naming an SP the
    statistics do not have is refused."""
    out = []
    for g in groups or ():
        unknown = [m for m in g if m not in procs]
        if unknown:
            raise AdvisorError(f"{where}: _stats.json: nested group names {unknown[0]!r}, which "
                               "is not in procedures.parquet")
        if len(g) >= 2:
            out.append(tuple(g))
    return tuple(out)


def _windows(manifest: dict, procs: set[str], where: str, item_bytes: dict[str, float]
             ) -> tuple[Window, ...]:
    """The manifest's windows (checked by `traces.windows.manifest_windows`); a time window's
    tuples when full are the manifest's, else its item's estimated bytes / tuple bytes."""
    from traces.windows import manifest_windows

    out = []
    for name, w in manifest_windows(manifest, f"{where}: _stats.json").items():
        if w.procedure not in procs:
            raise AdvisorError(f"{where}: _stats.json: window {name!r}: its owner {w.procedure!r} "
                               "is not among the statistics' procedures")
        full = w.full_tuples() or item_bytes.get(name, 0.0) / w.tuple_bytes
        size, slide = (float(w.size), float(w.slide)) if w.kind == "time" else (int(w.size), int(w.slide))
        out.append(Window(name, w.procedure, size, slide, w.kind, w.tuple_bytes,
                          max_tuples=max(1, int(full)) if w.kind == "time" else None))
    return tuple(out)


def _cluster(c: dict) -> Cluster:
    """The traced cluster (fields checked by the reader); one machine when it says nothing."""
    machines = int(c.get("machines") or 1)
    capacity = c.get("machine_capacity")
    return Cluster(
        machines=machines, partitions_per_machine=int(c.get("partitions_per_machine") or 1),
        machine_memory_mb=c.get("machine_memory_mb"),
        machine_capacity=tuple(float(x) for x in capacity)
        if capacity is not None and len(capacity) == machines else None,
    )


def _within_a_run(procedures: list[Procedure], streams: list[Stream], where) -> None:
    """Rows an access touches and tuples a stream carries per batch within the spec's bound
    (`MAX_PER_BATCH`): statistics past it (a hand-made directory, a trace's overflowed count)
    would rebuild a workload no spec may declare, and no run could take."""
    for p in procedures:
        for a in p.accesses:
            if a.rows > MAX_PER_BATCH:
                raise AdvisorError(f"{where}: {p.name} -> {a.table}: {a.rows:.3g} rows a batch, past what "
                                   f"any run can take (at most {MAX_PER_BATCH:.0e})")
    for st in streams:
        if st.tuples > MAX_PER_BATCH:
            raise AdvisorError(f"{where}: stream {st.source} -> {st.target}: {st.tuples:.3g} tuples a batch, "
                               f"past what any run can take (at most {MAX_PER_BATCH:.0e})")
        if st.tuple_bytes > MAX_ROW_BYTES:
            raise AdvisorError(f"{where}: stream {st.source} -> {st.target}: {st.tuple_bytes:,} bytes a tuple "
                               f"(streams.parquet's bytes / tuples), past what a spec may declare "
                               f"(at most {MAX_ROW_BYTES:,})")


FEW_BATCHES = 100  # fewer traced batches than this: a rare access or stream may be missing


def _unseen(procedures: list[Procedure], tables: list[Table], batches: float) -> list[str]:
    """What the statistics cannot have seen, said beside the design: state no SP accessed in
    the trace (placed by its size alone), and a short trace. The simulator and the engine lock
    the partition of every table an SP declares, however rarely it runs the access: missed by
    10 traced batches, linear-road's Accidents write gave a design at 0.68x the spec's, unsaid."""
    accessed = {a.table for p in procedures for a in p.accesses}
    idle = [t.name for t in tables if t.name not in accessed]
    out = []
    if idle:
        out.append(f"state no SP accessed in the {int(batches):,} traced batches: {', '.join(idle[:5])}"
                   f"{f' and {len(idle) - 5} more' if len(idle) > 5 else ''} (placed by size alone; an "
                   "access taken more rarely than the trace is long is not in the statistics)")
    if batches < FEW_BATCHES:
        out.append(f"a short trace: {int(batches):,} batches (an access or stream taken in fewer than one "
                   f"batch in {int(batches):,} may be missing; trace {FEW_BATCHES:,} or more)")
    return out
