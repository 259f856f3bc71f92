"""`torchbench find`: since when? Steps in the history, confirmed by re-measurement, bisected to their commit.

    torchbench find [BENCHMARK]                      steps in OUT's history (changepoints), each confirmed
                                                     by measuring the commits on both sides of it in
                                                     alternating processes (the alert's A/B), and narrowed
                                                     to one commit where the step spans several;
                                                     written to OUT/changepoints.json for the site
    torchbench find BENCHMARK --good REV --bad REV   bisect one step to its commit

A history has a few processes per commit (`run --rounds`), and one process
here can be 2x off, so a detected step is only a candidate until confirmed.
Bisection never trusts a lone measurement either: each probe is compared, interleaved, with both ends,
and it must sit clearly on one side of the step's midpoint, or the search
stops and says "inconclusive" with the range it got to. Commits that do not
build are skipped and named (as `git bisect skip`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from . import changepoints, commits, flamegraph, profile, results, stats
from .steprecord import CONFIRMED, INCONCLUSIVE, RECORD, REFUTED, UNCONFIRMED, read_record, record_key, write_record
from .alert import decide, measure
from .alert import command as alert_command
from .errors import EXIT_OK, UserError
from .workspace import Workspace, locked_folders, open_workspace

__all__ = ["add_arguments", "main", "bisect", "detect", "EXIT_INCONCLUSIVE"]

EXIT_INCONCLUSIVE = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("benchmark", nargs="?", metavar="BENCHMARK",
                        help="regex: only benchmarks whose name (benchmark(params)) matches; needed to bisect")
    parser.add_argument("--good", metavar="REV", help="bisect: a revision before the step")
    parser.add_argument("--bad", metavar="REV", help="bisect: a revision after the step")
    parser.add_argument("--branch", default="HEAD", metavar="REV",
                        help="the history's branch: its first-parent commits give the order (default HEAD)")
    parser.add_argument("--no-confirm", action="store_true",
                        help="report the detected steps without measuring anything (they stay 'unconfirmed')")
    parser.add_argument("--no-profile", action="store_true", help="no flame graphs of the culprit and its parent")
    alert_command.add_measurement_arguments(parser, budget=3.0)


# -- measuring two commits against each other ---------------------------------------------------------

@dataclass
class Session:
    """What every comparison of a find needs: the workspace, its interpreter, and the measurement options."""

    args: argparse.Namespace
    ws: Workspace
    python: Path
    problems: list[str] = field(default_factory=list)
    comparisons: int = 0

    def compare(self, a: commits.Commit, b: commits.Commit, jobs: set[tuple[str, int]],
                work: str) -> dict[tuple[str, int], decide.Row]:
        """a against b, interleaved, on the benchmarks of `jobs`; rows by (benchmark, index)."""
        args = argparse.Namespace(**{**vars(self.args), "bench": profile.patterns_for(jobs)})
        self.comparisons += 1
        print(f"== comparing {a.short} with {b.short} ({', '.join(sorted({n for n, _ in jobs}))})", flush=True)
        evidence = alert_command.measure_pair(args, self.ws, a, b, self.problems, {},
                                              work=self.ws.out / "find" / work / f"{a.short}..{b.short}",
                                              only=jobs)
        return {(r.benchmark, r.index): r for r in decide.decide(evidence, alert_command.policy_of(args))
                if (r.benchmark, r.index) in jobs}


def _summary(row: decide.Row | None) -> dict | None:
    if row is None:
        return None
    c = row.comparison
    return {"status": row.status, "label": row.label, "counts_delta": row.counts_delta,
            "ratio": c.ratio if c else None, "ci_low": c.ci_low if c else None,
            "ci_high": c.ci_high if c else None, "p_value": c.p_value if c else None,
            "processes": [c.n_base, c.n_head] if c else None, "error": row.error}


def _side_of(row: decide.Row | None, step: float) -> str:
    """Where a comparison's ratio sits against a step of `step` (after/before): 'moved' when its whole
    interval is past the step's geometric midpoint, 'same' when it is wholly short of it."""
    c = row.comparison if row else None
    if c is None or not (c.ci_low > 0 and math.isfinite(c.ci_high)):
        return "unclear"
    toward = math.copysign(1.0, math.log(step))  # measured along the step's direction, on the log scale
    low, high = sorted((toward * math.log(c.ci_low), toward * math.log(c.ci_high)))
    half = abs(math.log(step)) / 2
    if low > half:
        return "moved"
    if high < half:
        return "same"
    return "unclear"


# -- bisection ------------------------------------------------------------------------------------------

def _chain(repo, good: commits.Commit, bad: commits.Commit) -> list[commits.Commit]:
    shas = repo.git.rev_list("--reverse", "--ancestry-path", f"{good.sha}..{bad.sha}").split()
    if not shas or shas[-1] != bad.sha:
        raise UserError(f"{bad.short} does not descend from {good.short}: nothing to bisect")
    return [good] + [commits.Commit(s, repo.commit(s).summary) for s in shas]


def bisect(session: Session, repo, good: commits.Commit, bad: commits.Commit,
           steps: dict[tuple[str, int], float] | None, pattern: str) -> dict:
    """Narrow good..bad to the commit that made the step. STEPS: the step's size per job when known
    (from the history); otherwise good and bad are compared first to find it."""
    chain = _chain(repo, good, bad)
    result = {"good": good.sha, "bad": bad.sha, "status": INCONCLUSIVE, "culprit": None, "subject": "",
              "skipped": [], "probes": [], "range": [good.sha, bad.sha], "why": "", "jobs": []}
    if steps is None:
        jobs = _suite_jobs(session, good, bad, pattern)
        rows = session.compare(good, bad, jobs, "bisect")
        steps = {job: r.comparison.ratio for job, r in rows.items()
                 if r.status in (stats.REGRESSED, stats.IMPROVED) and r.comparison}
        result["reference"] = {f"{j[0]}|{j[1]}": _summary(r) for j, r in rows.items()}
        if not steps:
            result["why"] = (f"no benchmark matching {pattern!r} changed between {good.short} and {bad.short} "
                             f"(statuses: {sorted({r.status for r in rows.values()})})")
            return result
    result["jobs"] = sorted([name, index] for name, index in steps)
    lo, hi = 0, len(chain) - 1
    unbuildable: set[int] = set()
    while True:
        inner = [i for i in range(lo + 1, hi) if i not in unbuildable]
        if not inner:
            break
        mid = inner[len(inner) // 2]
        _, why = session.ws.site(chain[mid], session.python)
        if why:
            unbuildable.add(mid)
            result["skipped"].append({"sha": chain[mid].sha, "subject": chain[mid].subject, "why": why[-500:]})
            print(f"== {chain[mid].short} does not build: skipped", flush=True)
            continue
        left = session.compare(chain[lo], chain[mid], set(steps), "bisect")
        right = session.compare(chain[mid], chain[hi], set(steps), "bisect")
        against_good = {_side_of(left.get(j), s) for j, s in steps.items()}
        against_bad = {_side_of(right.get(j), s) for j, s in steps.items()}
        # at the old level: no step from good, the whole step to bad; at the new level the reverse
        old = against_good == {"same"} or against_bad == {"moved"}
        new = against_good == {"moved"} or against_bad == {"same"}
        result["probes"].append({"sha": chain[mid].sha, "against_good": sorted(against_good),
                                 "against_bad": sorted(against_bad),
                                 "rows_good": {f"{j[0]}|{j[1]}": _summary(r) for j, r in left.items()},
                                 "rows_bad": {f"{j[0]}|{j[1]}": _summary(r) for j, r in right.items()}})
        if old and not new:
            lo = mid
        elif new and not old:
            hi = mid
        else:
            result["range"] = [chain[lo].sha, chain[hi].sha]
            result["why"] = (f"{chain[mid].short} is neither clearly at the old level nor at the new one "
                             f"(against {chain[lo].short}: {'/'.join(sorted(against_good))}; against "
                             f"{chain[hi].short}: {'/'.join(sorted(against_bad))}); a larger --budget-minutes "
                             f"measures more processes")
            return result
    result["range"] = [chain[lo].sha, chain[hi].sha]
    skipped_inside = [chain[i] for i in range(lo + 1, hi) if i in unbuildable]
    if skipped_inside:
        result["why"] = (f"the step is in {', '.join(c.short for c in skipped_inside)} or {chain[hi].short}: "
                         f"the commits before {chain[hi].short} do not build")
        return result
    result.update(status="found", culprit=chain[hi].sha, subject=chain[hi].subject, parent=chain[lo].sha)
    return result


def _suite_jobs(session: Session, a: commits.Commit, b: commits.Commit, pattern: str) -> set[tuple[str, int]]:
    """Every (benchmark, index) of the suite whose row name matches PATTERN, as the newer commit lists it."""
    site, why = session.ws.site(b, session.python)
    if why:
        raise UserError(f"--bad {b.short} does not build: {why[-500:]}")
    listing = measure.list_benchmarks(session.python, session.ws.bench_dir, measure.Side("head", b.sha, site))
    evidence = measure.Evidence()
    jobs = alert_command.jobs_of({"base": [], "head": listing}, [], evidence)
    chosen = {j for j in jobs if re.search(pattern, evidence.jobs[j]["name"])}
    if not chosen:
        raise UserError(f"no timed benchmark of {session.ws.bench_dir} matches {pattern!r}")
    return chosen


def _profiles(session: Session, result: dict, jobs: set[tuple[str, int]]) -> None:
    """Flame graphs of the culprit and its parent (recorded as `torchbench profile` does)."""
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        session.problems.append("flame graphs not recorded: py-spy is not installed")
        return
    links = {}
    for role in ("parent", "culprit"):
        commit = commits.Commit(result[role], "")
        site, why = session.ws.site(commit, session.python)
        if why:
            continue
        report = profile.profile_cases(session.python, session.ws.bench_dir,
                                       measure.side_env(measure.Side(role, commit.sha, site)), commit,
                                       session.ws.out, pyspy=pyspy, patterns=profile.patterns_for(jobs),
                                       only=lambda case: case.key in jobs)
        session.problems.extend(f"flame graph not recorded: {why}" for why in report.failures)
        for name, index in sorted(jobs):
            p = flamegraph.location(session.ws.out, commit.sha, name, index)
            if p.svg.exists():
                links.setdefault(f"{name}|{index}", {})[role] = str(p.svg.relative_to(session.ws.out))
    result["profiles"] = links


# -- the command ----------------------------------------------------------------------------------------

def _branch_order(repo, branch: str) -> dict[str, int]:
    try:
        shas = repo.git.rev_list("--first-parent", "--reverse", branch).split()
    except Exception as e:  # gitpython's GitCommandError: an unknown branch
        raise UserError(f"{repo.working_dir}: cannot list {branch!r}: {e}") from None
    return {sha: i for i, sha in enumerate(shas)}


def detect(out: Path, repo, branch: str, pattern: str | None, warnings: list[str]) -> list[changepoints.Found]:
    """The steps in OUT's results along BRANCH (a read of files: no measuring)."""
    order = _branch_order(repo, branch)
    found = changepoints.histories(results.iter_rows(out / "results", warnings), order)
    if pattern:
        found = [h for h in found if re.search(pattern, h.name)]
    return changepoints.find_steps(found)


def _confirm(session: Session, repo, group: list[tuple[changepoints.Found, dict]]) -> None:
    """Re-measure the commits around the steps of GROUP (one pair of commits); each (step, its record entry)."""
    before, after = group[0][0].before, group[0][0].after
    jobs = {(f.history.benchmark, f.history.index) for f, _ in group}
    rows = session.compare(commits.resolve(repo, before), commits.resolve(repo, after), jobs, "confirm")
    for f, entry in group:
        row = rows.get((f.history.benchmark, f.history.index))
        want = stats.REGRESSED if f.step.ratio > 1 else stats.IMPROVED
        status = row.status if row else "failed"
        entry["confirmation"] = _summary(row)
        entry["confirmed_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        if status == want:
            entry["status"] = CONFIRMED
        elif status in (stats.UNCHANGED, stats.REGRESSED, stats.IMPROVED):  # no change, or the other way
            entry["status"] = REFUTED
        else:
            entry["status"] = INCONCLUSIVE


def _culprit(session: Session, repo, entries: list[dict], no_profile: bool) -> None:
    """A confirmed step's commit: the first commit at the new level, or bisected when the step spans more."""
    first = entries[0]
    good, bad = commits.resolve(repo, first["before"]), commits.resolve(repo, first["after"])
    steps = {(e["benchmark"], e["index"]): e["confirmation"]["ratio"] for e in entries}
    result = bisect(session, repo, good, bad, steps, "")  # adjacent commits: found at once, nothing measured
    if result["status"] == "found" and not no_profile:
        _profiles(session, result, set(steps))
    for e in entries:
        e["culprit"] = result


def _print_steps(record: dict[str, dict], out: Path) -> None:
    steps = sorted(record.values(), key=lambda s: (s["status"] != CONFIRMED, s["key"]))
    print(f"\n== {len(steps)} step(s) in the history ({out / RECORD})")
    for s in steps:
        culprit = s.get("culprit") or {}
        where = (f"culprit {culprit['culprit'][:8]} {culprit.get('subject', '')[:50]}"
                 if culprit.get("culprit") else f"{s['before'][:8]}..{s['after'][:8]}")
        conf = s.get("confirmation") or {}
        measured = f", re-measured {conf['ratio']:.3f}x" if conf.get("ratio") else ""
        print(f"  {s['status']:12} {s['ratio']:6.3f}x{measured}  {s['name']}  [{s['env_name']}]  {where}")


def main(args: argparse.Namespace) -> int:
    if (args.good is None) != (args.bad is None):
        raise UserError("give both --good and --bad to bisect, or neither to find the history's steps")
    if args.good and not args.benchmark:
        raise UserError("bisecting needs a BENCHMARK (a regex of benchmark names)")
    with locked_folders(args) as f:
        newest = commits.resolve(f.repo, args.bad or args.branch)

        def session() -> Session:
            ws = open_workspace(out=f.out, env_dir=f.env_dir, repo_path=f.repo_path, repo=f.repo,
                                project_sha=newest.sha, benchmarks=args.benchmarks, fds=f.fds)
            return Session(args, ws, ws.pythons()[0])

        try:
            if args.good:
                return _bisect_command(session(), f.repo, args)
            return _find_command(f.out, f.repo, args, session)
        except KeyboardInterrupt:
            raise UserError("interrupted: what was recorded so far is kept") from None


def _bisect_command(s: Session, repo, args) -> int:
    good, bad = commits.resolve(repo, args.good), commits.resolve(repo, args.bad)
    result = bisect(s, repo, good, bad, None, args.benchmark)
    if result["status"] == "found" and not args.no_profile:
        _profiles(s, result, {(name, index) for name, index in result["jobs"]})
    atomic_write_text(s.ws.out / "find" / f"bisect-{good.short}..{bad.short}.json", json.dumps(result, indent=1))
    _print_bisect(result, s)
    return EXIT_OK if result["status"] == "found" else EXIT_INCONCLUSIVE


def _print_bisect(result: dict, s: Session) -> None:
    print()
    for skipped in result["skipped"]:
        print(f"skipped {skipped['sha'][:8]} ({skipped['subject'][:50]}): it does not build")
    if result["status"] == "found":
        print(f"culprit: {result['culprit']} {result['subject']}")
        for job, roles in sorted(result.get("profiles", {}).items()):
            for role, path in sorted(roles.items()):
                print(f"  flame graph, {role}: {s.ws.out / path}  ({job})")
    else:
        lo, hi = result["range"]
        print(f"inconclusive: between {lo[:8]} and {hi[:8]}: {result['why']}")
    print(f"({s.comparisons} interleaved comparison(s))")
    for p in s.problems:
        print(f"note: {p}")


def _find_command(out: Path, repo, args, session) -> int:
    warnings: list[str] = []
    found = detect(out, repo, args.branch, args.benchmark, warnings)
    for w in warnings:
        print(f"torchbench: warning: {w}", file=sys.stderr)
    record = read_record(out)
    todo: dict[tuple[str, str], list[tuple[changepoints.Found, dict]]] = {}
    for f in found:
        entry = f.to_dict()
        entry = record.setdefault(record_key(entry), {**entry, "status": UNCONFIRMED, "confirmation": None,
                                                      "culprit": None})
        if entry["status"] == UNCONFIRMED and not args.no_confirm:
            todo.setdefault((f.before, f.after), []).append((f, entry))
    write_record(out, record)
    s = session() if todo else None
    for group in todo.values():
        _confirm(s, repo, group)
        write_record(out, record)  # each confirmation is kept as soon as it is made
        confirmed = [entry for _, entry in group if entry["status"] == CONFIRMED]
        if confirmed:
            _culprit(s, repo, confirmed, args.no_profile)
            write_record(out, record)
    _print_steps(record, out)
    for p in s.problems if s else []:
        print(f"note: {p}")
    return EXIT_OK
