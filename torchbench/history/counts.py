"""Instruction counts of a history's plain asv `time_` and Timer-in-`track_` rows, recorded beside their times.

    measure (asv run) -> count (here: each commit's countable rows) -> record (its outcome record)

A TimerSuite's cases get counts in a history from the suite's CountsSuite (a
`track_` row that asv measures itself). A library's own asv suite (classes
with params, setup and `time_` methods) has none. So after asv has measured
the commits, `torchbench run` counts each commit's plain `time_` rows as the
alert does (torchbench.ab: one valgrind process per commit and environment,
asv's setup outside the counted calls, one plan of calls per counted run for
each case kept in OUT/counts/plans, the counts cached in OUT/counts by
commit, so that `alert` and `find` on the same output folder reuse them and
count under the same plans), and adds them to the commit's outcome record
(asv_bridge.plugin.record_counts), with the reason of each row left without.
A `time_` method that times a Timer is counted as that Timer's statement, as
the alert counts it (torchbench_core.asv_worker), and so is a `track_` row
that times a Timer (torch libraries' suites time one in `track_` methods and
return its median): the counting process runs its setup and method itself
and counts the statement in place, its plan made by that first count and
kept (schedule.keep_statements) with its counts under it, so that an alert
whose base is a commit of the history plans the row alike and reads the
base's counts from the cache (counting the head alone). A `track_` row that
times no Timer is "not countable", with that reason; a TimerSuite's cases
are counted by its CountsSuite, not here.

Read back (asv_bridge.results), each becomes a row "<benchmark>:instructions"
placed where the benchmark's times are: the Compare pages show a cell's
instructions per call beside its time, as a CountsSuite's, and `find` looks
for steps in the counts as in any series (and confirms one by re-measuring
the timed benchmark, counts included).

Only what has neither counts nor a reason yet is counted: a second run (or
one after an interruption, or after valgrind was installed) counts what the
first did not. A commit that does not build here, or a benchmark that fails
under valgrind, keeps its times and gets its reason.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from torchbench_core.asv_suite import TASK_SPEC_PARAMS

from .. import tools
from ..ab.collect import collect_counts
from ..ab.evidence import Evidence, Job, Side
from ..ab.counts_cache import CountsCache
from ..ab.pair import select_jobs
from ..ab.schedule import count_plans, keep_statements
from ..ab.sides import side_env
from ..asv_bridge import results
from ..asv_bridge.plugin import record_counts
from ..asv_bridge.worker import list_benchmarks
from ..asv_bridge.workspace import Workspace
from ..errors import UserError
from ..project import commits

__all__ = ["HistoryCounts", "count_history", "countable_benchmarks"]

MAX_PROCESSES = 4  # valgrind processes at once (each holds torch and the suite under valgrind: ~1 GB)
SIDE = "head"  # the name of the one side each commit is counted as (ab's counting speaks of sides)


@dataclass
class HistoryCounts:
    """What counting a history's `time_` and Timer-in-`track_` rows did, in rows (benchmark and parameter
    combination)."""

    counted: int = 0  # counted now, in a valgrind process
    cached: int = 0  # found in OUT/counts (counted by an earlier run, alert or find)
    uncountable: int = 0
    failed: list[str] = field(default_factory=list)  # "commit row: why", one per row left without counts
    off: str = ""  # why nothing was counted, where rows wanted counts
    seconds: float = 0.0

    @property
    def recorded(self) -> bool:
        """Whether any outcome record got counts or a reason (the results are then worth reading again)."""
        return bool(self.counted or self.cached or self.uncountable or self.failed)

    def line(self) -> str | None:
        """The report's line, or None where no row wanted counts."""
        if self.off:
            return f"instruction counts of time_ and track_ rows: none ({self.off})"
        if not self.recorded:
            return None
        return (f"instruction counts of time_ and track_ rows: {self.counted} counted, {self.cached} from the cache, "
                f"{self.uncountable} not countable, {len(self.failed)} failed ({self.seconds:.0f} s)")


def countable_benchmarks(benchmarks: dict[str, dict]) -> set[str]:
    """The names of a suite's benchmarks (benchmarks.json) a history counts: plain asv `time_` ones (a
    `timeraw_` one times an interpreter of its own), and `track_` ones that may time a Timer, which only
    counting them tells: not a TimerSuite's cases (its task-spec parameters; its CountsSuite counts them) nor
    a row of counts (unit instructions, a CountsSuite's)."""
    def wanted(name: str, b: dict) -> bool:
        if b.get("type") == "time":
            return not name.rsplit(".", 1)[-1].startswith("timeraw_")
        return (b.get("type") == "track" and b.get("unit") != results.COUNT_UNIT
                and tuple(b.get("param_names") or ()) != TASK_SPEC_PARAMS)

    return {name for name, b in benchmarks.items() if isinstance(b, dict) and wanted(name, b)}


@dataclass
class _File:
    """A results file of this machine whose measured countable rows want counts."""

    filename: str  # asv's "machine/file.json"
    commit: str
    env_name: str
    date: int  # the commit's (asv's), to list the suite with the newest commit's code
    jobs: list[Job]


def _wanting(found: results.ResultSet, machine: str, countable: set[str]) -> list[_File]:
    """The files of `machine` with measured countable rows that have neither counts nor a reason yet."""
    measured: dict[tuple[str, str], set[Job]] = {}  # (commit, env) -> its measured countable rows
    for r in found.rows:
        if r.machine == machine and r.benchmark in countable and r.status == "ok":
            measured.setdefault((r.commit, r.env_name), set()).add((r.benchmark, r.index))
    out = []
    for file_machine, res in found.files:
        if file_machine != machine:
            continue
        outcome = found.outcomes.get((machine, res.commit_hash, res.env_name)) or results.Outcome(None, {})
        jobs = sorted((name, index) for name, index in measured.get((res.commit_hash, res.env_name), ())
                      if index not in outcome.counts.get(name, {}) and index not in outcome.uncounted.get(name, {}))
        if jobs:
            out.append(_File(res._filename, res.commit_hash, res.env_name, res.date or 0, jobs))
    return out


def count_history(ws: Workspace, found: results.ResultSet, machine: str,
                  patterns: tuple[str, ...] = ()) -> HistoryCounts:
    """Count the `time_` and Timer-in-`track_` rows of `machine`'s measured files in `found` (this run's
    commits) that have no counts yet, in the workspace's environments, and record them (or why not) in the
    files' outcome records."""
    report = HistoryCounts()
    files = _wanting(found, machine, countable_benchmarks(found.benchmarks))
    if not files:
        return report
    rows = sum(len(f.jobs) for f in files)
    valgrind = tools.find("valgrind")
    if valgrind is None:
        report.off = "valgrind is not installed"
        return report
    print(f"\n== instruction counts of {rows} asv time_ and track_ row(s) in {len(files)} result file(s), one "
          f"valgrind process each", flush=True)
    start = time.monotonic()
    results_dir = ws.out / "results"
    for env in ws.asv.environments:
        mine = [f for f in files if f.env_name == env.name]
        if mine:
            _count_environment(ws, env.python, mine, valgrind, results_dir, patterns, report)
    report.seconds = time.monotonic() - start
    return report


def _count_environment(ws: Workspace, python: Path, files: list[_File], valgrind: Path, results_dir: Path,
                       patterns: tuple[str, ...], report: HistoryCounts) -> None:
    """Count one environment's files: the suite listed once (with the newest commit's code), the cases planned
    once, then one valgrind process per commit, a core each (the cache's counts where it has them)."""
    sides = {}
    for f in files:
        install, why = ws.install(commits.resolve(ws.repo, f.commit), python)
        if why:
            _record(results_dir, f, {}, {job: f"counting failed: the commit does not build here: {why[-300:]}"
                                         for job in f.jobs}, report)
        else:
            sides[f.commit] = Side(SIDE, f.commit, install, python)
    if not sides:
        return
    newest = sides[max((f for f in files if f.commit in sides), key=lambda f: f.date).commit]
    evidence = Evidence()
    try:
        listing = list_benchmarks(python, ws.bench_dir, side_env(newest), f" with the commit {newest.commit[:8]}")
    except UserError as e:
        for f in files:
            if f.commit in sides:
                _record(results_dir, f, {}, {job: f"counting failed: {e}" for job in f.jobs}, report)
        return
    listed = set(select_jobs({SIDE: listing}, patterns, evidence))
    cache = CountsCache(ws.out / "counts", python, ws.bench_dir, valgrind, origin="torchbench run")
    plans, _ = count_plans(ws.out / "counts", ws.bench_dir, [newest], sorted(listed), evidence)

    def count(f: _File) -> tuple[_File, Evidence, dict[str, int]]:
        mine = Evidence(jobs=evidence.jobs)  # the jobs as listed; its own counts and reasons
        tally = collect_counts(ws.bench_dir, sides[f.commit], [job for job in f.jobs if job in listed], mine,
                               cache.view(), plans=plans)
        return f, mine, tally

    def keep(f: _File, mine: Evidence, tally: dict) -> None:
        report.counted += tally["counted"]
        report.cached += tally["cached"]
        uncounted = dict(mine.uncounted[SIDE])
        uncounted.update({job: "counting failed: the suite does not list it"
                          for job in f.jobs if job not in listed})
        _record(results_dir, f, dict(mine.counts[SIDE]), uncounted, report)

    todo = sorted((f for f in files if f.commit in sides), key=lambda f: f.date, reverse=True)
    # a track_ row no count has planned yet (a Timer's statement is planned by its first count, which only
    # running it tells): the newest commit is counted first, alone, and the plans its process made are kept,
    # so that every other commit counts the row under the same plan (plans made by two processes timing the
    # statement at once differ: 64 and 100 runs for a 2 us one) and an alert reads them from the cache
    tracks = {b["name"] for b in listing if b.get("type") == "track"}
    if len(todo) > 1 and any(job not in plans and job[0] in tracks for f in todo for job in f.jobs):
        first = count(todo.pop(0))
        keep(*first)
        made = first[2].get("statements", {})
        keep_statements(ws.out / "counts", ws.bench_dir, made, evidence)
        plans = {**plans, **made}  # (as kept: a row no plan told keeps the first one made)
    # valgrind runs one thread: a commit a core, as the alert counts its two sides at once
    learned: dict[Job, tuple[int, int]] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_PROCESSES, len(os.sched_getaffinity(0))))) as pool:
        for f, mine, tally in pool.map(count, todo):
            keep(f, mine, tally)
            for job, plan in tally.get("statements", {}).items():  # the newest commit's first: its plan is kept
                learned.setdefault(job, plan)
    keep_statements(ws.out / "counts", ws.bench_dir, learned, evidence)


def _record(results_dir: Path, f: _File, counts: dict[Job, list[float]], uncounted: dict[Job, str],
            report: HistoryCounts) -> None:
    """Write one file's counts and reasons into its outcome record, and tally them."""
    by_name: dict[str, dict[int, list[float]]] = {}
    for (name, index), values in counts.items():
        by_name.setdefault(name, {})[index] = values
    reasons: dict[str, dict[int, str]] = {}
    for (name, index), why in uncounted.items():
        reasons.setdefault(name, {})[index] = why
        if why.startswith("not countable"):
            report.uncountable += 1
        else:
            report.failed.append(f"{f.commit[:8]} {name}[{index}]: {why}")
    record_counts(results_dir, f.filename, f.commit, f.env_name, by_name, reasons)
