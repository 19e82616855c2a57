"""An SP's cost from a trace's measured durations: the part of a workload rebuilt from
statistics (`advisor.statistics_workload`, whose docstring gives the rules) that reads time.

A duration is what one timed transaction took: an SP's own, or a nested group's whose members
report one shared duration. Where the trace times the SP's work apart from the system's
(`work_us`) that is its cost; otherwise the engine's overhead (per transaction, per row read
and written, at the calibration's prices) is taken off the duration first, never below
`MIN_WORK_SHARE` of it, unless the durations say they are work already or cannot include it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

MIN_WORK_SHARE = 0.1  # an SP's work is never taken as less than this share of its duration
DISTRIBUTED_SHARE = 0.5  # of an untimed SP's executions spanning partitions: its durations mislead


@dataclass(frozen=True)
class MeasuredCost:
    """One timed transaction of the statistics: its median duration and the engine overhead
    taken off it at the calibration's prices (both in microseconds)."""

    duration_us: float
    overhead_us: float


@dataclass(frozen=True)
class OverheadPrices:
    """The engine's time besides an SP's work that a measured execution holds (µs per
    transaction, per row read, per row written); all 0 where nothing is taken off."""

    per_txn_us: float = 0.0
    per_read_us: float = 0.0
    per_write_us: float = 0.0


def overhead_prices(calibration, durations: str, scale: float) -> OverheadPrices:
    """The calibration's prices times `scale` (a host busier, or quieter, than calibrated);
    none for durations of work (`durations` "work": nothing to take off)."""
    prices = (0.0, 0.0, 0.0) if durations == "work" else _overhead_us(calibration)
    return OverheadPrices(*(x * scale for x in prices))


@dataclass(frozen=True)
class TimedTransactions:
    """What each SP's measured duration times: the SPs of its transaction (itself, or the
    nested group whose members report one shared duration), whose rows it read and wrote."""

    members: dict[str, tuple[str, ...]]  # SP -> the SPs its duration times
    rows_per_batch: dict[str, dict[str, float]]  # SP -> {"read": rows, "write": rows} a batch
    batches: float

    @classmethod
    def of(cls, names: list[str], procs, nested, rows_per_batch: dict[str, dict[str, float]],
           batches: float) -> TimedTransactions:
        """Each SP's timed transaction: a nested group sharing one duration, else its own."""
        shared = _shared_duration_groups(procs, nested)
        return cls({n: shared.get(n, (n,)) for n in names}, rows_per_batch, batches)

    def row_us_per_call(self, r, prices: OverheadPrices) -> float:
        """The engine's time for the rows one execution reads and writes, at the calibration's
        prices (writes were taken off at the read price; the simulator charges them its own)."""
        rows = [self.rows_per_batch[m] for m in self.members[r.procedure]]
        per_batch = sum(prices.per_read_us * x["read"] + prices.per_write_us * x["write"] for x in rows)
        return per_batch / max(float(r.invocations) / self.batches, 1e-12)

    def overhead_us(self, r, prices: OverheadPrices) -> float:
        """The engine overhead one execution of `r` (a row of procedures.parquet) holds."""
        return prices.per_txn_us + self.row_us_per_call(r, prices)


def priced_work(procs, durations: str, durations_said: bool, prices: OverheadPrices,
                timed: TimedTransactions, work_told: dict[str, float]) -> tuple[OverheadPrices, list[str]]:
    """The prices to take off the durations of the SPs whose work the trace does not time, and
    the workload's lines on how their work was read: with the overhead taken off, or as they
    are where a duration of a trace that does not say what it times (`durations_said` False)
    is shorter than the overhead alone (then nothing is taken off); and where their durations
    hold 2PC waits."""
    untimed = [r for r in procs.itertuples(index=False) if r.procedure not in work_told]
    lines = []
    if durations != "work" and untimed:
        short = None if durations_said else next(
            (r for r in untimed if float(r.p50_cost_us) < timed.overhead_us(r, prices)), None)
        if short is not None:  # shorter than the overhead alone: the durations cannot include it
            lines.append(f"SP work: the measured durations as they are: {short.procedure}'s median "
                         f"({float(short.p50_cost_us):.0f} us) is shorter than the "
                         f"{timed.overhead_us(short, prices):.0f} us of engine overhead the "
                         f"calibration prices its transaction at, so the durations cannot include that "
                         f"overhead (the trace does not say what they time: input.durations)")
            prices = OverheadPrices(0.0, 0.0, 0.0)
        else:
            which = f" for the {len(untimed)} SPs whose work the trace does not time" if work_told else ""
            lines.append(f"SP work{which}: median execution time less {prices.per_txn_us:.0f} us per transaction "
                         f"and {prices.per_read_us:.2f} us per row read, {prices.per_write_us:.2f} per row written "
                         f"(calibration prices; what the engine "
                         f"overhead really was on the tracing host is not in the statistics)")
    waited = _distributed_share(untimed) if durations != "work" else ""
    if waited:
        lines.append(waited)
    return prices, lines


def sp_cost(r, timed: TimedTransactions, prices: OverheadPrices, work_told: dict[str, float],
            unit_us: float) -> tuple[float, MeasuredCost]:
    """An SP's cost a batch (in units of `unit_us`) from its row `r` of procedures.parquet, and
    the timed transaction it was read from; a group's shared duration is split evenly."""
    calls_per_batch = float(r.invocations) / timed.batches
    measured_us = float(r.p50_cost_us)
    if r.procedure in work_told:  # the trace times the SP's own work: nothing to take off
        return work_told[r.procedure] * calls_per_batch / unit_us, MeasuredCost(measured_us, 0.0)
    timing = MeasuredCost(measured_us, timed.overhead_us(r, prices))
    work_us = max(measured_us - timing.overhead_us, MIN_WORK_SHARE * measured_us)
    return work_us / len(timed.members[r.procedure]) * calls_per_batch / unit_us, timing


def measured_work(procs) -> dict[str, float]:
    """SP -> the median of its own work per execution (µs), for the SPs whose trace timed it
    (`txns.work_us`, see traces.schema); the others are not in it."""
    if "p50_work_us" not in procs:
        return {}
    return {name: float(work) for name, work in zip(procs["procedure"], procs["p50_work_us"])
            if work is not None and math.isfinite(float(work))}


def _overhead_us(calibration) -> tuple[float, float, float]:
    """Per-transaction, per-row-read and per-row-written time (µs) the simulator charges besides
    an SP's work, from the calibration's simulator prices (0s when it has none)."""
    from advisor.priced_weights import calibration_simulator

    sim = calibration_simulator(calibration)
    try:
        prices = [float(sim.get(key, 0.0)) * 1e6 for key in ("txn_overhead_s", "row_read_s", "row_write_s")]
    except (TypeError, ValueError):
        return 0.0, 0.0, 0.0
    if not all(math.isfinite(x) for x in prices):
        return 0.0, 0.0, 0.0
    per_txn, per_read, per_write = (max(x, 0.0) for x in prices)
    return per_txn, per_read, per_write


def _shared_duration_groups(procs, nested) -> dict[str, tuple[str, ...]]:
    """Members of nested groups whose rows all carry one shared duration (the same total and
    executions: the group's transaction timed once per member) -> the group."""
    total = dict(zip(procs["procedure"], zip(procs["total_cost_us"], procs["invocations"])))
    out = {}
    for group in nested:
        if len({total[m] for m in group}) == 1:
            out.update({m: tuple(group) for m in group})
    return out


def _distributed_share(untimed: list) -> str:
    """A line where SPs whose work the trace does not time ran mostly as distributed
    transactions ("" where none did, or the statistics do not count them): their durations
    hold 2PC's waits, not work. A trace of a distributed deployment without work_us was
    predicted at 25 tuples/s (PositionReport's median 209 ms against 150 us of work)."""
    shares = []
    for r in untimed:
        distributed = getattr(r, "distributed", None)
        if distributed is None or distributed != distributed or not r.invocations:  # (NaN: not counted)
            continue
        if float(distributed) / float(r.invocations) >= DISTRIBUTED_SHARE:
            shares.append((r.procedure, float(distributed) / float(r.invocations)))
    if not shares:
        return ""
    named = ", ".join(f"{name} ({share:.0%})" for name, share in shares[:5])
    return (f"SP work from durations that hold 2PC waits: {named}{' ...' if len(shares) > 5 else ''} ran as "
            "distributed transactions and the trace times no work (work_us), so their work reads high; "
            "trace work_us, or trace a design that keeps each SP's state on its partition")

