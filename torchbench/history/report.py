"""The run report: per commit, what was measured, what failed and why, and where the time went.

Built from the result files (results.load) and the outcome records of
asv_bridge/plugin.py, never from asv's console output. `exit_status` applies the
policy of errors.py: 0 only when every selected commit was built and every
selected benchmark measured or skipped. A skipped row (asv's skip, or hardware
this machine lacks: "skipped here: no CUDA device", torchbench_core.skips) is
listed with its reason, once for all the commits that skipped it, and is no
failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..asv_bridge.driver import Timings
from ..project.commits import Commit
from ..errors import EXIT_FAILURE, EXIT_OK, last_line
from ..asv_bridge.results import COUNTS_OF, ResultSet

__all__ = ["CommitReport", "RunReport", "summarize"]


@dataclass
class CommitReport:
    commit: Commit
    measured: int = 0
    kept: int = 0  # of them, measured by an earlier run (asv's --skip-existing kept their results)
    counted: int = 0  # plain time_ rows with instruction counts (history/counts.py)
    skipped: int = 0
    skips: list[tuple[str, str]] = field(default_factory=list)  # (row name, why) of the skipped rows with a reason
    failed: list[tuple[str, str]] = field(default_factory=list)  # (row name, reason)
    not_built: dict[str, str] = field(default_factory=dict)  # env name -> last line of the build log
    has_results: bool = False

    @property
    def complete(self) -> bool:
        return self.has_results and not self.failed and not self.not_built

    def line(self) -> str:
        head = f"{self.commit.short} {self.commit.subject[:60]}"
        if not self.has_results:
            return f"  {head}: no results (not run, or interrupted before its results were saved)"
        if self.not_built:
            reasons = "; ".join(f"{env}: {why}" for env, why in self.not_built.items())
            return f"  {head}: NOT BUILT ({reasons})"
        parts = [f"{self.measured} measured" + (f" ({self.kept} by an earlier run)" if self.kept else "")]
        if self.counted:
            parts.append(f"{self.counted} with instruction counts")
        if self.failed:
            parts.append(f"{len(self.failed)} FAILED")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        return f"  {head}: {', '.join(parts)}"


@dataclass
class RunReport:
    commits: list[CommitReport]
    timings: Timings
    warnings: list[str] = field(default_factory=list)
    build_seconds: list[float] = field(default_factory=list)
    setup_cache_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)  # tool failures, interruption
    notes: list[str] = field(default_factory=list)  # what the caller wants said after the report (publish's)
    counts: list[str] = field(default_factory=list)  # what counting the time_ rows did, and rows left without
    environments: list[tuple[str, str, int]] = field(default_factory=list)  # (asv name, torch, bytes on disk)
    quick: bool = False  # a smoke test (--quick): nothing was saved, so there is nothing to report per commit

    def exit_status(self) -> int:
        if self.problems or self.warnings or not all(c.complete for c in self.commits):
            return EXIT_FAILURE
        return EXIT_OK

    def render(self) -> str:
        if self.quick:
            return "\n".join(f"torchbench: error: {p}" for p in self.problems)
        lines = ["", "== report"]
        lines += [c.line() for c in self.commits]
        for c in self.commits:
            for name, reason in c.failed:
                lines.append(f"  FAILED {c.commit.short} {name}: {reason}")
        skips: dict[tuple[str, str], int] = {}
        for c in self.commits:
            for skip in c.skips:
                skips[skip] = skips.get(skip, 0) + 1
        lines += [f"  skipped {name}: {why} ({n} commit{'s' if n > 1 else ''})" for (name, why), n in skips.items()]
        lines += [f"  counts: {line}" for line in self.counts]
        lines += [f"  WARNING {w}" for w in self.warnings]
        lines += [f"  ERROR {p}" for p in self.problems]
        if self.environments:
            lines += ["", "== environments (one per torch release; the disk each takes)"]
            lines += [f"  torch {torch or '?':12} {size / 2**30:6.2f} GiB  {name}"
                      for name, torch, size in self.environments]
        lines += ["", "== where the time went"]
        lines += [f"  {name:32} {seconds:8.1f} s" for name, seconds in self.timings.steps.items()]
        if self.build_seconds:
            mean = sum(self.build_seconds) / len(self.build_seconds)
            lines.append(f"  {'build+install, per commit':32} {mean:8.1f} s (mean of {len(self.build_seconds)})")
        if self.setup_cache_seconds:
            lines.append(f"  {'setup_cache, all commits':32} {self.setup_cache_seconds:8.1f} s")
        verdict = "everything was measured" if self.exit_status() == EXIT_OK else "NOT everything was measured"
        lines += ["", f"== {verdict} (exit status {self.exit_status()})"]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _selected(name: str, patterns: tuple[str, ...]) -> bool:
    """asv's -b: a benchmark is run when any regex is found in its name (none given: every benchmark)."""
    return not patterns or any(re.search(p, name) for p in patterns)


def _earlier(row, since: float | None) -> bool:
    """Whether asv measured ROW before SINCE (seconds since the epoch): an earlier run's result, kept."""
    return since is not None and row.started_at is not None and row.started_at < since * 1000


def summarize(commits: list[Commit], results: ResultSet, timings: Timings, patterns: tuple[str, ...] = (),
              since: float | None = None) -> RunReport:
    """The report of a run that selected COMMITS and the benchmarks PATTERNS match (asv's -b), begun at SINCE
    (seconds since the epoch): rows the patterns leave out are not this run's, and a row measured before SINCE
    is counted as an earlier run's."""
    by_sha = {c.sha: CommitReport(c) for c in commits}
    rows = [row for row in results.rows if _selected(row.benchmark.removesuffix(COUNTS_OF), patterns)]
    for row in rows:
        report = by_sha.get(row.commit)
        if report is None:
            continue
        report.has_results = True
        if row.benchmark.endswith(COUNTS_OF):  # the counts of a measured row, not a row of its own
            report.counted += 1
        elif row.status == "ok":
            report.measured += 1
            report.kept += _earlier(row, since)
        elif row.status == "skipped":
            report.skipped += 1
            outcome = results.outcomes.get((row.machine, row.commit, row.env_name))
            why = outcome.skipped.get(row.benchmark, {}).get(row.index) if outcome else None
            if why:
                report.skips.append((row.name, why))
    build_seconds, setup_cache = [], 0.0
    for (machine, commit, env), durations in results.durations.items():
        if commit not in by_sha:
            continue
        report = by_sha[commit]
        outcome = results.outcomes.get((machine, commit, env))
        if outcome is not None and outcome.built is False:
            report.not_built[env] = last_line(outcome.build.get("log", ""))
        for key, seconds in durations.items():
            if key == "<build>":
                build_seconds.append(seconds)
            elif key.startswith("<setup_cache"):
                setup_cache += seconds
    for row in rows:
        report = by_sha.get(row.commit)
        if report is None or row.status != "failed" or report.not_built:
            continue
        outcome = results.outcomes.get((row.machine, row.commit, row.env_name))
        failure = outcome.failures.get(row.benchmark) if outcome else None
        reason = (f"exit status {failure['errcode']}: {last_line(failure.get('stderr', ''))}" if failure
                  else "no result (see the benchmark's output above)")
        if _earlier(row, since):
            reason += " (an earlier run's result)"
        report.failed.append((row.name, reason))
    return RunReport(list(by_sha.values()), timings, list(results.warnings), build_seconds, setup_cache)
