"""`torchbench merge`: arguments -> torchbench.asv_bridge.merge (several machines' results, one history)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..asv_bridge.merge import merge_history
from ..errors import EXIT_FAILURE, EXIT_OK
from ..project.folders import locked_folders
from .options import add_folder_arguments, subject_of

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", type=Path, metavar="RESULTS",
                        help="results folders of `torchbench run` on other machines (an output folder, or its "
                             "results/ folder; asv's per-machine layout)")
    add_folder_arguments(parser, "output folder whose results/ receives the machines; "
                                 "then `torchbench publish --out OUT`")


def main(args: argparse.Namespace) -> int:
    subject = subject_of(args)
    with locked_folders(args.out, args.env_dir, subject.repo, subject.config) as folders:
        merged = merge_history(list(args.inputs), out=folders.out, repo_path=folders.repo_path,
                               repo=folders.repo, benchmarks=args.benchmarks, env_dir=folders.env_dir,
                               user=folders.config)
    print(merged.report())
    print(f"next: torchbench publish --out {folders.out}")
    return EXIT_FAILURE if merged.skipped else EXIT_OK
