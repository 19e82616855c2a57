"""Table-level or data-parallel: after the table-level pick, the same design with every SP
that can split by key run as data-parallel lanes over fragments of its tables
(`advisor.data_parallel.data_parallel_variant`) is simulated beside it, on the same batches
and seed, and recommended when it is predicted faster beyond the tie tolerance. The choice
and its figures are kept, so the output can say which granularity won and why.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.data_parallel import data_parallel_variant
from advisor.design import Design
from advisor.workload import Workload

COMPARE_BATCHES = 300  # simulated batches for each side (the final round's length)
TIE_TOLERANCE = 0.02  # as the pick's: closer than this is a tie, and the table level wins


@dataclass
class DataParallelChoice:
    """The data-parallel variant of a table-level pick, both predicted on the same run."""

    variant: Design
    variant_tps: float | None
    table_tps: float | None
    picked: bool
    reason: str

    @property
    def speedup(self) -> float | None:
        if not self.variant_tps or not self.table_tps:
            return None
        return self.variant_tps / self.table_tps

    def describe(self) -> str:
        lanes = ", ".join(f"{p} over {t}" for p, t in self.variant.data_parallel.items())
        return f"granularity: {'picked' if self.picked else 'kept table level over'} data-parallel {lanes}: {self.reason}"


def weigh_data_parallel(workload: Workload, design: Design, calibration=None, seed: int = 0,
                        batches: int = COMPARE_BATCHES) -> DataParallelChoice | None:
    """Simulate `design` and its data-parallel variant; None when no SP of `workload` can
    run data-parallel (or the design already splits tables)."""
    from engine_sim.sim import Calibration, SimError, max_throughput

    variant = data_parallel_variant(workload, design)
    if variant is None:
        return None
    cal = calibration if calibration is not None else Calibration.reference()
    tps = []
    for d in (design, variant):
        try:
            r = max_throughput(workload, d, calibration=cal, batches=batches, seed=seed,
                               tolerance=TIE_TOLERANCE / 2)
            tps.append(float(r.throughput_tps))
        except SimError as exc:
            return DataParallelChoice(variant, None, None, False, f"the simulator could not run it: {exc}")
    table, dp = tps
    picked = dp > table * (1 + TIE_TOLERANCE)
    verdict = "faster" if picked else ("as fast (a tie keeps the table level)" if dp >= table * (1 - TIE_TOLERANCE)
                                       else "slower")
    return DataParallelChoice(variant, dp, table, picked,
                              f"predicted {dp:,.0f} tuples/s vs {table:,.0f} at table level "
                              f"({dp / table:.2f}x, {verdict})")
