"""`torchbench alert`: arguments -> torchbench.alert.pull_request; the comment printed and written."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from ..ab.options import Policy
from ..alert.pull_request import AlertOptions, alert, alert_from_results
from ..errors import EXIT_INCONCLUSIVE, UserError
from ..project.folders import locked_folders
from .options import add_folder_arguments, add_measurement_arguments, checked, policy_of, regex, rounds_of, subject_of

__all__ = ["add_arguments", "main"]

BUDGET = 9.0  # minutes: a verdict within 10, the last round, counts and site included


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("range", nargs="?", metavar="BASE..HEAD",
                        help="the change, as a git range (the same as --base BASE --head HEAD)")
    parser.add_argument("--base", help="the base revision (e.g. the pull request's merge base)")
    parser.add_argument("--head", help="the head revision (the change)")
    parser.add_argument("-b", "--bench", action="append", default=[], metavar="REGEX", type=regex,
                        help="only benchmarks whose name matches REGEX; repeatable")
    add_folder_arguments(parser)
    add_measurement_arguments(parser, budget=BUDGET)
    parser.add_argument("--base-torch", metavar="VERSION",
                        help="the upgrade verdict: measure the base side with this torch release (exact), the head "
                             "side with --head-torch, each in its own environment; --base defaults to --head")
    parser.add_argument("--head-torch", metavar="VERSION")
    parser.add_argument("--base-results", type=Path, nargs="+", metavar="PATH",
                        help="decide from these asv result files or folders instead of measuring")
    parser.add_argument("--head-results", type=Path, nargs="+", metavar="PATH")
    parser.add_argument("--site-url", metavar="URL",
                        help="where OUT/alert/BASE..HEAD/site will be served: the comment then links to its "
                             "Compare rows and flame graphs (default: it names the files)")
    parser.add_argument("--no-profile", action="store_true", help="no flame graphs of the regressions (py-spy)")
    parser.add_argument("--undecided-exit", type=checked(Policy, "undecided_exit", int),
                        default=Policy().undecided_exit, metavar="N",
                        help="the exit status when no regression was found but rows stayed undecided (default "
                             f"{Policy().undecided_exit}: noise does not fail a CI gate; {EXIT_INCONCLUSIVE} to "
                             "gate on a decided verdict)")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write the comment here")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the JSON report here")


def main(args: argparse.Namespace) -> int:
    policy = dataclasses.replace(policy_of(args), undecided_exit=args.undecided_exit)
    if args.base_results or args.head_results:
        if not (args.base_results and args.head_results):
            raise UserError("give both --base-results and --head-results")
        report = alert_from_results(args.base_results, args.head_results, policy)
    else:
        if args.range:
            base, sep, head = args.range.partition("..")
            if not (sep and base and head) or args.base or args.head:
                raise UserError(f"{args.range!r}: give the change as BASE..HEAD, or --base and --head")
            args.base, args.head = base, head
        if args.base_torch and args.head and not args.base:
            args.base = args.head  # the upgrade verdict of one commit
        if not (args.base and args.head):
            raise UserError("give --base and --head (or --base-results and --head-results)")
        options = AlertOptions(rounds=rounds_of(args), policy=policy, patterns=tuple(args.bench),
                               profile=not args.no_profile, site_url=args.site_url, base_torch=args.base_torch,
                               head_torch=args.head_torch)
        subject = subject_of(args)
        with locked_folders(args.out, args.env_dir, subject.repo, subject.config) as folders:
            report = alert(folders, args.base, args.head, options, benchmarks=args.benchmarks)
    text = report.markdown()
    print("\n" + text)
    if args.markdown:
        atomic_write_text(args.markdown, text)
    if args.json:
        atomic_write_text(args.json, report.json())
    print(f"\n== {report.outcome()}: exit status {report.exit_status()}", file=sys.stderr)
    return report.exit_status()
