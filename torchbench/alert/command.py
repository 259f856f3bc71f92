"""`torchbench alert`: did this change make anything slower? A verdict that survives a noisy machine.

    define (suite, base, head) -> build both into one asv environment, side by side
    -> measure (alternating processes, adaptive) -> count instructions (valgrind, once a side)
    -> decide (stats, FDR) -> report (Markdown comment, JSON, exit status)

Or, with --base-results/--head-results, decide from asv result files that
already exist (each file is one process's evidence per benchmark).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import sys
import time
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from .. import commits, results
from ..workspace import Folders, locked_folders, open_workspace
from ..errors import UserError
from . import decide, measure
from . import site as alert_site
from .report import AlertReport

__all__ = ["add_arguments", "add_measurement_arguments", "jobs_of", "main", "measure_pair", "policy_of"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", help="the base revision (e.g. the pull request's merge base)")
    parser.add_argument("--head", help="the head revision (the change)")
    parser.add_argument("-b", "--bench", action="append", default=[], metavar="REGEX",
                        help="only benchmarks whose name matches REGEX; repeatable")
    add_measurement_arguments(parser, budget=9.0)  # a verdict within 10 minutes, the last round and site included
    parser.add_argument("--base-results", type=Path, nargs="+", metavar="PATH",
                        help="decide from these asv result files or folders instead of measuring")
    parser.add_argument("--head-results", type=Path, nargs="+", metavar="PATH")
    parser.add_argument("--site-url", metavar="URL",
                        help="where OUT/alert/BASE..HEAD/site will be served: the comment then links to its "
                             "Compare rows and flame graphs (default: it names the files)")
    parser.add_argument("--no-profile", action="store_true", help="no flame graphs of the regressions (py-spy)")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write the comment here")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the JSON report here")


def add_measurement_arguments(parser: argparse.ArgumentParser, budget: float) -> None:
    """Where and how two commits are measured against each other (shared by alert and find)."""
    parser.add_argument("--repo", type=Path, help="git repository (default: the embedded example library)")
    parser.add_argument("--benchmarks", type=Path, metavar="DIR",
                        help="asv suite folder (default: REPO/benchmarks if it exists, else this project's)")
    parser.add_argument("--out", type=Path, default=Path(".torchbench"), help="output folder (default ./.torchbench)")
    parser.add_argument("--env-dir", type=Path, metavar="DIR", help="asv environments (default OUT/env)")
    parser.add_argument("--budget-minutes", type=float, default=budget,
                        help=f"per comparison, stop adding rounds after this long (default {budget:g}); "
                             "decided benchmarks stop earlier")
    parser.add_argument("--min-rounds", type=int, default=measure.MIN_ROUNDS,
                        help=f"rounds before any early stop (default {measure.MIN_ROUNDS})")
    parser.add_argument("--max-rounds", type=int, default=100,
                        help="at most this many rounds (default 100: the budget binds first)")
    parser.add_argument("--fdr", type=float, default=0.01, help="false discovery rate across the suite (0.01)")
    parser.add_argument("--floor", type=float, default=0.02, help="never alert on a change below this (0.02)")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="the change that matters: 'unchanged' rules it out (0.05)")
    parser.add_argument("--no-counts", action="store_true", help="skip instruction counts (valgrind)")


def policy_of(args) -> decide.Policy:
    return decide.Policy(q=args.fdr, floor=args.floor, threshold=args.threshold)


def jobs_of(listing: dict[str, list[dict]], patterns: list[str], evidence: measure.Evidence) -> list:
    jobs = []
    for side in ("base", "head"):
        for b in listing[side]:
            if patterns and not any(re.search(p, b["name"]) for p in patterns):
                continue
            if b["type"] not in measure.MEASURED_TYPES:
                continue
            for index, combo in enumerate(itertools.product(*b["params"]) if b["params"] else [()]):
                job = (b["name"], index)
                info = evidence.jobs.setdefault(job, {
                    "name": f"{b['name']}({', '.join(combo)})" if combo else b["name"],
                    "params": list(combo), "param_names": list(b.get("param_names") or []), "unit": b.get("unit"),
                    "on_base": False, "on_head": False})
                info[f"on_{side}"] = True
                if job not in jobs:
                    jobs.append(job)
    return jobs


def _measure(args, f: Folders, base: commits.Commit, head: commits.Commit, report_problems: list[str],
             where: dict) -> measure.Evidence:
    ws = open_workspace(out=f.out, env_dir=f.env_dir, repo_path=f.repo_path, repo=f.repo, project_sha=head.sha,
                        benchmarks=args.benchmarks, fds=f.fds)
    return measure_pair(args, ws, base, head, report_problems, where)


def measure_pair(args, ws, base: commits.Commit, head: commits.Commit, report_problems: list[str], where: dict,
                 work: Path | None = None, only: set[tuple[str, int]] | None = None) -> measure.Evidence:
    """Measure both sides in alternating processes (args: the measurement arguments and `bench`); `where` gets
    what the site needs to profile them (python, suite, sides, work). Evidence is saved in WORK
    (default OUT/alert/BASE..HEAD). `only`: these (benchmark, index) pairs alone, of the benchmarks `bench`
    selects (find measures the stepped parameter combinations, not all of a benchmark's)."""
    evidence = measure.Evidence()
    bench_dir = ws.bench_dir
    python = ws.pythons()[0]
    work = work or ws.out / "alert" / f"{base.short}..{head.short}"
    sides = {}
    for name, commit in (("base", base), ("head", head)):
        site, why = ws.site(commit, python)
        if why:
            report_problems.append(f"the {name} commit {commit.short} does not build: {why}")
            continue
        sides[name] = measure.Side(name, commit.sha, site)
    if len(sides) < 2:
        return evidence
    where.update(python=python, suite=bench_dir, sides=sides, work=work)
    listing = {}
    for name, side in sides.items():
        try:
            listing[name] = measure.list_benchmarks(python, bench_dir, side)
        except RuntimeError as e:
            report_problems.append(str(e))
            return evidence
    jobs = jobs_of(listing, args.bench, evidence)
    if only is not None:
        jobs = [j for j in jobs if j in only]
        evidence.jobs = {j: info for j, info in evidence.jobs.items() if j in only}
    if not jobs:
        raise UserError(f"{bench_dir}: no timed benchmark matches {args.bench or 'the suite'}")
    both = [j for j in jobs if evidence.jobs[j]["on_base"] and evidence.jobs[j]["on_head"]]
    start = time.monotonic()
    if not args.no_counts:
        if shutil.which("valgrind") is None:
            evidence.notes.append("instruction counts skipped: valgrind is not installed")
        else:
            for name in ("base", "head"):
                print(f"== instruction counts, {name} (one valgrind process)", flush=True)
                measure.collect_counts(python, bench_dir, sides[name], both, evidence)

    def progress(ev: measure.Evidence, active: int) -> None:
        print(f"== round {ev.rounds}: {active} benchmark(s) measured, {len(ev.decided)} decided early, "
              f"{time.monotonic() - start:.0f} s", flush=True)

    measure.measure_rounds(python, bench_dir, sides, both, evidence, min_rounds=args.min_rounds,
                           max_rounds=args.max_rounds, deadline=start + 60 * args.budget_minutes,
                           threshold=args.threshold, floor=args.floor, cache_dir=_cache_dir(work),
                           on_round=progress)
    atomic_write_text(work / "evidence.json", json.dumps(evidence.to_dict()))
    return evidence


def _site(args, evidence, rows, base, head, out: Path, where: dict) -> dict:
    """The evidence site (OUT/alert/BASE..HEAD/site) and each regression's links; a failure to write it
    is a note, never a lost verdict."""
    if "work" not in where:
        return {}
    try:
        return alert_site.build_site(evidence, rows, base, head, out=out, work=where["work"],
                                     python=None if args.no_profile else where["python"], suite=where["suite"],
                                     sides=where["sides"], site_url=args.site_url, notes=evidence.notes)
    except (OSError, RuntimeError, ValueError) as e:
        evidence.notes.append(f"the evidence site was not written: {type(e).__name__}: {e}")
        return {}


def _cache_dir(work: Path) -> Path:
    path = work / "setup-cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _from_results(paths: list[Path], side: str, evidence: measure.Evidence) -> str:
    """Each asv result file is one process's evidence; returns the commit they are for."""
    seen = set()
    for path in paths:
        found = results.load_paths([path])
        for warning in found.warnings:
            evidence.notes.append(warning)
        for row in found.rows:
            seen.add(row.commit)
            job = (row.benchmark, row.index)
            info = evidence.jobs.setdefault(job, {"name": row.name, "params": [repr(v) for _, v in row.params],
                                                  "unit": row.unit, "on_base": False, "on_head": False})
            info[f"on_{side}"] = True
            if row.status == "ok":
                evidence.values[side].setdefault(job, []).append(row.value)
            elif row.status == "failed":
                evidence.errors[side][job] = "no result in the asv results file"
    if len(seen) != 1:
        raise UserError(f"--{side}-results must hold results of exactly one commit; found {len(seen)}")
    return seen.pop()


def main(args: argparse.Namespace) -> int:
    policy = policy_of(args)
    problems: list[str] = []
    where: dict = {}
    if args.base_results or args.head_results:
        if not (args.base_results and args.head_results):
            raise UserError("give both --base-results and --head-results")
        evidence = measure.Evidence()
        base_sha = _from_results(args.base_results, "base", evidence)
        head_sha = _from_results(args.head_results, "head", evidence)
        base, head = commits.Commit(base_sha, ""), commits.Commit(head_sha, "")
        rows, links = decide.decide(evidence, policy), {}
    else:
        if not (args.base and args.head):
            raise UserError("give --base and --head (or --base-results and --head-results)")
        with locked_folders(args) as f:
            base, head = commits.resolve(f.repo, args.base), commits.resolve(f.repo, args.head)
            try:
                evidence = _measure(args, f, base, head, problems, where)
                rows = decide.decide(evidence, policy)
                links = _site(args, evidence, rows, base, head, f.out, where)
            except KeyboardInterrupt:
                raise UserError("interrupted before a verdict") from None
    report = AlertReport(base, head, rows, policy, evidence.rounds, evidence.notes, problems,
                         {name: link.__dict__ for name, link in links.items()}, args.site_url)
    text = report.markdown()
    print("\n" + text)
    if args.markdown:
        atomic_write_text(args.markdown, text)
    if args.json:
        atomic_write_text(args.json, report.json())
    print(f"\n== exit status {report.exit_status()}", file=sys.stderr)
    return report.exit_status()
