"""`advisor report` and `advisor tune` in one process (`--jobs 1`) against side by side (the
default `--jobs`: one process per usable core), in this tree, alternating which goes first.

Each command is a fresh `python -m advisor ...` process; wall and CPU (the process tree's,
the workers included) are printed per run, then the best of the repeats and their ratio. The
outputs of the two must be byte-identical (the report's HTML, tune's JSON): a difference is
printed as DIFFERENT and the bench exits 1.

    python bench/side_by_side.py                       # the cases below, 2 repeats
    python bench/side_by_side.py --repeat 3 --only report
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from bench.product_speed import ROOT, Timing, Tree, advisor  # noqa: E402

REPORTS = (("tpcdi-trade", 2), ("tpcdi-trade", 4), ("linear-road", 4), ("streaming-ledger", 4))
TUNES = (("tpcdi-trade", 8, 3),)


def timed_pair(tree: Tree, work: Path, name: str, command: list[str], out_flag: str | None,
               rnd: int) -> bool:
    """`command` with --jobs 1 and with the default, alternating; True when the outputs match."""
    outputs = {}
    for jobs in (("1", "default") if rnd % 2 == 0 else ("default", "1")):
        out = work / f"{name.replace(' ', '_')}-{jobs}.out"
        args = [*command, *(["--jobs", "1"] if jobs == "1" else [])]
        if out_flag:
            args += [out_flag, str(out)]
        t, stdout = advisor(tree, args, work)
        if not out_flag:
            out.write_text(stdout)
        tree.add(f"{name} jobs={jobs}", t)
        outputs[jobs] = out.read_bytes()
        print(f"round {rnd + 1}: {name} jobs={jobs}: {t.wall:.1f} s wall, {t.cpu:.1f} s CPU", flush=True)
    same = outputs["1"] == outputs["default"]
    if not same:
        print(f"DIFFERENT: {name} with --jobs 1 and the default", flush=True)
    return same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", choices=("report", "tune"))
    a = ap.parse_args()
    tree = Tree("tree", ROOT)
    names = []
    all_same = True
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as tmp:
        work = Path(tmp)
        designs = {}
        if a.only != "tune":
            for w, m in REPORTS:
                designs[(w, m)] = work / f"design-{w}-{m}.json"
                advisor(tree, ["recommend", w, "--machines", str(m), "--out", str(designs[(w, m)])], work)
        for rnd in range(a.repeat):
            if a.only != "tune":
                for (w, m), design in designs.items():
                    name = f"report {w} x{m}"
                    all_same &= timed_pair(tree, work, name, ["report", "--design", str(design), "-q"],
                                           "--out", rnd)
                    names.append(name)
            if a.only != "report":
                for w, m, rounds in TUNES:
                    name = f"tune {w} x{m} {rounds} rounds"
                    all_same &= timed_pair(tree, work, name, ["tune", w, "--machines", str(m), "--rounds",
                                                              str(rounds), "--json"], None, rnd)
                    names.append(name)
    print(f"\nbest of {a.repeat} (wall / CPU), one process against side by side ({os.cpu_count()} cores):")
    for name in dict.fromkeys(names):
        one: Timing = tree.best(f"{name} jobs=1")
        side: Timing = tree.best(f"{name} jobs=default")
        print(f"  {name:<36} {one.wall:6.1f} -> {side.wall:6.1f} s wall ({side.wall / one.wall:.2f}x), "
              f"CPU {one.cpu:6.1f} -> {side.cpu:6.1f} s ({side.cpu / one.cpu:.2f}x)")
    print("outputs: " + ("byte-identical" if all_same else "DIFFERENT (see above)"))
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
