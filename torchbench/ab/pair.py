"""Two commits measured against each other: build both, list the suite, count, alternate processes.

`measure_pair` is what the alert and find both call; `evidence_from_results`
takes asv result files that already exist instead (each file one process's
evidence per benchmark).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from .. import tools
from ..asv_bridge import results
from ..asv_bridge.workspace import Workspace
from ..asv_bridge.worker import MEASURED_TYPES, combinations, list_benchmarks
from ..errors import UserError
from ..project.commits import Commit
from . import rounds as rounds_mod
from . import schedule
from .evidence import SIDES, Evidence, Job, JobInfo, Side
from .options import Policy, Rounds
from .sides import side_env

__all__ = ["Measured", "evidence_from_results", "measure_pair", "patterns_for", "select_jobs"]


@dataclass
class Measured:
    """What measuring a pair gave: the evidence, what stopped it (a commit that does not build, a suite
    that does not list), and where it ran (what flame graphs of the same cases need)."""

    evidence: Evidence
    problems: list[str] = field(default_factory=list)
    suite: Path | None = None
    sides: dict[str, Side] = field(default_factory=dict)
    work: Path | None = None  # where the evidence is kept


def patterns_for(jobs) -> list[str]:
    """Patterns that select exactly these benchmarks (then `only` picks their parameter combinations)."""
    return [f"^{re.escape(name)}$" for name in sorted({name for name, _ in jobs})]


def uncountable_of(listed: dict) -> str:
    """Why a listed benchmark cannot be counted ("" where it can). A worker older than the "uncountable" field
    (a project measuring its own history) counts TimerSuite cases only."""
    if "uncountable" in listed:
        return listed["uncountable"]
    return "" if listed.get("timer_suite") else "this commit's worker counts TimerSuite cases only"


def select_jobs(listing: dict[str, list[dict]], patterns: list[str] | tuple[str, ...],
                evidence: Evidence) -> list[Job]:
    """The timed parameter combinations of the benchmarks matching any of `patterns` (all without), as
    each side lists them; each is registered in `evidence.jobs`."""
    jobs = []
    for side, benchmarks in listing.items():
        for b in benchmarks:
            if patterns and not any(re.search(p, b["name"]) for p in patterns):
                continue
            if b["type"] not in MEASURED_TYPES:
                continue
            for index, combo in combinations(b):
                job = (b["name"], index)
                evidence.add_job(job, JobInfo(f"{b['name']}({', '.join(combo)})" if combo else b["name"],
                                              list(combo), list(b.get("param_names") or []), b.get("unit"),
                                              uncountable_of(b), not b.get("timer_suite")), side)
                if job not in jobs:
                    jobs.append(job)
    return jobs


def measure_pair(ws: Workspace, base: Commit, head: Commit, rounds: Rounds, policy: Policy, *,
                 patterns: list[str] | tuple[str, ...] = (), only: set[Job] | None = None,
                 work: Path | None = None, on_round=None, torch: dict[str, str] | None = None,
                 origin: str = "torchbench alert") -> Measured:
    """Measure both sides in alternating processes; the evidence is saved in WORK (default
    OUT/alert/BASE..HEAD). `only`: these jobs alone, of the benchmarks `patterns` select (find measures the
    stepped parameter combinations, not all of a benchmark's). `torch`: each side's torch release, one of
    the workspace's environments each (an upgrade verdict: base and head may be the same commit); default:
    both sides in the workspace's first environment. `origin`: what measures (kept with its counts)."""
    began = time.monotonic()
    measured = Measured(Evidence())
    evidence = measured.evidence
    if torch and torch["base"] != torch["head"]:
        evidence.builds_differ = f"torch {torch['base']} vs {torch['head']}"
    pythons = ws.pythons()
    by_torch = {e.torch: e.python for e in ws.asv.environments}
    work = work or ws.out / "alert" / (f"{base.short}..{head.short}" if not torch else
                                       f"{base.short}-torch{torch['base']}..{head.short}-torch{torch['head']}")
    sides = {}
    for name, commit in zip(SIDES, (base, head)):
        python = by_torch[torch[name]] if torch else pythons[0]
        install, why = ws.install(commit, python)
        if why:
            measured.problems.append(f"the {name} commit {commit.short} does not build: {why}")
            continue
        sides[name] = Side(name, commit.sha, install, python, torch[name] if torch else "")
    if len(sides) < 2:
        return measured
    measured.suite, measured.sides, measured.work = ws.bench_dir, sides, work
    try:
        listing = {name: list_benchmarks(side.python, ws.bench_dir, side_env(side),
                                         f" with the {name} commit {side.commit[:8]}")
                   for name, side in sides.items()}
    except UserError as e:
        measured.problems.append(str(e))
        return measured
    jobs = select_jobs(listing, patterns, evidence)
    if only is not None:
        jobs = [j for j in jobs if j in only]
        evidence.jobs = {j: info for j, info in evidence.jobs.items() if j in only}
    if not jobs:
        raise UserError(f"{ws.bench_dir}: no timed benchmark matches {list(patterns) or 'the suite'}")
    both = evidence.on_both(jobs)
    evidence.phases["build and list"] = time.monotonic() - began
    valgrind = tools.find("valgrind") if rounds.counts else None
    if not rounds.counts:
        evidence.counts_off = "no counts: --no-counts"
    elif valgrind is None:
        evidence.counts_off = "no counts: valgrind is not installed"
        evidence.notes.append("instruction counts skipped: valgrind is not installed")
    # each side's asv setup_cache values, made once for its plan, valgrind processes and rounds
    cache_dir = work / "setup-cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    if rounds.counts:  # the deterministic channels, each in its share of the budget (schedule.py)
        schedule.deterministic(ws.out / "counts", valgrind, ws.bench_dir, sides, both, evidence, policy, rounds,
                               cache_dir, origin)
    start = time.monotonic()

    def progress(ev: Evidence, active: int) -> None:
        print(f"== round {ev.rounds}: {active} benchmark(s) measured, {len(ev.decided)} decided early, "
              f"{time.monotonic() - start:.0f} s", flush=True)
        if on_round:
            on_round(ev, active)

    rounds_mod.measure_rounds(ws.bench_dir, sides, both, evidence, rounds=rounds, policy=policy,
                              deadline=began + 60 * rounds.budget_minutes, cache_dir=cache_dir,
                              on_round=progress)
    evidence.phases["rounds"] = time.monotonic() - start
    atomic_write_text(work / "evidence.json", json.dumps(evidence.to_dict()))
    return measured


def _add_results(paths: list[Path], side: str, evidence: Evidence) -> str:
    """Each asv result file is one process's evidence; returns the commit they are for."""
    seen = set()
    for path in paths:
        found = results.load_paths([path])
        evidence.notes.extend(found.warnings)
        for row in found.rows:
            seen.add(row.commit)
            job = (row.benchmark, row.index)
            evidence.add_job(job, JobInfo(row.name, [repr(v) for _, v in row.params], [n for n, _ in row.params],
                                          row.unit), side)
            if row.status == "ok":
                evidence.values[side].setdefault(job, []).append(row.value)
            elif row.status == "failed":
                evidence.errors[side][job] = "no result in the asv results file"
            else:  # asv's skip (NaN): with the reason our plugin recorded (a CUDA device this machine lacks, ...)
                outcome = found.outcomes.get((row.machine, row.commit, row.env_name))
                evidence.skip(side, job, outcome.skipped.get(row.benchmark, {}).get(row.index, "") if outcome else "")
    if len(seen) != 1:
        raise UserError(f"the {side} results must hold results of exactly one commit; found {len(seen)}")
    return seen.pop()


def evidence_from_results(base: list[Path], head: list[Path]) -> tuple[Evidence, str, str]:
    """Evidence from asv result files or folders (each file one process); with the base and head commits."""
    evidence = Evidence(counts_off="no counts: asv result files hold none")
    return evidence, _add_results(base, "base", evidence), _add_results(head, "head", evidence)
