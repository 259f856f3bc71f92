"""`torchbench profile`: arguments -> torchbench.profiling.record."""

from __future__ import annotations

import argparse

from ..errors import EXIT_FAILURE, EXIT_OK
from ..profiling.record import DEFAULT_RATE, DEFAULT_SECONDS, OVERHEAD_LABEL, ProfileOptions, profile_history, render_report
from ..project.folders import locked_folders
from .options import add_folder_arguments, add_selection_arguments, checked, regex, selection_of, subject_of

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser, "profile")
    add_folder_arguments(parser, "output folder; profiles go to OUT/profiles")
    parser.add_argument("-b", "--bench", action="append", default=[], metavar="REGEX", type=regex,
                        help="profile every parameter combination of the benchmarks whose name matches REGEX "
                             f"(repeatable; default: the TimerSuite cases labelled {OVERHEAD_LABEL}...)")
    parser.add_argument("--seconds", type=checked(ProfileOptions, "seconds"), default=DEFAULT_SECONDS, metavar="S",
                        help=f"how long each case runs under the profiler (default {DEFAULT_SECONDS:g})")
    parser.add_argument("--rate", type=checked(ProfileOptions, "rate", int), default=DEFAULT_RATE, metavar="HZ",
                        help=f"py-spy's samples per second (default {DEFAULT_RATE})")
    parser.add_argument("--rerun", action="store_true",
                        help="record again the cases that already have a profile (default: skip them)")


def main(args: argparse.Namespace) -> int:
    options = ProfileOptions(patterns=tuple(args.bench), seconds=args.seconds, rate=args.rate, rerun=args.rerun,
                             benchmarks=args.benchmarks)
    subject = subject_of(args)
    with locked_folders(args.out, args.env_dir, subject.repo, subject.config) as folders:
        done = profile_history(folders, selection_of(args), options)
    print(render_report(done, folders.out))
    return EXIT_OK if done.complete else EXIT_FAILURE
