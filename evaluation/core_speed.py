"""Speed goals of the measurement core (issue 2), ours beside the anchors in one run.

Each figure is the median of --repeats runs, ours and the anchor interleaved
so that machine noise hits both alike. Prints a table; exits 0 either way
(goals are reported, not asserted: the machine is shared and noisy).

    python evaluation/core_speed.py [--repeats 7] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time
import timeit
from dataclasses import dataclass
from typing import Callable

import torch
import torch.utils.benchmark as torch_benchmark

import torchbench_core as ours


@dataclass
class Row:
    metric: str
    ours: float
    anchor_name: str
    anchor: float
    unit: str
    goal: str
    met: bool

    @property
    def ratio(self) -> float:
        return self.ours / self.anchor


def interleaved(fns: list[Callable[[], float]], repeats: int) -> list[float]:
    """Median of each fn's result over `repeats` rounds, run in turn."""
    results: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            results[i].append(fn())
    return [statistics.median(r) for r in results]


def loop_overhead(repeats: int, number: int) -> Row:
    timer, stdlib = ours.Timer("pass"), timeit.Timer("pass")
    mine, base = interleaved(
        [lambda: timer.timeit(number).median, lambda: stdlib.timeit(number) / number], repeats
    )
    return Row("loop overhead per iteration, `pass`", mine * 1e9, "stdlib timeit", base * 1e9, "ns",
               "within 5% of timeit", mine <= base * 1.05)


def fixed_cost(repeats: int, calls: int) -> Row:
    mine_t, torch_t = ours.Timer("pass"), torch_benchmark.Timer("pass")
    mine, theirs = interleaved(
        [lambda: timeit.timeit(lambda: mine_t.timeit(1), number=calls) / calls,
         lambda: timeit.timeit(lambda: torch_t.timeit(1), number=calls) / calls],
        repeats,
    )
    return Row("fixed cost of Timer.timeit(1)", mine * 1e6, "torch.utils.benchmark", theirs * 1e6, "us",
               "<= 3 us", mine <= 3e-6)


def clock_cost(repeats: int, calls: int) -> list[Row]:
    from torch.utils.benchmark.utils.timer import timer as torch_timer

    resolved = ours.Timer()._timer  # what the Timer's loop reads
    wrapper, inner, theirs = interleaved(
        [lambda: timeit.timeit(ours.timer, number=calls) / calls,
         lambda: timeit.timeit(resolved, number=calls) / calls,
         lambda: timeit.timeit(torch_timer, number=calls) / calls],
        repeats,
    )
    return [
        Row("default clock, public timer()", wrapper * 1e9, "torch timer()", theirs * 1e9, "ns",
            "<= 150 ns", wrapper <= 150e-9),
        Row(f"default clock, as Timer reads it ({getattr(resolved, '__name__', resolved)})", inner * 1e9,
            "torch timer()", theirs * 1e9, "ns", "<= 150 ns", inner <= 150e-9),
    ]


def add_runs(repeats: int) -> list[Row]:
    """torch.add on 4 floats: wall time of blocked_autorange(0.2) and the median."""
    walls: dict[str, list[float]] = {"ours": [], "torch": []}
    medians: dict[str, list[float]] = {"ours": [], "torch": []}
    for _ in range(repeats):
        for name, lib in (("ours", ours), ("torch", torch_benchmark)):
            t = lib.Timer("torch.add(x, x)", setup="x = torch.ones(4)")
            start = time.perf_counter()
            m = t.blocked_autorange(min_run_time=0.2)
            walls[name].append(time.perf_counter() - start)
            medians[name].append(m.median)
    wall = {k: statistics.median(v) for k, v in walls.items()}
    med = {k: statistics.median(v) for k, v in medians.items()}
    return [
        Row("blocked_autorange(0.2) wall, torch.add 4 floats", wall["ours"], "torch.utils.benchmark",
            wall["torch"], "s", "<= 0.25 s", wall["ours"] <= 0.25),
        Row("median of torch.add 4 floats", med["ours"] * 1e6, "torch.utils.benchmark", med["torch"] * 1e6,
            "us", "within 5% of torch", abs(med["ours"] / med["torch"] - 1) <= 0.05),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run, figures meaningless")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    scale = 100 if args.quick else 1
    torch.set_num_threads(1)

    rows = [
        loop_overhead(repeats, 1_000_000 // scale),
        fixed_cost(repeats, 20_000 // scale),
        *clock_cost(repeats, 200_000 // scale),
        *add_runs(1 if args.quick else max(repeats, 5)),
    ]
    print(f"torchbench_core speed goals: median of {repeats} interleaved runs, torch {torch.__version__}\n")
    header = f"{'metric':52} {'ours':>10} {'anchor':>10} {'ratio':>7}  unit  {'goal':20} met  anchor"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r.metric:52} {r.ours:10.3f} {r.anchor:10.3f} {r.ratio:7.3f}  {r.unit:4}  {r.goal:20} "
              f"{'yes' if r.met else 'NO ':3}  {r.anchor_name}")


if __name__ == "__main__":
    main()
