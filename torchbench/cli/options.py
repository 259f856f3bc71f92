"""Options several subcommands share, and the typed options they become (library code never sees argparse)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Callable

from ..ab.design_choice import TRIAL_ROUNDS
from ..ab.options import MIN_ROUNDS, Policy, Rounds
from ..errors import UserError
from ..project import commits
from ..project.subject import Subject, choose, default_out
from ..validate import SCHEDULES, check

__all__ = ["OUT_DEFAULT", "add_folder_arguments", "add_measurement_arguments", "add_selection_arguments", "checked", "policy_of",
           "regex", "rounds_of", "selection_of", "subject_of"]


OUT_DEFAULT = ("default: .torchbench at the root of the tracked repository, wherever you stand in it; "
               "./.torchbench for the example")


def add_folder_arguments(parser: argparse.ArgumentParser, out_help: str = "output folder", repo: bool = True) -> None:
    if repo:
        parser.add_argument("--repo", type=Path,
                            help="git repository to track (default: the one you are in, as asv does; outside any "
                                 "repository, the embedded example library, made under OUT)")
        parser.add_argument("--example", action="store_true",
                            help="track the embedded example library (six commits, made under OUT) wherever you are")
        parser.add_argument("--config", type=Path, metavar="FILE",
                            help="the project's asv.conf.json (default: asv.conf.json at the repository's root, or "
                                 "in benchmarks/, asv_bench/ or benchmark/); its repo, benchmark_dir, commands, "
                                 "matrix and branches are used, torchbench's pinned torch and plugins added")
    parser.add_argument("--benchmarks", type=Path, metavar="DIR",
                        help="asv suite folder (default: the asv.conf.json's benchmark_dir, else REPO/benchmarks "
                             "if it exists, else torchbench's own)")
    parser.add_argument("--out", type=Path, help=f"{out_help} ({OUT_DEFAULT})")
    parser.add_argument("--env-dir", type=Path, metavar="DIR",
                        help="where asv's environments live (default OUT/env); share it between output folders")


def subject_of(args: argparse.Namespace) -> Subject:
    """The repository the command tracks (project.subject.choose), its line printed: the log says which. Sets
    args.out where it was not given (project.subject.default_out: the tracked repository's .torchbench)."""
    chosen = choose(args.repo, example=args.example, config=args.config)
    print(chosen.line, flush=True)
    if args.out is None:
        args.out = default_out(chosen.repo)
    return chosen


def regex(text: str) -> str:
    """An argparse type: a benchmark regex (asv's -b, Python's re), refused at once when it does not compile."""
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular expression ({e})") from None
    return text


def add_selection_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """RANGE, --last and --hashfile: how `run` and `profile` choose their commits."""
    parser.add_argument("range", nargs="?", metavar="RANGE",
                        help="git range A..B (first-parent commits of B not in A), or one revision")
    parser.add_argument("--last", type=checked(commits.Selection, "last", int), default=None, metavar="N",
                        help=f"the last N first-parent commits of HEAD (default {commits.DEFAULT_LAST})")
    parser.add_argument("--hashfile", type=Path, metavar="F", help=f"{verb} the commits listed in F, one per line")


def selection_of(args: argparse.Namespace) -> commits.Selection:
    return commits.Selection(range=args.range, last=args.last, hashfile=args.hashfile)


def add_measurement_arguments(parser: argparse.ArgumentParser, budget: float) -> None:
    """How two commits are measured against each other and decided (alert and find)."""
    defaults = Policy()
    parser.add_argument("--budget-minutes", type=checked(Rounds, "budget_minutes"), default=budget,
                        help=f"per comparison, stop adding rounds this many minutes after the comparison began, "
                             f"build and instruction counts included (default {budget:g}); decided benchmarks "
                             "stop earlier")
    parser.add_argument("--min-rounds", type=checked(Rounds, "min_rounds", int), default=None,
                        help=f"rounds before any early stop, and before the budget may end the rounds (default "
                             f"{MIN_ROUNDS}, and the budget then waits until every row has enough processes to reach "
                             "its bar; given, the budget may end rounds at N: for quick trials)")
    parser.add_argument("--max-rounds", type=checked(Rounds, "max_rounds", int), default=Rounds().max_rounds,
                        help=f"at most this many rounds (default {Rounds().max_rounds}: the budget binds first)")
    parser.add_argument("--fdr", type=checked(Policy, "fdr"), default=defaults.fdr,
                        help=f"the suite's false-alert budget, in (0, 1) (default {defaults.fdr:g}): "
                             f"{defaults.deterministic_share:g} of it for the instruction-count and simulated-cycle "
                             "tests, the rest for the wall time's false discovery rate")
    parser.add_argument("--floor", type=checked(Policy, "floor"), default=defaults.floor,
                        help=f"never alert on a change below this (default {defaults.floor:g})")
    parser.add_argument("--threshold", type=checked(Policy, "threshold"), default=defaults.threshold,
                        help=f"the change that matters: 'unchanged' rules it out (default {defaults.threshold:g})")
    parser.add_argument("--count-floor", type=checked(Policy, "count_floor"), default=defaults.count_floor,
                        help="instruction counts that move by at least this much (and beyond their noise) decide a "
                             f"row alone (default {defaults.count_floor:g})")
    parser.add_argument("--no-counts", action="store_true", help="skip instruction counts (valgrind)")
    parser.add_argument("--count-share", type=checked(Rounds, "count_share"), default=Rounds().count_share,
                        help="the share of the budget instruction counts may take, in (0, 1) (default "
                             f"{Rounds().count_share:g}); the rows they leave uncounted keep their wall time")
    parser.add_argument("--confirm-share", type=checked(Rounds, "confirm_share"), default=Rounds().confirm_share,
                        help="the share of the budget past --count-share that confirming the rows whose counts "
                             f"moved may take, out of the rounds' (default {Rounds().confirm_share:g})")
    parser.add_argument("--design", dest="schedule", choices=SCHEDULES, default=Rounds().schedule,
                        help="how a round runs its base and head processes: alternating (one after the other, "
                             "each alone), duet (both at once, one core each, swapped every round, meeting before "
                             "every case's timing, decided by the paired test of the rounds where it reaches the "
                             "bar; needs two usable cores, else the rounds alternate): twice the rounds a minute, "
                             "a gain where the machine's load moves both processes together, none where it does "
                             "not, and memory-bound changes read larger beside the other process; or auto (the "
                             f"default): {TRIAL_ROUNDS} rounds of each interleaved, then the one whose projected MDE at the end "
                             "of the budget is smaller, the figures in the notes; a regression from duets that "
                             "its alternating rounds do not confirm is labelled 'duet only' "
                             "(docs/alerts.md, docs/results.md#the-design-chosen-from-the-data)")
    parser.add_argument("--paired", action="store_true",
                        help="decide by the paired test of each round's two processes (Wilcoxon signed-rank) where "
                             "enough rounds can reach the bar: for a machine whose load moves both processes of a "
                             "round together (off by default: here they barely correlate, and the unpaired test "
                             "is stronger; evaluation/stats_validation.py measures both)")


def checked(cls, name: str, convert: Callable = float) -> Callable[[str], object]:
    """An argparse type for the option field cls.NAME: converted, then checked by the field's own rule, so a
    bad value is refused by argparse (exit 2, naming the flag) with the API's message."""
    def parse(text: str):
        value = convert(text)  # ValueError: argparse says "invalid float value"
        try:
            check(cls, name, value)
        except UserError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{name} ")) from None
        return value

    parse.__name__ = convert.__name__
    return parse


def _cross_checked(make):
    try:
        return make()
    except UserError as e:  # a rule between two flags (min_rounds <= max_rounds)
        raise UserError(f"bad options: {str(e).replace('_', '-')}") from None


def rounds_of(args: argparse.Namespace) -> Rounds:
    given = args.min_rounds is not None
    return _cross_checked(lambda: Rounds(budget_minutes=args.budget_minutes,
                                         min_rounds=args.min_rounds if given else MIN_ROUNDS,
                                         max_rounds=args.max_rounds, counts=not args.no_counts,
                                         until_reachable=not given, schedule=args.schedule,
                                         count_share=args.count_share, confirm_share=args.confirm_share))


def policy_of(args: argparse.Namespace) -> Policy:
    return Policy(fdr=args.fdr, floor=args.floor, threshold=args.threshold, count_floor=args.count_floor,
                  paired=args.paired)
