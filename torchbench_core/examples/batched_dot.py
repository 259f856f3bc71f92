"""The seed tutorial's batched-dot comparison (section 5), measured by torchbench_core.

mul/sum against bmm over input sizes and thread counts, printed as a Compare
table. Run: python -m torchbench_core.examples.batched_dot [--min-run-time S]
"""

from __future__ import annotations

import argparse
import os
import sys
from itertools import product

import torch

import torchbench_core as benchmark


def batched_dot_mul_sum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Batched dot by multiplying and summing."""
    return a.mul(b).sum(-1)


def batched_dot_bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Batched dot by reducing to bmm."""
    a = a.reshape(-1, 1, a.shape[-1])
    b = b.reshape(-1, a.shape[-1], 1)
    return torch.bmm(a, b).flatten()


def measure(sizes: list[int], threads: list[int], min_run_time: float) -> list[benchmark.Measurement]:
    results = []
    for b, n in product(sizes, sizes):
        label = "Batched dot"
        sub_label = f"[{b}, {n}]"
        x = torch.ones((b, n))
        assert batched_dot_mul_sum(x, x).allclose(batched_dot_bmm(x, x))
        for num_threads in threads:
            for description, fn in (("mul/sum", batched_dot_mul_sum), ("bmm", batched_dot_bmm)):
                results.append(
                    benchmark.Timer(
                        stmt="batched_dot(x, x)",
                        globals={"x": x, "batched_dot": fn},
                        num_threads=num_threads,
                        label=label,
                        sub_label=sub_label,
                        description=description,
                    ).blocked_autorange(min_run_time=min_run_time)
                )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 10000])
    parser.add_argument(
        "--threads", type=int, nargs="+", default=sorted({1, os.cpu_count() or 1}),
        help="thread counts (default: 1 and all cores)",
    )
    parser.add_argument("--min-run-time", type=float, default=0.1, help="seconds per measurement")
    args = parser.parse_args(argv)

    results = measure(args.sizes, args.threads, args.min_run_time)
    compare = benchmark.Compare(results)
    compare.trim_significant_figures()
    if sys.stdout.isatty():  # ANSI colours only where a terminal shows them
        compare.colorize()
    compare.print()


if __name__ == "__main__":
    main()
