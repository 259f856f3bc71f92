"""operatorbench: do per-operator compiled/eager ratios repeat between two runs of the same commit? (issue 28)

Every process measures the recorded suite's operators (SAMPLES logged inputs
each, as the tracked suite) by two methods, interleaved per operator, on the
same built inputs and the same compiled graphs:

  ours    torchbench_core.operators: Timer.blocked_autorange, eager and compiled
          interleaved over 3 rounds, each sample's ratio of medians, the median
          over samples (the tracked suite's p50 row, inverted: speedup)
  anchor  seed 003's own timing: torch._inductor.utils.timed (10 calls a
          measurement), eager and compiled interleaved over 3 rounds, the
          median of the rounds, the same quantile over samples

2 x PROCESSES fresh processes run one after another; the first half is "run A",
the second "run B". For k = 1..PROCESSES, a run's ratio of an operator is the
median of its first k processes' ratios; the figure is the share of operators
whose ratio in run A is within 5% of run B's, and the median and worst
difference.

    python evaluation/operator_repeatability.py [--processes 3] [--samples 3] [--op aten.add.Tensor ...] [--out F]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 3


def measure(samples: int, out: Path, only: list[str]) -> None:
    """One process: {operator: {"ours": speedup p50, "anchor": speedup p50}}."""
    import torch
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import gen_gm_and_inputs, timed

    from torchbench_core.operators import suite_log
    from torchbench_core.operators.bench import BenchOptions, benchmark_operator, skip_reason
    from torchbench_core.operators.inputs import build_sample, resolve_operator

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)  # for the anchor's timing, as benchmark_operator does for ours
    log = suite_log("huggingface")
    options = BenchOptions(max_samples=samples, repeats=REPEATS, min_run_time=0.02)
    found = {}
    for name in only or log.names():
        if skip_reason(name):
            continue
        ours = benchmark_operator(log, name, options)
        if not ours.timed:
            continue
        anchor = []
        for sample in ours.timed:  # the anchor on the very samples ours timed
            args, kwargs = build_sample(name, sample.text, dtype=torch.float32)
            gm, gm_args = gen_gm_and_inputs(resolve_operator(name), tuple(args), kwargs)
            models = [gm, compile_fx(gm, gm_args)]  # from inductor's cache: ours compiled it a moment ago
            timings = np.zeros((REPEATS, 2))
            for rep in range(REPEATS):
                for m, model in enumerate(models):
                    timings[rep, m] = timed(model, gm_args, times=10, device="cpu")
            eager, compiled = np.median(timings, axis=0)
            anchor.append(eager / compiled)
        found[name] = {"ours": ours.speedup_quantiles()[0][1], "anchor": float(np.quantile(anchor, 0.5))}
    out.write_text(json.dumps(found))


def agreement(run_a: list[dict], run_b: list[dict], method: str, k: int) -> dict:
    names = sorted(set.intersection(*(set(p) for p in run_a[:k] + run_b[:k])))
    a = np.array([np.median([p[n][method] for p in run_a[:k]]) for n in names])
    b = np.array([np.median([p[n][method] for p in run_b[:k]]) for n in names])
    diff = np.abs(a / b - 1)
    return {"operators": len(names), "within_5pct": int((diff <= 0.05).sum()),
            "median_diff_pct": round(float(np.median(diff)) * 100, 2), "worst_diff_pct": round(float(diff.max()) * 100, 1),
            "worst": names[int(diff.argmax())]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3, help="processes a run (two runs)")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--op", action="append", default=[], help="only these operators (default: all)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # internal: one measuring process
    args = parser.parse_args()
    if args.measure:
        measure(args.samples, args.measure, args.op)
        return 0
    processes = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(2 * args.processes):
            out = Path(tmp) / f"{i}.json"
            subprocess.run([sys.executable, __file__, "--samples", str(args.samples), "--measure", str(out),
                            *[a for op in args.op for a in ("--op", op)]], check=True, cwd=ROOT)
            processes.append(json.loads(out.read_text()))
            print(f"process {i + 1} of {2 * args.processes}: {len(processes[-1])} operators", flush=True)
    run_a, run_b = processes[:args.processes], processes[args.processes:]
    rows = []
    print(f"\noperators whose p50 speedup agrees within 5% between run A and run B ({args.samples} samples each)")
    print(f"{'processes a run':>16} | {'ours':>28} | {'anchor (seed 003 timed)':>28}")
    for k in range(1, args.processes + 1):
        ours, anchor = agreement(run_a, run_b, "ours", k), agreement(run_a, run_b, "anchor", k)
        rows.append({"k": k, "ours": ours, "anchor": anchor})
        cell = lambda r: (f"{r['within_5pct']}/{r['operators']} (median {r['median_diff_pct']}%, "  # noqa: E731
                          f"worst {r['worst_diff_pct']}%)")
        print(f"{k:>16} | {cell(ours):>28} | {cell(anchor):>28}")
        print(f"{'':>16} | worst: {ours['worst']:<21} | worst: {anchor['worst']}")
    if args.out:
        args.out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "samples": args.samples,
                                        "processes_a_run": args.processes, "rows": rows, "raw": processes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
