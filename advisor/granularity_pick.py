"""Table-level or data-parallel: after the table-level pick, the same design with every SP
that can split by key run as data-parallel lanes over fragments of its tables
(`advisor.data_parallel.data_parallel_variant`) is simulated beside it, on the same batches
and seed, and recommended when it is predicted faster beyond the tie tolerance. The choice
and its figures are kept, so the output can say which granularity won and why.

A workload rebuilt from statistics knows its SP costs only as well as the trace's durations
tell them apart from the engine's overhead on the tracing host
(`advisor.statistics_workload.cost_scenarios`). A tie at the measured costs is then settled
over that range, for a variant whose lanes only take partitions where the table level runs no
SP (it adds no work where a cost the statistics got wrong could make a new bottleneck): one that
is as fast at both ends of the range and faster at one is picked, and the reason says so. A
variant that shares partitions with other SPs is not settled this way: the range is one
unknown (the host's overhead) and cannot bound each SP's own error.
"""
from __future__ import annotations

from dataclasses import dataclass

from costmodel.lanes import lane_routes
from advisor.data_parallel import TXN_OVERHEAD_UNITS, data_parallel_variant
from advisor.judge import Simulator, need_simulator
from costmodel.design import Design
from advisor.selection import MIN_BATCHES, TIE_TOLERANCE  # as the pick: a tie keeps the table level
from costmodel.workload import Workload

COMPARE_BATCHES = 300  # simulated batches for each side (the final round's length)
EVENT_BUDGET = 300_000  # simulated units and MOVEs, both sides and every rate probe together
RATE_PROBES = 7  # runs a maximum-throughput search takes, about


def per_batch_work(workload: Workload, design: Design) -> int:
    """Transactions and MOVEs the simulator runs per batch: every lane of a data-parallel SP
    is a unit, and sends to every lane downstream."""
    lanes = {name: len(route.lanes) for name, route in lane_routes(workload, design).items()}
    units = sum(lanes.get(p, 1) for p in workload.procedure_names)
    return units + sum(lanes.get(s.source, 1) * lanes.get(s.target, 1) for s in workload.streams)


SINGLE_SP_VARIANTS = 3  # besides splitting every SP that can: each of the heaviest ones alone


@dataclass
class DataParallelChoice:
    """The best data-parallel variant of a table-level pick, predicted beside it on the
    same batches (`tried`: how many variants were simulated)."""

    variant: Design
    variant_tps: float | None
    table_tps: float | None
    picked: bool
    reason: str
    tried: int = 0
    settled_by: str = ""  # how a tie at a statistics workload's measured costs was settled
    batches: int = 0  # the simulated batches of both sides' figures (0: nothing simulated)

    @property
    def speedup(self) -> float | None:
        if not self.variant_tps or not self.table_tps:
            return None
        return self.variant_tps / self.table_tps

    def describe(self) -> str:
        pairs = [f"{p} over {t}" for p, t in self.variant.data_parallel.items()]
        lanes = ", ".join(pairs[:3]) + (f" and {len(pairs) - 3} more SPs" if len(pairs) > 3 else "")
        return f"granularity: {'picked' if self.picked else 'kept table level over'} data-parallel {lanes}: {self.reason}"


def txn_overhead_units(params) -> float:
    """What one more transaction a batch costs a partition, in units of SP cost, by the
    simulator's prices: its fixed overhead, its work after the commit, and the request and
    commit messages it takes (0.53 on the reference cluster; more where messages are dear)."""
    return ((params.txn_overhead_s + params.txn_after_commit_s + 2 * params.msg_cpu_s)
            / params.cost_unit_s)


def variants(workload: Workload, design: Design, txn_overhead: float = TXN_OVERHEAD_UNITS) -> list[Design]:
    """Every SP that can split at once, then each of the heaviest alone (distinct ones)."""
    every = data_parallel_variant(workload, design, txn_overhead=txn_overhead)
    if every is None:
        return []
    out = [every]
    heavy = sorted(every.data_parallel, key=lambda p: (-workload.procedure(p).cost, p))
    if len(heavy) > 1:
        for name in heavy[:SINGLE_SP_VARIANTS]:
            out.append(data_parallel_variant(workload, design, txn_overhead=txn_overhead,
                                             only=frozenset({name})))
    return out


def weigh_data_parallel(workload: Workload, design: Design, calibration=None, seed: int = 0,
                        batches: int = COMPARE_BATCHES, *, simulator: Simulator
                        ) -> DataParallelChoice | None:
    """Simulate `design` and its data-parallel variants (`variants`), within an event budget
    (the same input gives the same choice on any host), and keep the fastest variant; None
    when no SP of `workload` can run data-parallel (or the design already splits tables). A
    tie at a statistics workload's measured costs is settled over their range (`settle_tie`).
    `simulator` predicts every side (`advisor.judge`)."""
    simulator = need_simulator(simulator, "weighing data-parallel variants")
    cal = calibration if calibration is not None else simulator.reference_calibration()
    candidates = variants(workload, design, txn_overhead_units(getattr(cal, "params", cal)))
    if not candidates:
        return None
    works = [per_batch_work(workload, d) for d in candidates]
    table_work = per_batch_work(workload, design)
    while len(candidates) > 1 and EVENT_BUDGET // (RATE_PROBES * (table_work + sum(works))) < MIN_BATCHES:
        drop = works.index(max(works))  # the most expensive to simulate goes first
        del candidates[drop], works[drop]
    batches = min(batches, EVENT_BUDGET // (RATE_PROBES * (table_work + sum(works))))
    if batches < MIN_BATCHES:
        return DataParallelChoice(candidates[0], None, None, False,
                                  f"not weighed: {works[0]:,} transactions and MOVEs per batch "
                                  f"do not fit the simulation budget")

    def predict(d: Design) -> float:
        return predicted_tps(workload, d, cal, batches, seed, simulator)

    try:
        table = predict(design)
        scored = [(predict(d), -i, d) for i, d in enumerate(candidates)]
    except simulator.error as exc:
        return DataParallelChoice(candidates[0], None, None, False, f"the simulator could not run it: {exc}")
    dp, _, best = max(scored, key=lambda x: (x[0], x[1]))
    picked = dp > table * (1 + TIE_TOLERANCE)
    verdict = "faster" if picked else ("as fast (a tie keeps the table level)" if dp >= table * (1 - TIE_TOLERANCE)
                                       else "slower")
    of = f"best of {len(scored)} variants, " if len(scored) > 1 else ""
    reason = f"predicted {dp:,.0f} tuples/s vs {table:,.0f} at table level ({of}{dp / table:.2f}x, {verdict})"
    if not picked:
        ties = [(tps, d) for tps, _, d in scored if tps >= table * (1 - TIE_TOLERANCE)]
        try:
            settled = settle_tie(workload, design, ties, calibration=cal, seed=seed, batches=batches,
                                 simulator=simulator) if ties else None
        except simulator.error:
            settled = None
        if settled is not None:
            dp, best, why = settled
            return DataParallelChoice(best, dp, table, True,
                                      f"predicted {dp:,.0f} tuples/s vs {table:,.0f} at table level "
                                      f"({of}{dp / table:.2f}x, a tie at the measured costs) {why}",
                                      tried=len(scored), settled_by=why, batches=batches)
    return DataParallelChoice(best, dp, table, picked, reason, tried=len(scored), batches=batches)


def predicted_tps(workload: Workload, design: Design, calibration, batches: int, seed: int,
                  simulator: Simulator) -> float:
    """The simulator's maximum throughput, as the pick measures every side (half its tie)."""
    return float(simulator.max_throughput(workload, design, calibration=calibration, batches=batches,
                                          seed=seed, tolerance=TIE_TOLERANCE / 2).throughput_tps)


def lanes_only_where_idle(workload: Workload, design: Design, variant: Design) -> bool:
    """Whether every lane of `variant` runs on a partition where `design` runs no SP that
    `variant` keeps whole: such a split adds no work where the statistics' uncertain costs
    could make it the bottleneck, so a tie it wins somewhere it cannot lose by much."""
    kept = {design.procedures[p] for p in workload.procedure_names if p not in variant.data_parallel}
    return all(not kept.intersection(route.lanes) for route in lane_routes(workload, variant).values())


def settle_tie(workload: Workload, design: Design, ties: list[tuple[float, Design]], calibration,
               seed: int, batches: int, simulator: Simulator) -> tuple[float, Design, str] | None:
    """The variant of `ties` (predicted throughput at the measured costs, design) whose lanes
    take only partitions `design` leaves without SP work (`lanes_only_where_idle`) and that is
    as fast as `design` at both ends of the cost range of a workload rebuilt from statistics
    and faster at one, with what settled it; None when none is, or the costs are not
    measured. Of several, the one with the best ratio at its worse end."""
    from advisor.statistics_workload import cost_scenarios

    scenarios = cost_scenarios(workload)
    if not scenarios:
        return None
    ties = [(tps, v) for tps, v in ties if lanes_only_where_idle(workload, design, v)]
    if not ties:
        return None
    tables = [predicted_tps(w, design, calibration, batches, seed, simulator) for _, w in scenarios]
    best = None
    for tps, variant in ties:
        ratios = [predicted_tps(w, variant, calibration, batches, seed, simulator) / t if t > 0 else 0.0
                  for (_, w), t in zip(scenarios, tables)]
        if min(ratios) < 1 - TIE_TOLERANCE or max(ratios) <= 1 + TIE_TOLERANCE:
            continue
        if best is None or (min(ratios), tps) > (min(best[0]), best[1]):
            best = (ratios, tps, variant)
    if best is None:
        return None
    ratios, tps, variant = best
    ends = "; ".join(f"{r:.2f}x with {label}" for (label, _), r in zip(scenarios, ratios))
    return tps, variant, (f"settled by the costs' uncertainty (the statistics cannot tell an SP's "
                          f"work from the tracing host's engine overhead): {ends}")
