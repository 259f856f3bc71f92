"""The `torchbench` command: one entry point, a subcommand per step of the flow.

    torchbench run      measure a history (asv environments per commit, or a torch build)
    torchbench publish  the static site of the results: Compare tables, series, flame graphs
    torchbench profile  flame graphs of each commit's benchmark cases (py-spy), kept for differential views
    torchbench find     steps in the history, confirmed by re-measuring, and bisected to their commit
    torchbench alert    did a change (base -> head) make a benchmark slower? (exit 1 if so)
    torchbench merge    several machines' results (one `run` each) into one history, to publish together

Exit status (torchbench/errors.py): 0 done, 1 a regression (alert only), 2 a
failure, 3 inconclusive (find --good/--bad); the report is printed in every case.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import traceback
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from ..errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, UserError
from . import alert, find, merge, profile, run

__all__ = ["build_parser", "main"]

_FAILURE = f"{EXIT_FAILURE} a failure (a benchmark, a build, a malformed input, a bad option, or the tool)"
EPILOGS = {
    "run": f"Exit status: {EXIT_OK} everything measured; {_FAILURE}.",
    "publish": f"Exit status: {EXIT_OK} published; {_FAILURE}.",
    "profile": f"Exit status: {EXIT_OK} every case recorded (or already there); {_FAILURE}: a commit did not "
               "build, a case failed, or py-spy is missing or failed.",
    "find": f"Exit status: {EXIT_OK} done (bisect: the culprit found); {EXIT_INCONCLUSIVE} bisect inconclusive "
            f"(never {EXIT_REGRESSION}, which means a regression); {_FAILURE}.",
    "alert": f"Exit status: {EXIT_OK} no regression (every compared row decided), or none found with rows left "
             f"undecided (--undecided-exit N changes that one); {EXIT_REGRESSION} a regression; {_FAILURE}. The "
             "JSON report's `outcome` says which: regression, no_regression, undecided or failed.",
    "merge": f"Exit status: {EXIT_OK} every input merged; {_FAILURE}: a file could not be read (named; the rest "
             "is merged).",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchbench", description=__doc__.splitlines()[0],
                                     epilog="Every subcommand prints its report first. " + " ".join(
                                         f"{name}: {text}" for name, text in EPILOGS.items()))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, module, add, func, help: str) -> None:
        p = sub.add_parser(name, help=help, description=(module.__doc__ or help).split("\n\n")[0],
                           epilog=EPILOGS[name])
        add(p)
        p.set_defaults(func=func)

    from ..history import find as find_lib, run as run_lib
    from ..profiling import record as profile_lib
    from ..alert import pull_request as alert_lib
    from ..publish import site as publish_lib
    command("run", run_lib, run.add_arguments, run.main, "measure a history of commits, or a torch build")
    command("publish", publish_lib, run.add_publish_arguments, run.publish_main,
            "publish the static site of an output folder")
    command("profile", profile_lib, profile.add_arguments, profile.main,
            "flame graphs (py-spy, native frames) of benchmark cases at each commit")
    command("find", find_lib, find.add_arguments, find.main,
            "since when? steps in the history, confirmed, bisected to a commit")
    command("alert", alert_lib, alert.add_arguments, alert.main,
            "did the change from base to head make anything slower?")
    from ..asv_bridge import merge as merge_lib
    command("merge", merge_lib, merge.add_arguments, merge.main,
            "several machines' results into one history, published side by side")
    return parser


def _crash_file(args: argparse.Namespace) -> Path:
    """Where an unexpected exception's traceback is kept: OUT/crashes when the command has an output folder."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = getattr(args, "out", None)
    folder = Path(out).resolve() / "crashes" if out else Path(tempfile.gettempdir())
    return folder / f"torchbench-{args.command}-{stamp}-{os.getpid()}.txt"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # a bad flag: argparse says so and exits 2
    try:
        return args.func(args)
    except UserError as e:
        print(f"torchbench: error: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("torchbench: interrupted", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as e:  # a bug or an unforeseen failure: never exit 1, which means "regression"
        path = _crash_file(args)
        try:
            atomic_write_text(path, traceback.format_exc())
            where = f"traceback in {path}"
        except OSError:
            where = "traceback follows"
            traceback.print_exc()
        print(f"torchbench {args.command}: unexpected error: {type(e).__name__}: {e} ({where})", file=sys.stderr)
        return EXIT_FAILURE
