"""Record instruction counts of identical code in many valgrind processes, and across two torch builds (issue 31).

The alert decides a compute change from instruction counts (torchbench/ab/counts.py). How much do the counts
of identical code move between valgrind processes, between two commits that change nothing measured, and
between two builds of torch? This script records the evidence once, on the example's 69-row suite
(evaluation/suite_validation.py's commit B: bench_dispatch's 6 rows and bench_suite's 63):

    processes   K valgrind processes of each of three commits, each counting all 69 rows as the alert does
                (COUNT_REPEATS runs of each case in one process; torchbench.ab.collect._count), two
                processes at a time:
                  B  the suite's commit
                  A  B plus a README edit: the same installed code
                  C  B plus an unused function in tensorlib/tensor_like.py: the package changed, not the
                     code the suite runs (a pull request that touches other code)
    builds      commit B counted under torch 2.13.0 and under torch 2.14.1 (`torchbench alert
                --base-torch 2.13.0 --head-torch 2.14.1`, the upgrade verdict, which takes one valgrind
                process a side); skipped with --no-builds

evaluation/stats_validation.py reads the pool (--counts-pool) and replays the alert's counts rule on it.

    python evaluation/counts_pool.py [--processes 4] [--out tests/data/counts_pool_69_rows.json] [--no-builds]

About 3 minutes a valgrind process of 69 rows (two run at once), plus the environments' set-up: 15-25 minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

from suite_validation import SUITE, SUITE_FILE, add_commit, run_alert  # noqa: E402

from torchbench.ab import collect  # noqa: E402
from torchbench.ab.evidence import Evidence, Side  # noqa: E402
from torchbench.ab.pair import select_jobs  # noqa: E402
from torchbench.ab.sides import side_env  # noqa: E402
from torchbench.asv_bridge.worker import list_benchmarks  # noqa: E402
from torchbench.project import example  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402

OUT = ROOT / "tests" / "data" / "counts_pool_69_rows.json"
BUILDS = ("2.13.0", "2.14.1")
ARMS = ("B", "A", "C")
UNUSED = """

def _unused_helper(values):  # counts_pool.py's commit C: the package changes, not the code the suite runs
    return [2 * v for v in values]
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=4, help="valgrind processes per commit (default 4)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS,
                        help="the commits to count (default all); an existing --out file keeps its other arms")
    parser.add_argument("--no-builds", action="store_true", help="leave out the two torch builds")
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="counts-pool-") as tmp_name:
        tmp = Path(tmp_name)
        path = example.materialize(tmp / "tensorlib")
        repo = git.Repo(path)
        last = repo.head.commit.hexsha
        b = add_commit(repo, last, {SUITE_FILE: SUITE.format(min_run_time=0.05)},
                       "Add bench_suite: 63 small rows of seven ops, three types, three sizes", 1)
        a = add_commit(repo, b, {"README.md": lambda text: text + "\nA note on the docs.\n"}, "README: a note", 2)
        c = add_commit(repo, b, {"tensorlib/tensor_like.py": lambda text: text + UNUSED}, "tensorlib: a helper", 3)
        repo.git.checkout("--detach", b)
        envs, work = tmp / "envs", tmp / "work"
        print("== building the environment and installing B, A and C (short alerts without counts)", flush=True)
        commits = {"B": b, "A": a, "C": c}
        for label in ("A", "C"):
            run_alert(path, b, commits[label], work, envs, ["--budget-minutes", "0.01", "--min-rounds", "2",
                                                            "--no-counts", "--no-profile"])
        python = next(envs.glob("*/bin/python"))
        sides = {label: Side("base", sha, work / "installs" / sha[:12], python) for label, sha in commits.items()}
        suite = path / "benchmarks"
        evidence = Evidence()
        jobs = select_jobs({"base": list_benchmarks(python, suite, side_env(sides["B"])),
                            "head": list_benchmarks(python, suite, side_env(sides["A"]))}, (), evidence)
        pool = json.loads(args.out.read_text()) if args.out.exists() else {}
        pool.update({"suite": "the example's commit B: bench_dispatch (6 rows) and bench_suite (63 rows)",
                     "commits": commits, "jobs": {f"{n}|{i}": evidence.jobs[(n, i)].name for n, i in jobs}})
        pool.setdefault("builds", {})
        pool.setdefault("processes", {}).update({label: [] for label in args.arms})
        order = [label for _ in range(args.processes) for label in args.arms]

        def count(label: str) -> tuple[str, dict, float]:
            start = time.perf_counter()
            found = collect._count(suite, sides[label], jobs)
            return label, {k: r["counts"] for k, r in found.items() if "counts" in r}, time.perf_counter() - start

        with ThreadPoolExecutor(max_workers=2) as workers:
            for label, counts, seconds in workers.map(count, order):
                pool["processes"][label].append(counts)
                atomic_write_text(args.out, json.dumps(pool))
                print(f"commit {label}: valgrind process {len(pool['processes'][label])}, {len(counts)} rows "
                      f"counted, {seconds:.0f} s", flush=True)
        if not args.no_builds:
            print(f"== commit B under torch {BUILDS[0]} and {BUILDS[1]} (the upgrade verdict's counts)", flush=True)
            out = tmp / "builds"
            run_alert(path, b, b, out, envs, ["--base-torch", BUILDS[0], "--head-torch", BUILDS[1],
                                              "--budget-minutes", "0.01", "--min-rounds", "2", "--no-profile"])
            evidence_file = next((out / "alert").glob("*/evidence.json"))
            counts = json.loads(evidence_file.read_text())["counts"]
            pool["builds"] = {BUILDS[0]: counts["base"], BUILDS[1]: counts["head"]}
            atomic_write_text(args.out, json.dumps(pool))
    print(f"== wrote {args.out} in {(time.perf_counter() - began) / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
