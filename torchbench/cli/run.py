"""`torchbench run` and `torchbench publish`: arguments -> torchbench.api.run_history (measure, then publish)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import UserError
from ..api import run_history
from ..asv_bridge.driver import PipIndex
from ..project import config
from ..history.run import DEFAULT_ROUNDS, Existing, HistoryOptions
from ..publish.site import publish_folder
from ..project.subject import default_out, repository_around
from .options import OUT_DEFAULT, add_folder_arguments, add_selection_arguments, checked, regex, selection_of, subject_of

__all__ = ["add_arguments", "add_publish_arguments", "main", "publish_main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser, "measure")
    add_folder_arguments(parser, "output folder: results, html, outcome records")
    parser.add_argument("-b", "--bench", action="append", default=[], metavar="REGEX", type=regex,
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
    parser.add_argument("--rounds", type=checked(HistoryOptions, "rounds", int), default=DEFAULT_ROUNDS, metavar="K",
                        help=f"fresh processes per benchmark and commit, round after round (asv's rounds; "
                             f"default {DEFAULT_ROUNDS}): one process's value can be off by up to 2x on a shared "
                             f"machine, and change points need several to find a 10%% step")
    parser.add_argument("--torch", action="append", default=[], metavar="VERSION",
                        help="measure with this torch release (exact, e.g. 2.12.0), an asv environment each; "
                             "repeatable: the pages group rows and lines by release (default: the pinned "
                             f"{config.base_config()['matrix']['req']['torch']})")
    parser.add_argument("--index-url", metavar="URL",
                        help="pip's --index-url for the environments (e.g. a CPU wheel index for torch)")
    parser.add_argument("--extra-index-url", action="append", default=[], metavar="URL",
                        help="pip's --extra-index-url for the environments; repeatable")
    parser.add_argument("--no-counts", action="store_true",
                        help="do not count the instructions of plain asv time_ methods under valgrind (a "
                             "TimerSuite's are its CountsSuite's rows, which asv measures)")
    parser.add_argument("--no-publish", action="store_true", help="do not publish the site")


def main(args: argparse.Namespace) -> int:
    if args.existing is not None and args.repo is None:
        raise UserError("--existing needs --repo: the torch checkout whose commit the build came from")
    if args.commit is not None and args.existing is None:
        raise UserError("--commit goes with --existing")
    options = HistoryOptions(patterns=tuple(args.bench), rounds=args.rounds, quick=args.quick, rerun=args.rerun,
                             benchmarks=args.benchmarks, torch=tuple(args.torch), counts=not args.no_counts,
                             pip=PipIndex(args.index_url, tuple(args.extra_index_url)))
    existing = Existing(args.existing.absolute(), args.commit) if args.existing is not None else None
    subject = subject_of(args)
    report = run_history(subject.repo, selection_of(args), out=args.out, options=options, existing=existing,
                         env_dir=args.env_dir, publish=not args.no_publish, config=subject.config)
    print(report.render())
    out = args.out.resolve()
    if (out / "html" / "index.html").exists() and not args.no_publish:
        print(f"site: {out / 'html' / 'index.html'}  (or serve it: {sys.executable} -m asv preview "
              f"--config {out / 'asv.conf.json'})")
    return report.exit_status()


def add_publish_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, help=f"output folder of `torchbench run` ({OUT_DEFAULT})")


def publish_main(args: argparse.Namespace) -> int:
    if args.out is None:
        args.out = default_out(repository_around(Path.cwd()))
    for note in publish_folder(args.out):
        print(f"note: {note}")
    print(f"site: {args.out.resolve() / 'html' / 'index.html'}")
    return 0
