"""Simulator speed where designs run many distributed transactions, against a base tree.

`bench/sim_speed.py` times a chain (few distributed transactions); this times the designs
that run the most of them: the round-robin, random and hash-by-table baselines and random
designs of generated dataflows (gen100 on 8 machines, shared40 on its 8) and of bundled
workloads, each searched for its maximum throughput (`max_throughput`, 300 batches, the rate
searched to 1 %, the reference cluster, as `recommend` judges its pick), some under the
central scheduler, MOVE transactions or the engine's sites (`site_per_partition`: the queue a
site serves).

The machine is shared, so each tree runs the same designs in a fresh subprocess of its own
(its own PYTHONPATH), the two trees alternating, and the ratio of their CPU times (the
process's own, `time.process_time`) is what to read; the best of `--repeat` rounds is kept.

With `--check`, every field of every result (`SimResult.to_dict()`'s fields but `wall_s`,
unrounded, the rate search's probes included) must be the same in both trees, compared as
the exact repr of each float: "differ: none" is the pass. `--check-only` runs the larger check set once in each
tree and times nothing.

    python bench/dtxn_speed.py --base-tree /tmp/base [--repeat 3] [--check]
    python bench/dtxn_speed.py --base-tree /tmp/base --check-only
    (a base tree of a revision: git archive REV | tar -x -C /tmp/base)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ("round-robin", "random", "hash-by-table")

# (case: a generated one or bundled@machines; machines, None for the case's own cluster;
# scheduler; move; sites: the engine's sites, a queue served; designs: that many random
# designs (seeds 101...) besides the three baselines)
TIMED = [("gen100", 8, "dls", "rpc", False, 1), ("shared40", None, "dls", "rpc", False, 1),
         ("linear-road@8", None, "dls", "txn", False, 0)]
CHECKED = TIMED + [("tpcdi-trade@8", None, "central", "rpc", False, 1),
                   ("streaming-ledger@6", None, "dls", "rpc", True, 1),
                   ("online-bidding@4", None, "dls", "txn", True, 1),
                   ("voter-leaderboard@6", None, "central", "txn", False, 0),
                   ("gen40", None, "dls", "txn", True, 1)]


def case_designs(case: str, machines: int | None, designs: int):
    """(label, workload, design) of a case's baselines and random designs."""
    import advisor  # the tree under test: its own bench's case_workload

    sys.path.insert(0, str(Path(advisor.__file__).resolve().parents[1] / "bench"))
    from advisor.baselines import baseline_design
    from costmodel import Weights
    from costmodel.graph import WorkloadGraph
    from recommend_scale import case_workload

    w, own, ppm = case_workload(case)
    w = w.with_cluster(machines or own, ppm)
    g = WorkloadGraph.from_workload(w)
    kinds = [(kind, k) for k, kind in enumerate(BASELINES)] + [("random", 101 + i) for i in range(designs)]
    for kind, seed in kinds:
        yield f"{case}x{machines or own}/{kind}#{seed}", w, baseline_design(kind, g, Weights(0.3, 0.1, 0.6), seed=seed)


def worker(cases: list, out: Path) -> None:
    """Run every design of `cases` in this process (this tree); write CPU time and results."""
    from costmodel.calibration import Calibration
    from engine_sim.sim import max_throughput

    results, cpu = {}, 0.0
    for case, machines, scheduler, move, sites, designs in cases:
        cal = Calibration.reference()
        params = cal.sim_params().with_(site_per_partition=True) if sites else cal.sim_params()
        for label, w, d in case_designs(case, machines, designs):
            started = time.process_time()
            r = max_throughput(w, d, calibration=params, scheduler=scheduler, move=move, batches=300,
                               tolerance=0.01)
            cpu += time.process_time() - started
            fields = asdict(r)  # `to_dict`'s fields unrounded: exact
            fields.pop("wall_s", None)
            results[f"{label}/{scheduler}/{move}{'/sites' if sites else ''}"] = fields
    out.write_text(json.dumps({"cpu": cpu, "results": results}))


def run_tree(tree: Path, cases: list, out: Path) -> dict:
    """One fresh process of `tree` running `cases` (this script's worker mode)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(cases), str(out)],
                   env=env, check=True, cwd=tree)
    return json.loads(out.read_text())


def differences(base: dict, new: dict) -> list[str]:
    """Every (design, field) whose value differs between the two trees, floats by exact repr
    (JSON keeps a float's shortest repr, which round-trips exactly)."""
    diff = []
    for label in sorted(set(base) | set(new)):
        a, b = base.get(label, {}), new.get(label, {})
        diff += [f"{label}: {key}" for key in sorted(set(a) | set(b), key=str)
                 if json.dumps(a.get(key), sort_keys=True) != json.dumps(b.get(key), sort_keys=True)]
    return diff


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-tree", type=Path, help="the tree to compare with")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the tree under test (default: this one)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="compare every result field of the timed runs")
    ap.add_argument("--check-only", action="store_true", help="compare the larger check set; time nothing")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(json.loads(a.worker[0]), Path(a.worker[1]))
        return
    if a.base_tree is None:
        ap.error("--base-tree is required")
    trees = {"base": a.base_tree.resolve(), "new": a.tree.resolve()}
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"dtxn-speed-{os.getpid()}.json"
    cases = CHECKED if a.check_only else TIMED
    cpu: dict[str, list[float]] = {"base": [], "new": []}
    answers: dict[str, dict] = {}
    for k in range(1 if a.check_only else a.repeat):
        for name in (("base", "new") if k % 2 == 0 else ("new", "base")):
            got = run_tree(trees[name], cases, out)
            cpu[name].append(got["cpu"])
            answers[name] = got["results"]
            print(f"round {k + 1} {name}: {got['cpu']:.2f} s CPU", flush=True)
    out.unlink(missing_ok=True)
    if not a.check_only:
        base, new = min(cpu["base"]), min(cpu["new"])
        print(f"max_throughput of {len(answers['new'])} designs, CPU best of {a.repeat}: base {base:.2f} s, "
              f"new {new:.2f} s, new/base {new / base:.3f} ({base / new:.2f}x)")
    if a.check or a.check_only:
        diff = differences(answers["base"], answers["new"])
        workloads = {label.split("/")[0] for label in answers["new"]}
        said = f"{len(diff)} fields: {', '.join(diff[:20])}" if diff else "none"
        print(f"results compared: {len(answers['new'])} designs of {len(workloads)} workload settings; "
              f"differ: {said}")


if __name__ == "__main__":
    main()
