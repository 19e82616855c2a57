"""Is `recommend`'s pick the fastest design the simulator knows, on dataflows of realistic size?

Issue 19. On tiny graphs recommend simulates every assignment to machines, so its pick is the
simulator's best by construction; on 20-60 SPs it only simulates a pool plus a short local
search. This bench sets an independent simulated annealer (no advisor search code) on the same
simulator with a budget of `--budget-factor` times recommend's own simulated events, starting
from recommend's pick and from a random design, and reports recommend / best (target >= 0.98)
and recommend's wall time (target <= 10 s).

Cases: generated dataflows (gen20 on 6 machines, gen40 on 8, gen60 on 16; 1 partition per
machine; groups of 3-5 SPs sharing tables, a stream DAG, nested pairs, tuple windows), a
second shape (shared20 ... shared60 on 4-16 machines x 2 partitions: tables drawn with Zipf
weights, so a few are shared by SPs all over the dataflow) and the bundled tpcdi-trade, linear-road, chain-32, streaming-ledger on 4, 8 and 16 machines (each
with its spec's partitions per machine).

Every prediction uses the reference cluster (`Calibration.reference()`, what recommend judges
with), `--batches` batches, seed 0. "rec sim" is recommend's pick predicted again that way,
so it compares with the annealer's figures; "rec pred" is recommend's own figure
(`Recommendation.prediction`). "sim runs" is recommend's own work, counted: the simulations
it ran / the rate-search probes in them (each simulates every batch), which do not depend on
the host's load as its seconds do.

Event accounting (an approximation, the same on both sides): one maximum-throughput search
costs the events of the run `max_throughput` returns x 8 rate probes. Recommend's events =
(selection.simulated + improvement.simulated) x (that figure for its pick). The annealer
charges each design it simulates its own run's events x 8; a design seen before is free.
Each chain gets half the events and half of `--max-seconds`; a chain the clock stops is
marked "cap" (its result then depends on the host's speed).

    python bench/recommend_scale.py
    python bench/recommend_scale.py --cases gen20,tpcdi-trade@4 --budget-factor 1 --max-seconds 30
    python bench/recommend_scale.py --cases gen20#3,shared20#601 --max-seconds 150   # held-out seeds
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, field

import numpy as np

from advisor.api import recommend
from costmodel.design import Design
from costmodel.spec_reader import parse_workload
from advisor.sources import load_workload
from costmodel.spec_writer import workload_to_toml
from costmodel.workload import Access, Cluster, InputSpec, Procedure, Stream, Table, Window, Workload
from engine_sim.sim import Calibration, SimError, max_throughput

GENERATED = {"gen20": (20, 6), "gen40": (40, 8), "gen60": (60, 16)}  # SPs, machines
# a third shape (`shared_workload`): SPs, machines (x 2 partitions), seed
SHARED = {"shared20": (20, 4, 501), "shared25": (25, 6, 502), "shared30": (30, 6, 503),
          "shared40": (40, 8, 504), "shared50": (50, 12, 506), "shared60": (60, 16, 505)}
# beyond the sizes, run only when named (`--cases gen100,shared100`): the pick at 100-150
# SPs, where the pool's designs are far from each other and the simulator's budget buys few runs
LARGER = {"gen100": (100, 24), "gen150": (150, 32)}
LARGER_SHARED = {"shared100": (100, 24, 507), "shared150": (150, 32, 508)}
BUNDLED = ("tpcdi-trade", "linear-road", "chain-32", "streaming-ledger")
BUNDLED_MACHINES = (4, 8, 16)
PROBES = 8  # rate probes charged per maximum-throughput search
TOLERANCE = 0.01  # of the rate search (what recommend's simulated search uses)
T_START, T_END = 0.05, 0.001  # relative slowdown accepted with probability 1/e, first and last
TARGET_RATIO, TARGET_SECONDS = 0.98, 10.0


# -- generated dataflows ----------------------------------------------------------------------

def generated_workload(n_sps: int, machines: int, seed: int) -> Workload:
    """N SPs in groups of 3-5 sharing 2-3 tables (each SP writes a private table and touches 1-2
    of its group's, some with probability < 1); each SP after the first fed by one or two
    earlier ones; 1-2 nested pairs of consecutive SPs; 1-2 tuple windows on SPs outside them."""
    rng = np.random.default_rng(seed)
    tables, procs, streams = [], [], []
    group_of: list[int] = []
    while len(group_of) < n_sps:
        g = len(set(group_of))
        group_of += [g] * min(int(rng.integers(3, 6)), n_sps - len(group_of))
        tables += [Table(f"G{g}_{k}", int(rng.integers(1_000, 500_000)), int(rng.integers(50, 200)), "id")
                   for k in range(int(rng.integers(2, 4)))]
    starts = [i for i in range(1, n_sps - 1) if group_of[i] == group_of[i + 1]]
    nested: list[tuple[str, str]] = []
    for j in rng.permutation(starts)[: int(rng.integers(1, 3))]:
        if all(abs(int(j) - int(a[2:])) > 1 for a, _ in nested):
            nested.append((f"SP{j}", f"SP{j + 1}"))
    in_nested = {m for pair in nested for m in pair}
    free = [f"SP{i}" for i in range(n_sps) if f"SP{i}" not in in_nested]
    owners = list(rng.choice(free, size=int(rng.integers(1, 3)), replace=False))
    windows = [Window(f"W{k}", str(o), size=100, slide=10, kind="tuple", tuple_bytes=32)
               for k, o in enumerate(owners)]
    for i in range(n_sps):
        name, g = f"SP{i}", group_of[i]
        tables.append(Table(f"P{i}", int(rng.integers(1_000, 100_000)), int(rng.integers(50, 200)), "id"))
        accesses = [Access(f"P{i}", "write", float(rng.integers(1, 11)))]
        shared = [t.name for t in tables if t.name.startswith(f"G{g}_")]
        for t in rng.choice(shared, size=int(rng.integers(1, 3)), replace=False):
            prob = 1.0 if rng.random() < 0.6 else round(float(rng.uniform(0.3, 0.9)), 2)
            mode = "read" if rng.random() < 0.5 else "write"
            accesses.append(Access(str(t), mode, float(rng.integers(1, 16)), probability=prob))
        accesses += [Access(w.name, "read", 10.0) for w in windows if w.procedure == name]
        procs.append(Procedure(name, cost=round(float(rng.uniform(0.3, 2.5)), 2), accesses=tuple(accesses)))
        if i == 0:
            continue
        if (f"SP{i - 1}", name) in nested:
            sources = {i - 1}
        else:
            sources = {int(rng.integers(max(0, i - 6), i))}
        if rng.random() < 0.35:
            sources.add(int(rng.integers(max(0, i - 6), i)))
        streams += [Stream(f"SP{s}", name, float(rng.integers(1, 11))) for s in sorted(sources)]
    w = Workload(f"gen{n_sps}", tuple(tables), tuple(procs), tuple(streams), tuple(nested),
                 tuple(windows), InputSpec(batch_size=10), Cluster(machines, 1))
    return parse_workload(workload_to_toml(w), source=f"generated:{seed}")  # checked like a spec


def shared_workload(n_sps: int, machines: int, seed: int) -> Workload:
    """Another shape than `generated_workload`'s groups: a random stream DAG whose SPs reach
    1-3 tables drawn with Zipf weights from about as many tables as SPs (a few tables shared by
    many SPs anywhere in the dataflow), a fifth of them read-mostly, accesses with
    probabilities, 0-2 nested pairs along streams; 2 partitions per machine."""
    rng = np.random.default_rng(seed)
    n_tables = int(n_sps * rng.uniform(0.6, 1.2))
    tables = [Table(f"T{i}", int(rng.integers(2_000, 300_000)), int(rng.integers(40, 300)), "id",
                    read_mostly=bool(rng.random() < 0.2)) for i in range(n_tables)]
    drawn = rng.zipf(1.6, size=n_sps * 3) % n_tables
    procs, streams = [], []
    for i in range(n_sps):
        accesses = []
        for t in sorted({int(x) for x in drawn[3 * i:3 * i + int(rng.integers(1, 4))]}):
            mode = "read" if tables[t].read_mostly or rng.random() < 0.55 else "write"
            rows = float(rng.integers(1, 25))
            prob = 1.0 if rng.random() < 0.7 else round(float(rng.uniform(0.2, 0.9)), 2)
            accesses.append(Access(f"T{t}", mode, rows, probability=prob))
        procs.append(Procedure(f"SP{i}", cost=round(float(rng.uniform(0.2, 3.0)), 2), accesses=tuple(accesses)))
        if i:
            for src in sorted({int(rng.integers(0, i)) for _ in range(1 + (rng.random() < 0.3))}):
                streams.append(Stream(f"SP{src}", f"SP{i}", float(rng.integers(1, 20))))
    edges = {(s.source, s.target) for s in streams}
    nested: list[tuple[str, str]] = []
    for _ in range(int(rng.integers(0, 3))):
        a = int(rng.integers(1, n_sps))
        pair = (f"SP{a - 1}", f"SP{a}")
        if pair in edges and all(not set(pair) & set(q) for q in nested):
            nested.append(pair)
    w = Workload(f"shared{n_sps}", tuple(tables), tuple(procs), tuple(streams), tuple(nested), (),
                 InputSpec(batch_size=10), Cluster(machines, 2))
    return parse_workload(workload_to_toml(w), source=f"shared:{seed}")  # checked like a spec


def case_workload(case: str) -> tuple[Workload, int, int]:
    """The workload of a case name (gen20 | shared40 | name@machines) on its cluster; a
    generated or shared case with `#SEED` (gen20#3, shared20#601) is that shape drawn with
    another seed: a dataflow nobody tuned on."""
    case, _, other_seed = case.partition("#")
    if case in GENERATED or case in LARGER:
        n, m = {**GENERATED, **LARGER}[case]
        return generated_workload(n, m, seed=int(other_seed) if other_seed else 19_000 + n), m, 1
    if case in SHARED or case in LARGER_SHARED:
        n, m, seed = {**SHARED, **LARGER_SHARED}[case]
        return shared_workload(n, m, int(other_seed) if other_seed else seed), m, 2
    name, _, machines = case.partition("@")
    w = load_workload(name)
    ppm = w.cluster.partitions_per_machine
    return w.with_cluster(int(machines), ppm), int(machines), ppm


# -- the annealer's search space and objective ------------------------------------------------

@dataclass
class Space:
    """Designs as (SP partitions, table partitions); windows always on their owner's."""

    workload: Workload
    machines: int
    ppm: int
    sps: list[str]
    items: list[str]
    private: list[list[int]]  # per SP: indices of the tables only it touches

    @classmethod
    def of(cls, workload: Workload, machines: int, ppm: int) -> "Space":
        sps = workload.procedure_names
        items = workload.table_names
        users: dict[str, set[str]] = {t: set() for t in items}
        for p in workload.procedures:
            for a in p.accesses:
                users.get(a.table, set()).add(p.name)
        private = [[j for j, t in enumerate(items) if users[t] == {sp}] for sp in sps]
        return cls(workload, machines, ppm, sps, items, private)

    @property
    def parts(self) -> int:
        return self.machines * self.ppm

    def design(self, state: tuple) -> Design:
        procs = {sp: int(p) for sp, p in zip(self.sps, state[0])}
        placed = {t: (None if p is None else int(p)) for t, p in zip(self.items, state[1])}
        placed.update({w.name: procs[w.procedure] for w in self.workload.windows})
        return Design(self.workload.name, self.machines, self.ppm, procedures=procs, state=placed)

    def from_design(self, d: Design) -> tuple:
        return (tuple(d.procedures[sp] for sp in self.sps), tuple(d.state[t] for t in self.items))

    def random(self, rng: np.random.Generator) -> tuple:
        return (tuple(int(x) for x in rng.integers(0, self.parts, len(self.sps))),
                tuple(int(x) for x in rng.integers(0, self.parts, len(self.items))))

    def neighbour(self, state: tuple, rng: np.random.Generator) -> tuple:
        """Move one SP, move one table, move an SP with its private tables, or swap two SPs."""
        procs, items = list(state[0]), list(state[1])
        kind = int(rng.integers(4))
        if kind == 1 and items:
            j = int(rng.integers(len(items)))
            items[j] = self._elsewhere(items[j], rng)
        elif kind == 3 and len(set(procs)) > 1:
            while True:
                a, b = (int(x) for x in rng.choice(len(procs), 2, replace=False))
                if procs[a] != procs[b]:
                    break
            procs[a], procs[b] = procs[b], procs[a]
        else:
            i = int(rng.integers(len(procs)))
            procs[i] = self._elsewhere(procs[i], rng)
            if kind == 2:
                for j in self.private[i]:
                    items[j] = procs[i]
        return tuple(procs), tuple(items)

    def _elsewhere(self, p: int | None, rng: np.random.Generator) -> int:
        q = int(rng.integers(self.parts - 1))
        return q + 1 if p is not None and q >= p else q


@dataclass
class Objective:
    """Predicted maximum throughput of a design, cached; charges events x PROBES per new one."""

    space: Space
    batches: int
    calibration: Calibration = field(default_factory=Calibration.reference)
    cache: dict = field(default_factory=dict)
    spent: float = 0.0
    simulated: int = 0

    def __call__(self, state: tuple) -> float:
        if state not in self.cache:
            try:
                r = max_throughput(self.space.workload, self.space.design(state), calibration=self.calibration,
                                   batches=self.batches, seed=0, tolerance=TOLERANCE)
                self.cache[state] = (float(r.throughput_tps), float(r.events) * PROBES)
            except SimError:
                self.cache[state] = (0.0, 0.0)
            self.spent += self.cache[state][1]
            self.simulated += 1
        return self.cache[state][0]


def anneal(obj: Objective, start: tuple, budget: float, deadline: float,
           rng: np.random.Generator, per_design: float) -> tuple[float, bool]:
    """Best throughput of one chain from `start` (geometric temperature over the events spent);
    also whether the clock (not the budget) stopped it."""
    spent0, steps = obj.spent, 0
    max_steps = 20 * int(budget / max(per_design, 1.0)) + 100  # all-cached neighbourhoods end too
    state, cur = start, obj(start)
    best = cur
    while obj.spent - spent0 < budget and steps < max_steps:
        if time.perf_counter() > deadline:
            return best, True
        temp = T_START * (T_END / T_START) ** ((obj.spent - spent0) / budget)
        cand = obj.space.neighbour(state, rng)
        tps = obj(cand)
        steps += 1
        if tps >= cur or (cur > 0 and rng.random() < math.exp((tps - cur) / cur / temp)):
            state, cur = cand, tps
            best = max(best, tps)
    return best, False


# -- one case ---------------------------------------------------------------------------------

@dataclass
class Row:
    case: str
    sps: int
    machines: int
    rec_s: float
    rec_pred: float
    rec_sim: float
    best: float
    rec_designs: int
    ann_designs: int
    capped: bool
    rec_runs: int = 0  # simulations recommend ran (its own count)
    rec_probes: int = 0  # rate-search probes in them

    @property
    def ratio(self) -> float:
        return self.rec_sim / self.best if self.best > 0 else 1.0


def run_case(case: str, args: argparse.Namespace) -> Row:
    workload, machines, ppm = case_workload(case)
    started = time.perf_counter()
    rec = recommend(workload, machines=machines, partitions_per_machine=ppm, baselines=False)
    rec_s = time.perf_counter() - started
    sel = rec.selection
    imp = sel.improvement
    rec_designs = sel.simulated + (imp.simulated if imp is not None else 0)
    space = Space.of(workload, machines, ppm)
    obj = Objective(space, args.batches)
    pick = space.from_design(rec.design)
    rec_sim = obj(pick)
    per_design = obj.spent  # the pick's events x PROBES
    budget = args.budget_factor * max(rec_designs, 1) * per_design
    case_start = time.perf_counter()
    best, capped = rec_sim, False
    for chain, start in enumerate((pick, None)):
        rng = np.random.default_rng([args.seed, chain])
        start = start if start is not None else space.random(rng)
        deadline = case_start + args.max_seconds * (chain + 1) / 2
        b, c = anneal(obj, start, budget / 2, deadline, rng, per_design)
        best, capped = max(best, b), capped or c
    return Row(case, len(workload.procedures), machines, rec_s, float(rec.prediction or 0.0),
               rec_sim, best, rec_designs, obj.simulated, capped, sel.simulator_runs, sel.simulator_probes)


def print_header() -> None:
    print(f"{'case':<22} {'SPs':>3} {'m':>2} {'rec s':>6} {'rec pred':>9} {'rec sim':>9} {'best':>9} "
          f"{'ratio':>6} {'verdict':>7} {'designs rec/ann':>15} cap {'sim runs':>9}", flush=True)


def print_row(r: Row) -> None:
    verdict = "met" if r.ratio >= TARGET_RATIO else "MISSED"
    print(f"{r.case:<22} {r.sps:>3} {r.machines:>2} {r.rec_s:>6.1f} {r.rec_pred:>9.0f} {r.rec_sim:>9.0f} "
          f"{r.best:>9.0f} {r.ratio:>6.3f} {verdict:>7} {f'{r.rec_designs}/{r.ann_designs}':>15} "
          f"{'yes' if r.capped else 'no ':<3} {f'{r.rec_runs}/{r.rec_probes}':>9}", flush=True)


def summary(rows: list[Row]) -> None:
    met = sum(r.ratio >= TARGET_RATIO for r in rows)
    worst = min(rows, key=lambda r: r.ratio)
    slowest = max(rows, key=lambda r: r.rec_s)
    capped = [r.case for r in rows if r.capped]
    print(f"\nratio >= {TARGET_RATIO}: {met}/{len(rows)} met; worst {worst.case} ({worst.ratio:.3f})")
    print(f"max recommend time: {slowest.rec_s:.1f} s ({slowest.case}), target <= {TARGET_SECONDS:g} s: "
          f"{'met' if slowest.rec_s <= TARGET_SECONDS else 'MISSED'}")
    if capped:
        print(f"the --max-seconds cap stopped the annealer on: {', '.join(capped)} "
              "(its budget was not spent there)")


def all_cases() -> list[str]:
    return list(GENERATED) + list(SHARED) + [f"{n}@{m}" for n in BUNDLED for m in BUNDLED_MACHINES]


def known_case(case: str) -> bool:
    """A case of `all_cases()`, or a generated or shared one with #SEED (digits)."""
    name, hashed, seed = case.partition("#")
    if not hashed:
        return name in all_cases() or name in {**LARGER, **LARGER_SHARED}
    return name in {**GENERATED, **SHARED, **LARGER, **LARGER_SHARED} and seed.isdigit()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=None, help=f"comma-separated subset of: {','.join(all_cases())} "
                    "(a generated or shared case with #SEED: drawn with that seed; also, "
                    f"beyond the issue's sizes: {','.join([*LARGER, *LARGER_SHARED])})")
    ap.add_argument("--batches", type=int, default=300, help="batches per max_throughput prediction")
    ap.add_argument("--budget-factor", type=float, default=50.0,
                    help="annealer events = this x recommend's estimated simulated events")
    ap.add_argument("--max-seconds", type=float, default=300.0, help="wall cap on the annealer, per case")
    ap.add_argument("--seed", type=int, default=0, help="annealer seed")
    args = ap.parse_args()
    cases = args.cases.split(",") if args.cases else all_cases()
    unknown = [c for c in cases if not known_case(c)]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}; choose from {', '.join(all_cases())}")
    print_header()
    rows = []
    for case in cases:
        rows.append(run_case(case, args))
        print_row(rows[-1])
    summary(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
