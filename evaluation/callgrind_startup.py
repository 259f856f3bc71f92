"""A valgrind process that starts uninstrumented (switched on at its first count) beside one instrumented
from the start, as torch runs valgrind: seconds for one batch of statements, and whether the counts agree.

Each run counts callgrind_speed.py's 20 statements (number=100, repeats=3) once each way, in alternating
order. Both ways load the switch library at the same point (the first count), so the processes run the
same code and the counts must agree to the instruction; only the start differs. Exits 0 either way:
the figures are reported, not asserted.

    python evaluation/callgrind_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torchbench_core as tb
import torchbench_core.callgrind as callgrind
from callgrind_speed import STATEMENTS


def batch(at_start: bool) -> tuple[float, list[list[int]]]:
    callgrind.INSTRUMENT_AT_START = at_start
    timers = [tb.Timer(stmt, setup=setup) for stmt, setup in STATEMENTS]
    start = time.perf_counter()
    stats = callgrind.collect_callgrind_many(timers, number=100, repeats=3)
    seconds = time.perf_counter() - start
    return seconds, [[s.counts(subtract_baseline=True) for s in repeats] for repeats in stats]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if callgrind.instrumentation_switch() is None:
        raise SystemExit("no C++ compiler: the switch cannot be built, and both ways would start instrumented")
    seconds: dict[bool, list[float]] = {True: [], False: []}
    counts: dict[bool, list[list[list[int]]]] = {True: [], False: []}
    for run in range(args.runs):
        for at_start in ((False, True) if run % 2 == 0 else (True, False)):
            s, c = batch(at_start)
            seconds[at_start].append(s)
            counts[at_start].append(c)
            print(f"run {run}: {'instrumented from the start' if at_start else 'switched on at the first count'}:"
                  f" {s:.1f} s", flush=True)
    reference = counts[True][0]
    agree = [sum(a == b for a, b in zip(c, reference)) for c in counts[False] + counts[True][1:]]
    ours, anchor = statistics.median(seconds[False]), statistics.median(seconds[True])
    print(f"\n{len(STATEMENTS)} statements, one valgrind process, {args.runs} runs each way (medians):")
    print(f"  switched on at the first count: {ours:.1f} s   instrumented from the start (torch's way): "
          f"{anchor:.1f} s   ratio {ours / anchor:.2f}x")
    print(f"  statements whose counts equal the first instrumented-from-start run's, every repeat: "
          f"{min(agree)}-{max(agree)} of {len(STATEMENTS)}")


if __name__ == "__main__":
    main()
