"""Run the standard definitions (or a subset) and write one JSON result file plus tables.

    python -m torchbench_core.suite [-k PATTERN ...] [--mode both|wall|counts] [--out FILE]

The file is versioned by an md5 over the sorted case keys of the whole
standard suite (as PyTorch's CI did), so results from a changed suite are
recognisable. It is written atomically. Exit status 2 when any case failed
(named in the tables and the file; the other cases' results are there all
the same) or the definitions cannot be loaded; 0 otherwise. There is no 1:
torchbench keeps 1 for "regression".
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from .compare import Compare
from .grouped import Definitions, case_key, definitions_version, materialize
from .measurement import Measurement
from .runner import CaseResult, Runner, WorkOrder
from .storage import atomic_write_text
from .task_spec import TaskSpec

SCHEMA = "torchbench_core.SuiteResults"
SCHEMA_VERSION = 1


STANDARD = "torchbench_core.definitions.standard:BENCHMARKS"


class DefinitionsError(ValueError):
    """The definitions named cannot be loaded (no such module or name, or not a dict)."""


def load_definitions(spec: str) -> Definitions:
    """'package.module:NAME' -> the definitions dict it names."""
    module_name, _, attr = spec.partition(":")
    try:
        definitions = getattr(importlib.import_module(module_name), attr or "BENCHMARKS")
    except (ImportError, AttributeError) as e:
        raise DefinitionsError(f"cannot load definitions {spec!r}: {e}") from e
    if not isinstance(definitions, dict):
        raise DefinitionsError(f"definitions {spec!r} is a {type(definitions).__name__}, not a dict")
    return definitions


def work_orders(patterns: Sequence[str] = (), definitions: Definitions | None = None) -> tuple[list[WorkOrder], str]:
    """The selected cases, and the version of the whole suite."""
    cases = materialize(definitions if definitions is not None else load_definitions(STANDARD))
    version = definitions_version(case_key(*c) for c in cases)
    orders = [WorkOrder(*c) for c in cases]
    if patterns:
        regexes = [re.compile(p) for p in patterns]
        orders = [o for o in orders if any(r.search(_name(o)) for r in regexes)]
    return orders, version


def _name(order: WorkOrder) -> str:
    variant = " ".join(v for v in order.autolabels.as_dict.values() if v and v != "Python")
    return f"{' / '.join(order.label)} [{variant or 'explicit'}, {order.timer_args.num_threads} thread(s)]"


def _environment() -> dict[str, Any]:
    import torch

    try:
        valgrind = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        valgrind = None
    return {"torch": torch.__version__, "python": platform.python_version(),
            "platform": platform.platform(), "valgrind": valgrind}


def results_document(results: Sequence[CaseResult], version: str, config: dict[str, Any],
                     started: float, finished: float) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "version": version,
        "start_time": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(),
        "end_time": datetime.datetime.fromtimestamp(finished, datetime.timezone.utc).isoformat(),
        "wall_seconds": round(finished - started, 3),
        "environment": _environment(),
        "config": config,
        "cases": {
            r.order.key: {
                "label": list(r.order.label),
                "autolabels": r.order.autolabels.as_dict,
                "num_threads": r.order.timer_args.num_threads,
                "timer_args": r.order.timer_args.to_dict(),
                "wall": r.wall.to_dict() if r.wall else None,
                "instructions": r.instructions,
                "baseline_instructions": r.baseline_instructions,
                "errors": r.errors,
                "attempts": r.attempts,
            }
            for r in results
        },
    }


def tables(results: Sequence[CaseResult], callgrind_number: int) -> str:
    out = []
    walls = [r.wall for r in results if r.wall is not None]
    if walls:
        compare = Compare(walls)
        compare.trim_significant_figures()
        out.append(str(compare))
    counted = [
        Measurement(callgrind_number, [float(c) for c in r.instructions],
                    TaskSpec(r.order.timer_args.stmt, r.order.timer_args.setup,
                             num_threads=r.order.timer_args.num_threads, **r.order.task_metadata()))
        for r in results if r.instructions
    ]
    if counted:
        compare = Compare(counted)
        compare.as_counts("instructions (baseline subtracted)")
        out.append(str(compare))
    failed = [r for r in results if r.errors]
    if failed:
        out.append(f"{len(failed)} case(s) failed:")
        out.extend(f"  {_name(r.order)}: {r.errors[0].strip().splitlines()[-1]}" for r in failed)
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", "--filter", action="append", default=[], metavar="PATTERN",
                        help="regex on 'label / sub [variant, threads]'; repeatable (any matches)")
    parser.add_argument("--definitions", default=STANDARD, metavar="MODULE:NAME",
                        help=f"definitions to run (default: {STANDARD})")
    parser.add_argument("--mode", choices=("both", "wall", "counts"), default="both")
    parser.add_argument("--out", type=Path, default=Path("out/instruction_counts.json"))
    parser.add_argument("--min-run-time", type=float, default=0.2, help="wall seconds per case")
    parser.add_argument("--callgrind-number", type=int, default=100, help="runs per count")
    parser.add_argument("--callgrind-repeats", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=120.0, help="wall-time seconds per case")
    parser.add_argument("--callgrind-timeout", type=float, default=600.0, help="seconds per case under valgrind")
    parser.add_argument("--retries", type=int, default=1, help="retries after a crash or a timeout")
    parser.add_argument("--workers", type=int, default=2,
                        help="valgrind processes side by side for the counts (default 2: this machine's cores); "
                             "wall time is measured one case at a time whatever this says")
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")

    try:
        orders, version = work_orders(args.filter, load_definitions(args.definitions))
    except DefinitionsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not orders:
        parser.error(f"no case matches {args.filter}")
    if args.list:
        print("\n".join(_name(o) for o in orders))
        print(f"{len(orders)} cases; suite version {version}")
        return 0

    config = {k: getattr(args, k) for k in ("definitions", "filter", "mode", "min_run_time", "callgrind_number",
                                             "callgrind_repeats", "timeout", "callgrind_timeout", "retries", "workers")}
    started = time.time()
    from .cpp import CppToolchainError

    try:
        results = Runner(
            orders, wall=args.mode in ("both", "wall"), counts=args.mode in ("both", "counts"),
            min_run_time=args.min_run_time, callgrind_number=args.callgrind_number,
            callgrind_repeats=args.callgrind_repeats, timeout=args.timeout,
            callgrind_timeout=args.callgrind_timeout, retries=args.retries, workers=args.workers,
        ).run()
    except CppToolchainError as e:  # nothing C++ can be built here: say so, not a traceback (and never 1)
        print(f"error: {e}", file=sys.stderr)
        return 2
    doc = results_document(results, version, config, started, time.time())
    atomic_write_text(args.out, json.dumps(doc, indent=1, allow_nan=False))
    print(tables(results, args.callgrind_number))
    print(f"\n{len(results)} cases in {doc['wall_seconds']:.0f} s; results: {args.out} (suite version {version})")
    return 2 if any(r.errors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
