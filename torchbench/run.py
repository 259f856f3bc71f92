"""`torchbench run`: measure a history with asv and report what happened.

    define (a suite folder) -> measure (asv run, per commit, per environment)
    -> record (asv result files + outcome records) -> report / publish

Subjects:
  * the embedded example library (default; see example.py),
  * any git repository (--repo), built per commit with its own build backend,
  * a torch build (--existing PYTHON): the torch importable there is measured
    and filed under the commit it was built from.

Nothing is lost: result files are written atomically (asv_plugin), a second
run on the same output folder is refused (lock.py), an interrupted run keeps
every commit it finished and the next run skips what is already measured,
and the report is printed whatever happened.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from . import asv_compare, commits, config, example, lock, publish, report, results
from .asv_driver import Timings, python_can_import
from .workspace import open_workspace
from .errors import UserError, last_line

__all__ = ["add_arguments", "main", "DEFAULT_ROUNDS"]

DEFAULT_ROUNDS = 4  # a 10% step found and confirmed at its commit in 96% of synthetic histories made of real
# per-process values here, against 16% with one process a commit and 54% with two
# (bench/changepoint_validation.py); the measuring costs 4x, the set-up does not

def add_arguments(parser: argparse.ArgumentParser) -> None:
    commits.add_selection_arguments(parser, "measure")
    parser.add_argument("--benchmarks", type=Path, metavar="DIR",
                        help="asv suite folder (default: REPO/benchmarks if it exists, else this project's; "
                             "with --existing, this project's torch suites)")
    parser.add_argument("--out", type=Path, default=Path(".torchbench"),
                        help="output folder: results, html, outcome records (default ./.torchbench)")
    parser.add_argument("--env-dir", type=Path, metavar="DIR",
                        help="where asv's environments live (default OUT/env); share it between output folders")
    parser.add_argument("-b", "--bench", action="append", default=[], metavar="REGEX",
                        help="only benchmarks matching REGEX (asv -b); repeatable")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: each benchmark once, nothing saved (asv --quick --dry-run)")
    parser.add_argument("--rerun", action="store_true",
                        help="measure again what already has results (default: skip it, so an interrupted "
                             "run goes on where it stopped)")
    parser.add_argument("--existing", type=Path, metavar="PYTHON",
                        help="measure the torch importable in PYTHON (e.g. a source build) instead of "
                             "building commits; needs asv_runner installed there")
    parser.add_argument("--commit", metavar="SHA",
                        help="with --existing: the commit to file the results under (default: PYTHON's "
                             "torch.version.git_version)")
    parser.add_argument("--rounds", type=_positive, default=DEFAULT_ROUNDS, metavar="K",
                        help=f"fresh processes per benchmark and commit, round after round (asv's rounds; "
                             f"default {DEFAULT_ROUNDS}): one process's value can be off by up to 2x on a shared "
                             f"machine, and change points need several to find a 10%% step")
    parser.add_argument("--no-publish", action="store_true", help="do not publish the site")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _torch_git_version(python: Path) -> str:
    proc = subprocess.run([str(python), "-c", "import torch; print(torch.version.git_version)"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"{python} cannot import torch: {last_line(proc.stderr)}")
    return proc.stdout.strip()


def _subject(args, out: Path) -> Path:
    if args.repo is not None:
        return args.repo.resolve()
    if args.existing is not None:
        raise UserError("--existing needs --repo: the torch checkout whose commit the build came from")
    return example.default_subject(out)


def _select(args, repo) -> list[commits.Commit]:
    if args.existing is not None:
        if args.range or args.last or args.hashfile:
            raise UserError("--existing measures one build: give --commit, not a range, --last or --hashfile")
        return [commits.resolve(repo, args.commit or _torch_git_version(args.existing))]
    return commits.select_from_args(repo, args)


def main(args: argparse.Namespace) -> int:
    out = args.out.resolve()
    env_dir = (args.env_dir or out / "env").resolve()
    with lock.exclusive(out) as out_fd, lock.exclusive(env_dir, "environment folder", sweep=False) as env_fd:
        return _run(args, out, env_dir, (out_fd, env_fd))


def _run(args, out: Path, env_dir: Path, fds: tuple[int, ...]) -> int:
    repo_path = _subject(args, out)
    repo = commits.open_repo(repo_path)
    selected = _select(args, repo)
    timings = Timings()
    ws = open_workspace(out=out, env_dir=env_dir, repo_path=repo_path, repo=repo, project_sha=selected[-1].sha,
                        benchmarks=args.benchmarks, fds=fds, timings=timings, torch_build=args.existing is not None)
    project, bench_dir, conf_path, asv = ws.project, ws.bench_dir, ws.conf, ws.asv
    print(f"== tracking {repo_path} ({project.name}): {len(selected)} commit(s), "
          f"{selected[0].short}..{selected[-1].short}; suites in {bench_dir}; output in {out}", flush=True)

    problems: list[str] = []
    try:
        asv.ensure_machine()
        if args.existing is not None:
            missing = python_can_import(args.existing, "torch", "numpy", "asv_runner")
            if bench_dir != config.ROOT / "benchmarks":
                missing += python_can_import(args.existing, "torchbench_core")
            if missing:
                raise UserError(f"{args.existing} cannot import {', '.join(missing)}; install them there "
                                f"(e.g. {args.existing} -m pip install asv_runner, and "
                                f"{args.existing} -m pip install --no-deps -e {config.ROOT} for torchbench_core)")
            asv.run([], benchmarks=args.bench, quick=args.quick, existing=args.existing.resolve(),
                    set_commit_hash=selected[0].sha, skip_existing=not args.rerun, rounds=args.rounds)
        else:
            ws.pythons()
            asv.run([c.sha for c in selected], benchmarks=args.bench, quick=args.quick,
                    skip_existing=not args.rerun, rounds=args.rounds)
    except UserError as e:
        problems.append(str(e))
    except KeyboardInterrupt:
        problems.append("interrupted: the commits whose results were saved are kept; run again to go on")

    if args.quick:
        for p in problems:
            print(f"torchbench: error: {p}", file=sys.stderr)
        return 2 if problems else 0

    found = results.load(out / "results", commits={c.sha for c in selected})
    measured = [c for c in selected if found.for_commit(c.sha)]
    if len(measured) >= 2 and not problems:
        base, head = measured[-2], measured[-1]
        print(f"\n== asv compare {base.short} -> {head.short} (asv's statistics: informative, not a gate)")
        try:
            asv_compare.compare(conf_path, found, base.sha, head.sha,
                                names={c.sha: c.subject[:40] for c in (base, head)})
        except Exception as e:  # asv's compare must not cost us the report
            problems.append(f"asv compare failed: {type(e).__name__}: {e}")
    notes = []
    if not args.no_publish and not problems:
        try:
            notes = publish.publish(asv, out)
        except UserError as e:
            problems.append(str(e))

    run_report = report.summarize(selected, found, timings)
    run_report.problems += problems
    print(run_report.render())
    for note in notes:
        print(f"note: {note}")
    if (out / "html" / "index.html").exists() and not args.no_publish:
        print(f"site: {out / 'html' / 'index.html'}  (or serve it: {sys.executable} -m asv preview "
              f"--config {conf_path})")
    return run_report.exit_status()
