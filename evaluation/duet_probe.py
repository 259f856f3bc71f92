"""Does running base and head at the same time (duet rounds) cut the noise of an A/B ratio here? (issue 26)

Before building duet rounds into the alert, this measures the one number they can change: the spread of
log(A/B) between two fresh processes of identical code, A/A, for fast ops (1-5 us), under three designs,
interleaved round by round on this machine:

    alternating  today's design: A's process, then B's, one after the other (not pinned)
    duet         A and B started together, each pinned to its own core (swapped every round), every block
                 of every case started together through a barrier; the per-process values' ratio
    duet, paired the same duets, read block by block: the median over blocks of log(a_i / b_i), so what hit
                 both processes during block i cancels

Each process imports torch, runs the cases in one shuffled order (the same for A and B of a round), a
warm-up, then BLOCKS blocks of ~10 ms per case; a process's value is the median of its blocks (as
stats.process_summary). Printed per case: the standard deviation of log(A/B) over rounds for each design
(with a 90% interval from the chi-square distribution), and each design's ratio to alternating; the variance
an A/B test sees is this squared, so a ratio of 0.5 would mean a quarter of the processes for the same
power. Exits 0 either way: measured, not asserted.

    python evaluation/duet_probe.py [--rounds N] [--blocks B] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import statistics
import time
from pathlib import Path

CASES = {
    # name: (setup, stmt)
    "add": ("x = torch.ones(1)", "torch.add(x, x)"),
    "view": ("x = torch.ones(4, 4)", "x.view(-1)"),
    "empty": ("pass", "torch.empty((1,))"),
    "mul_": ("x = torch.ones(16)", "x.mul_(1.0)"),
}
BLOCK_SECONDS = 0.01


def _worker(core, barrier, order, blocks, numbers, out) -> None:
    """One fresh process: pinned to `core` (None: not pinned), each case of `order` timed in `blocks` blocks,
    each block started at the barrier where there is one. Sends {case: [seconds per call, per block]}."""
    if core is not None:
        os.sched_setaffinity(0, {core})
    import timeit

    import torch

    torch.set_num_threads(1)
    found = {}
    for name in order:
        setup, stmt = CASES[name]
        timer = timeit.Timer(stmt, setup, globals={"torch": torch})
        number = numbers[name]
        timer.timeit(number)  # warm-up
        times = []
        for _ in range(blocks):
            if barrier is not None:
                barrier.wait()
            times.append(timer.timeit(number) / number)
        found[name] = times
    out.put((core, found))


def _numbers() -> dict[str, int]:
    """Calls per block: ~BLOCK_SECONDS of each case, calibrated once in this (parent) process."""
    import timeit

    import torch

    torch.set_num_threads(1)
    numbers = {}
    for name, (setup, stmt) in CASES.items():
        timer = timeit.Timer(stmt, setup, globals={"torch": torch})
        n, _ = timer.autorange()
        per_call = min(timer.repeat(3, n)) / n
        numbers[name] = max(1, int(BLOCK_SECONDS / per_call))
    return numbers


def _run(ctx, specs, order, blocks, numbers, together: bool) -> list[dict]:
    """Processes for `specs` (a core or None each): all at once with a barrier, or one after the other."""
    out = ctx.Queue()
    barrier = ctx.Barrier(len(specs)) if together else None
    found = []
    procs = [ctx.Process(target=_worker, args=(core, barrier, order, blocks, numbers, out)) for core in specs]
    if together:
        for p in procs:
            p.start()
        found = [out.get(timeout=600) for _ in procs]
        for p in procs:
            p.join()
        by_core = dict(found)
        return [by_core[core] for core in specs]
    results = []
    for p in procs:
        p.start()
        results.append(out.get(timeout=600)[1])
        p.join()
    return results


def _sd_interval(values: list[float], level: float = 0.90) -> tuple[float, float, float]:
    from scipy.stats import chi2

    n = len(values)
    sd = statistics.stdev(values)
    low = sd * math.sqrt((n - 1) / chi2.ppf(1 - (1 - level) / 2, n - 1))
    high = sd * math.sqrt((n - 1) / chi2.ppf((1 - level) / 2, n - 1))
    return sd, low, high


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("duet rounds need two usable cores; this process has one")
    cores = sorted(os.sched_getaffinity(0))[:2]
    ctx = multiprocessing.get_context("spawn")
    numbers = _numbers()
    print(f"calls per block: {numbers}", flush=True)
    rng = random.Random(0)
    logs: dict[str, dict[str, list[float]]] = {d: {c: [] for c in CASES} for d in ("alternating", "duet", "paired")}
    started = time.perf_counter()
    for r in range(args.rounds):
        order = list(CASES)
        rng.shuffle(order)
        designs = ["alternating", "duet"] if r % 2 == 0 else ["duet", "alternating"]
        for design in designs:
            if design == "duet":
                specs = cores if r % 2 == 0 else cores[::-1]  # A's core swapped every round
                a, b = _run(ctx, specs, order, args.blocks, numbers, together=True)
                for name in CASES:
                    logs["duet"][name].append(math.log(statistics.median(a[name]) / statistics.median(b[name])))
                    logs["paired"][name].append(statistics.median(
                        math.log(x / y) for x, y in zip(a[name], b[name])))
            else:
                a, b = _run(ctx, [None, None], order, args.blocks, numbers, together=False)
                for name in CASES:
                    logs["alternating"][name].append(
                        math.log(statistics.median(a[name]) / statistics.median(b[name])))
        print(f"round {r + 1}/{args.rounds} ({time.perf_counter() - started:.0f} s)", flush=True)
    report = {"rounds": args.rounds, "blocks": args.blocks, "numbers": numbers, "cases": {}}
    print(f"\nsd of log(A/B), A/A, {args.rounds} rounds ({args.blocks} blocks of ~{BLOCK_SECONDS * 1e3:.0f} ms a "
          "case and process); 90% intervals; ratio to alternating")
    print(f"{'case':8s} {'alternating':>22s} {'duet':>30s} {'duet, paired by block':>30s}")
    for name in CASES:
        row = {}
        for design in ("alternating", "duet", "paired"):
            sd, low, high = _sd_interval(logs[design][name])
            row[design] = {"sd": sd, "low": low, "high": high, "logs": logs[design][name]}
        base = row["alternating"]["sd"]
        cells = [f"{row['alternating']['sd'] * 100:5.2f}% [{row['alternating']['low'] * 100:.2f}, "
                 f"{row['alternating']['high'] * 100:.2f}]"]
        for design in ("duet", "paired"):
            d = row[design]
            cells.append(f"{d['sd'] * 100:5.2f}% [{d['low'] * 100:.2f}, {d['high'] * 100:.2f}] "
                         f"{d['sd'] / base:4.2f}x")
        print(f"{name:8s} {cells[0]:>22s} {cells[1]:>30s} {cells[2]:>30s}")
        report["cases"][name] = row
    print(f"minutes: {(time.perf_counter() - started) / 60:.1f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
