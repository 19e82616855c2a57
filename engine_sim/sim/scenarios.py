"""The dissertation's four distributed experiments (section 4.6), set up at their published
scale for the simulator: the workloads (bundled specs, and the variants the figures need,
derived from them) and a runner per experiment returning its series; the designs they run
are in `scenario_designs.py`.

Used by the shape tests (tests/sim/test_sim_shapes.py), the figures (bench/sim_shapes.py) and
the docs. Nothing here tunes the model per workload: every experiment runs the same
`SimParams` through the same engine model (by default `REFERENCE_2016`, the 2016 cluster).
"""
from __future__ import annotations

from dataclasses import replace

from costmodel.procedure_merge import merge_procedure_groups
from costmodel.sim_params import REFERENCE_2016, SimParams
from costmodel.spec_reader import read_spec
from costmodel.workload import Workload
from engine_sim.sim.run import max_throughput
from engine_sim.sim.scenario_designs import boundaries_design, chain_design, move_design, tpcdi_design

# -- workload variants ---------------------------------------------------------------------------


def boundaries_overhead_units() -> float:
    """Cost units the bundled procedure-boundaries specs charge per SP as transaction overhead,
    read off the specs: (sum of the 32 one-step SPs - the one 32-step SP) / 31 fusions."""
    w32, w1 = read_spec("boundaries-32sp"), read_spec("boundaries-1sp")
    return (sum(p.cost for p in w32.procedures) - w1.procedures[0].cost) / (len(w32.procedures) - 1)


def boundaries_workload(sps: int) -> Workload:
    """The 16-table update-then-read chain cut into `sps` SPs (a divisor of 32)."""
    if sps in (1, 16, 32):
        return read_spec(f"boundaries-{sps}sp")
    w32 = read_spec("boundaries-32sp")
    order = w32.topological_order()
    size = len(order) // sps
    groups = [order[i * size:(i + 1) * size] for i in range(sps)]
    fused = merge_procedure_groups(w32, groups, [f"Steps{i + 1}" for i in range(sps)],
                                   boundaries_overhead_units())
    return replace(fused, name=f"{w32.name}/{sps}sp")


def tpcdi_single_sp() -> Workload:
    """TPC-DI Trade.txt ingestion as one big SP (the H-Store-style configuration)."""
    w = read_spec("tpcdi-trade")
    return replace(merge_procedure_groups(w, [w.topological_order()], ["TradeIngest"]), name=f"{w.name}/1sp")


# -- the experiments -----------------------------------------------------------------------------


def _tput(workload, design, params, batches, **kw) -> float:
    params = REFERENCE_2016 if params is None else params
    return float(max_throughput(workload, design, calibration=params, batches=batches, **kw).throughput_tps)


def chain_scaling(params: SimParams | None = None, batches: int = 600,
                  machines: tuple[int, ...] = (1, 2, 4, 8)) -> dict[str, list[float]]:
    """Figure 4.16(a): throughput (tuples/s) of the 32-SP chain, DLS vs central scheduler."""
    w = read_spec("chain-32")
    out: dict[str, list[float]] = {"machines": list(machines)}
    for sched in ("dls", "central"):
        out[sched] = [_tput(w, chain_design(w, m), params, batches, scheduler=sched) for m in machines]
    return out


def procedure_boundaries(params: SimParams | None = None, batches: int = 400,
                         sps: tuple[int, ...] = (1, 4, 16, 32),
                         partitions: tuple[int, ...] = (1, 4, 16)) -> dict[int, dict[int, float]]:
    """Figure 4.18: throughput by partition count, then by SP count."""
    out: dict[int, dict[int, float]] = {}
    for parts in partitions:
        out[parts] = {}
        for k in sps:
            w = boundaries_workload(k)
            out[parts][k] = _tput(w, boundaries_design(w, parts), params, batches)
    return out


def move_micro(params: SimParams | None = None, batches: int = 400,
               batch_sizes: tuple[int, ...] = (1, 10, 50, 100, 500)) -> dict[str, list[float]]:
    """Figure 4.19: throughput (tuples/s) of the MOVE micro-benchmark by batch size."""
    w = read_spec("move-micro")
    d = move_design(w)
    out: dict[str, list[float]] = {"batch_size": list(batch_sizes)}
    for move in ("rpc", "txn"):
        out[move] = [_tput(w, d, params, batches, move=move, batch_size=bs) for bs in batch_sizes]
    return out


def tpcdi_pipeline_vs_single_sp(params: SimParams | None = None, batches: int = 600) -> dict[str, dict[str, float]]:
    """Figure 4.21: one SP per partition vs one big distributed SP, on 1 node and 4 machines."""
    pipeline, single = read_spec("tpcdi-trade"), tpcdi_single_sp()
    out: dict[str, dict[str, float]] = {}
    for label, w in (("sp_per_partition", pipeline), ("single_distributed_sp", single)):
        out[label] = {f"{m}_machine{'s' if m > 1 else ''}": _tput(w, tpcdi_design(w, m), params, batches)
                      for m in (1, 4)}
    return out
