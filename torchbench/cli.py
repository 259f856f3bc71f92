"""The `torchbench` command: one entry point, a subcommand per step of the flow.

    torchbench run      measure a history (asv environments per commit, or a torch build)
    torchbench alert    did a change (base -> head) make a benchmark slower? (exit 1 if so)
    torchbench publish  the static site of the results: Compare tables, series, flame graphs
    torchbench profile  flame graphs of each commit's benchmark cases (py-spy), kept for differential views
    torchbench find     steps in the history, confirmed by re-measuring, and bisected to their commit

Exit status (errors.py): 0 everything measured, 1 a regression (alert), 2 a
failure; the report is printed in every case.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import lock
from .alert import command as alert_mod
from . import find as find_mod
from . import profile as profile_mod
from . import publish as publish_mod
from . import run as run_mod
from .asv_driver import Asv, Timings
from .errors import EXIT_FAILURE, EXIT_OK, UserError

__all__ = ["main"]


def _publish(args: argparse.Namespace) -> int:
    out = args.out.resolve()
    conf = out / "asv.conf.json"
    if not conf.exists():
        raise UserError(f"{out}: no asv.conf.json; run `torchbench run --out {args.out}` first")
    with lock.exclusive(out) as fd:
        notes = publish_mod.publish(Asv(conf, Timings(), keep_fds=(fd,)), out)
    for note in notes:
        print(f"note: {note}")
    print(f"site: {out / 'html' / 'index.html'}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="measure a history of commits, or a torch build",
                         description=run_mod.__doc__.split("\n\n")[0], epilog="Exit status: 0 everything "
                         "measured; 2 a benchmark or build failed, or the tool did.")
    run_mod.add_arguments(run)
    run.set_defaults(func=run_mod.main)
    alert = sub.add_parser("alert", help="did the change from base to head make anything slower?",
                           description=alert_mod.__doc__.split("\n\n")[0],
                           epilog="Exit status: 0 no regression; 1 a regression; 2 a failure (the report is "
                                  "printed in every case).")
    alert_mod.add_arguments(alert)
    alert.set_defaults(func=alert_mod.main)
    prof = sub.add_parser("profile", help="flame graphs (py-spy, native frames) of benchmark cases at each commit",
                          description=profile_mod.__doc__.split("\n\n")[0],
                          epilog="Exit status: 0 every case recorded (or already there); 2 a commit did not "
                                 "build, a case failed, or py-spy is missing or failed (the report is printed "
                                 "in every case).")
    profile_mod.add_arguments(prof)
    prof.set_defaults(func=profile_mod.main)
    find = sub.add_parser("find", help="since when? steps in the history, confirmed, bisected to a commit",
                          description=find_mod.__doc__.split("\n\n")[0],
                          epilog="Exit status: 0 done (bisect: the culprit found); 1 bisect inconclusive; "
                                 "2 a failure.")
    find_mod.add_arguments(find)
    find.set_defaults(func=find_mod.main)
    pub = sub.add_parser("publish", help="publish the static site of an output folder")
    pub.add_argument("--out", type=Path, default=Path(".torchbench"),
                     help="output folder of `torchbench run` (default ./.torchbench)")
    pub.set_defaults(func=_publish)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as e:
        print(f"torchbench: error: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("torchbench: interrupted", file=sys.stderr)
        return EXIT_FAILURE
