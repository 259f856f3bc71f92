"""Trivial use of the Timer API (seed 000's first example, as torch ships it):

    python -m torchbench_core.examples.simple_timeit [--runs N]
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import torch

import torchbench_core as benchmark_utils


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="times to repeat the two measurements")
    parser.add_argument("--number", type=int, default=10000, help="runs of the statement in timeit")
    args = parser.parse_args(argv)

    timer = benchmark_utils.Timer(
        stmt="x + y",
        globals={"x": torch.ones((4, 8)), "y": torch.ones((1, 8))},
        label="Broadcasting add (4x8)",
    )
    for i in range(args.runs):
        print(f"Run: {i}\n{'-' * 40}")
        print(f"timeit:\n{timer.timeit(args.number)}\n")
        print(f"autorange:\n{timer.blocked_autorange()}\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
