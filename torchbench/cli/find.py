"""`torchbench find`: arguments -> torchbench.history.find."""

from __future__ import annotations

import argparse
import sys

from ..asv_bridge.workspace import open_workspace
from ..errors import EXIT_INCONCLUSIVE, EXIT_OK, UserError
from ..history.find import FOUND, FindOptions, Session, bisect_range, find_steps, render_bisect, render_steps
from ..project import commits
from ..project.folders import locked_folders
from .options import add_folder_arguments, add_measurement_arguments, policy_of, regex, rounds_of, subject_of

__all__ = ["add_arguments", "main"]

BUDGET = 3.0  # minutes per comparison


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("benchmark", nargs="?", metavar="BENCHMARK", type=regex,
                        help="regex: only benchmarks whose name (benchmark(params)) matches; needed to bisect")
    parser.add_argument("--good", metavar="REV", help="bisect: a revision before the step")
    parser.add_argument("--bad", metavar="REV", help="bisect: a revision after the step")
    parser.add_argument("--branch", default="HEAD", metavar="REV",
                        help="the history's branch: its first-parent commits give the order (default HEAD)")
    parser.add_argument("--no-confirm", action="store_true",
                        help="report the detected steps without measuring anything (they stay 'unconfirmed')")
    parser.add_argument("--no-profile", action="store_true", help="no flame graphs of the culprit and its parent")
    add_folder_arguments(parser)
    add_measurement_arguments(parser, budget=BUDGET)


def main(args: argparse.Namespace) -> int:
    if (args.good is None) != (args.bad is None):
        raise UserError("give both --good and --bad to bisect, or neither to find the history's steps")
    if args.good and not args.benchmark:
        raise UserError("bisecting needs a BENCHMARK (a regex of benchmark names)")
    options = FindOptions(rounds=rounds_of(args), policy=policy_of(args), profile=not args.no_profile)
    subject = subject_of(args)
    with locked_folders(args.out, args.env_dir, subject.repo, subject.config) as f:
        newest = commits.resolve(f.repo, args.bad or args.branch)

        def session() -> Session:
            ws = open_workspace(out=f.out, env_dir=f.env_dir, repo_path=f.repo_path, repo=f.repo,
                                project_sha=newest.sha, benchmarks=args.benchmarks, fds=f.fds, user=f.config)
            return Session(ws, options)

        try:
            if args.good:
                s = session()
                result = bisect_range(s, f.repo, args.good, args.bad, args.benchmark)
                print(render_bisect(result, s))
                return EXIT_OK if result["status"] == FOUND else EXIT_INCONCLUSIVE
            found = find_steps(f.out, f.repo, session, branch=args.branch, pattern=args.benchmark,
                               confirm=not args.no_confirm)
        except KeyboardInterrupt:
            raise UserError("interrupted: what was recorded so far is kept") from None
    for w in found.warnings:
        print(f"torchbench: warning: {w}", file=sys.stderr)
    print(render_steps(found, f.out))
    return EXIT_OK
