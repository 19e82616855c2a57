"""Benchmark of the product's own commands, against the code at another git revision.

Issue 21's targets, on this 2-core machine when it is quiet: `advisor demo` end to end
<= 25 s (the Spark session included), `advisor report` <= 5 s, `advisor recommend` <= 2 s on
every bundled workload up to 8 machines. The machine is shared, so every figure is measured
twice, once for the baseline tree and once for the tree under test, one right after the other
(the order alternates from one item to the next), and the ratio is what to read. CPU time
(this script's children, their children included: the Spark JVM, the engine's partitions) is
less disturbed by other work than wall time, so both are printed.

What is timed, each as a fresh `python -m advisor ...` process in the tree's directory:
- `advisor demo`, step by step (trace, Spark aggregate, recommend, predict, engine, report:
  the demo's own step lines; CPU per step from the process tree at each step boundary);
- `advisor report` on the design `advisor recommend` wrote for tpcdi-trade and linear-road (2
  and 4 machines) and streaming-ledger (4), and on the baseline demo's statistics (the report
  runs its sections in worker processes, one per core, in a tree that has them: its CPU
  includes theirs);
- `advisor recommend` for every bundled workload on 2, 4 and 8 machines; with `--scale-cases`,
  also for `bench/recommend_scale.py`'s cases (gen150, shared150#7 ...), each from its spec
  written out once and on its own cluster (bundled ones then only where `--workloads` names
  them); and `advisor report` of their designs (bundled reports then only with `--workloads`).

Every command runs with the cache on disk off (`ADVISOR_CACHE_DIR=off`): the figures are a
first run's. With `--again`, each report runs a second time with what its first run kept
(`reports.disk_cache`), timed as "report again", and its text must be the first's.

With `--check`, it also compares the answers of the two trees: the recommended placement of
every workload timed, and the report's text (tables, headline, suggestions; images left out)
on tpcdi-trade and linear-road at 2 and 4 machines and on the statistics of the baseline's
demo. Only meaningful where the two trees are meant to answer the same.

    python bench/product_speed.py --base-rev 99246a7 [--repeat 1] [--check] [--quick]
    python bench/product_speed.py --base-tree /tmp/base --tree /tmp/other
    python bench/product_speed.py --base-rev HEAD --recommend-only --workloads chain-32,linear-road --check
    python bench/product_speed.py --base-tree /tmp/base --report-only --repeat 3 --check
    python bench/product_speed.py --base-rev HEAD --report-only --again
    python bench/product_speed.py --base-tree /tmp/base --demo-only --repeat 3
    python bench/product_speed.py --base-rev HEAD --recommend-only --scale-cases gen150,shared150 --repeat 2 --check
    python bench/product_speed.py --base-rev HEAD --report-only --scale-cases gen100 --check
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS_S = {"demo": 25.0, "report": 5.0, "recommend": 2.0}  # wall, on the quiet machine
MACHINES = (2, 4, 8)
REPORT_WORKLOADS = ("tpcdi-trade", "linear-road")
REPORT_SOURCES = [(w, m) for w in REPORT_WORKLOADS for m in (2, 4)] + [("streaming-ledger", 4)]

# Run inside the tree under test: the demo with a wall/CPU mark at every step boundary.
DEMO_PROBE = r"""
import json, os, resource, sys, time
import psutil
import reports.demo as demo

def cpu_so_far():
    me = psutil.Process()
    live = sum(sum(p.cpu_times()[:2]) for p in me.children(recursive=True) if p.is_running())
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + live + done.ru_utime + done.ru_stime

marks = [("start", time.perf_counter(), cpu_so_far())]
Steps = demo._Steps
class Marked(Steps):
    def __call__(self, text):
        marks.append(("begin", time.perf_counter(), cpu_so_far()))
        super().__call__(text)
    def done(self, text=""):
        marks.append(("end", time.perf_counter(), cpu_so_far()))
        super().done(text)
demo._Steps = Marked
if __name__ == "__main__":  # the engine's partition processes import this module again
    demo.run_demo(sys.argv[1], progress=lambda line: None)
    marks.append(("exit", time.perf_counter(), cpu_so_far()))
    print("MARKS " + json.dumps(marks))
"""
DEMO_STEPS = ("trace", "spark", "recommend", "predict", "engine", "report")


@dataclass
class Timing:
    wall: float
    cpu: float


@dataclass
class Tree:
    label: str
    path: Path
    times: dict[str, list[Timing]] = field(default_factory=dict)

    def add(self, item: str, t: Timing) -> None:
        self.times.setdefault(item, []).append(t)

    def best(self, item: str) -> Timing:
        """The least disturbed run of an item (minimum wall and minimum CPU)."""
        runs = self.times[item]
        return Timing(min(r.wall for r in runs), min(r.cpu for r in runs))


PACKAGES = ("advisor", "costmodel", "engine_sim", "reports", "traces")


def compile_tree(tree: Tree) -> None:
    """Cache the tree's bytecode, as an installed package has it (pip compiles at install):
    a shell that sets PYTHONDONTWRITEBYTECODE (this VM's does) would otherwise time every
    command compiling the project's modules again (0.15-0.25 s a command here)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *PACKAGES], cwd=tree.path, check=True,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})


def run_in(tree: Tree, args: list[str], work: Path, cache: Path | None = None) -> tuple[Timing, str]:
    """`python args...` in the tree's directory (its own packages first on the path, their
    bytecode cached: `compile_tree`), with the answers kept on disk in `cache` (None: off,
    every command cold, as a first run is)."""
    env = dict(os.environ, PYTHONPATH=str(tree.path), SPARK_LOCAL_IP="127.0.0.1", COLUMNS="200",
               ADVISOR_CACHE_DIR=str(cache) if cache is not None else "off")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=tree.path, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{tree.label}: {' '.join(args)} failed ({done.returncode}): "
                         f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu), done.stdout


def advisor(tree: Tree, args: list[str], work: Path, cache: Path | None = None) -> tuple[Timing, str]:
    return run_in(tree, ["-m", "advisor", *args], work, cache)


def demo(tree: Tree, work: Path) -> Path:
    """The demo, its steps timed; returns its output directory."""
    out = work / f"demo-{tree.label}"
    shutil.rmtree(out, ignore_errors=True)
    probe = work / "demo_probe.py"
    probe.write_text(DEMO_PROBE)
    total, stdout = run_in(tree, [str(probe), str(out)], work)
    marks = json.loads(next(line for line in stdout.splitlines() if line.startswith("MARKS "))[6:])
    begins = [m for m in marks if m[0] == "begin"]
    ends = [m for m in marks if m[0] == "end"]
    for name, b, e in zip(DEMO_STEPS, begins, ends):
        tree.add(f"demo: {name}", Timing(e[1] - b[1], e[2] - b[2]))
    tree.add("demo: end to end", total)
    return out


def report(tree: Tree, work: Path, source: str, machines: int | None, tag: str, again: bool = False) -> Path:
    """`advisor recommend` then `advisor report` of its design; only the report is timed, with
    nothing kept on disk from an earlier run. `again`: then the same report once more, with
    what the first kept (`reports.disk_cache`), timed as "report again" (its text must match)."""
    design = work / f"design-{tag}-{tree.label}.json"
    html = work / f"report-{tag}-{tree.label}.html"
    cluster = [] if machines is None else ["--machines", str(machines)]
    advisor(tree, ["recommend", source, *cluster, "--out", str(design)], work)
    cache = work / f"cache-{tag.replace(' ', '-')}-{tree.label}"
    shutil.rmtree(cache, ignore_errors=True)
    t, _ = advisor(tree, ["report", "--design", str(design), source, "-o", str(html), "-q"], work,
                   cache if again else None)
    tree.add(f"report: {tag}", t)
    if again:
        html_again = work / f"report-again-{tag}-{tree.label}.html"
        t, _ = advisor(tree, ["report", "--design", str(design), source, "-o", str(html_again), "-q"], work, cache)
        tree.add(f"report again: {tag}", t)
        if report_text(html_again) != report_text(html):
            raise SystemExit(f"{tree.label}: the report of {tag} read from the cache differs from the first")
    return html


def recommend(tree: Tree, work: Path, workload: str, machines: int, tag: str | None = None) -> Path:
    """`advisor recommend` of `workload` (a bundled name or a spec's path; `tag` names it)."""
    tag = tag or workload
    design = work / f"rec-{tag}-{machines}-{tree.label}.json"
    t, _ = advisor(tree, ["recommend", workload, "--machines", str(machines), "--out", str(design)], work)
    tree.add(f"recommend: {tag} x{machines}", t)
    return design


def scale_specs(cases: list[str], work: Path) -> list[tuple[str, Path, int]]:
    """(case, spec path, machines) of each `bench/recommend_scale.py` case, its spec written
    once (by this tree's generator, so both trees read the same dataflow)."""
    from costmodel.spec_writer import workload_to_toml
    from recommend_scale import case_workload

    out = []
    for case in cases:
        workload, machines, _ppm = case_workload(case)
        path = work / f"{case.replace('#', '-')}.toml"
        path.write_text(workload_to_toml(workload))
        out.append((case, path, machines))
    return out


def placement(path: Path) -> tuple:
    """What a design file says goes where (the answer, without provenance or timings)."""
    d = json.loads(path.read_text())
    keys = ("machines", "partitions_per_machine", "procedures", "state")
    return tuple(json.dumps(d.get(k), sort_keys=True) for k in keys)


def report_text(path: Path) -> str:
    """The report's words and figures: embedded images and timings left out."""
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", path.read_text())
    text = re.sub(r"<[^>]+>", " ", text)
    return " ".join(re.sub(r"\d+(\.\d+)? s\b", "N s", text).split())


def bundled_workloads(tree: Tree, work: Path) -> list[str]:
    _, out = advisor(tree, ["workloads"], work)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def alternate(pair: list[Tree], k: int) -> list[Tree]:
    """Base first on even items, the other first on odd ones: neither always runs warm."""
    return pair if k % 2 == 0 else pair[::-1]


def print_table(base: Tree, new: Tree) -> None:
    print(f"\n{'item':<36} {'wall base':>9} {'wall new':>9} {'ratio':>6}  {'cpu base':>9} {'cpu new':>9} {'ratio':>6}")
    for item in base.times:
        if item not in new.times:
            continue
        b, n = base.best(item), new.best(item)
        print(f"{item:<36} {b.wall:>9.2f} {n.wall:>9.2f} {n.wall / b.wall:>6.2f}  "
              f"{b.cpu:>9.2f} {n.cpu:>9.2f} {n.cpu / max(b.cpu, 1e-9):>6.2f}")


def print_targets(base: Tree, new: Tree, scale_cases: tuple[str, ...] = ()) -> None:
    """Each target beside the new tree's wall time here, and the baseline's, so a figure taken
    on a busy machine can be scaled by the baseline's known quiet time. The recommend target is
    the bundled workloads' (not `scale_cases`', which have none here), and so is the report's."""
    print("\ntargets (wall on the quiet machine; figures here are on this machine as it is now):")
    rec_items = [i for i in new.times if i.startswith("recommend:")
                 and i.removeprefix("recommend: ").rsplit(" x", 1)[0] not in scale_cases]
    report_items = [i for i in new.times if i.startswith("report:") and i.removeprefix("report: ") not in scale_cases]
    checks = [("demo", ["demo: end to end"]), ("report", report_items),
              ("recommend", rec_items)]
    for name, items in checks:
        items = [i for i in items if i in base.times and i in new.times]
        if not items:
            continue
        worst = max(items, key=lambda i: new.best(i).wall)
        n, b = new.best(worst).wall, base.best(worst).wall
        print(f"  {name:<10} <= {TARGETS_S[name]:g} s: slowest {worst!r}: new {n:.1f} s, base {b:.1f} s "
              f"({n / b:.2f}x); {'met' if n <= TARGETS_S[name] else 'NOT met'} as measured here")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-rev", help="git revision to compare with (checked out as a temporary worktree)")
    ap.add_argument("--base-tree", type=Path, help="an existing checkout of the baseline instead")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the tree under test (default: this one)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds; the best of each is reported")
    ap.add_argument("--check", action="store_true", help="compare the two trees' answers too")
    ap.add_argument("--quick", action="store_true", help="tpcdi-trade and linear-road only, no demo")
    ap.add_argument("--no-demo", action="store_true", help="leave the demo out")
    ap.add_argument("--recommend-only", action="store_true",
                    help="time `advisor recommend` only (no demo, no report)")
    ap.add_argument("--report-only", action="store_true",
                    help="time `advisor report` only (no demo, no recommend timings)")
    ap.add_argument("--demo-only", action="store_true", help="time `advisor demo` only")
    ap.add_argument("--again", action="store_true",
                    help="time each report a second time with what the first kept on disk")
    ap.add_argument("--workloads", help="comma-separated bundled workloads to recommend for (default: all)")
    ap.add_argument("--scale-cases", help="comma-separated bench/recommend_scale.py cases to recommend for too, "
                    "each on its own cluster (gen150, shared150, gen40#1703 ...)")
    ap.add_argument("--keep", type=Path, help="write the outputs here (default: a temporary directory)")
    a = ap.parse_args()
    if (a.base_rev is None) == (a.base_tree is None):
        ap.error("give one of --base-rev and --base-tree")
    # a SIGTERM (a `timeout`, a killed job) unwinds through the `finally` below as Ctrl-C does,
    # so the base's worktree and the outputs are removed (the default ended here at once)
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    work = a.keep or Path(tempfile.mkdtemp(prefix="product-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    worktree = None
    if a.base_rev is not None:
        worktree = Path(tempfile.mkdtemp(prefix="product-speed-base-"))
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), a.base_rev],
                       check=True, capture_output=True)
    pair = [Tree("base", worktree or a.base_tree.resolve()), Tree("new", a.tree.resolve())]
    base, new = pair
    try:
        for tree in pair:
            compile_tree(tree)
        workloads = (a.workloads.split(",") if a.workloads else [] if a.scale_cases else
                     list(REPORT_WORKLOADS) if a.quick else bundled_workloads(base, work))
        scale = scale_specs(a.scale_cases.split(","), work) if a.scale_cases else []
        answers: dict[str, list] = {}
        for rnd in range(a.repeat):
            k = rnd
            demos = {}
            if not (a.quick or a.no_demo or a.recommend_only or a.report_only):
                for tree in alternate(pair, k):
                    try:
                        demos[tree.label] = demo(tree, work)
                    except SystemExit as failed:  # the engine's own deadline on a crowded host, say
                        print(f"round {rnd + 1}: demo ({tree.label}) not timed: {failed}", flush=True)
                        continue
                    print(f"round {rnd + 1}: demo ({tree.label}) {tree.times['demo: end to end'][-1].wall:.1f} s",
                          flush=True)
                k += 1
            for w in ([] if a.report_only or a.demo_only else workloads):
                for m in MACHINES:
                    for tree in alternate(pair, k):
                        path = recommend(tree, work, w, m)
                        if rnd == 0:
                            answers.setdefault(f"design {w} x{m}", []).append(placement(path))
                    k += 1
            for case, spec, m in ([] if a.report_only or a.demo_only else scale):
                for tree in alternate(pair, k):
                    path = recommend(tree, work, str(spec), m, tag=case)
                    if rnd == 0:
                        answers.setdefault(f"design {case}", []).append(placement(path))
                k += 1
            print(f"round {rnd + 1}: recommend done", flush=True)
            if a.recommend_only or a.demo_only:
                continue
            # with --scale-cases, the bundled reports only where --workloads asks for them
            sources = [] if scale and not a.workloads else [(w, m, f"{w} x{m}") for w, m in REPORT_SOURCES]
            sources += [(str(spec), m, case) for case, spec, m in scale]
            if "base" in demos:
                sources.append((str(demos["base"] / "statistics"), None, "demo statistics"))
            for source, m, tag in sources:
                for tree in alternate(pair, k):
                    html = report(tree, work, source, m, tag, a.again)
                    if rnd == 0:
                        answers.setdefault(f"report {tag}", []).append(report_text(html))
                k += 1
            print(f"round {rnd + 1}: report done", flush=True)
        print_table(base, new)
        print_targets(base, new, tuple(case for case, _spec, _m in scale))
        if a.check:
            differ = [name for name, (x, y) in answers.items() if x != y]
            print(f"\nanswers compared: {len(answers)}; differ: {', '.join(differ) if differ else 'none'}")
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                           capture_output=True)
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
