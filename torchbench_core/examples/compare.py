"""The Timer and Compare APIs on three "branches" of torch (seed 000's second example, as torch ships it):

    python -m torchbench_core.examples.compare [--sizes 1 10 ...] [--min-run-time S]

`my_branch` and `severe_regression` emulate slower torch builds with a per-element sleep (1 and 5 ns an
element above 5,000 elements), so the colourised table shows where they fall behind `master`. In practice
the branches are separate processes writing serialised Measurements; here they are pickled and loaded back
in one process, as in torch's example, to keep it short.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from typing import Any, Sequence

import torch

import torchbench_core as benchmark_utils


class FauxTorch:
    """torch with an extra cost per output element: another version of torch, for the example's sake."""

    def __init__(self, real_torch: Any, extra_ns_per_element: float) -> None:
        self._real_torch = real_torch
        self._extra_ns_per_element = extra_ns_per_element

    def extra_overhead(self, result: torch.Tensor) -> torch.Tensor:
        numel = int(result.numel())
        if numel > 5000:  # time.sleep costs ~65 us itself: only worth it for large outputs
            time.sleep(numel * self._extra_ns_per_element * 1e-9)
        return result

    def add(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self.extra_overhead(self._real_torch.add(*args, **kwargs))

    def mul(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self.extra_overhead(self._real_torch.mul(*args, **kwargs))


BRANCHES = (("master", None), ("my_branch", 1), ("severe_regression", 5))
TASKS = (("add", "add", "torch.add(x, y)"), ("add", "add (extra +0)", "torch.add(x, y + zero)"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 1000, 10000, 50000])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeats", type=int, default=2, help="measurements of every timer")
    parser.add_argument("--min-run-time", type=float, default=0.05)
    args = parser.parse_args(argv)

    timers = [
        benchmark_utils.Timer(
            stmt=stmt,
            globals={
                "torch": torch if overhead_ns is None else FauxTorch(torch, overhead_ns),
                "x": torch.ones((size, 4)),
                "y": torch.ones((1, 4)),
                "zero": torch.zeros(()),
            },
            label=label,
            sub_label=sub_label,
            description=f"size: {size}",
            env=branch,
            num_threads=num_threads,
        )
        for branch, overhead_ns in BRANCHES
        for label, sub_label, stmt in TASKS
        for size in args.sizes
        for num_threads in args.threads
    ]
    serialized = []
    for i, timer in enumerate(timers * args.repeats):
        serialized.append(pickle.dumps(timer.blocked_autorange(min_run_time=args.min_run_time)))
        print(f"\r{i + 1} / {len(timers) * args.repeats}", end="", file=sys.stderr)
    print(file=sys.stderr)

    comparison = benchmark_utils.Compare([pickle.loads(s) for s in serialized])
    print("== Unformatted " + "=" * 80 + "\n" + "/" * 95 + "\n")
    comparison.print()
    print("== Formatted " + "=" * 80 + "\n" + "/" * 93 + "\n")
    comparison.trim_significant_figures()
    comparison.colorize()
    comparison.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
