"""How long the alert's counting takes for a 64-row plain asv suite (issue 50, item 6), beside a native process.

A throwaway library (plain_suite_counts.py's plainlib, plus 22 rows of small torch helpers) whose module holds
a large Python list of tuples, as a held-out library did (issue 50: counting both sides took about 10
minutes there, because under valgrind the garbage collector's traversals of that list cost every row), and
its asv suite of 64 `time_` rows. The suite is counted as the alert counts a side's first process
(torchbench_core.asv_worker's `counts` mode: one valgrind process, the calls per run planned natively first,
instruction counts and the simulated caches and branches), then, for the rows a change would make
candidates, as a jittered process counts them (count_decision.DRAWS layout draws). Beside each: the anchor, one
native process measuring every row once (the worker's `run` mode: what one round of wall time costs a side).

Printed: seconds of each phase, per row, and the ratio to the native process; the goal is the first process
of both sides (counted at once, one core each) plus a jittered pass of a few rows within 90 s.

    python evaluation/counting_speed.py [--no-table] [--rows-again 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

from plain_suite_counts import LIBRARY, SUITE  # noqa: E402

from torchbench.ab.count_decision import DRAWS  # noqa: E402
from torchbench_core._callgrind_worker import JITTER_ENV  # noqa: E402
from torchbench_core.asv_worker import DRAWS_ENV  # noqa: E402

# a module-level table of containers, as the held-out library kept: 200,000 tuples the collector traverses
TABLE = "\n_TABLE = [(i, str(i)) for i in range(200_000)]  # a large module-level list of containers\n"
HELPERS = '''

class Helpers:
    """22 more rows: small torch helpers a library on torch has."""
    params = [["relu", "softmax", "norm", "argmax", "cumsum", "transpose", "flatten", "where", "clamp", "abs",
               "exp"], [4, 32]]
    param_names = ["helper", "side"]

    def setup(self, helper, side):
        self.x = torch.linspace(-1, 1, side * side).reshape(side, side)
        self.call = {"relu": lambda: torch.relu(self.x), "softmax": lambda: torch.softmax(self.x, 1),
                     "norm": lambda: torch.linalg.norm(self.x), "argmax": lambda: torch.argmax(self.x),
                     "cumsum": lambda: torch.cumsum(self.x, 0), "transpose": lambda: self.x.t().contiguous(),
                     "flatten": lambda: self.x.flatten(), "where": lambda: torch.where(self.x > 0, self.x, 0.0),
                     "clamp": lambda: self.x.clamp(-0.5, 0.5), "abs": lambda: self.x.abs(),
                     "exp": lambda: self.x.exp()}[helper]

    def time_helper(self, helper, side):
        self.call()
'''
WORKER = [sys.executable, "-m", "torchbench_core.asv_worker"]


def make_suite(folder: Path, table: bool) -> Path:
    """plainlib (with the table where `table`) and its 64-row suite under `folder`; the suite's folder."""
    (folder / "plainlib").mkdir(parents=True)
    (folder / "plainlib" / "__init__.py").write_text(LIBRARY.format(extra="") + (TABLE if table else ""))
    suite = folder / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_plain.py").write_text(SUITE + HELPERS)
    return suite


def make_track_suite(folder: Path) -> Path:
    """graphlib and its 42-row Timer-in-track_ suite (track_suite.py) under `folder`; the suite's folder."""
    import track_suite

    (folder / "graphlib").mkdir(parents=True)
    (folder / track_suite.MODULE).write_text(track_suite.LIBRARY.format(extra=""))
    suite = folder / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_graph.py").write_text(track_suite.SUITE)
    return suite


def worker(mode: str, suite: Path, jobs: list, env: dict, cache_dir: Path) -> tuple[dict | list, float]:
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        jobs_file.write_text(json.dumps(jobs))
        args = [mode, str(suite), "--out", str(out)] + ([] if mode == "list" else
                                                         ["--jobs", str(jobs_file), "--cache-dir", str(cache_dir)])
        started = time.perf_counter()
        proc = subprocess.run([*WORKER, *args], env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"the worker's {mode} failed: {proc.stderr[-2000:]}")
        if mode == "run":  # one JSON line a job
            return [json.loads(line) for line in out.read_text().splitlines() if line.strip()], seconds
        return json.loads(out.read_text()), seconds


def sides(mode: str, suite: Path, jobs: list, env: dict, cache_dir: Path, both: bool) -> tuple[dict, float]:
    """One worker, or two at once (two sides, each in a cache folder of its own): the first's result and the
    seconds until both finished."""
    if not both:
        return worker(mode, suite, jobs, env, cache_dir)
    from concurrent.futures import ThreadPoolExecutor

    other = cache_dir.parent / (cache_dir.name + "-other")
    if not other.exists():
        other.mkdir()
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(worker, mode, suite, jobs, env, folder) for folder in (cache_dir, other)]
        first = runs[0].result()[0]
        runs[1].result()
    return first, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-table", action="store_true", help="leave the large list out of the library")
    parser.add_argument("--rows-again", type=int, default=4, help="rows counted in the jittered pass (4)")
    parser.add_argument("--warmup-cap", type=int, help="trial: at most this many warm-up calls in every plan")
    parser.add_argument("--both", action="store_true",
                        help="count two sides at once (the same suite twice, one valgrind process a core), as the "
                             "alert counts base and head")
    parser.add_argument("--save", type=Path, help="write the first process's results (counts, cycles) as JSON here")
    parser.add_argument("--suite", choices=("plain", "track"), default="plain",
                        help="plain: plainlib's 64 time_ rows (default); track: graphlib's 42 Timer-in-track_ rows "
                             "(track_suite.py), counted as their Timers' statements in place")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="counting_speed_") as tmp:
        suite = (make_track_suite(Path(tmp) / "lib") if args.suite == "track" else
                 make_suite(Path(tmp) / "lib", not args.no_table))
        cache_dir = Path(tmp) / "cache"
        cache_dir.mkdir()
        env = dict(os.environ, PYTHONPATH=str(Path(tmp) / "lib"), PYTHONHASHSEED="0")
        listing, _ = worker("list", suite, [], env, cache_dir)
        jobs = [[b["name"], i] for b in listing for i in range(_combinations(b))]
        _, native = worker("run", suite, jobs, env, cache_dir)
        plans, planning = worker("plan", suite, jobs, env, cache_dir)
        planned = [[name, index, *plans[f"{name}|{index}"]["plan"]] for name, index in jobs
                   if "plan" in plans.get(f"{name}|{index}", {})]
        if args.warmup_cap:
            planned = [[name, index, calls, min(warmup, args.warmup_cap)] for name, index, calls, warmup in planned]
        first, counting = sides("counts", suite, planned, env, cache_dir, args.both)
        counted = sum(1 for r in first.values() if "counts" in r)
        if args.save:
            args.save.write_text(json.dumps(first, indent=1, default=str))
        again = planned[:args.rows_again]
        _, jittered = sides("counts", suite, again, env | {JITTER_ENV: "1", DRAWS_ENV: str(DRAWS)}, cache_dir,
                            args.both)
    rows = len(jobs)
    what = ("Timer-in-track_ suite (graphlib)" if args.suite == "track" else
            f"plain asv suite ({'with' if not args.no_table else 'without'} a 200,000-tuple module list)")
    print(f"== counting a {rows}-row {what}, {'both sides at once' if args.both else 'one side'}")
    print(f"  native process, every row once (anchor)     {native:7.1f} s")
    print(f"  planning (native)                           {planning:7.1f} s")
    print(f"  first valgrind process ({counted}/{rows} counted)      {counting:7.1f} s   {counting / rows:5.2f} s a row"
          f"   {counting / native:5.1f} x native")
    print(f"  jittered process, {len(again)} rows x {DRAWS} draws          {jittered:7.1f} s")
    total = planning + counting + jittered
    spread = sorted((max(r["counts"]) - min(r["counts"])) / (sum(r["counts"]) / len(r["counts"]))
                    for r in first.values() if r.get("counts"))
    print(f"  repeats' spread in the first process: median {spread[len(spread) // 2]:.3%}, max {spread[-1]:.3%}"
          f"; plans: calls {sorted(set(p[2] for p in planned))}, warm-up {sorted(set(p[3] for p in planned))}")
    runs = sorted(len(r["counts"]) for r in first.values() if r.get("counts"))
    print(f"  counted runs a row in the first process: {', '.join(f'{k}: {runs.count(k)} rows' for k in sorted(set(runs)))}"
          " (two once they agree, a third where they do not: asv_worker.REPEATS_AGREE)")
    print(f"  a side's counting (plan + first + jittered) {total:7.1f} s   goal: both sides at once <= 90 s")


def _combinations(benchmark: dict) -> int:
    n = 1
    for values in benchmark.get("params") or []:
        n *= len(values)
    return n


if __name__ == "__main__":
    main()
