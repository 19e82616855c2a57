"""The dissertation's four distributed experiments (section 4.6), set up at their published
scale for the simulator: the workloads (bundled specs, and the variants the figures need,
derived from them), the designs, and a runner per experiment returning its series.

Used by the shape tests (tests/sim/test_sim_shapes.py), the figures (bench/sim_shapes.py) and
the docs. Nothing here tunes the model per workload: every experiment runs the same
`SimParams` through the same engine model (by default `REFERENCE_2016`, the 2016 cluster).
"""
from __future__ import annotations

from dataclasses import replace

from costmodel.design import Design
from costmodel.spec_reader import read_spec
from costmodel.workload import Procedure, Stream, Workload
from costmodel.sim_params import REFERENCE_2016, SimParams

# -- workload variants ---------------------------------------------------------------------------


def merge_procedures(workload: Workload, groups: list[list[str]], names: list[str],
                     overhead_units: float = 0.0) -> Workload:
    """The same dataflow with each group of procedures fused into one SP.

    The fused SP does all its members' accesses in order; its cost is the members' sum minus
    `overhead_units` per transaction saved (for specs whose costs include a per-SP
    transaction overhead). Streams inside a group disappear; the others are re-attached.
    """
    owner = {p: names[i] for i, g in enumerate(groups) for p in g}
    procs = []
    for name, group in zip(names, groups):
        members = [workload.procedure(p) for p in group]
        procs.append(Procedure(
            name=name, cost=sum(m.cost for m in members) - overhead_units * (len(members) - 1),
            accesses=tuple(a for m in members for a in m.accesses)))
    streams: dict[tuple[str, str], Stream] = {}
    for s in workload.streams:
        a, b = owner[s.source], owner[s.target]
        if a != b and (a, b) not in streams:
            streams[(a, b)] = Stream(a, b, s.tuples, s.tuple_bytes)
    return replace(workload, name=f"{workload.name}/{len(groups)}sp", procedures=tuple(procs),
                   streams=tuple(streams.values()), nested=())


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
    return merge_procedures(w32, groups, [f"Steps{i + 1}" for i in range(sps)],
                            boundaries_overhead_units())


def tpcdi_single_sp() -> Workload:
    """TPC-DI Trade.txt ingestion as one big SP (the H-Store-style configuration)."""
    w = read_spec("tpcdi-trade")
    return merge_procedures(w, [w.topological_order()], ["TradeIngest"])


# -- designs -------------------------------------------------------------------------------------


def chain_design(workload: Workload, machines: int, partitions_per_machine: int = 4) -> Design:
    """SP i and its table on partition i*n/32: tables spread evenly, schedulers with them."""
    n = machines * partitions_per_machine
    order = workload.topological_order()
    procs = {p: i * n // len(order) for i, p in enumerate(order)}
    state = {a.table: procs[p] for p in order for a in workload.procedure(p).accesses}
    return Design(workload.name, machines, partitions_per_machine, procs, state, method="chain")


def tables_then_procedures(workload: Workload, table_partition: dict[str, int], machines: int,
                           partitions_per_machine: int) -> Design:
    """Tables where given; each SP on the partition of the first table it touches."""
    procs = {p.name: table_partition[p.accesses[0].table] for p in workload.procedures}
    return Design(workload.name, machines, partitions_per_machine, procs, dict(table_partition))


def boundaries_design(workload: Workload, partitions: int) -> Design:
    """Tables T1..T16 in contiguous runs over `partitions` partitions; those partitions
    spread evenly over 4 machines (one machine when there is a single partition)."""
    machines = 1 if partitions == 1 else 4
    ppm = partitions // machines
    tables = [f"T{i + 1}" for i in range(16)]
    placement = {t: i * partitions // len(tables) for i, t in enumerate(tables)}
    return tables_then_procedures(workload, placement, machines, ppm)


def move_design(workload: Workload) -> Design:
    """SP1 with T1 on machine 0, SP2 with T2 on machine 1."""
    return Design(workload.name, 2, 1, {"SP1": 0, "SP2": 1}, {"T1": 0, "T2": 1})


TPCDI_TABLES = {"DimDate": 0, "DimTime": 0, "StatusType": 0, "TradeType": 0,
                "DimSecurity": 1, "DimAccount": 2, "DimTrade": 3}


def tpcdi_design(workload: Workload, machines: int) -> Design:
    """Each table group on its own partition (4 partitions on 1 machine, or 1 on each of 4);
    each SP with its tables; the single big SP on partition 0."""
    return tables_then_procedures(workload, TPCDI_TABLES, machines, 4 // machines)


# -- the experiments -----------------------------------------------------------------------------


def _tput(workload, design, params, batches, **kw) -> float:
    from engine_sim.sim import max_throughput

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


def tpcdi_placement(params: SimParams | None = None, batches: int = 600) -> dict[str, dict[str, float]]:
    """Figure 4.21: one SP per partition vs one big distributed SP, on 1 node and 4 machines."""
    pipeline, single = read_spec("tpcdi-trade"), tpcdi_single_sp()
    out: dict[str, dict[str, float]] = {}
    for label, w in (("sp_per_partition", pipeline), ("single_distributed_sp", single)):
        out[label] = {f"{m}_machine{'s' if m > 1 else ''}": _tput(w, tpcdi_design(w, m), params, batches)
                      for m in (1, 4)}
    return out
