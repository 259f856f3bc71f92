"""The deterministic channels' measurements, one side at a time: instruction counts and simulated cycles
(valgrind processes, `collect_counts`, planned by `plan_counts`) and system calls (a process traced under
strace, `collect_syscalls`). Each stores what it measured in the evidence and weighs nothing: the channels
(channels.py) read it, and the verdict (verdict.py) decides. The rounds (rounds.py) schedule only wall time;
schedule.py runs these before them, both sides at once, each phase in its share of the budget.
"""

from __future__ import annotations

import collections
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from torchbench_core._callgrind_worker import JITTER_ENV, LAYOUT_ENV
from torchbench_core.asv_worker import (CONTINUE_ENV, COUNT_NUMBER, DEADLINE_ENV, DRAWS_ENV, PROGRESS_ENV,
                                        SETUP_LIMIT_ENV, SIMULATE_ENV)
from torchbench_core.callgrind import DEADLINE_PASSED, SHARE_PASSED
from torchbench_core.memory_price import PRICE_ENV
from torchbench_core.syscalls import DEADLINE_ENV as SYSCALLS_DEADLINE_ENV
from torchbench_core.syscalls import OUT_OF_TIME, REPEAT_ENV

from ..asv_bridge.worker import WORKER, read_json
from ..errors import UserError, last_line
from .counts_cache import CONTINUED, DRAWN, JITTERED, REPEATED, CountsCache
from .evidence import Evidence, Job, Side
from .sides import setup_cache_of, side_env

__all__ = ["COUNTS_WRAP_UP", "Continued", "Planned", "collect_counts", "collect_syscalls", "continued_in_cache",
           "place_continued", "plan_counts"]

# seconds before a counting process's timeout at which it stops counting and reports what it has
COUNTS_WRAP_UP = 30
# native setup seconds from which a row is counted after the rest (5 s or more under valgrind): the rows before
# it keep their order (a row's counts depend on what ran before it in its process, and kept counts on it)
SLOW_SETUP = 0.1


class Continued(NamedTuple):
    """Rows a first counting process counts again once it has counted every row, in the same valgrind process
    (no second start-up: torchbench_core.callgrind.Again): the `jitter`-th jittered process of each, in `draws`
    layout draws, until `deadline` (a time.time())."""
    jobs: list[Job]
    jitter: int
    draws: int
    deadline: float


def collect_counts(suite: Path, side: Side, jobs: list[Job], evidence: Evidence,
                   cache: CountsCache | None = None, jitter: int = 0,
                   plans: dict[Job, tuple[int, int]] | None = None,
                   cache_dir: Path | None = None, timeout: float = 3600, draws: int = 1,
                   on_row: Callable[[Job], Any] | None = None,
                   setups: dict[Job, float] | None = None, simulate: bool = True,
                   then: Callable[[], Continued | None] | None = None) -> dict[str, int]:
    """Instruction counts of the countable cases among `jobs` (TimerSuite cases and asv time_ methods), from
    the cache where it has them, the rest in one valgrind process for this side (then cached). Each job left
    without counts gets its reason in evidence.uncounted. `jitter` k > 0: the k-th valgrind process whose
    memory layout is jittered (torchbench_core._callgrind_worker._jitter_layout), for the jobs whose first
    counts moved beyond the floor (appended to evidence.counts_again; cached apart from the first; a job it
    fails for keeps the processes it has, which then decide nothing); with `draws` D > 1, that process counts
    each job in D layout draws (collect_callgrind_many(draws)), each appended as one jittered process.
    `timeout`: the seconds the valgrind process may take (the counting's share of the budget: what it counted
    by then is kept, the rest keeps its wall time). `plans`: the calls per counted run and
    warm-up calls of `time_` cases (plan_counts), the same for every side and commit; the plan is part of the
    cached case's key. `cache_dir`: the folder of the sides' setup_cache values (setup_cache_of), so that a
    side's setup_cache is made once for its plan, counts and rounds (None: the worker makes its own).
    Returns how many were counted, came from the cache (and what had counted those: "cached_by": {origin:
    rows}, CountsCache.origins), are not countable, and failed, and each row's
    seconds in the valgrind process, set-up included ("seconds": {row name: seconds}: what it cost). A row the
    counting process found timing a Timer (a Timer-in-`track_` row, which no plan tells) is marked counted as
    a statement in evidence.jobs (by_call False), and its plan, where the process made it, is returned
    ("statements": {job: (runs per counted run, warm-up runs)}: schedule.count_both keeps it).
    Rows are counted cheapest first (by their plans: a row planned to few calls a run is a costly one; a row
    whose setup takes SLOW_SETUP seconds or more natively, by `setups`, after the others, the slowest last),
    so that a deadline leaves the fewest rows uncounted; both sides count in the same order (a row's counts
    depend on what ran before it in its process).
    `on_row(job)` (the first process, jitter 0): called, from another thread, as each job's first counts are
    in the evidence (those from the cache at once, the others as the valgrind process counts them), so that a
    caller can confirm a row whose counts moved while the rest are counted (schedule.count_both).
    `simulate` False (a jittered process, jitter > 0): counts alone, no simulated caches (half
    the valgrind seconds of a small row: for rows whose counts moved, which simulated cycles cannot decide,
    channels.SimulatedCycles); a row cached without them is then enough.
    `then()` (the first process): asked, from another thread, once the valgrind process has counted every
    row; a Continued has it count those of its jobs it counted again, each as jittered process `jitter`
    (placed as one started jittered would be, evidence.counts_again; cached apart, counts_cache.CONTINUED),
    then asks again; None ends it. The answer's "continued" is how many rows it counted so, a round each."""
    plans = plans or {}
    uncounted = evidence.uncounted[side.name]
    countable = []
    for job in jobs:
        why = evidence.jobs[job].uncountable
        if why:
            uncounted[job] = f"not countable: {why}"
        else:
            countable.append(job)
    again = jitter > 0
    drawn = DRAWN.format(draws) if again and draws > 1 else ""
    cases = {job: CountsCache.case(job, evidence.jobs[job].params, plans.get(job)) +
             (JITTERED.format(jitter) + drawn if again else "") for job in countable}
    cached = cache.load(side.commit) if cache else {}
    cached_simulated = cache.load_simulated(side.commit) if cache else {}
    origins = cache.origins(side.commit) if cache else {}
    setups = setups or {}
    # a jittered process that simulates counts again a row kept without simulated cycles (counted by one that
    # did not simulate)
    missing = sorted((job for job in countable if cases[job] not in cached
                      or (again and simulate and cases[job] not in cached_simulated)),
                     key=lambda job: (setups.get(job, 0.0) if setups.get(job, 0.0) >= SLOW_SETUP else 0.0,
                                      -plans[job][0] if job in plans else -COUNT_NUMBER))

    def place(job: Job, counts: list[float] | None, sim: dict | None, jittered: bool = again,
              drawn: int = draws) -> None:
        """A job's counts (and simulated cycles) in the evidence: a first process's, or a jittered one's draws."""
        if counts and jittered:
            _place_draws(evidence, side.name, job, counts, sim, drawn)
        elif counts:
            evidence.counts[side.name][job] = counts
            if sim:
                evidence.cycles[side.name][job] = sim["cycles"]
                if sim.get("events"):
                    evidence.sim_events[side.name][job] = sim["events"]

    by_key = {f"{job[0]}|{job[1]}": job for job in missing}
    continued: dict[str, list] = {}  # the rows counted again in the first process: their cache keys' values
    continued_sim: dict[str, dict] = {}

    def streamed(line: dict) -> None:  # a row the first process has just counted (or counted again)
        job = by_key.get(line.get("key"))
        if job is None or not line.get("counts"):
            return
        sim = {"cycles": line["cycles"], "events": line.get("events", [])} if "cycles" in line else None
        if line.get("again"):
            key = _continued_key(cases[job], line["again"], line["draws"])
            continued[key] = line["counts"]
            if sim:
                continued_sim[key] = sim
            place(job, line["counts"], sim, True, int(line["draws"]))
        else:
            if line.get("statement"):  # its kind before its counts are read (channels.to_confirm)
                evidence.jobs[job].by_call = False
            place(job, line["counts"], sim)
            on_row(job)

    follow = on_row is not None and not again
    if follow:
        for job in countable:
            if cases[job] in cached:
                place(job, cached[cases[job]], cached_simulated.get(cases[job]))
                on_row(job)
    def ask() -> dict | None:
        """The worker's next rows to count again (CONTINUE_ENV), those of `then()`'s it counted."""
        more = then()
        keys = [key for key, job in by_key.items() if more and job in more.jobs]
        return {"keys": keys, "jitter": more.jitter, "draws": more.draws, "deadline": more.deadline} if more else None

    # a planned job says how its plan counts it (1: call by call, which the worker then need not find out by
    # running it natively; 0: as its Timer's statement)
    found = _count(suite, side, [(*job, *plans[job], int(evidence.jobs[job].by_call)) if job in plans else job
                                 for job in missing], cache_dir=cache_dir,
                   jitter=jitter, timeout=timeout, draws=draws if again else 1, simulate=simulate or not again,
                   miss_cycles=cache.miss_cycles if cache else None,
                   on_line=streamed if follow else None, ask=ask if follow and then else None) if missing else {}
    counted, simulated, failures, cost, learned = {}, {}, {}, {}, {}
    for job in missing:
        result = found.get(f"{job[0]}|{job[1]}") or {"error": "the counting worker returned nothing for it"}
        if "seconds" in result:  # its seconds in the valgrind process, set-up included
            cost[evidence.jobs[job].name] = float(result["seconds"])
        if result.get("skipped"):  # a combination the suite does not define: no row, nothing to count
            continue
        if "counts" in result:
            counted[cases[job]] = result["counts"]
            if result.get("statement"):  # counted as its Timer's statement (a Timer-in-`track_` row too): the
                evidence.jobs[job].by_call = False  # count test holds it against a statement's noise
                if job not in plans and result.get("plan"):  # planned by the counting process itself: kept
                    learned[job] = (int(result["plan"][0]), int(result["plan"][1]))
            if "cycles" in result:  # simulated in the same valgrind process (asv_worker.counts)
                simulated[cases[job]] = {"cycles": result["cycles"], "events": result.get("events", [])}
            if job in learned and not again:  # cached under the plan it was counted by, too: a later count
                # plans the row so (schedule.learn), and then finds these (a base the history counted)
                planned = CountsCache.case(job, evidence.jobs[job].params, learned[job])
                counted[planned] = counted[cases[job]]
                if cases[job] in simulated:
                    simulated[planned] = simulated[cases[job]]
            continue
        error = f"not countable: {result['uncountable']}" if "uncountable" in result else str(result.get("error"))
        if error.endswith(DEADLINE_PASSED):
            error = "not counted: the counting's share of the budget ran out first (its wall time decides it)"
        elif error.endswith(SHARE_PASSED):  # "N s under valgrind: ..." (callgrind._case_limit)
            error = (f"not counted: its set-up and runs outlasted its share of the counting's budget "
                     f"({last_line(error).split(':')[0]}; its wall time decides it)")
        if not again:  # a second process that fails leaves the first's counts, which then decide nothing
            uncounted[job] = (error if "uncountable" in result or error.startswith("not counted")
                              else f"counting failed: {last_line(error)}")
        if again or "uncountable" not in result:
            failures.setdefault(error, []).append(evidence.jobs[job].name)
    for error, names in failures.items():  # one note per distinct failure (a worker that died: one for all)
        shown = _first_names(names)
        evidence.notes.append(f"instruction counts ({side.name}, jittered process {jitter}: not confirmed, the "
                              f"wall time decides them) failed for {shown}: {error}" if again else
                              f"instruction counts ({side.name}) failed for {shown}: {error}")
    if cache:
        cache.store(side.commit, counted | continued, simulated | continued_sim)
        evidence.notes.extend(cache.problems)
        cache.problems.clear()
    for job in countable:  # (a first process's streamed rows again: the same counts, placed once more)
        place(job, counted.get(cases[job]) or cached.get(cases[job]),
              simulated.get(cases[job]) or cached_simulated.get(cases[job]))
    return {"counted": sum(1 for job in missing if cases[job] in counted), "cached": len(countable) - len(missing),
            "continued": len(continued),
            "uncountable": sum(1 for j in jobs if uncounted.get(j, "").startswith("not countable")),
            "failed": sum(len(names) for names in failures.values()), "seconds": cost, "statements": learned,
            "cached_by": dict(collections.Counter(origins.get(cases[job], "an earlier count") for job in countable
                                                  if cases[job] in cached))}


def _continued_key(case: str, jitter: int, draws: int) -> str:
    """The cache's key of a case's `jitter`-th jittered process counted going on in its first process."""
    return case + JITTERED.format(jitter) + DRAWN.format(draws) + CONTINUED


def _place_draws(evidence: Evidence, side: str, job: Job, counts: list[float], sim: dict | None,
                 draws: int) -> None:
    """A jittered process's values of a job in the evidence: its jittered processes, in order (the process's
    `draws` layout draws, each as one)."""
    evidence.counts_again[side].setdefault(job, []).extend(_per_draw(counts, draws))
    if sim:
        evidence.cycles_again[side].setdefault(job, []).extend(_per_draw(sim["cycles"], draws))


def continued_in_cache(side: Side, jobs: list[Job], evidence: Evidence, cache: CountsCache | None, jitter: int,
                       draws: int, plans: dict[Job, tuple[int, int]] | None = None
                       ) -> dict[Job, tuple[list[float], dict | None]]:
    """The jobs among `jobs` whose `jitter`-th jittered process (`draws` layout draws) `side`'s cache holds as
    counted in its first process, going on (Continued), each with its counts and simulated cycles (or None):
    an alert of a pair counted before reads them (place_continued), where both sides have them
    (schedule.count_both), instead of starting processes for draws of the other kind."""
    if cache is None:
        return {}
    cached, cached_simulated = cache.load(side.commit), cache.load_simulated(side.commit)
    keys = {job: _continued_key(CountsCache.case(job, evidence.jobs[job].params, (plans or {}).get(job)), jitter,
                                draws) for job in jobs}
    return {job: (cached[key], cached_simulated.get(key)) for job, key in keys.items() if key in cached}


def place_continued(side: Side, found: dict[Job, tuple[list[float], dict | None]], evidence: Evidence,
                    draws: int) -> None:
    """Draws continued_in_cache found, placed in the evidence as a jittered process's."""
    for job, (counts, sim) in found.items():
        _place_draws(evidence, side.name, job, counts, sim, draws)


def _per_draw(values: list[float], draws: int) -> list[list[float]]:
    """A process's values of one job, draw by draw (collect_callgrind_many(draws): each draw's repeats in turn)."""
    size = len(values) // draws
    return [values[k * size:(k + 1) * size] for k in range(draws)] if size else [values]


def _first_names(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def collect_syscalls(suite: Path, side: Side, jobs: list[Job], evidence: Evidence,
                     cache_dir: Path | None = None, cache: CountsCache | None = None, repeat: int = 0,
                     timeout: float = 1800) -> dict[str, int]:
    """System calls of one call of each job, by type, traced natively in one process for this side (the
    worker's `syscalls` mode, under strace): evidence.syscalls[side][job] = {"per_call": {name: calls a call},
    "exact": bool, "calls": N, "regions": ...}; a job without gets its reason in evidence.no_syscalls.
    `repeat` k > 0: the k-th repeat trace, in another process state (torchbench_core.syscalls.REPEAT_ENV: a
    jittered layout, the jobs in reverse order), appended to evidence.syscalls_again[side][job]; a job it
    fails for keeps the traces it has, which then decide nothing (channels.SystemCalls). From `cache` where
    it has them (then traced only for the rest, and kept there). `timeout`: the seconds the traced process
    may take (the phase's share of the budget: each row takes its share of what is left, and a row past it,
    or not reached, keeps its wall time, with that reason). Stored, not weighed here. Returns how many
    were traced, came from the cache, exact, not traceable, failed, and ran out of time ("late")."""
    cases = {job: CountsCache.case(job, evidence.jobs[job].params) + (REPEATED.format(repeat) if repeat else "")
             for job in jobs}
    cached = cache.load_syscalls(side.commit) if cache else {}
    todo = [job for job in jobs if cases[job] not in cached]
    # the traced process ends COUNTS_WRAP_UP (or a tenth) before `timeout`, each row within its share of it
    env = ({REPEAT_ENV: str(repeat)} if repeat else {}) | {
        SYSCALLS_DEADLINE_ENV: repr(time.time() + timeout - min(COUNTS_WRAP_UP, timeout / 10))}
    found = _worker(suite, side, "syscalls", todo, timeout=timeout, env=env, cache_dir=cache_dir) if todo else {}
    traced, missing, failures = evidence.syscalls[side.name], evidence.no_syscalls[side.name], {}
    new, exact, late = {}, 0, []
    for job in jobs:
        result = cached.get(cases[job]) or found.get(f"{job[0]}|{job[1]}") or {
            "error": found.get("error") or "the worker returned nothing"}
        if result.get("skipped"):
            continue
        if OUT_OF_TIME in result:  # its share of the phase ran out: its wall time decides it; not kept
            late.append(evidence.jobs[job].name)
            if not repeat:
                missing[job] = result[OUT_OF_TIME]
            continue
        if cases[job] not in cached and ("syscalls" in result or "uncountable" in result):
            new[cases[job]] = result  # what a commit's code decides: kept
        if "syscalls" in result:
            exact += bool(result["syscalls"].get("exact"))
            if repeat:
                evidence.syscalls_again[side.name].setdefault(job, []).append(result["syscalls"])
            else:
                traced[job] = result["syscalls"]
        elif "uncountable" in result:
            if not repeat:
                missing[job] = f"not traceable: {result['uncountable']}"
        else:
            if not repeat:
                missing[job] = f"tracing failed: {last_line(str(result.get('error')))}"
            failures.setdefault(str(result.get("error")), []).append(evidence.jobs[job].name)
    for error, names in failures.items():
        evidence.notes.append(f"system calls ({side.name}{f', repeat trace {repeat}' if repeat else ''}) failed "
                              f"for {_first_names(names)}: {error}")
    if late:
        evidence.notes.append(f"system calls ({side.name}{f', repeat trace {repeat}' if repeat else ''}): "
                              f"{len(late)} row(s) not traced within the phase's share of the budget "
                              f"({timeout:.0f} s), {_first_names(late)}: their wall time decides them")
    if cache:
        cache.store_syscalls(side.commit, new)
    return {"traced": sum(1 for job in jobs if "syscalls" in new.get(cases[job], {})),
            "cached": sum(1 for job in jobs if cases[job] in cached), "exact": exact, "late": len(late),
            "untraceable": sum(1 for job in jobs if missing.get(job, "").startswith("not traceable")),
            "failed": sum(len(names) for names in failures.values())}


class Planned(NamedTuple):
    """What plan_counts made: the plans, the jobs counted as a statement, each timed job's setup seconds
    (natively: its setup, one run of its method and its teardown), and one problem per side whose planning
    process failed."""
    plans: dict[Job, tuple[int, int]]
    statements: set[Job]
    setups: dict[Job, float]
    problems: list[str]


def plan_counts(suite: Path, sides: list[Side], jobs: list[Job], cache_dir: Path | None = None,
                setup_limit: float | None = None) -> Planned:
    """Plans (calls per counted run, warm-up calls) for the `time_` cases among `jobs`, and (runs per counted
    run, warm-up runs) for the `track_` and `time_` cases that time a Timer (counted as its statement), made
    natively by the first side's code, and by the next side's for the cases the first could not plan (a
    benchmark that fails there), with each case's setup seconds. A job whose setup took longer than
    `setup_limit` seconds is timed, not planned (asv_worker.SETUP_LIMIT_ENV). A job without a plan is
    planned by each valgrind process itself (and may then differ between sides by a few percent)."""
    made = Planned({}, set(), {}, [])
    env = {SETUP_LIMIT_ENV: repr(setup_limit)} if setup_limit is not None else None
    for side in sides:
        todo = [job for job in jobs if job not in made.plans and job not in made.setups]
        if not todo:
            break
        found = _worker(suite, side, "plan", todo, timeout=600, env=env, cache_dir=cache_dir)
        if "error" in found:
            made.problems.append(f"planning instruction counts with the {side.name} commit failed: {found['error']}")
            continue
        for job in todo:
            answer = found.get(f"{job[0]}|{job[1]}", {})
            if answer.get("plan"):
                made.plans[job] = (int(answer["plan"][0]), int(answer["plan"][1]))
            if answer.get("statement"):
                made.statements.add(job)
            if "setup" in answer:
                made.setups[job] = float(answer["setup"])
    return made


def _count(suite: Path, side: Side, jobs: list[tuple], layout: int = 0, cache_dir: Path | None = None,
           jitter: int = 0, timeout: float = 3600, draws: int = 1, miss_cycles: int | None = None,
           on_line: Callable[[dict], Any] | None = None, simulate: bool = True,
           ask: Callable[[], dict | None] | None = None) -> dict:
    """One valgrind process for this side counts every case among `jobs` ((name, index) or (name, index,
    calls per run, warm-up calls, by call)), its memory layout shifted by `layout` before the imports and
    jittered by `jitter` after them, each case in `draws` layout draws (torchbench_core._callgrind_worker):
    {"name|index": result}. Counting stops COUNTS_WRAP_UP seconds (or a tenth) before `timeout`, keeping what
    it counted. `miss_cycles`: the price of a simulated last-level miss in its priced cycles
    (memory_price.py); `simulate` False: counts alone (asv_worker.SIMULATE_ENV). `on_line(answer)`: each
    row's answer ({"key": "name|index", ...}) as soon as it is counted. Where the process fails or is stopped,
    the rows it had counted (its progress file) keep their counts, the others the reason. `ask()`: once every
    row is counted, the rows the same process counts again ({"keys", "jitter", "draws", "deadline"}: their
    lines then have "again") or None (asv_worker.CONTINUE_ENV); the process may then run to that deadline."""
    wrap_up = min(COUNTS_WRAP_UP, timeout / 10)
    env = (({LAYOUT_ENV: str(layout)} if layout else {}) | ({JITTER_ENV: str(jitter)} if jitter else {})
           | ({DRAWS_ENV: str(draws)} if draws > 1 else {}) | {DEADLINE_ENV: repr(time.time() + timeout - wrap_up)}
           | ({PRICE_ENV: str(miss_cycles)} if miss_cycles else {})
           | ({} if simulate else {SIMULATE_ENV: "0"}) | ({CONTINUE_ENV: "1"} if ask else {}))
    streamed: dict[str, dict] = {}

    def line_in(line: dict) -> None:
        if not line.get("again"):  # (a row counted again is its first count's caller's to place)
            streamed[line.get("key")] = {k: v for k, v in line.items() if k != "key"}
        if on_line is not None:
            on_line(line)

    found = _worker(suite, side, "counts", jobs, timeout=timeout, env=env, cache_dir=cache_dir, on_line=line_in,
                    ask=ask)
    if "error" in found:  # a process that died or was stopped: the rows it counted keep their counts
        return {key: streamed.get(key) or {"error": found["error"]}
                for key in (f"{job[0]}|{job[1]}" for job in jobs)}
    return found


def _worker(suite: Path, side: Side, mode: str, jobs: list[tuple], timeout: float,
            env: dict[str, str] | None = None, cache_dir: Path | None = None,
            on_line: Callable[[dict], Any] | None = None, ask: Callable[[], dict | None] | None = None) -> dict:
    """The worker's JSON answer in `mode` (plan, counts or syscalls) for `jobs`, or {"error": why} where it failed.
    `on_line` (counts): each line of the worker's progress file (PROGRESS_ENV) as it is written; `ask` (with
    it): the answer to the worker's {"next": true} line (_run_following)."""
    what = {"counts": "instruction counts", "syscalls": "system calls"}.get(mode, "planning instruction counts")
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out, feed = Path(tmp) / "jobs.json", Path(tmp) / f"{mode}.json", Path(tmp) / "progress.jsonl"
        jobs_file.write_text(json.dumps([list(j) for j in jobs]))
        shared = ["--cache-dir", str(setup_cache_of(cache_dir, side))] if cache_dir else []
        cmd = [str(side.python), *WORKER, mode, str(suite), "--jobs", str(jobs_file), "--out", str(out), *shared]
        env = side_env(side) | (env or {}) | ({PROGRESS_ENV: str(feed)} if on_line else {})
        try:
            proc = _run_following(cmd, env, timeout, feed, on_line, ask) if on_line else subprocess.run(
                cmd, capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"{what} for {side.name} took over {timeout:.0f} s"}
        why = ""
        if proc.returncode != 0 or not out.exists():
            why = f"{what} for {side.name} failed: {last_line(proc.stderr)}"
        else:
            try:
                found = read_json(out.read_text(), f"{what} for {side.name}")
                if isinstance(found, dict):
                    return found
                why = f"{what} for {side.name}: the worker's answer is not a mapping of job to result"
            except UserError as e:
                why = str(e)
        return {"error": why}  # never a job's key (name|index)


def _run_following(cmd: list[str], env: dict[str, str], timeout: float, feed: Path,
                   on_line: Callable[[dict], Any], ask: Callable[[], dict | None] | None = None
                   ) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, capture_output=True, text=True, timeout=...), calling `on_line` with each JSON line
    the process appends to `feed` while it runs (a line not yet whole is read on the next look). Raises
    subprocess.TimeoutExpired, the process killed, past `timeout`. A {"next": true} line is answered on the
    process's stdin with `ask()`'s answer, one JSON line (an empty line for None); an answer's "deadline" (a
    time.time()) extends `timeout` to it and COUNTS_WRAP_UP beyond."""
    began, offset, buffered = time.monotonic(), 0, ""

    def follow() -> None:
        nonlocal offset, buffered
        if not feed.exists():
            return
        with open(feed) as f:
            f.seek(offset)
            buffered += f.read()
            offset = f.tell()
        *lines, buffered = buffered.split("\n")
        for line in lines:
            if not line.strip():
                continue
            event = json.loads(line)
            if event.get("next") and ask is not None:
                if proc.poll() is None:  # (one that ended after asking goes on with nothing: not asked for)
                    answer_next()
            else:
                on_line(event)

    def answer_next() -> None:
        nonlocal timeout
        answer = ask()
        if answer and answer.get("deadline"):
            timeout = max(timeout, time.monotonic() - began + answer["deadline"] - time.time() + COUNTS_WRAP_UP)
        try:
            proc.stdin.write(json.dumps(answer) + "\n" if answer else "\n")
            proc.stdin.flush()
        except BrokenPipeError:  # the process ended meanwhile: what it wrote is read as it is
            pass

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        # in this process group, as subprocess.run's child was: a Ctrl-C reaches it too
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env,
                                stdin=subprocess.PIPE if ask is not None else None)
        try:
            while proc.poll() is None:
                if time.monotonic() - began > timeout:
                    raise subprocess.TimeoutExpired(cmd, timeout)
                follow()
                time.sleep(0.2)
            follow()
        finally:
            if proc.poll() is None:  # past its time, or the caller's error: killed, as subprocess.run does
                proc.kill()
                proc.wait()
            if proc.stdin is not None:
                try:
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())
