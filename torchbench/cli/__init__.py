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

from .. import __version__

from torchbench_core.storage import atomic_write_text

from ..errors import INTERRUPTED, EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, UserError
from . import alert, find, merge, profile, run

__all__ = ["ClosedPipeSafe", "build_parser", "main"]

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


# Each --help ends with examples (run from inside the tracked repository, as with asv: it is the project).
EXAMPLES = {
    "run": ["torchbench run                       # the last 6 commits of the repository you are in",
            "torchbench run HEAD~10..HEAD -b Softmax --rounds 2",
            "torchbench run --torch 2.12.0 --torch 2.13.0 HEAD",
            "torchbench run --example            # the embedded example library's six commits"],
    "publish": ["torchbench publish                   # the site of ./.torchbench, in .torchbench/html",
                "torchbench publish --out /tmp/tb"],
    "profile": ["torchbench profile --last 2 -b Softmax",
                "torchbench profile --example"],
    "find": ["torchbench find                      # the steps of the measured history, confirmed",
             "torchbench find Softmax --good v1.0 --bad main   # bisect"],
    "alert": ["torchbench alert main..HEAD          # this branch against main",
              "torchbench alert --base main --head HEAD --markdown comment.md",
              "torchbench alert --base-results base/ --head-results head/   # from asv result files",
              "torchbench alert main..HEAD | head   # a closed pipe changes nothing: the exit status is the verdict's"],
    "merge": ["torchbench merge machine2/.torchbench machine3/.torchbench && torchbench publish"],
}


def _epilog(name: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name]) + "\n\n" + EPILOGS[name]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchbench", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="examples:\n  torchbench run && torchbench publish   # in your "
                                            "repository, as asv run && asv publish\n  torchbench alert main..HEAD\n\n"
                                            "Every subcommand prints its report first. " + " ".join(
                                         f"{name}: {text}" for name, text in EPILOGS.items()))
    parser.add_argument("--version", action="version",
                        version=f"torchbench {__version__} (distribution torchbench-tracker)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, module, add, func, help: str) -> None:
        p = sub.add_parser(name, help=help, description=(module.__doc__ or help).split("\n\n")[0],
                           epilog=_epilog(name), formatter_class=argparse.RawDescriptionHelpFormatter)
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
    parser.subcommands = sub.choices  # {name: its parser}: a flag the subcommand does not know is its error
    return parser


def _crash_file(args: argparse.Namespace) -> Path:
    """Where an unexpected exception's traceback is kept: OUT/crashes when the command has an output folder."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = getattr(args, "out", None)
    folder = Path(out).resolve() / "crashes" if out else Path(tempfile.gettempdir())
    return folder / f"torchbench-{args.command}-{stamp}-{os.getpid()}.txt"


class ClosedPipeSafe:
    """sys.stdout for the command: when its reader goes (`torchbench alert ... | head`), the rest of the output
    goes to /dev/null and the command goes on to its own exit status, never a BrokenPipeError (whose exit
    status 1 would read as "regression")."""

    def __init__(self, stream):
        self._stream = stream
        self.closed_pipe = False

    def _to_devnull(self) -> None:
        self.closed_pipe = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())  # children started from now on inherit /dev/null too
        os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    if not isinstance(sys.stdout, ClosedPipeSafe):
        sys.stdout = ClosedPipeSafe(sys.stdout)
    try:
        parser = build_parser()
        args, unknown = parser.parse_known_args(argv)  # a bad flag: argparse says so and exits 2
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return EXIT_FAILURE
    if unknown:  # with the subcommand's usage, not the top level's
        parser.subcommands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.func(args)
    except UserError as e:
        print(f"torchbench: error: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
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
