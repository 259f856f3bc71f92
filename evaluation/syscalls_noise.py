"""System calls of identical code, traced again and again (issue 61): which calls move, and does the rule decide?

The system-call channel (torchbench/ab/channels.py, SystemCalls) decides a row only by calls that repeat:
each side traced in SYSCALL_TRACES processes (the first, and repeat traces in another process state:
a jittered layout, the rows in reverse order), every trace exact for the call, each side's traces agreeing
on it, the change a whole number a call; calls that follow the scheduler or the allocator (SCHEDULED) never
decide. This script measures that rule where nothing changed: on the two suites of the count test's pool
(evaluation/counts_noise_pool.py: the example's 69-row TimerSuite and a 42-row plain asv suite), at C
commits that each add an unused helper to the module the suite imports, each commit traced in K processes
(the first, then K - 1 repeat traces), as the alert traces a side. With --load, a busy process per core
runs beside the traces (a CI runner's neighbours: thread wake-ups follow the scheduler).

Printed, per suite: every system call whose number a call differed between two traces of identical code
(same commit, or two commits), with how many rows it moved on, by how much at most, and whether it is in
SCHEDULED; then the rule on every pair of commits (A/A): the rows the system calls decide (the goal: none),
and on the same pairs with a getpid added to every call of every row on the head (the first trace's and the
repeats' per-call counts raised by one getpid): the rows decided (the goal: all of them).

    python evaluation/syscalls_noise.py [--commits 3] [--traces 3] [--suites timer plain] [--load]
                                        [--json PATH]
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

from counts_noise_pool import SUITES, chain  # noqa: E402

from torchbench.ab import collect  # noqa: E402
from torchbench.ab.channels import SCHEDULED, SYSCALLS, SystemCalls, syscall_moves, syscall_traces  # noqa: E402
from torchbench.ab.evidence import Evidence, JobInfo, Side  # noqa: E402
from torchbench.ab.pair import select_jobs  # noqa: E402
from torchbench.ab.sides import side_env  # noqa: E402
from torchbench.asv_bridge.workspace import open_workspace  # noqa: E402
from torchbench.asv_bridge.worker import list_benchmarks  # noqa: E402
from torchbench.project.commits import Commit  # noqa: E402
from torchbench.project.folders import locked_folders  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402
from torchbench.ab.count_decision import COUNT_ALPHA


def _busy(until: float) -> None:
    while time.time() < until:
        pass


def trace_commits(name: str, n: int, traces: int, tmp: Path) -> tuple[dict, dict]:
    """Every commit of the suite's chain traced `traces` times: {commit index: Evidence with its traces on
    the "base" side}, and the jobs' names."""
    _, make = SUITES[name]
    repo, base, module = make(tmp / name)
    shas = chain(repo, base, module, n)
    traced = {}
    with locked_folders(tmp / f"{name}-out", tmp / "envs", tmp / name) as folders:
        ws = open_workspace(out=folders.out, env_dir=folders.env_dir, repo_path=folders.repo_path,
                            repo=folders.repo, project_sha=base, benchmarks=None, fds=folders.fds)
        python = ws.pythons()[0]
        for i, sha in enumerate(shas):
            install, why = ws.install(Commit(sha, f"commit {i}"), python)
            if why:
                raise SystemExit(f"{name}: commit {i} ({sha[:8]}) does not build: {why}")
            side = Side("base", sha, install, python)
            evidence = Evidence()
            jobs = select_jobs({"base": list_benchmarks(python, ws.bench_dir, side_env(side))}, (), evidence)
            for k in range(traces):
                start = time.perf_counter()
                tally = collect.collect_syscalls(ws.bench_dir, side, jobs, evidence, tmp / f"{name}-cache", None,
                                                 repeat=k)
                print(f"{name}: commit {i}, trace {k}: {tally} in {time.perf_counter() - start:.0f} s", flush=True)
            traced[i] = evidence
    names = {job: info.name for job, info in traced[0].jobs.items()}
    return traced, names


def moved_calls(traced: dict) -> dict[str, dict]:
    """Each call whose number a call differed between any two traces of identical code, of one row: the rows
    it moved on and its largest difference a call."""
    found: dict[str, dict] = {}
    jobs = set().union(*(e.syscalls["base"] for e in traced.values()))
    for job in jobs:
        runs = [t.get("per_call", {}) for e in traced.values() for t in syscall_traces(e, "base", job)]
        for name in set().union(*runs) if runs else ():
            values = [r.get(name, 0.0) for r in runs]
            spread = max(values) - min(values)
            if spread:
                entry = found.setdefault(name, {"rows": 0, "largest": 0.0, "scheduled": name in SCHEDULED})
                entry["rows"] += 1
                entry["largest"] = max(entry["largest"], spread)
    return dict(sorted(found.items(), key=lambda kv: -kv[1]["rows"]))


def _pair(base: Evidence, head: Evidence, job, getpid: bool) -> Evidence:
    """One row's A/A evidence: `base`'s traces as the base, `head`'s as the head (with a getpid more a call
    in every trace where `getpid`)."""
    ev = Evidence()
    ev.jobs[job] = JobInfo(str(job[0]), on_base=True, on_head=True)
    ev.syscalls["base"][job] = base.syscalls["base"][job]
    ev.syscalls_again["base"][job] = base.syscalls_again["base"].get(job, [])
    head_traces = copy.deepcopy(syscall_traces(head, "base", job))
    if getpid:
        for t in head_traces:
            t["per_call"]["getpid"] = t["per_call"].get("getpid", 0.0) + 1.0
            for region, calls in t.get("regions", {}).items():
                calls["getpid"] = calls.get("getpid", 0) + (head_traces[0]["calls"] * (2 if region == "2N" else 1))
    ev.syscalls["head"][job], ev.syscalls_again["head"][job] = head_traces[0], head_traces[1:]
    return ev


def decided(traced: dict, getpid: bool) -> dict:
    """The rule on every pair of commits: rows decided by system calls, of rows traced on both."""
    rule = SystemCalls()
    out = {"decided": 0, "rows": 0, "examples": []}
    for a, b in itertools.combinations(sorted(traced), 2):
        for job in traced[a].syscalls["base"]:
            if job not in traced[b].syscalls["base"]:
                continue
            ev = _pair(traced[a], traced[b], job, getpid)
            found = rule.test(ev, job, 0.01, {}, COUNT_ALPHA)
            out["rows"] += 1
            if found is not None and found.decides and found.channel == SYSCALLS:
                out["decided"] += 1
                if len(out["examples"]) < 5 and not getpid:
                    out["examples"].append(f"{a}..{b} {job[0]}[{job[1]}]: {found.text}")
            elif getpid and len(out["examples"]) < 5:
                out["examples"].append(f"{a}..{b} {job[0]}[{job[1]}]: not decided: {syscall_moves(ev, job)}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=3)
    parser.add_argument("--traces", type=int, default=3, help="traced processes a commit (the first and repeats)")
    parser.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    parser.add_argument("--load", action="store_true", help="a busy process per core beside the traces")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.commits < 2 or args.traces < 2:
        parser.error("--commits and --traces must be at least 2")
    busy = []
    if args.load:
        until = time.time() + 3 * 3600
        busy = [multiprocessing.Process(target=_busy, args=(until,), daemon=True) for _ in range(2)]
        for p in busy:
            p.start()
    report = {"load": args.load, "commits": args.commits, "traces": args.traces, "suites": {}}
    try:
        with tempfile.TemporaryDirectory(prefix="syscalls-noise-") as tmp:
            for name in args.suites:
                traced, _ = trace_commits(name, args.commits, args.traces, Path(tmp))
                report["suites"][name] = {"moved": moved_calls(traced), "aa": decided(traced, False),
                                          "getpid": decided(traced, True)}
    finally:
        for p in busy:
            p.terminate()
    for name, r in report["suites"].items():
        print(f"== {name}: {args.commits} commits x {args.traces} traces" + (" beside a busy process a core"
                                                                            if args.load else ""))
        for call, m in r["moved"].items():
            print(f"  {call:18} moved on {m['rows']:3} row(s), by up to {m['largest']:g} a call"
                  + (" (SCHEDULED: never decides)" if m["scheduled"] else " (may decide)"))
        if not r["moved"]:
            print("  no call moved between traces of identical code")
        aa, pid = r["aa"], r["getpid"]
        print(f"  A/A rows decided by system calls: {aa['decided']}/{aa['rows']}" + "".join(
            f"\n    {e}" for e in aa["examples"]))
        print(f"  a getpid added to every call: {pid['decided']}/{pid['rows']} rows decided" + "".join(
            f"\n    {e}" for e in pid["examples"]))
    if args.json:
        atomic_write_text(args.json, json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
