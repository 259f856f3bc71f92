"""Instruction counts of identical code at many commits: the pool the counts test is calibrated on (issue 50).

The alert decides a compute change from instruction counts (torchbench/ab/counts.py) with a test whose noise
model has a part no single commit shows: a commit that changes code a row does not run still moves the row's
counts (the code's layout in memory). This script records that noise on two suites nobody tuned the rule on:

    timer   the example's 69-row TimerSuite (evaluation/suite_validation.py's commit B: bench_dispatch's 6
            rows and bench_suite's 63)
    plain   a plain asv suite, 42 `time_` rows (evaluation/plain_suite_counts.py's plainlib)
    track   a Timer-in-`track_` asv suite, 42 rows, functions passed as asv parameters (evaluation/track_suite.py's
            graphlib), counted as their Timers' statements in place
    einops  einops 0.8.1 from the package index, its sources vendored, a plain asv suite of 42 `time_` rows
            (evaluation/einops_suite.py), the helpers added to einops/einops.py

For each suite it makes a chain of C commits after the suite's own, each adding one unused helper of its
own size to the module the suite imports (a pull request that changes other code), installs every commit
as the alert does (OUT/installs), plans the `time_` rows' calls once (as the alert shares one plan), and
counts every row of every commit in the alert's first valgrind process (the default layout, "0"),
COUNT_REPEATS repeats each, two processes at a time; the first M commits are counted again in J processes
whose layout is jittered after the imports ("j1" .. "jJ": torchbench_core._callgrind_worker._jitter_layout),
as the alert counted a row whose first counts moved until the layout draws; with --draws D, each such
process counts every row in D layout draws (collect_callgrind_many(draws), as the alert's jittered process
does), stored as the layouts "jKd0" .. "jKd<D-1>". With --candidates (and --draws D), each disjoint adjacent
pair of commits (0-1, 2-3, ...) without draws is counted as the alert counts an A/A pair: its candidates
alone (rows whose first counts, or counts flat their cycles, moved beyond 1%: candidate_rows) in one jittered
process of D draws at both commits, stored as "c1d0" .. "c1d<D-1>" (a pair without candidates gets empty
ones): far cheaper than every row's draws, and the A/A figure of counts_calibration.candidate_pairs. Each
commit's jittered processes draw their own
layouts (the commit salts the seeds: SALT_ENV), so that a pair of commits whose code moves little is still
two independent layout draws, not one repeated. Adjacent commits are the A/A
pairs (C - 1 of them a suite); any two commits are a looser A/A pair. An existing pool file is resumed: its
(commit, layout) counts are kept and not counted again (the commits are the same: fixed dates).

The pool (gzipped JSON) is what evaluation/counts_calibration.py fits the test's noise on, and what
tests/test_counts_test.py checks the fitted constants against:

    {"suites": {NAME: {"description", "commits": [sha...], "jobs": {"name|index": row name},
                       "by_call": ["name|index", ...], "counts": {"<commit>": {"<layout>": {"name|index":
                       [per call, one per repeat]}}}, "cycles": the same for the priced cycles (callgrind.priced_cycles; "cycles_model": "priced"), "ll": the
                       same for the simulated last-level misses (a suite recorded since they were kept),
                       "layout_driven": the same for the instructions in code whose path follows memory addresses
                       (the allocators, the type cache's misses), which "counts" leaves out (a suite recorded since
                       2026-12-07; its counts before then include them),
                       "seconds": [per valgrind process]}}}

    python evaluation/counts_noise_pool.py [--commits 12] [--jittered 4] [--jitter-commits I ...] [--jitters 2]
                                           [--draws 1] [--candidates] [--no-simulate]
                                           [--suites timer plain]
                                           [--out PATH]

About 60-180 s a valgrind process of the timer suite and 40-70 s of the plain one on an idle 2-core
machine (2-3x that beside other work), two at a time: the defaults, about 40 minutes idle. A jittered
process of 8 draws: about 205 s (timer) and 165 s (plain). The pool the constants are fitted on
(counts_noise_pool-2026-11-28.json.gz) kept the first processes of the pool before it (their layouts are
not jittered, so not salted) and drew its jittered processes anew, 25 minutes:

    --suites plain timer --commits 6 --jittered 6 --jitters 1 --draws 8, then
    --suites plain --commits 12 --jittered 12 ..., then --suites timer --commits 8 --jittered 8 ...
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

from plain_suite_counts import make_repo as make_plain_repo  # noqa: E402
from suite_validation import SUITE, SUITE_FILE, add_commit  # noqa: E402
from track_suite import MODULE as TRACK_MODULE  # noqa: E402
from track_suite import make_repo as make_track_repo  # noqa: E402
import einops_suite  # noqa: E402

from counts_calibration import KINDS, priced_values  # noqa: E402

from torchbench.ab import collect  # noqa: E402
from torchbench.ab.count_decision import count_decision  # noqa: E402
from torchbench.ab.evidence import Evidence, Side  # noqa: E402
from torchbench.ab.pair import select_jobs  # noqa: E402
from torchbench.ab.schedule import count_plans  # noqa: E402
from torchbench.ab.sides import side_env  # noqa: E402
from torchbench.asv_bridge.workspace import open_workspace  # noqa: E402
from torchbench.asv_bridge.worker import list_benchmarks  # noqa: E402
from torchbench.project import example  # noqa: E402
from torchbench.project.commits import Commit  # noqa: E402
from torchbench.project.folders import locked_folders  # noqa: E402
from torchbench_core._callgrind_worker import JITTER_ENV, SALT_ENV  # noqa: E402
from torchbench_core.asv_worker import DRAWS_ENV, SIMULATE_ENV  # noqa: E402
from torchbench_core.callgrind import LL_EVENTS  # noqa: E402
from torchbench_core.memory_price import LL_MISS_CYCLES, PRICE_ENV  # noqa: E402
from torchbench_core.storage import atomic_write_bytes  # noqa: E402

OUT = ROOT / "evaluation" / "results" / "counts_noise_pool.json.gz"
HELPER = """

def _unused_{i}(values):  # counts_noise_pool.py: code no benchmark runs ({i})
    total = {i}
{body}    return total
"""


def helper(i: int) -> str:
    """An unused function of its own size: commits differ in the code's layout, not in what a row runs."""
    body = "".join(f"    total += sum(v * {k} for v in values if v > {i})\n" for k in range(1 + i % 7))
    return HELPER.format(i=i, body=body)


def timer_repo(path: Path) -> tuple[git.Repo, str, str]:
    """The example with its 63-row suite (commit B of suite_validation.py); the module its suite imports."""
    example.materialize(path)
    repo = git.Repo(path)
    base = add_commit(repo, repo.head.commit.hexsha, {SUITE_FILE: SUITE.format(min_run_time=0.05)},
                      "Add bench_suite: 63 small rows of seven ops, three types, three sizes", 1)
    return repo, base, "tensorlib/tensor_like.py"


def plain_repo(path: Path) -> tuple[git.Repo, str, str]:
    base, _, _ = make_plain_repo(path)
    return git.Repo(path), base, "plainlib/__init__.py"


def track_repo(path: Path) -> tuple[git.Repo, str, str]:
    base, _, _ = make_track_repo(path)
    return git.Repo(path), base, TRACK_MODULE


def einops_repo(path: Path) -> tuple[git.Repo, str, str]:
    """einops 0.8.1 from the package index with its 42-row asv suite (evaluation/einops_suite.py): a real
    library's code, the helpers added to the module every row runs through."""
    path.mkdir(parents=True)
    base, _, _ = einops_suite.make_repo(path, einops_suite.sources(path.parent / "einops-wheel"))
    return git.Repo(path), base, "einops/einops.py"


SUITES = {"timer": ("the example's 69-row TimerSuite (bench_dispatch 6, bench_suite 63)", timer_repo),
          "plain": ("a plain asv suite: plainlib's 42 time_ rows", plain_repo),
          "track": ("a Timer-in-track_ asv suite: graphlib's 42 rows, functions passed as asv parameters",
                    track_repo),
          "einops": ("einops 0.8.1's code with a plain asv suite of 42 time_ rows (evaluation/einops_suite.py)",
                     einops_repo)}


def chain(repo: git.Repo, base: str, module: str, n: int) -> list[str]:
    """`base` and n - 1 commits after it, each adding one unused helper to `module`."""
    shas = [base]
    for i in range(1, n):
        shas.append(add_commit(repo, shas[-1], {module: lambda text, i=i: text + helper(i)},
                               f"{module}: an unused helper ({i})", 10 + i))
    repo.git.checkout("--detach", base)
    return shas


class PoolError(Exception):
    """A pool that cannot be recorded or resumed as asked (a commit that does not build, a pool recorded
    otherwise): main says it and exits 2, keeping what the pool file holds."""


def candidate_rows(entry: dict, kind: str, a: str, b: str, floor: float = 0.01) -> list[str]:
    """The rows of the A/A pair (commit a, commit b) the alert would count in a jittered process: those whose
    first counts moved beyond the floor, or, counts flat, whose first priced cycles did (channels.to_confirm; made
    from the counts and last-level misses as the worker makes them now, whatever the pool recorded)."""
    found = []
    misses = [entry.get("ll", {}).get(c, {}).get("0", {}) for c in (a, b)]
    for job in entry["jobs"]:
        counts = [entry["counts"].get(c, {}).get("0", {}).get(job) for c in (a, b)]
        cycles = [priced_values(n, m[job], entry["miss_cycles"]) if n and m.get(job) else None
                  for n, m in zip(counts, misses)]
        moved = all(counts) and count_decision([counts[0]], [counts[1]], kind, floor).pending
        flat_memory = all(cycles) and not moved and count_decision([cycles[0]], [cycles[1]], kind, floor).pending
        if moved or flat_memory:
            found.append(job)
    return found


def record(name: str, n: int, jittered: list[int], jitters: int, tmp: Path, pool: dict, out: Path,
           draws: int = 1, candidates: bool = False, simulate: bool = True, miss_cycles: int = LL_MISS_CYCLES) -> None:
    description, make = SUITES[name]
    repo, base, module = make(tmp / name)
    shas = chain(repo, base, module, n)
    with locked_folders(tmp / f"{name}-out", tmp / "envs", tmp / name) as folders:
        ws = open_workspace(out=folders.out, env_dir=folders.env_dir, repo_path=folders.repo_path,
                            repo=folders.repo, project_sha=base, benchmarks=None, fds=folders.fds)
        python = ws.pythons()[0]
        built: dict[int, Side] = {}
        building = threading.Lock()

        def side(i: int) -> Side:
            """Commit i installed as the alert installs it, when a process first needs it (a resumed pool
            builds only the commits it still counts: ~15 s each)."""
            with building:
                if i not in built:
                    install, why = ws.install(Commit(shas[i], f"commit {i}"), python)
                    if why:
                        raise PoolError(f"commit {i} ({shas[i][:8]}) does not build: {why}")
                    built[i] = Side("base", shas[i], install, python)
                return built[i]

        suite = ws.bench_dir
        evidence = Evidence()
        jobs = select_jobs({"base": list_benchmarks(python, suite, side_env(side(0)))}, (), evidence)
        jobs = [job for job in jobs if not evidence.jobs[job].uncountable]
        cache_dir = tmp / f"{name}-setup-cache"
        plans, _ = count_plans(folders.out / "counts", suite, [side(0)], jobs, evidence, cache_dir)
        planned = [(*job, *plans[job]) if job in plans else job for job in jobs]
        entry = pool["suites"].setdefault(name, {"counts": {}, "seconds": []})
        trees = [repo.commit(sha).tree.hexsha for sha in shas]
        if entry.get("trees", trees)[:n] != trees[:len(entry.get("trees", trees))]:
            raise PoolError(f"{out}: its {name} commits' trees are not this chain's: give another --out")
        # a resumed chain is the same trees (plainlib's commits carry the time they were made, so their hashes
        # differ from run to run; the timer suite's dates are fixed)
        if entry["counts"] and not entry.get("salted"):
            raise PoolError(f"{out}: its {name} layouts were drawn alike for every commit: give another --out")
        if entry["counts"] and entry.get("miss_cycles", LL_MISS_CYCLES) != miss_cycles:
            raise PoolError(f"{out}: its {name} cycles price a miss at {entry.get('miss_cycles', LL_MISS_CYCLES)}: "
                             f"give that --miss-cycles or another --out")
        if entry.get("cycles") and entry.get("cycles_model") != "priced":
            raise PoolError(f"{out}: its {name} cycles are KCachegrind's estimate, not the priced cycles the worker "
                             f"gives now: convert it (counts_calibration.priced) or give another --out")
        entry["miss_cycles"] = miss_cycles  # the cycles' price of a last-level miss (counts_calibration.priced)
        entry["cycles_model"] = "priced"  # callgrind.priced_cycles: own instructions + miss_cycles x LL misses
        kept = entry.get("commits", [])  # a resumed chain made longer keeps its commits and adds the new ones
        entry.update({"salted": True, "description": description, "commits": kept + shas[len(kept):],
                      "trees": trees,
                      "jobs": {f"{n_}|{i}": evidence.jobs[(n_, i)].name for n_, i in jobs},
                      "by_call": [f"{n_}|{i}" for n_, i in jobs if evidence.jobs[(n_, i)].by_call]})

        def count(task: tuple) -> tuple[int, str, dict, float]:
            i, layout, *only = task  # only: these rows (candidates), not every row
            start = time.perf_counter()
            # each commit's jittered processes draw layouts of their own (SALT_ENV: the alert jitters base and
            # head alike, where a pool of commits whose code moves little would repeat one layout pair to pair)
            env = {JITTER_ENV: layout[1:], SALT_ENV: f"commit {i}"} if layout[0] in "jc" else {}
            env[PRICE_ENV] = str(miss_cycles)  # the cycles' price of a miss, so candidates are chosen at it
            if not simulate:
                env[SIMULATE_ENV] = "0"
            if draws > 1 and layout[0] in "jc":
                env[DRAWS_ENV] = str(draws)
            rows = [job for job in planned if not only or f"{job[0]}|{job[1]}" in only[0]]
            found = collect._worker(suite, side(i), "counts", rows, timeout=3600, env=env, cache_dir=cache_dir)
            if "error" in found:
                raise PoolError(f"commit {i}, layout {layout}: {found['error']}")
            return i, layout, found, time.perf_counter() - start

        def stored(layout: str) -> str:  # the name a task's counts are kept under (its first draw's)
            return f"{layout}d0" if draws > 1 and layout.startswith("j") else layout

        def todo(tasks: list[tuple[int, str]]) -> list[tuple[int, str]]:  # those not counted yet
            return [(i, layout) for i, layout in tasks if stored(layout) not in entry["counts"].get(str(i), {})]

        def keep(i: int, layout: str, found: dict, seconds: float) -> None:
            """A process's counts into the pool, written at once (a stopped run keeps what it counted)."""
            got = {k: r["counts"] for k, r in found.items() if "counts" in r}
            failed = {k: r.get("error", "") for k, r in found.items() if "counts" not in r and not r.get("skipped")}
            cycles = {k: r["cycles"] for k, r in found.items() if "cycles" in r}  # simulated (asv_worker.counts)
            # the instructions a call in code whose path follows memory addresses (the allocators, the type
            # cache's misses), beside the counts of the code itself, which leave them out (asv_worker.counts)
            driven = {k: r["layout_driven"] for k, r in found.items() if "layout_driven" in r}
            # the simulated last-level misses a run (instruction and data reads, data writes), one per repeat
            ll = {k: [sum(e.get(x, 0) for x in LL_EVENTS) for e in r["events"]] for k, r in found.items()
                  if r.get("events")}
            # a process's layout draws, each stored as a layout of its own: "j1d0", "j1d1", ...
            parts = ([(f"{layout}d{d}", d) for d in range(draws)] if draws > 1 and layout[0] in "jc"
                     else [(layout, None)])
            for name_, d in parts:  # a draw's values as the alert splits them (collect._per_draw)
                def pick(v: list, d=d) -> list:
                    return v if d is None else collect._per_draw(v, draws)[d]
                entry["counts"].setdefault(str(i), {})[name_] = {k: pick(v) for k, v in got.items()}
                entry.setdefault("cycles", {}).setdefault(str(i), {})[name_] = {k: pick(v) for k, v in cycles.items()}
                entry.setdefault("ll", {}).setdefault(str(i), {})[name_] = {k: pick(v) for k, v in ll.items()}
                entry.setdefault("layout_driven", {}).setdefault(str(i), {})[name_] = {
                    k: pick(v) for k, v in driven.items()}
            entry["seconds"].append(seconds)
            atomic_write_bytes(out, gzip.compress(json.dumps(pool).encode()))
            print(f"{name}: commit {i}, layout {layout}: {len(got)} rows, {len(failed)} failed, {seconds:.0f} s"
                  + (f" ({next(iter(failed.values()))[:200]})" if failed else ""), flush=True)

        with ThreadPoolExecutor(max_workers=2) as workers, ThreadPoolExecutor(max_workers=1) as builder:
            # a disjoint adjacent pair's first processes, then (--candidates) its candidates' draws, pair after
            # pair, so that a run stopped part way leaves whole pairs; the next pair built meanwhile
            for a in range(0, n, 2):
                for i in (a + 2, a + 3):
                    if i < n and todo([(i, "0")]):
                        builder.submit(side, i)
                for result in workers.map(count, todo([(i, "0") for i in (a, a + 1) if i < n])):
                    keep(*result)
                if not (candidates and draws > 1 and a + 1 < n):
                    continue
                if any(layout in entry["counts"].get(str(c), {}) for c in (a, a + 1) for layout in ("j1d0", "c1d0")):
                    continue  # counted in layout draws already (every row: "j1"; this pair's candidates: "c1")
                # the pair's candidates, counted as the alert would
                rows = candidate_rows(entry, KINDS[name], str(a), str(a + 1))
                for result in workers.map(count, [(a, "c1", rows), (a + 1, "c1", rows)]) if rows else ():
                    keep(*result)
                if not rows:  # no candidate: empty draws, so that a resumed pool skips the pair
                    for c in (a, a + 1):
                        for d in range(draws):
                            entry["counts"].setdefault(str(c), {})[f"c1d{d}"] = {}
                    atomic_write_bytes(out, gzip.compress(json.dumps(pool).encode()))
            for result in workers.map(count, todo([(i, f"j{k}") for i in jittered if i < n
                                                   for k in range(1, jitters + 1)])):
                keep(*result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=12, help="commits a suite (default 12: 11 adjacent pairs)")
    parser.add_argument("--jittered", type=int, default=4, help="of them, counted in jittered layouts too")
    parser.add_argument("--jitter-commits", type=int, nargs="+", default=[],
                        help="these commits (0-based) counted in jittered layouts too, beside the first --jittered")
    parser.add_argument("--jitters", type=int, default=2, help="jittered layouts a commit (default 2)")
    parser.add_argument("--draws", type=int, default=1,
                        help="layout draws in each jittered process (stored as layouts jKd0 .. jKd<D-1>)")
    parser.add_argument("--candidates", action="store_true",
                        help="with --draws: count each disjoint adjacent pair's (0-1, 2-3, ...) candidate rows (first "
                             "counts or cycles moved beyond 1%%) in a jittered process of D draws at both commits, "
                             "as the alert does, where the pair has no draws yet (stored as layouts c1d0 ..)")
    parser.add_argument("--no-simulate", action="store_true",
                        help="count without the cache and branch simulation (1.6x faster; no simulated cycles kept)")
    parser.add_argument("--miss-cycles", type=int, default=LL_MISS_CYCLES,
                        help="price a simulated last-level miss at this many cycles, as the alert does at what "
                             f"memory_price measured (default {LL_MISS_CYCLES}, KCachegrind's; 362 on this machine)")
    parser.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.commits < 2:
        parser.error("--commits must be at least 2")
    began = time.perf_counter()
    pool = {"suites": {}}
    if args.out.exists():  # other suites of an earlier run are kept
        pool = json.loads(gzip.decompress(args.out.read_bytes()))
    with tempfile.TemporaryDirectory(prefix="counts-noise-pool-") as tmp_name:
        for name in args.suites:
            jittered = sorted(set(range(args.jittered)) | set(args.jitter_commits))
            try:
                record(name, args.commits, jittered, args.jitters, Path(tmp_name), pool, args.out, args.draws,
                       args.candidates, not args.no_simulate, args.miss_cycles)
            except PoolError as e:  # what was counted is in args.out already (written process by process)
                print(f"counts_noise_pool: {e}", file=sys.stderr)
                sys.exit(2)  # not 1, which reads as a regression
    print(f"== wrote {args.out} in {(time.perf_counter() - began) / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
