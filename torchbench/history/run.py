"""`torchbench run`: measure a history with asv and report what happened.

    define (a suite folder) -> measure (asv run, per commit, per environment)
    -> record (asv result files + outcome records) -> report (then the caller publishes)

Subjects:
  * the embedded example library (default; see project/example.py),
  * any git repository (--repo), built per commit with its own build backend,
  * a torch build (--existing PYTHON): the torch importable there is measured
    and filed under the commit it was built from.

Nothing is lost: result files are written atomically (asv_bridge/plugin.py), a
second run on the same output folder is refused (project/lock.py), an interrupted run keeps
every commit it finished and the next run skips what is already measured,
and the report is printed whatever happened.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .. import resources
from ..asv_bridge import asv_compare, results
from ..asv_bridge.driver import PipIndex, Timings, machine_name, python_can_import
from ..asv_bridge.workspace import Workspace, open_workspace
from ..errors import UserError, last_line
from ..project import commits, config
from ..project.folders import Folders
from ..validate import POSITIVE_WHOLE, check_all
from .counts import count_history
from .report import RunReport, summarize

__all__ = ["DEFAULT_ROUNDS", "Existing", "HistoryOptions", "measure_history"]

MAX_FAILURES_SHOWN = 10  # rows left without counts named in the report (the outcome records keep every reason)
DEFAULT_ROUNDS = 4  # a 10% step found and confirmed at its commit in 96% of synthetic histories made of real
# per-process values here, against 16% with one process a commit and 54% with two
# (evaluation/changepoint_validation.py); the measuring costs 4x, the set-up does not


@dataclass(frozen=True)
class HistoryOptions:
    """How a history is measured."""

    patterns: tuple[str, ...] = ()  # only benchmarks matching these (asv -b)
    rounds: int = DEFAULT_ROUNDS  # fresh processes per benchmark and commit (asv's rounds)
    quick: bool = False  # each benchmark once, nothing saved (asv --quick --dry-run)
    rerun: bool = False  # measure again what already has results
    benchmarks: Path | None = None  # the suite folder (default: REPO/benchmarks, else torchbench's own)
    torch: tuple[str, ...] = ()  # torch releases, one asv environment each (default: the pinned one)
    pip: PipIndex = PipIndex()  # package indexes the environments install from (e.g. a CPU wheel index)
    counts: bool = True  # count each commit's plain asv time_ rows under valgrind, beside their times (counts.py)

    RULES = {"rounds": POSITIVE_WHOLE}

    def __post_init__(self):
        check_all(self)
        config.check_torch_versions(self.torch)


@dataclass(frozen=True)
class Existing:
    """A torch build measured where it is: its interpreter (kept as given: a venv's python is a link to
    the base interpreter, which lacks the venv's packages), and the commit to file it under (default: the
    build's torch.version.git_version)."""

    python: Path
    commit: str | None = None


def _torch_git_version(python: Path) -> str:
    proc = subprocess.run([str(python), "-c", "import torch; print(torch.version.git_version)"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"{python} cannot import torch: {last_line(proc.stderr)}")
    return proc.stdout.strip()


def _select(repo, selection: commits.Selection, existing: Existing | None) -> list[commits.Commit]:
    if existing is not None:
        if selection.given:
            raise UserError("--existing measures one build: give --commit, not a range, --last or --hashfile")
        return [commits.resolve(repo, existing.commit or _torch_git_version(existing.python))]
    return commits.select(repo, selection)


def _check_existing(existing: Existing, ws: Workspace) -> None:
    python = existing.python
    missing = python_can_import(python, "torch", "numpy", "asv_runner")
    if ws.bench_dir != resources.suites():  # a suite of the user's: it imports torchbench_core itself
        missing += python_can_import(python, "torchbench_core")
    if missing:
        raise UserError(f"{python} cannot import {', '.join(missing)}; install them there "
                        f"(e.g. {python} -m pip install asv_runner numpy, and torchbench for torchbench_core)")


def measure_history(folders: Folders, selection: commits.Selection = commits.Selection(),
                    options: HistoryOptions = HistoryOptions(), *, existing: Existing | None = None,
                    timings: Timings | None = None) -> tuple[RunReport, Workspace]:
    """Measure the selected commits of FOLDERS' repository (or one torch build, `existing`) with asv.
    Returns the report (printed by the caller, problems included: nothing here raises for a failed
    benchmark or build) and the workspace (its asv, to publish with)."""
    timings = timings or Timings()
    if existing is not None and options.torch:
        raise UserError("--existing measures the torch already in PYTHON: --torch goes with built commits")
    selected = _select(folders.repo, selection, existing)
    ws = open_workspace(out=folders.out, env_dir=folders.env_dir, repo_path=folders.repo_path, repo=folders.repo,
                        project_sha=selected[-1].sha, benchmarks=options.benchmarks, fds=folders.fds,
                        timings=timings, torch_build=existing is not None, torch=options.torch, pip=options.pip,
                        user=folders.config)
    print(f"== tracking {folders.repo_path} ({ws.project.name}): {len(selected)} commit(s), "
          f"{selected[0].short}..{selected[-1].short}; suites in {ws.bench_dir}; output in {folders.out}",
          flush=True)
    problems: list[str] = []
    began, status = time.time(), 0
    try:
        ws.asv.ensure_machine()
        if existing is not None:
            _check_existing(existing, ws)
            status = ws.asv.run([], benchmarks=list(options.patterns), quick=options.quick,
                                existing=existing.python, set_commit_hash=selected[0].sha,
                                skip_existing=not options.rerun, rounds=options.rounds)
        else:
            ws.pythons()
            status = ws.asv.run([c.sha for c in selected], benchmarks=list(options.patterns), quick=options.quick,
                                skip_existing=not options.rerun, rounds=options.rounds)
    except UserError as e:
        problems.append(str(e))
    except KeyboardInterrupt:
        problems.append("interrupted: the commits whose results were saved are kept; run again to go on")

    if options.quick and status != 0:  # nothing is saved: asv's exit status is all that says a row failed
        problems.append(f"a benchmark failed in the quick run (asv exit status {status}); see its output above")
    found = results.load(folders.out / "results", commits={c.sha for c in selected})
    if options.quick:  # nothing was saved: the report is asv's own output and these problems
        return RunReport([], timings, problems=problems, quick=True), ws
    measured = [c for c in selected if found.for_commit(c.sha)]
    if len(measured) >= 2 and not problems:
        base, head = measured[-2], measured[-1]
        print(f"\n== asv compare {base.short} -> {head.short} (asv's statistics: informative, not a gate)")
        try:
            asv_compare.print_table(ws.conf, found, base.sha, head.sha,
                                names={c.sha: c.subject[:40] for c in (base, head)})
        except Exception as e:  # asv's compare must not cost us the report
            problems.append(f"asv compare failed: {type(e).__name__}: {e}")
    counted = None
    if options.counts and existing is None:  # an existing build is not installed per commit here: not counted
        counted = count_history(ws, found, machine_name(), options.patterns)
        if counted.recorded:  # read back with the counts (a suite without countable rows: nothing to read)
            timings.add("instruction counts", counted.seconds)
            found = results.load(folders.out / "results", commits={c.sha for c in selected})
    report = summarize(selected, found, timings, options.patterns, began)
    if counted is not None and counted.line():
        report.counts = [counted.line(), *counted.failed[:MAX_FAILURES_SHOWN]]
        if len(counted.failed) > MAX_FAILURES_SHOWN:
            report.counts.append(f"... and {len(counted.failed) - MAX_FAILURES_SHOWN} more rows without counts")
    report.environments = [(e.name, e.torch, e.disk_bytes()) for e in ws.asv.environments]
    report.problems += problems
    return report, ws
