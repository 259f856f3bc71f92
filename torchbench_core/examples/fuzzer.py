"""The Timer and Fuzzer APIs: `x + y` over fuzzed shapes and layouts (seed 000's third example, as torch
ships it):

    python -m torchbench_core.examples.fuzzer [-n N] [--min-run-time S]

Prints the best and worst configurations in ns per element, and how many draws the fuzzer needed per
valid configuration.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import torchbench_core as benchmark_utils


def add_fuzzer(seed: int = 0) -> benchmark_utils.Fuzzer:
    return benchmark_utils.Fuzzer(
        parameters=[
            [benchmark_utils.FuzzedParameter(name=f"k{i}", minval=16, maxval=16 * 1024, distribution="loguniform")
             for i in range(3)],
            benchmark_utils.FuzzedParameter(name="d", distribution={2: 0.6, 3: 0.4}),
        ],
        tensors=[
            [benchmark_utils.FuzzedTensor(name=name, size=("k0", "k1", "k2"), dim_parameter="d",
                                          probability_contiguous=0.75, min_elements=64 * 1024,
                                          max_elements=128 * 1024)
             for name in ("x", "y")],
        ],
        seed=seed,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=250, help="fuzzed configurations")
    parser.add_argument("--min-run-time", type=float, default=0.1)
    parser.add_argument("--show", type=int, default=15, help="best and worst rows to print")
    args = parser.parse_args(argv)

    fuzzer = add_fuzzer()
    measurements = []
    for i, (tensors, tensor_properties, _) in enumerate(fuzzer.take(n=args.n)):
        x, x_order = tensors["x"], str(tensor_properties["x"]["order"])
        y, y_order = tensors["y"], str(tensor_properties["y"]["order"])
        shape = ", ".join(f"{k:>4}" for k in x.shape)
        description = "".join([
            f"{x.numel():>7} | {shape:<16} | ",
            f"{'contiguous' if x.is_contiguous() else x_order:<12} | ",
            f"{'contiguous' if y.is_contiguous() else y_order:<12} | ",
        ])
        timer = benchmark_utils.Timer(stmt="x + y", globals=tensors, description=description)
        measurements.append(timer.blocked_autorange(min_run_time=args.min_run_time))
        measurements[-1].metadata = {"numel": x.numel()}
        print(f"\r{i + 1} / {args.n}", end="", file=sys.stderr)
    print(file=sys.stderr)

    print(f"Average attempts per valid config: {1. / (1. - fuzzer.rejection_rate):.1f}")

    def time_per_element(m: benchmark_utils.Measurement) -> float:
        return m.median / m.metadata["numel"]

    measurements.sort(key=time_per_element)
    template = f"{{:>6}}{' ' * 19}Size    Shape{' ' * 13}X order        Y order\n{'-' * 80}"
    print(template.format("Best:"))
    for m in measurements[:args.show]:
        print(f"{time_per_element(m) * 1e9:>4.1f} ns / element     {m.description}")
    print("\n" + template.format("Worst:"))
    for m in measurements[-args.show:]:
        print(f"{time_per_element(m) * 1e9:>4.1f} ns / element     {m.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
