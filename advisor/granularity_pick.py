"""Table-level or data-parallel: after the table-level pick, the same design with every SP
that can split by key run as data-parallel lanes over fragments of its tables
(`advisor.data_parallel.data_parallel_variant`) is simulated beside it, on the same batches
and seed, and recommended when it is predicted faster beyond the tie tolerance. The choice
and its figures are kept, so the output can say which granularity won and why.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.data_parallel import TXN_OVERHEAD_UNITS, data_parallel_variant, lane_routes
from advisor.design import Design
from advisor.selection import MIN_BATCHES, TIE_TOLERANCE  # as the pick: a tie keeps the table level
from advisor.workload import Workload

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
                        batches: int = COMPARE_BATCHES) -> DataParallelChoice | None:
    """Simulate `design` and its data-parallel variants (`variants`), within an event budget
    (the same input gives the same choice on any host), and keep the fastest variant; None
    when no SP of `workload` can run data-parallel (or the design already splits tables)."""
    from engine_sim.sim import Calibration, SimError, max_throughput

    cal = calibration if calibration is not None else Calibration.reference()
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
        return float(max_throughput(workload, d, calibration=cal, batches=batches, seed=seed,
                                    tolerance=TIE_TOLERANCE / 2).throughput_tps)

    try:
        table = predict(design)
        scored = [(predict(d), -i, d) for i, d in enumerate(candidates)]
    except SimError as exc:
        return DataParallelChoice(candidates[0], None, None, False, f"the simulator could not run it: {exc}")
    dp, _, best = max(scored, key=lambda x: (x[0], x[1]))
    picked = dp > table * (1 + TIE_TOLERANCE)
    verdict = "faster" if picked else ("as fast (a tie keeps the table level)" if dp >= table * (1 - TIE_TOLERANCE)
                                       else "slower")
    of = f"best of {len(scored)} variants, " if len(scored) > 1 else ""
    return DataParallelChoice(best, dp, table, picked,
                              f"predicted {dp:,.0f} tuples/s vs {table:,.0f} at table level "
                              f"({of}{dp / table:.2f}x, {verdict})", tried=len(scored))
