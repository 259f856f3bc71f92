"""`torchbench find`: since when? Steps in the history, confirmed by re-measurement, bisected to their commit.

    torchbench find [BENCHMARK]                      steps in OUT's history (changepoints), each confirmed
                                                     by measuring the commits on both sides of it in
                                                     alternating processes (torchbench.ab, as the alert does), and narrowed
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

import dataclasses
import datetime
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import git

from torchbench_core.storage import atomic_write_text

from .. import stats, tools
from ..ab.channels import WALL
from ..ab.evidence import Evidence, Job, Side
from ..ab.options import Policy, Rounds
from ..ab.pair import measure_pair, patterns_for, select_jobs
from ..ab.sides import side_env
from ..ab.verdict import Verdict, decide, prepare, settle
from ..asv_bridge import results
from ..asv_bridge.workspace import Workspace
from ..asv_bridge.worker import list_benchmarks
from ..errors import UserError
from ..profiling import flamegraph
from ..profiling.record import profile_cases
from ..project import commits
from . import changepoints
from .step_record import (CONFIRMED, INCONCLUSIVE, RECORD, REFUTED, UNCONFIRMED, read_record, record_key,
                          shown_status, write_record)

__all__ = ["CULPRIT_ERROR", "FOUND", "FindOptions", "Session", "StepsFound", "bisect", "bisect_range", "detect",
           "find_steps", "render_bisect", "render_steps"]

FOUND = "found"  # a bisection's status when it named the culprit (otherwise INCONCLUSIVE)
CULPRIT_ERROR = 0.05  # the most a bisection's named culprit may be wrong (it sets each probe's interval level)


@dataclass(frozen=True)
class FindOptions:
    """How `find` confirms and narrows steps."""

    rounds: Rounds = field(default_factory=lambda: Rounds(budget_minutes=3.0))  # per comparison
    policy: Policy = field(default_factory=Policy)
    profile: bool = True  # flame graphs of each culprit and its parent


# -- measuring two commits against each other ---------------------------------------------------------

@dataclass
class Session:
    """What every comparison of a find needs: the workspace, its interpreter, and the measurement options."""

    ws: Workspace
    options: FindOptions
    problems: list[str] = field(default_factory=list)
    comparisons: int = 0

    @property
    def python(self) -> Path:
        return self.ws.pythons()[0]

    def measure(self, a: commits.Commit, b: commits.Commit, jobs: set[Job], work: str,
                policy: Policy | None = None) -> Evidence:
        """a against b, interleaved, on the benchmark cases of `jobs`: the evidence."""
        self.comparisons += 1
        print(f"== comparing {a.short} with {b.short} ({', '.join(sorted({n for n, _ in jobs}))})", flush=True)
        measured = measure_pair(self.ws, a, b, self.options.rounds, policy or self.options.policy,
                                patterns=patterns_for(jobs), only=jobs,
                                work=self.ws.out / "find" / work / f"{a.short}..{b.short}", origin="torchbench find")
        self.problems.extend(measured.problems)
        return measured.evidence

    def verdicts(self, a: commits.Commit, b: commits.Commit, jobs: set[Job], work: str,
                 policy: Policy | None = None) -> dict[Job, Verdict]:
        """a against b, decided on its own; verdicts by job."""
        policy = policy or self.options.policy
        return {(r.benchmark, r.index): r for r in decide(self.measure(a, b, jobs, work, policy), policy)
                if (r.benchmark, r.index) in jobs}


def _summary(row: Verdict | None) -> dict | None:
    if row is None:
        return None
    c = row.comparison
    return {"status": row.status, "label": row.label, "decided_by": row.decided_by, "counts_delta": row.counts_delta,
            "ratio": c.ratio if c else None, "ci_low": c.ci_low if c else None,
            "ci_high": c.ci_high if c else None, "p_value": c.p_value if c else None,
            "processes": [c.n_base, c.n_head] if c else None, "error": row.error}


def _side_of(row: Verdict | None, step: float) -> str:
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


def bisect(session: Session, repo: git.Repo, good: commits.Commit, bad: commits.Commit,
           steps: dict[Job, float] | None, pattern: str) -> dict:
    """Narrow good..bad to the commit that made the step. STEPS: the step's size per job when known
    (from the history); otherwise good and bad are compared first to find it."""
    chain = _chain(repo, good, bad)
    result = {"good": good.sha, "bad": bad.sha, "status": INCONCLUSIVE, "culprit": None, "subject": "",
              "skipped": [], "probes": [], "range": [good.sha, bad.sha], "why": "", "jobs": []}
    if steps is None:
        jobs = _suite_jobs(session, good, bad, pattern)
        rows = session.verdicts(good, bad, jobs, "bisect")
        steps = {job: r.comparison.ratio for job, r in rows.items()
                 if r.status in (stats.REGRESSED, stats.IMPROVED) and r.comparison}
        result["reference"] = {f"{j[0]}|{j[1]}": _summary(r) for j, r in rows.items()}
        if not steps:
            result["why"] = (f"no benchmark matching {pattern!r} changed between {good.short} and {bad.short} "
                             f"(statuses: {sorted({r.status for r in rows.values()})})")
            return result
    result["jobs"] = sorted([name, index] for name, index in steps)
    # each probe reads 2 intervals a step (against both ends); a wrong move needs one of them to miss on one
    # side, (1 - confidence) / 2 each, so at most K probes of J steps err with probability <= K J (1 - c):
    # the probes' confidence makes that CULPRIT_ERROR
    probes = max(1, math.ceil(math.log2(max(2, len(chain) - 1))))
    probe_policy = dataclasses.replace(session.options.policy,
                                       confidence=1 - CULPRIT_ERROR / (probes * len(steps)))
    result.update(error_bound=CULPRIT_ERROR, probe_confidence=probe_policy.confidence)
    lo, hi = 0, len(chain) - 1
    unbuildable: set[int] = set()
    while True:
        inner = [i for i in range(lo + 1, hi) if i not in unbuildable]
        if not inner:
            break
        mid = inner[len(inner) // 2]
        _, why = session.ws.install(chain[mid], session.python)
        if why:
            unbuildable.add(mid)
            result["skipped"].append({"sha": chain[mid].sha, "subject": chain[mid].subject, "why": why[-500:]})
            print(f"== {chain[mid].short} does not build: skipped", flush=True)
            continue
        left = session.verdicts(chain[lo], chain[mid], set(steps), "bisect", probe_policy)
        right = session.verdicts(chain[mid], chain[hi], set(steps), "bisect", probe_policy)
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
    result.update(status=FOUND, culprit=chain[hi].sha, subject=chain[hi].subject, parent=chain[lo].sha)
    return result


def _suite_jobs(session: Session, a: commits.Commit, b: commits.Commit, pattern: str) -> set[Job]:
    """Every (benchmark, index) of the suite whose row name matches PATTERN, as the newer commit lists it."""
    install, why = session.ws.install(b, session.python)
    if why:
        raise UserError(f"the bad commit {b.short} does not build: {why[-500:]}")
    listing = list_benchmarks(session.python, session.ws.bench_dir,
                              side_env(Side("head", b.sha, install, session.python)),
                              f" with the bad commit {b.short}")
    evidence = Evidence()
    jobs = select_jobs({"head": listing}, [], evidence)
    chosen = {j for j in jobs if re.search(pattern, evidence.jobs[j].name)}
    if not chosen:
        raise UserError(f"no timed benchmark of {session.ws.bench_dir} matches {pattern!r}")
    return chosen


def _profiles(session: Session, result: dict, jobs: set[Job]) -> None:
    """Flame graphs of the culprit and its parent (recorded as `torchbench profile` does)."""
    pyspy = tools.find("py-spy")
    if pyspy is None:
        session.problems.append("flame graphs not recorded: py-spy is not installed")
        return
    links = {}
    for role in ("parent", "culprit"):
        commit = commits.resolve(session.ws.repo, result[role])  # with its subject, for the progress line
        install, why = session.ws.install(commit, session.python)
        if why:
            continue
        report = profile_cases(session.python, session.ws.bench_dir,
                               side_env(Side(role, commit.sha, install, session.python)),
                               commit, session.ws.out, pyspy=pyspy, patterns=patterns_for(jobs),
                               only=lambda case: case.key in jobs)
        session.problems.extend(f"flame graph not recorded: {why}" for why in report.failures)
        for name, index in sorted(jobs):
            p = flamegraph.location(session.ws.out, commit.sha, name, index)
            if p.svg.exists():
                links.setdefault(f"{name}|{index}", {})[role] = str(p.svg.relative_to(session.ws.out))
    result["profiles"] = links


# -- the command ----------------------------------------------------------------------------------------

def _branch_order(repo: git.Repo, branch: str) -> dict[str, int]:
    try:
        shas = repo.git.rev_list("--first-parent", "--reverse", branch).split()
    except git.GitCommandError as e:  # an unknown branch
        raise UserError(f"{repo.working_dir}: cannot list {branch!r}: {e.stderr.strip()}") from None
    return {sha: i for i, sha in enumerate(shas)}


def detect(out: Path, repo: git.Repo, branch: str, pattern: str | None) -> tuple[list[changepoints.Found], list[str]]:
    """The steps in OUT's results along BRANCH (a read of files: no measuring), and the warnings of files
    that could not be read."""
    warnings: list[str] = []
    order = _branch_order(repo, branch)
    found = changepoints.histories(results.iter_rows(out / "results", warnings), order)
    if pattern:
        found = [h for h in found if re.search(pattern, h.name)]
    return changepoints.find_steps(found), warnings


def _job_of(found: changepoints.Found) -> Job:
    """The benchmark and parameter combination that re-measures a step: a step in a row of instruction counts
    (history/counts.py) is its timed benchmark's, whose re-measurement counts it again."""
    return results.timed_benchmark(found.history.benchmark), found.history.index


def _confirm(session: Session, repo: git.Repo, groups: list[list[tuple[changepoints.Found, dict]]]) -> None:
    """Re-measure the commits around the steps of each group (one pair of commits; each member a step and its
    record entry), then decide every candidate's row together: one weighted Benjamini-Hochberg at the
    policy's FDR over all of them (verdict.settle), each comparison's looks planned for that whole family."""
    family = sum(len(group) for group in groups)
    policy = dataclasses.replace(session.options.policy, family=family)
    prepared = []
    for group in groups:
        before, after = group[0][0].before, group[0][0].after
        jobs = {_job_of(f) for f, _ in group}
        evidence = session.measure(commits.resolve(repo, before), commits.resolve(repo, after), jobs, "confirm",
                                   policy)
        prepared.append(prepare(evidence, policy))
    settle(prepared, policy)
    for group, one in zip(groups, prepared):
        _record_confirmation(group, {(r.benchmark, r.index): r for r in one.rows}, policy)


def _record_confirmation(group: list[tuple[changepoints.Found, dict]], rows: dict[Job, Verdict],
                         policy: Policy) -> None:
    """Each step's entry from its row's verdict: confirmed when it agrees in direction, refuted when it says
    unchanged or the opposite, otherwise inconclusive."""
    for f, entry in group:
        row = rows.get(_job_of(f))
        want = stats.REGRESSED if f.step.ratio > 1 else stats.IMPROVED
        status = row.status if row else "failed"
        entry["confirmation"] = _summary(row)
        if entry["confirmation"] is not None:
            # the family its false discoveries are controlled over: every candidate of this run
            entry["confirmation"]["fdr"] = policy.fdr
            entry["confirmation"]["family"] = policy.family
        entry["confirmed_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        if status == want:
            entry["status"] = CONFIRMED
        elif status in (stats.UNCHANGED, stats.REGRESSED, stats.IMPROVED):  # no change, or the other way
            entry["status"] = REFUTED
        else:
            entry["status"] = INCONCLUSIVE


def _culprit(session: Session, repo: git.Repo, entries: list[dict]) -> None:
    """A confirmed step's commit: the first commit at the new level, or bisected when the step spans more."""
    first = entries[0]
    good, bad = commits.resolve(repo, first["before"]), commits.resolve(repo, first["after"])
    steps = {(results.timed_benchmark(e["benchmark"]), e["index"]): e["confirmation"]["ratio"] for e in entries}
    result = bisect(session, repo, good, bad, steps, "")  # adjacent commits: found at once, nothing measured
    if result["status"] == FOUND and session.options.profile:
        _profiles(session, result, set(steps))
    for e in entries:
        e["culprit"] = result


@dataclass
class StepsFound:
    """What `find_steps` did: the record of every step (OUT/changepoints.json), and what went wrong."""

    record: dict[str, dict]
    warnings: list[str] = field(default_factory=list)  # result files that could not be read
    problems: list[str] = field(default_factory=list)  # comparisons that could not be made


def find_steps(out: Path, repo: git.Repo, session: Callable[[], Session], *, branch: str = "HEAD",
               pattern: str | None = None, confirm: bool = True) -> StepsFound:
    """Detect the steps in OUT's history; confirm each new one (and name its culprit) with `session()`'s
    comparisons, made only when something is to be measured. The record is written after each step."""
    found, warnings = detect(out, repo, branch, pattern)
    record = read_record(out)
    todo: dict[tuple[str, str], list[tuple[changepoints.Found, dict]]] = {}
    for f in found:
        entry = f.to_dict()
        entry = record.setdefault(record_key(entry), {**entry, "status": UNCONFIRMED, "confirmation": None,
                                                      "culprit": None})
        if entry["status"] == UNCONFIRMED and confirm:
            todo.setdefault((f.before, f.after), []).append((f, entry))
    write_record(out, record)
    s = session() if todo else None
    if s is not None:
        # every candidate of this run in one family: measured pair by pair, decided together (an interrupted
        # run keeps the record as it was, the candidates unconfirmed, and the next find measures them again)
        _confirm(s, repo, list(todo.values()))
        write_record(out, record)
    for group in todo.values():
        confirmed = [entry for _, entry in group if entry["status"] == CONFIRMED]
        if confirmed:
            _culprit(s, repo, confirmed)
            write_record(out, record)  # each culprit is kept as soon as it is named
    return StepsFound(record, warnings, s.problems if s else [])


def bisect_range(session: Session, repo: git.Repo, good_rev: str, bad_rev: str, pattern: str) -> dict:
    """Bisect good..bad on the cases matching PATTERN; the result is also kept in OUT/find."""
    good, bad = commits.resolve(repo, good_rev), commits.resolve(repo, bad_rev)
    result = bisect(session, repo, good, bad, None, pattern)
    if result["status"] == FOUND and session.options.profile:
        _profiles(session, result, {(name, index) for name, index in result["jobs"]})
    atomic_write_text(session.ws.out / "find" / f"bisect-{good.short}..{bad.short}.json",
                      json.dumps(result, indent=1))
    return result


def render_steps(found: StepsFound, out: Path) -> str:
    steps = sorted(found.record.values(), key=lambda s: (s["status"] != CONFIRMED, s["key"]))
    lines = [f"\n== {len(steps)} step(s) in the history ({out / RECORD})"]
    for s in steps:
        culprit = s.get("culprit") or {}
        where = (f"culprit {culprit['culprit'][:8]} {culprit.get('subject', '')[:50]}"
                 if culprit.get("culprit") else f"{s['before'][:8]}..{s['after'][:8]}")
        if culprit.get("culprit") and culprit.get("probes"):  # bisected: its error bound
            where += f" (bisected; wrong with probability <= {culprit['error_bound']:.0%})"
        conf = s.get("confirmation") or {}
        measured = f", re-measured {conf['ratio']:.3f}x" if conf.get("ratio") else ""
        if conf.get("ratio") and conf.get("ci_low") is not None and conf.get("ci_high") is not None:
            measured += f" [{conf['ci_low']:.3f}, {conf['ci_high']:.3f}]"
        if conf.get("decided_by") not in (None, "", WALL):  # the channel that decided, as the alert says
            measured += f", decided by {conf['decided_by']}"
        lines.append(f"  {shown_status(s['status']):12} {s['ratio']:6.3f}x{measured}  {s['name']}  [{s['env_name']}]  "
                     f"{where}")
    lines += [f"note: {p}" for p in found.problems]
    return "\n".join(lines)


def render_bisect(result: dict, s: Session) -> str:
    lines = [""]
    for skipped in result["skipped"]:
        lines.append(f"skipped {skipped['sha'][:8]} ({skipped['subject'][:50]}): it does not build")
    if result["status"] == FOUND:
        bound = (f" (wrong with probability at most {result['error_bound']:.0%}: each probe's intervals at "
                 f"{result['probe_confidence']:.2%})" if result.get("probes") else "")
        lines.append(f"culprit: {result['culprit']} {result['subject']}{bound}")
        for job, roles in sorted(result.get("profiles", {}).items()):
            for role, path in sorted(roles.items()):
                lines.append(f"  flame graph, {role}: {s.ws.out / path}  ({job})")
    else:
        lo, hi = result["range"]
        lines.append(f"inconclusive: between {lo[:8]} and {hi[:8]}: {result['why']}")
    lines.append(f"({s.comparisons} interleaved comparison(s))")
    lines += [f"note: {p}" for p in s.problems]
    return "\n".join(lines)
