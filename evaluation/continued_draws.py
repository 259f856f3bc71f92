"""Layout draws counted in a first valgrind process going on after its rows, against draws counted in a
process started jittered (issue 63: the start-up paid once a side). einops' 42-row asv suite (einops_suite.py),
identical code, the two processes at once (one a core):

* F, a process of its own: every row in 8 layout draws, jittered after the imports, counts alone (as
  schedule.py's pass for rows whose counts moved);
* C, a first process: every row counted once (simulating caches, as the alert's first processes do), then,
  going on in the same process (asv_worker.CONTINUE_ENV), every row again in 8 layout draws.

Prints each process's seconds (C's first rows and its draws apart: the cost of a row's draws going on over
its first seconds, schedule.CONTINUED_ROW_COST), and per row the two kinds' difference, a Welch test between
their draws, and the count test (count_decision, its commit noise included) at the alert's level for 42 rows:
whether the kinds can be pooled.

    python evaluation/continued_draws.py [--rows N]
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _jobs(suite: Path) -> list[list]:
    listing = json.loads(subprocess.run([sys.executable, "-m", "torchbench_core.asv_worker", "list", str(suite)],
                                        capture_output=True, text=True, check=True).stdout)
    jobs = []
    for bench in listing:
        n = math.prod(len(p) for p in bench["params"]) if bench["params"] else 1
        jobs += [[bench["name"], i] for i in range(n)]
    return jobs


def _start(folder: Path, suite: Path, jobs: list[list], kind: str) -> tuple[subprocess.Popen, Path]:
    feed = folder / f"progress-{kind}.jsonl"
    (folder / f"jobs-{kind}.json").write_text(json.dumps(jobs))
    env = dict(os.environ, TORCHBENCH_COUNTS_PROGRESS=str(feed))
    if kind == "F":
        env.update(TORCHBENCH_COUNTS_JITTER="1", TORCHBENCH_COUNTS_DRAWS="8", TORCHBENCH_COUNTS_SIMULATE="0")
    else:
        env.update(TORCHBENCH_COUNTS_CONTINUE="1")
    proc = subprocess.Popen([sys.executable, "-m", "torchbench_core.asv_worker", "counts", str(suite), "--jobs",
                             str(folder / f"jobs-{kind}.json"), "--out", str(folder / f"out-{kind}.json")],
                            env=env, stdin=subprocess.PIPE, text=True)
    return proc, feed


def main() -> None:
    import argparse

    import numpy as np
    from scipy import stats

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from einops_suite import SUITE

    from torchbench.ab.count_decision import BY_CALL, count_decision

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=0, help="the first N rows only (0: all 42)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="continued-draws-") as tmp:
        folder = Path(tmp)
        suite = folder / "benchmarks"
        suite.mkdir()
        (suite / "__init__.py").write_text("")
        (suite / "bench_ops.py").write_text(SUITE)
        jobs = _jobs(suite)[:args.rows or None]
        began = time.monotonic()
        procs = {kind: _start(folder, suite, jobs, kind) for kind in ("F", "C")}
        marks, seen = {}, {kind: 0 for kind in procs}
        while any(proc.poll() is None for proc, _ in procs.values()):
            time.sleep(0.5)
            for kind, (proc, feed) in procs.items():
                if proc.poll() is not None:
                    marks.setdefault(f"{kind} ended", time.monotonic() - began)
                if not feed.exists():
                    continue
                lines = feed.read_text().splitlines()
                for line in lines[seen[kind]:]:
                    if json.loads(line).get("next"):  # C counted every row: go on with all of them, then stop
                        first = f"{kind} asked" not in marks
                        marks[f"{kind} asked" if first else f"{kind} asked again"] = time.monotonic() - began
                        proc.stdin.write(json.dumps({"keys": [f"{n}|{i}" for n, i in jobs], "jitter": 1, "draws": 8})
                                         + "\n" if first else "\n")
                        proc.stdin.flush()
                seen[kind] = len(lines)
        for kind, (proc, _) in procs.items():
            marks.setdefault(f"{kind} ended", time.monotonic() - began)
            if proc.returncode:
                raise SystemExit(f"process {kind} failed (exit status {proc.returncode})")
        rows = [json.loads(line) for kind in ("F", "C") for line in (folder / f"progress-{kind}.jsonl").read_text()
                .splitlines() if '"key"' in line]
        fresh = {r["key"]: r["counts"] for r in rows if "again" not in r and r.get("draws") == 8}
        first = {r["key"]: r["counts"] for r in rows if "again" not in r and r.get("draws") != 8}
        going_on = {r["key"]: r["counts"] for r in rows if "again" in r}
    print(f"seconds: F (a process of its own, counts alone, {len(jobs)} rows x 8 draws, start-up included) "
          f"{marks['F ended']:.1f}; C's first rows (simulated, start-up included) {marks['C asked']:.1f}, its draws "
          f"going on {marks['C asked again'] - marks['C asked']:.1f}")
    level = 0.01 / 4 / len(jobs)  # the deterministic share of the suite's 1% budget, Bonferroni over its rows
    decided, welch = 0, []
    print(f"{'row':60} {'C-F %':>7} {'sd F %':>7} {'sd C %':>7} {'Welch p':>8} {'count p':>8}")
    for key in fresh:
        f, c = np.log(fresh[key]), np.log(going_on[key])
        p = stats.ttest_ind(f, c, equal_var=False).pvalue
        p = 1.0 if math.isnan(p) else float(p)
        welch.append(p)
        test = count_decision([first[key]] + [[x] for x in fresh[key]], [first[key]] + [[x] for x in going_on[key]],
                              BY_CALL, 0.01, alpha=level)
        decided += test.decides
        print(f"{key[-60:]:60} {100 * math.expm1(c.mean() - f.mean()):7.3f} {100 * f.std(ddof=1):7.3f} "
              f"{100 * c.std(ddof=1):7.3f} {p:8.4f} {test.p_value:8.4f}")
    welch = np.array(welch)
    print(f"Welch between the kinds' draws: p < 0.05 on {(welch < 0.05).sum()} of {len(welch)} rows, p < 0.01 on "
          f"{(welch < 0.01).sum()}; the count test at the alert's level ({level:.1e}) decided {decided}")


if __name__ == "__main__":
    main()
