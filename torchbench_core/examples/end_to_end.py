"""End-to-end A/B of two torch builds on fuzzed inputs (seed 000's fourth example, after torch's
examples/end_to_end.py):

    python -m torchbench_core.examples.end_to_end --ref PYTHON --pr PYTHON [--op std|sort|topk]

`--ref` and `--pr` are the Python interpreters of the two builds (two virtual environments, or two asv
environments: `.../env/<hash>/bin/python`); each needs torch and numpy, and imports this package from this
checkout. Without `--pr` the reference is compared with itself: an A/A run, which shows how much of a
difference is this machine's noise (torch's `--test-variance`).

Each fuzzer seed's inputs are timed in fresh processes of each build, `--replicates` times, the builds'
processes alternating (and the order flipping every replicate), so the machine's drift falls on both
alike. A row is a seed and input; its change is the ratio of the two builds' pooled medians. As in torch's
example, rows are counted as improved or regressed beyond 5%, else within 5%; beside that, a row counts as
a change only when every replicate of one build is beyond every replicate of the other (the process is the
unit of evidence: with 3 replicates a side, 2 in 20 orderings are that extreme by chance).
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding torchbench_core
DTYPES = ("float32", "float64")
RUNS_PER_SEED = 3  # fuzzed inputs per seed, as torch's example


def stmt_and_label(op: str, params: dict[str, Any]) -> tuple[str, str]:
    """The statement timed on one fuzzed input (torch's three PRs: topk, std, sort)."""
    import numpy as np

    if op == "std":
        return "torch.std(x)", "std"
    state = np.random.RandomState(params["random_value"])
    if op == "sort":
        return f"torch.sort(x, dim={state.randint(low=0, high=params['dim'])})", "sort"
    if op == "topk":
        dim = state.randint(low=0, high=params["dim"])
        size = params[f"k{dim}"]
        k = max(int(np.floor(2 ** state.uniform(low=0, high=np.log2(size)))), 1)
        return f"torch.topk(x, dim={dim}, k={k})", "topk"
    raise ValueError(f"unknown op {op!r}: std, sort or topk")


def measure(op: str, seed: int, env: str, dtypes: Sequence[str], min_run_time: float, out: Path) -> None:
    """In a build's process: time the seed's fuzzed inputs, append the pickled Measurements to `out`."""
    import torch

    import torchbench_core as benchmark
    from torchbench_core.op_fuzzers.unary import UnaryOpFuzzer

    with open(out, "ab") as f:
        for dtype_str in dtypes:
            fuzzer = UnaryOpFuzzer(seed=seed, dtype=getattr(torch, dtype_str))
            for i, (tensors, tensor_parameters, params) in enumerate(fuzzer.take(RUNS_PER_SEED)):
                stmt, label = stmt_and_label(op, params)
                timer = benchmark.Timer(stmt=stmt, globals=tensors, label=label, env=env,
                                        description=f"[{i}, seed={seed}] ({dtype_str}), stmt = {stmt}")
                m = timer.blocked_autorange(min_run_time=min_run_time)
                m.metadata = {"numel": int(tensors["x"].numel()), "shape": list(tensors["x"].shape),
                              "dtype": dtype_str}
                pickle.dump(m, f)


def _run_build(python: str, env: str, op: str, seed: int, args: argparse.Namespace, out: Path) -> None:
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p))
    cmd = [python, "-m", "torchbench_core.examples.end_to_end", "--DETAIL-measure", "--op", op,
           "--DETAIL-seed", str(seed), "--DETAIL-env", env, "--DETAIL-out", str(out),
           "--min-run-time", str(args.min_run_time), "--dtypes", *args.dtypes]
    proc = subprocess.run(cmd, env=environ, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the {env} build ({python}) failed on seed {seed}:\n{proc.stderr[-2000:]}")


def _read(path: Path) -> list[Any]:
    out = []
    with open(path, "rb") as f:
        while True:
            try:
                out.append(pickle.load(f))
            except EOFError:
                return out


def table(measurements: Sequence[Any], ref: str = "ref", pr: str = "pr") -> str:
    """Rows paired across the builds, sorted by relative change; torch's 5% tally and ours."""
    import statistics

    rows: dict[str, dict[str, list[Any]]] = {}
    for m in measurements:
        rows.setdefault(m.description, {ref: [], pr: []})[m.env].append(m)
    lines = []
    for description, sides in rows.items():
        if not sides[ref] or not sides[pr]:
            continue
        a = [m.median for m in sides[ref]]
        b = [m.median for m in sides[pr]]
        change = statistics.median(b) / statistics.median(a) - 1
        separated = min(b) > max(a) or max(b) < min(a)
        meta = sides[ref][0].metadata
        lines.append((change, separated, statistics.median(b) - statistics.median(a), meta, description))
    lines.sort(key=lambda row: row[0])
    n = len(lines)
    if not n:
        return "no row was measured in both builds"
    improved = sum(c < -0.05 for c, *_ in lines)
    regressed = sum(c > 0.05 for c, *_ in lines)
    out = [f"{'Improved  (>5%):':<17} {improved:>6}  ({improved / n * 100:>3.0f}%)",
           f"{'Regressed (>5%):':<17} {regressed:>6}  ({regressed / n * 100:>3.0f}%)",
           f"{'Within 5%:':<17} {n - improved - regressed:>6}  ({(n - improved - regressed) / n * 100:>3.0f}%)",
           f"Every replicate of one build beyond every replicate of the other: "
           f"{sum(s for _, s, *_ in lines)} of {n} rows", "",
           f"Relative Δ     Absolute Δ      |      numel       dtype   shape{'':>17}separated   stmt",
           "=" * 110]
    for change, separated, delta, meta, description in lines:
        stmt = description.split("stmt = ", 1)[-1]
        out.append(f"{change * 100:>5.0f}%     {abs(delta) * 1e6:>11.1f} us      |{meta['numel']:>11}  "
                   f"{meta['dtype']:>10}   {str(meta['shape']):<22}{'yes' if separated else '':>9}   {stmt}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=sys.executable, help="the reference build's Python (default: this one)")
    parser.add_argument("--pr", default=None, help="the changed build's Python (default: --ref, an A/A run)")
    parser.add_argument("--op", choices=("std", "sort", "topk"), default="std")
    parser.add_argument("--seeds", type=int, default=4, help="fuzzer seeds (3 inputs each, per dtype)")
    parser.add_argument("--replicates", type=int, default=3, help="processes of each build per seed")
    parser.add_argument("--min-run-time", type=float, default=0.2)
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument("--DETAIL-measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--DETAIL-seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--DETAIL-env", help=argparse.SUPPRESS)
    parser.add_argument("--DETAIL-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.DETAIL_measure:
        measure(args.op, args.DETAIL_seed, args.DETAIL_env, args.dtypes, args.min_run_time, args.DETAIL_out)
        return 0
    builds = [("ref", args.ref), ("pr", args.pr or args.ref)]
    print(f"ref: {builds[0][1]}\npr:  {builds[1][1]}" + ("   (the same: an A/A run)" if not args.pr else ""))
    with tempfile.TemporaryDirectory(prefix="torchbench_end_to_end_") as tmp:
        out = Path(tmp) / "measurements.pkl"
        total = args.replicates * args.seeds * 2
        done = 0
        for replicate in range(args.replicates):
            for seed in range(args.seeds):
                for env, python in (builds if (replicate + seed) % 2 == 0 else builds[::-1]):
                    _run_build(python, env, args.op, seed, args, out)
                    done += 1
                    print(f"\r{done} / {total} processes", end="", file=sys.stderr)
        print(file=sys.stderr)
        print(table(_read(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
