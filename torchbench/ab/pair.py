"""Two commits measured against each other: build both, list the suite, count, alternate processes.

`measure_pair` is what the alert and find both call; `evidence_from_results`
takes asv result files that already exist instead (each file one process's
evidence per benchmark).
"""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from .. import tools
from ..asv_bridge import results
from ..asv_bridge.workspace import Workspace
from ..asv_bridge.worker import MEASURED_TYPES, combinations, list_benchmarks
from ..errors import UserError
from ..project.commits import Commit
from . import collect
from . import rounds as rounds_mod
from .channels import SYSCALL_TRACES, deterministic_level, to_confirm, to_retrace
from .count_decision import DRAWS, MAX_PASSES
from .counts_cache import CountPlans, CountsCache
from .evidence import SIDES, Evidence, Job, JobInfo, Side
from .options import Policy, Rounds
from .sides import side_env

__all__ = ["FIRST_SHARE", "Measured", "count_plans", "evidence_from_results", "measure_pair", "patterns_for",
           "select_jobs"]

# the first valgrind processes' share of the counting's time; the rest confirms their candidates
FIRST_SHARE = 0.6


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
                 work: Path | None = None, on_round=None, torch: dict[str, str] | None = None) -> Measured:
    """Measure both sides in alternating processes; the evidence is saved in WORK (default
    OUT/alert/BASE..HEAD). `only`: these jobs alone, of the benchmarks `patterns` select (find measures the
    stepped parameter combinations, not all of a benchmark's). `torch`: each side's torch release, one of
    the workspace's environments each (an upgrade verdict: base and head may be the same commit); default:
    both sides in the workspace's first environment."""
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
    start = time.monotonic()
    evidence.phases["build and list"] = start - began
    valgrind = tools.find("valgrind") if rounds.counts else None
    if not rounds.counts:
        evidence.counts_off = "no counts: --no-counts"
    elif valgrind is None:
        evidence.counts_off = "no counts: valgrind is not installed"
        evidence.notes.append("instruction counts skipped: valgrind is not installed")
    # each side's asv setup_cache values, made once for its plan, valgrind processes and rounds
    cache_dir = work / "setup-cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    if rounds.counts and valgrind is not None:
        _count_both(ws.out / "counts", valgrind, ws.bench_dir, sides, both, evidence, policy, cache_dir,
                    start + 60 * rounds.budget_minutes * rounds.count_share)
    evidence.phases["instruction counts"] = time.monotonic() - start
    if rounds.counts:  # the other deterministic channel, off with the counts (--no-counts)
        start = time.monotonic()
        _syscalls_both(ws.out / "counts", valgrind, ws.bench_dir, sides, both, evidence, cache_dir,
                       start + 60 * rounds.budget_minutes * rounds.syscall_share)
        evidence.phases["system calls"] = time.monotonic() - start
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


def _count_both(root: Path, valgrind: Path, suite: Path, sides: dict[str, Side], jobs: list[Job],
                evidence: Evidence, policy: Policy, cache_dir: Path, deadline: float) -> None:
    """Both sides' instruction counts at once, one valgrind process each: counts do not depend on what else
    runs, and on two cores this halves the wait. Then the rows whose counts moved beyond the floor are
    counted in jittered processes, a pass of one a side at a time, each counting a row in count_decision.DRAWS
    layout draws (channels.to_confirm: one for every such row, up to count_decision.MAX_PASSES for one still
    near its bar), so that a count decision holds against
    the counts' noise between layouts (count_decision.py). Each valgrind process may take what is left until
    `deadline` (the counting's share of the budget), the first processes FIRST_SHARE of it, so that their
    candidates can still be confirmed; a pass that would start after it does not, and its
    rows keep their wall time. Each side has its own cache (its interpreter is part of the key) and its own
    list of problems."""
    caches = _caches(root, valgrind, suite, sides)
    plans = count_plans(root, suite, [sides[name] for name in SIDES], jobs, evidence, cache_dir)
    print(f"== simulated cycles weigh a last-level miss at {caches['base'].miss_cycles} cycles (what one costs on "
          f"this machine: torchbench_core.memory_price)", flush=True)

    def both_sides(todo: list[Job], jitter: int, until: float) -> dict[str, dict[str, int]]:
        left = max(1.0, until - time.monotonic())
        with ThreadPoolExecutor(max_workers=len(SIDES)) as pool:
            return dict(zip(SIDES, pool.map(lambda name: collect.collect_counts(
                suite, sides[name], todo, evidence, caches[name], jitter=jitter, plans=plans, cache_dir=cache_dir,
                timeout=left, draws=DRAWS if jitter else 1), SIDES)))

    # the first processes stop at FIRST_SHARE of the counting's time: what they leave is kept for confirming
    # their candidates (a suite whose first processes took the whole share confirmed none: issue 63)
    began = time.monotonic()
    tally = both_sides(jobs, 0, began + FIRST_SHARE * (deadline - began))
    for name in SIDES:
        t = tally[name]
        print(f"== instruction counts, {name}: {t['counted']} counted (one valgrind process), {t['cached']} from "
              f"the cache, {t['uncountable']} not countable, {t['failed']} failed", flush=True)
        costly = sorted(t.pop("seconds", {}).items(), key=lambda kv: -kv[1])
        if costly:  # what each row cost, the costliest first
            print(f"   per row, set-up included: {sum(s for _, s in costly):.0f} s in all; costliest "
                  + ", ".join(f"{row} {s:.1f} s" for row, s in costly[:5]), flush=True)
    for name in SIDES:
        tally[name]["confirmed"] = 0
    for jitter in range(1, MAX_PASSES + 1):
        confirm = to_confirm(evidence, jobs, policy.count_floor, jitter, deterministic_level(evidence, policy))
        if not confirm:
            break
        if time.monotonic() >= deadline:
            evidence.notes.append(f"instruction counts: the counting's share of the budget ran out before jittered "
                                  f"process {jitter} of {len(confirm)} row(s); their wall time decides them")
            break
        again = both_sides(confirm, jitter, deadline)
        print(f"== instruction counts, jittered valgrind process {jitter} a side ({DRAWS} layout draws) for "
              f"the {len(confirm)} row(s) whose counts moved beyond the floor: "
              f"{again['base']['counted'] + again['head']['counted']} counted, "
              f"{again['base']['cached'] + again['head']['cached']} from the cache", flush=True)
        for name in SIDES:
            again[name].pop("seconds", None)
            tally[name]["confirmed"] += again[name]["counted"] + again[name]["cached"]
    evidence.count_tally = tally


def _caches(root: Path, valgrind: Path | None, suite: Path, sides: dict[str, Side]) -> dict[str, CountsCache]:
    """Each side's cache of counts and system calls (its interpreter is part of the key), with its own list of
    problems."""
    caches: dict[str, CountsCache] = {}
    for name, side in sides.items():
        same = next((c for other, c in caches.items() if sides[other].python == side.python), None)
        caches[name] = same.view() if same else CountsCache(root, side.python, suite, valgrind)
    return caches


def _syscalls_both(root: Path, valgrind: Path | None, suite: Path, sides: dict[str, Side], jobs: list[Job],
                   evidence: Evidence, cache_dir: Path, deadline: float) -> None:
    """Both sides' system calls per call at once, one traced process each (collect.collect_syscalls): counts
    of calls, not times, so the process beside does not move them. Then the rows whose first traces differed
    in a call that may decide are traced again, SYSCALL_TRACES - 1 repeat traces a side in another process
    state each (channels.to_retrace), so that a decision rests on calls that repeat. Kept beside the counts,
    by commit. Every traced process may take what is left until `deadline` (the phase's share of the budget:
    collect.collect_syscalls gives each row its share of it); a repeat that would start after it does not."""
    caches = _caches(root, valgrind, suite, sides)

    def both_sides(todo: list[Job], repeat: int) -> dict[str, dict[str, int]]:
        left = max(1.0, deadline - time.monotonic())
        with ThreadPoolExecutor(max_workers=len(SIDES)) as pool:
            return dict(zip(SIDES, pool.map(lambda name: collect.collect_syscalls(
                suite, sides[name], todo, evidence, cache_dir, caches[name], repeat=repeat, timeout=left), SIDES)))

    tally = both_sides(jobs, 0)
    for name in SIDES:
        t = tally[name]
        print(f"== system calls, {name}: {t['traced']} traced (one process under strace), {t['cached']} from the "
              f"cache, {t['exact']} exact, {t['untraceable']} not traceable, {t['failed']} failed, {t['late']} past "
              f"the phase's share", flush=True)
    for name in SIDES:
        tally[name]["repeated"] = 0
    for repeat in range(1, SYSCALL_TRACES):
        again = to_retrace(evidence, jobs, repeat)
        if not again:
            break
        if time.monotonic() >= deadline:
            evidence.notes.append(f"system calls: the phase's share of the budget ran out before repeat trace "
                                  f"{repeat} of {len(again)} row(s); their calls decide nothing")
            break
        found = both_sides(again, repeat)
        print(f"== system calls, repeat trace {repeat} a side (another layout, the rows in reverse order) for the "
              f"{len(again)} row(s) whose calls differed: {found['base']['traced'] + found['head']['traced']} "
              f"traced, {found['base']['cached'] + found['head']['cached']} from the cache", flush=True)
        for name in SIDES:
            tally[name]["repeated"] += found[name]["traced"] + found[name]["cached"]
    for name in SIDES:
        evidence.notes.extend(caches[name].problems)
    evidence.syscall_tally = tally


def count_plans(root: Path, suite: Path, sides: list[Side], jobs: list[Job], evidence: Evidence,
                cache_dir: Path | None = None) -> dict[Job, tuple[int, int]]:
    """The plan of every countable `time_` case, and of every `track_` or `time_` case that times a Timer (its
    statement's runs), among `jobs`: kept ones (CountPlans), the rest made now by the base's code (natively, a
    few seconds) and kept, so that both sides, and every later commit, count a case under one plan. A case
    counted as its Timer's statement is marked so in evidence.jobs (by_call False): its counts' noise is a
    statement's."""
    store = CountPlans(root, suite)
    kept, kept_statements = store.load(), store.statements()
    wanted = {job: CountsCache.case(job, evidence.jobs[job].params) for job in jobs
              if evidence.jobs[job].by_call and not evidence.jobs[job].uncountable}
    plans = {job: kept[case] for job, case in wanted.items() if case in kept}
    statements = {job for job, case in wanted.items() if case in kept_statements}
    todo = [job for job in wanted if job not in plans and job not in statements]
    if todo:
        made, made_statements, problems = collect.plan_counts(suite, sides, todo, cache_dir)
        evidence.notes.extend(problems)
        store.store({wanted[job]: plan for job, plan in made.items()}, {wanted[job] for job in made_statements})
        plans.update(made)
        statements |= made_statements
    for job in statements:
        evidence.jobs[job].by_call = False
    evidence.notes.extend(store.problems)
    return plans


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
