"""Instruction-count goals (issue 3), ours beside torch.utils.benchmark in one run.

1. counts for 20 statements in one batched call vs one torch collect_callgrind
   (both number=100, repeats=5 per statement)
2. spread of counts across 5 repeats of torch.add, ours vs torch's
3. wall time of the standard suite in instruction-count mode, and its parts

Instruction counts are deterministic up to the spread printed; the wall
times of valgrind runs are CPU-bound, so --runs defaults to 1 (each run is
several minutes). Exits 0 either way: goals are reported, not asserted.

    python evaluation/callgrind_speed.py [--runs N] [--skip-suite]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch.utils.benchmark as torch_benchmark

import torchbench_core as tb
from torchbench_core.callgrind import collect_callgrind_many
from torchbench_core.definitions.standard import BENCHMARKS
from torchbench_core.grouped import materialize

ADD = ("torch.add(x, x)", "x = torch.ones(4)")
STATEMENTS = [
    ADD,
    ("x + 1", "x = torch.ones(4)"), ("x * y", "x = torch.ones(4); y = torch.ones(4)"),
    ("x.sum()", "x = torch.ones(4, 4)"), ("x.mean()", "x = torch.ones(4, 4)"), ("x.max()", "x = torch.ones(4, 4)"),
    ("x.t()", "x = torch.ones(4, 4)"), ("x.view(-1)", "x = torch.ones(4, 4)"), ("x.clone()", "x = torch.ones(4, 4)"),
    ("x.relu()", "x = torch.ones(4, 4)"), ("x.exp()", "x = torch.ones(4, 4)"), ("x[0]", "x = torch.ones(4, 4)"),
    ("torch.empty(())", "pass"), ("torch.empty((1,))", "pass"), ("torch.zeros(4)", "pass"),
    ("torch.cat([x, x])", "x = torch.ones(4)"), ("x.unsqueeze(0)", "x = torch.ones(4)"),
    ("x.reshape(2, 2)", "x = torch.ones(4)"), ("x.contiguous()", "x = torch.ones(4, 4).t()"),
    ("y = [i for i in range(10)]", "pass"),
]


def spread(counts: list[int]) -> float:
    return (max(counts) - min(counts)) / min(counts)


def batched_vs_torch(runs: int) -> None:
    ours_wall, torch_wall = [], []
    ours_spread = torch_spread = 0.0
    for _ in range(runs):
        timers = [tb.Timer(s, setup=p) for s, p in STATEMENTS]
        start = time.perf_counter()
        results = collect_callgrind_many(timers, number=100, repeats=5)
        ours_wall.append(time.perf_counter() - start)
        ours_spread = spread([s.counts() for s in results[0]])

        start = time.perf_counter()
        theirs = torch_benchmark.Timer(ADD[0], setup=ADD[1]).collect_callgrind(number=100, repeats=5)
        torch_wall.append(time.perf_counter() - start)
        torch_spread = spread([s.counts() for s in theirs])

    ours, torch_time = statistics.median(ours_wall), statistics.median(torch_wall)
    print(f"{'20 statements, one batched call (ours)':58} {ours:8.1f} s")
    print(f"{'1 statement, one torch collect_callgrind':58} {torch_time:8.1f} s")
    print(f"{'ratio (goal <= 1.5)':58} {ours / torch_time:8.2f}   {'met' if ours / torch_time <= 1.5 else 'NOT MET'}")
    print(f"{'spread of 5 repeats, torch.add, ours (goal <= 0.5%)':58} {ours_spread:8.3%}   "
          f"{'met' if ours_spread <= 0.005 else 'NOT MET'}")
    print(f"{'spread of 5 repeats, torch.add, torch':58} {torch_spread:8.3%}")
    print(f"(medians of {runs} run(s); torch's time per extra statement would be the same again)\n")
    return torch_time


def standard_suite(torch_single: float) -> None:
    cases = [(label, auto, args) for label, auto, args in materialize(BENCHMARKS) if not args.compiled]
    timers = [tb.Timer(a.stmt, setup=a.setup, num_threads=a.num_threads) for _, _, a in cases]
    marks: dict[int, list[float]] = {}
    start = time.perf_counter()
    collect_callgrind_many(timers, number=100, repeats=5, on_error="return",
                           progress=lambda i, e: marks.setdefault(i, []).append(time.perf_counter()))
    total = time.perf_counter() - start
    first = min(m[0] for m in marks.values())
    last = max(m[-1] for m in marks.values())
    per_case = sorted(((m[-1] - m[0], i) for i, m in marks.items()), reverse=True)
    print(f"standard suite, instruction-count mode: {len(cases)} cases (torch.compile cases are wall-time only)")
    print(f"  total wall                       {total:8.1f} s")
    print(f"  valgrind + `import torch` start  {first - start:8.1f} s")
    print(f"  running the cases                {last - first:8.1f} s  (median {statistics.median(d for d, _ in per_case):.2f} s a case)")
    print(f"  parsing (callgrind_annotate)     {total - (last - start):8.1f} s")
    print("  slowest cases:")
    for seconds, i in per_case[:5]:
        label, auto, args = cases[i]
        print(f"    {seconds:6.1f} s  {' / '.join(label)} [{auto.runtime.value} {auto.autograd.value}]")
    print(f"  torch.utils.benchmark, one process per case: ~{len(cases) * torch_single / 60:.0f} min "
          f"(extrapolated: {len(cases)} x the {torch_single:.0f} s measured above)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--skip-suite", action="store_true")
    args = parser.parse_args()
    torch_single = batched_vs_torch(args.runs)
    if not args.skip_suite:
        standard_suite(torch_single)


if __name__ == "__main__":
    main()
