"""C++ statements: ours beside torch.utils.benchmark's C++ Timer, measured in the same run.

    python evaluation/cpp_speed.py [--runs 3] [--suite]

1. One statement (`torch::add` on 8 floats), each run in fresh processes with a fresh compile cache:
   torch's `Timer(language="c++")`: its first `blocked_autorange` (compile a Python module, then time) and
   its first `collect_callgrind(100)` (compile an executable, then count); then ours, the same two calls;
   then both again in a new process, where torch compiles again and ours finds its cache. Medians of
   `--runs`, and ours/torch as a ratio.
2. `--suite`: the whole standard suite (118 Python cases, 114 C++) through `python -m torchbench_core.suite`,
   wall time and counts, with a cold C++ cache and then a warm one (minutes), and the counts of the two runs
   compared case by case (identical code, two runs of the same processes: how many agree to the
   instruction, and within 0.1%). torch's Timer would compile each of the 114 C++ statements twice, in
   every process (item 1's figure x 114).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STMT, SETUP = "auto y = torch::add(x, x);", "auto x = torch::ones({8});"

_CHILD = r"""
import json, sys, time
which = sys.argv[1]
if which == "torch":
    import torch.utils.benchmark as tb
else:
    import torchbench_core as tb
timer = tb.Timer(%r, %r, language="c++")
t0 = time.perf_counter(); m = timer.blocked_autorange(min_run_time=0.2); t1 = time.perf_counter()
stats = timer.collect_callgrind(100); t2 = time.perf_counter()
print(json.dumps({"time_s": t1 - t0, "count_s": t2 - t1, "median_ns": m.median * 1e9,
                  "counts": stats.counts()}))
""" % (STMT, SETUP)


def one_statement(which: str, cache: str) -> dict:
    env = dict(os.environ, TORCHBENCH_CPP_CACHE=cache, TMPDIR=cache)  # torch builds under TMPDIR
    proc = subprocess.run([sys.executable, "-c", _CHILD, which], capture_output=True, text=True, env=env,
                          cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{which} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def suite_run(cache: str, out: Path) -> float:
    env = dict(os.environ, TORCHBENCH_CPP_CACHE=cache)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torchbench_core.suite", "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"the suite failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--suite", action="store_true", help="also the standard suite's C++ half, cold and warm")
    args = parser.parse_args()

    rows: dict[str, list[float]] = {}
    for run in range(args.runs):
        for which in ("torch", "ours") if run % 2 == 0 else ("ours", "torch"):
            with tempfile.TemporaryDirectory(prefix="cpp_speed_") as cache:
                first = one_statement(which, cache)
                second = one_statement(which, cache)  # a new process, the same cache (torch's is per process)
            for key, value in (("first blocked_autorange, s", first["time_s"]),
                               ("first collect_callgrind(100), s", first["count_s"]),
                               ("new process: blocked_autorange, s", second["time_s"]),
                               ("new process: collect_callgrind(100), s", second["count_s"]),
                               ("median, ns", first["median_ns"]), ("instructions for 100 runs", first["counts"])):
                rows.setdefault(f"{which}|{key}", []).append(value)
        print(f"run {run + 1} of {args.runs} done", file=sys.stderr)

    print(f"== one C++ statement ({STMT} with {SETUP}), medians of {args.runs} runs, fresh cache each run")
    print(f"{'':<42}{'ours':>12}{'torch':>12}{'ours/torch':>12}")
    for key in ("first blocked_autorange, s", "first collect_callgrind(100), s", "new process: blocked_autorange, s",
                "new process: collect_callgrind(100), s", "median, ns", "instructions for 100 runs"):
        ours, theirs = (statistics.median(rows[f"{w}|{key}"]) for w in ("ours", "torch"))
        print(f"{key:<42}{ours:>12.1f}{theirs:>12.1f}{ours / theirs:>12.2f}")

    if args.suite:
        with tempfile.TemporaryDirectory(prefix="cpp_suite_") as cache:
            cold = suite_run(cache, Path(cache) / "cold.json")
            warm = suite_run(cache, Path(cache) / "warm.json")
            a, b = (json.loads((Path(cache) / f"{name}.json").read_text())["cases"] for name in ("cold", "warm"))
        same: dict[str, int] = {"Python": 0, "C++": 0}
        close, total = dict(same), dict(same)
        for key, case in a.items():
            if not case["instructions"]:
                continue  # torch.compile cases: wall time only
            language = case["autolabels"]["language"]
            x, y = case["instructions"][0], b[key]["instructions"][0]
            total[language] += 1
            same[language] += x == y
            close[language] += abs(x - y) <= 0.001 * x
        first_call = statistics.median(rows["torch|first blocked_autorange, s"]) + statistics.median(
            rows["torch|first collect_callgrind(100), s"])
        print(f"\n== the standard suite ({len(a)} cases, {total['C++']} of them C++ and counted: compiled, timed "
              f"and counted)")
        print(f"cold C++ cache: {cold / 60:.1f} min; warm: {warm / 60:.1f} min "
              f"(torch's Timer: ~{first_call * total['C++'] / 3600:.1f} h of compiling its C++ statements alone, "
              f"{first_call:.0f} s a statement, in every process)")
        for language in ("C++", "Python"):
            print(f"{language} counts of the two runs, case by case: {same[language]} of {total[language]} equal "
                  f"to the instruction, {close[language]} within 0.1%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
