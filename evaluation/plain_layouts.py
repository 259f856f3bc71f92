"""How far do a plain asv suite's instruction counts move with the memory layout, now (issue 27)?

A `time_` method is counted call by call, with asv's setup between the calls,
and its counts decided a row only beyond 5% (BY_CALL_COUNT_FLOOR, until this
script's figures replaced it with the layout-by-layout rule of
torchbench/ab/counts.py), set above the moves measured on 2026-11-25 (torch.neg(1) 2.8% between commits that
change nothing it runs, torch clone(16) 4.1% under a shifted layout). Since
then the counting harness changed (valgrind processes start uninstrumented
and switch on at the first count). This script measures the moves again, on
evaluation/plain_suite_counts.py's 42-row suite and its three commits: B (the
base), A (a README edit: the same installed code) and S (one function, `work`,
+2% compute: for the 39 other rows, a change of code they do not run).

1. `torchbench run` over B, A and S (one round): asv's times, the installs,
   the plans (calls per counted run) and every commit's counts in a valgrind
   process with the default layout (torchbench/history/counts.py);
2. each commit counted again under the shifted layouts 1..L-1
   (torchbench_core._callgrind_worker._shift_layout), two processes at a time.

Printed, per kind of row (pure Python, on data, torch ops): the largest move
between commits of an untouched row under one layout (what a pull request
that changes other code does), the largest spread of a row over the layouts
of one commit (what the confirming process sees), and the three targets'
changes under every layout.

    python evaluation/plain_layouts.py [--layouts 4] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

import numpy as np  # noqa: E402

from plain_suite_counts import make_repo  # noqa: E402
from torchbench.ab import collect  # noqa: E402
from torchbench.ab.counts_cache import CountPlans  # noqa: E402
from torchbench.ab.evidence import Side  # noqa: E402
from torchbench.asv_bridge import results  # noqa: E402

TARGET = "bench_plain.PurePython.time_call"  # its indexes 0-2 are work(10), work(100), work(1000)


def kind(name: str) -> str:
    return {"PurePython": "pure Python", "OnData": "on data", "TorchOps": "torch ops"}[name.split(".")[1]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", type=int, default=4, help="layouts a commit, the default one included")
    parser.add_argument("--json", type=Path, help="also write every count here")
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="plain-layouts-") as tmp_name:
        tmp = Path(tmp_name)
        repo = tmp / "plainlib"
        b, a, s = make_repo(repo)
        commits = {"B": b, "A": a, "S": s}
        (tmp / "hashes").write_text(f"{b}\n{a}\n{s}\n")
        out, envs = tmp / "out", tmp / "envs"
        print("== torchbench run over B, A and S (one round; the counts under the default layout)", flush=True)
        proc = subprocess.run([sys.executable, "-m", "torchbench", "run", "--repo", str(repo), "--hashfile",
                               str(tmp / "hashes"), "--rounds", "1", "--out", str(out), "--env-dir", str(envs),
                               "--no-publish"], capture_output=True, text=True)
        counts_line = [line for line in proc.stdout.splitlines()
                       if "instruction counts of time_ and track_ rows" in line]
        print("\n".join(counts_line) or proc.stdout[-3000:], flush=True)
        found = results.load(out / "results")
        counts: dict[str, dict[int, dict[tuple[str, int], list[float]]]] = {label: {0: {}} for label in commits}
        label_of = {sha: label for label, sha in commits.items()}
        for r in found.rows:
            if r.benchmark.endswith(results.COUNTS_OF):
                counts[label_of[r.commit]][0][(results.timed_benchmark(r.benchmark), r.index)] = list(r.samples)
        suite = repo / "benchmarks"
        plans = {tuple(case.split("|")[:2]): plan for case, plan in CountPlans(out / "counts", suite).load().items()}
        jobs = [(name, index, *plans[(name, str(index))]) for name, index in sorted(counts["B"][0])]
        python = next(envs.glob("*/bin/python"))

        def count(task: tuple[str, int]) -> tuple[str, int, dict, float]:
            label, layout = task
            side = Side("base", commits[label], out / "installs" / commits[label][:12], python)
            start = time.perf_counter()
            got = collect._count(suite, side, jobs, layout)
            return label, layout, got, time.perf_counter() - start

        tasks = [(label, layout) for layout in range(1, args.layouts) for label in commits]
        with ThreadPoolExecutor(max_workers=2) as pool:
            for label, layout, got, seconds in pool.map(count, tasks):
                counts[label][layout] = {(k.split("|")[0], int(k.split("|")[1])): v["counts"]
                                         for k, v in got.items() if "counts" in v}
                print(f"commit {label}, layout {layout}: {len(counts[label][layout])} rows, {seconds:.0f} s",
                      flush=True)
    layouts = range(args.layouts)

    def median(label: str, layout: int, job) -> float:
        return float(np.median(counts[label][layout][job]))

    rows = sorted(counts["B"][0])
    between, spread = {}, {}
    for job in rows:
        others = [lab for lab in ("A", "S") if not (lab == "S" and job[0] == TARGET and job[1] < 3)]
        between[job] = max(abs(median(lab, k, job) / median("B", k, job) - 1) for lab in others for k in layouts)
        spread[job] = max((max(v) - min(v)) / min(v) for lab in commits
                          for v in [[median(lab, k, job) for k in layouts]])
    print(f"\n== {len(rows)} rows, {args.layouts} layouts a commit (0: the default; 1..: shifted)")
    print(f"  {'rows':12} {'n':>3} {'between commits, max':>22} {'(median)':>9} {'over layouts, max':>19} "
          f"{'(median)':>9}")
    for name in ("pure Python", "on data", "torch ops"):
        mine = [j for j in rows if kind(j[0]) == name and not (j[0] == TARGET and j[1] < 3)]
        print(f"  {name:12} {len(mine):3} {max(between[j] for j in mine):21.3%} "
              f"{np.median([between[j] for j in mine]):9.3%} {max(spread[j] for j in mine):18.3%} "
              f"{np.median([spread[j] for j in mine]):9.3%}")
    worst = sorted(rows, key=lambda j: -max(between[j], spread[j]))[:6]
    print("  the largest: " + "; ".join(f"{j[0].split('.')[1]}[{j[1]}] {between[j]:.2%} / {spread[j]:.2%}"
                                       for j in worst))
    for index, n in ((0, 10), (1, 100), (2, 1000)):
        job = (TARGET, index)
        changes = [median("S", k, job) / median("B", k, job) - 1 for k in layouts]
        print(f"  target work({n}): " + ", ".join(f"layout {k} {c:+.2%}" for k, c in zip(layouts, changes)))
    print(f"== {(time.perf_counter() - began) / 60:.1f} min")
    if args.json:
        args.json.write_text(json.dumps({"commits": commits, "counts": {
            label: {str(k): {f"{n}|{i}": v for (n, i), v in by.items()} for k, by in per.items()}
            for label, per in counts.items()}}))


if __name__ == "__main__":
    main()
