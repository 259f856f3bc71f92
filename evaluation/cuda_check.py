"""torchbench_core on a CUDA device, beside torch.utils.benchmark in the same process.

The checks that need a GPU (this project's machine has none; run it where one is lent):

1. Synchronisation. Kernels of a known length (torch.cuda._sleep of N cycles, queued asynchronously)
   timed by our Timer and torch's, interleaved (timeit and blocked_autorange): each median and their
   ratio. Beside them, what a timer that forgot to wait for the device reads (the launch alone): ours
   must read the kernel, not the launch.
2. Real ops: matmul and add on CUDA tensors at three sizes, blocked_autorange and adaptive_autorange,
   ours / torch's medians (interleaved, the better of 5 of each, each library first in turn).
3. The fuzzers and Compare with CUDA: BinaryOpFuzzer(cuda=True) makes CUDA tensors; Timers over them;
   Compare renders the rows of both libraries.

Exit status 0 when every check held (each ratio within RATIO_LIMIT, the fuzzer's tensors on the device);
2 when one did not (named), 3 with no CUDA device.

    python evaluation/cuda_check.py [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.utils.benchmark as tub

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torchbench_core as tbc  # noqa: E402
from torchbench_core.op_fuzzers import binary  # noqa: E402

RATIO_LIMIT = 0.10  # ours / torch's median, |ratio - 1| at most this (both wait for the same kernels)
SLEEP_CYCLES = (1_000_000, 4_000_000)  # torch.cuda._sleep lengths (about 0.5 and 2 ms at 2 GHz)


def median_of(timer_cls, stmt: str, globals_: dict, how: str) -> float:
    t = timer_cls(stmt=stmt, globals=globals_)
    if how == "timeit":
        return t.timeit(20).median
    if how == "blocked":
        return t.blocked_autorange(min_run_time=0.2).median
    return t.adaptive_autorange(threshold=0.05, min_run_time=0.05, max_run_time=2.0).median


def warm(stmt: str, globals_: dict, times: int = 10) -> None:
    """Run `stmt` a few times and wait for the device: the first call of a kernel loads its module (lazily,
    12 ms for torch.cuda._sleep on an H200) and a first matmul makes cuBLAS's handle."""
    code = compile(stmt, "<stmt>", "exec")
    for _ in range(times):
        exec(code, globals_)
    torch.cuda.synchronize()


def interleaved(stmt: str, globals_: dict, how: str, repeats: int = 5) -> dict:
    """Ours and torch's medians of `stmt`, alternated `repeats` times, each library first in turn (after a
    warm-up); the lowest median of each."""
    warm(stmt, globals_)
    ours, theirs = [], []
    for i in range(repeats):
        for timer_cls, into in ((tbc.Timer, ours), (tub.Timer, theirs))[:: 1 if i % 2 == 0 else -1]:
            into.append(median_of(timer_cls, stmt, globals_, how))
    return {"stmt": stmt, "how": how, "ours": min(ours), "torch": min(theirs), "ratio": min(ours) / min(theirs)}


def launch_only(stmt: str, globals_: dict, number: int = 20) -> float:
    """Seconds a call of `stmt` takes to return without waiting for the device (what a timer reads that
    forgot to synchronise): the launch."""
    code = compile(stmt, "<stmt>", "exec")
    warm(stmt, globals_, 1)
    start = time.perf_counter()
    for _ in range(number):
        exec(code, globals_)
    elapsed = (time.perf_counter() - start) / number
    torch.cuda.synchronize()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check here")
        return 3
    print(f"== {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    failures, out = [], {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}

    print("== 1. kernels of a known length: ours / torch's median, and the launch alone")
    out["sleep"] = []
    for cycles in SLEEP_CYCLES:
        env = {"torch": torch}
        stmt = f"torch.cuda._sleep({cycles})"
        launch = launch_only(stmt, env)
        for how in ("timeit", "blocked"):
            r = interleaved(stmt, env, how) | {"launch": launch}
            out["sleep"].append(r)
            print(f"  {stmt:28} {how:8} ours {r['ours'] * 1e3:8.3f} ms  torch {r['torch'] * 1e3:8.3f} ms  "
                  f"ratio {r['ratio']:.3f}   launch alone {launch * 1e6:7.1f} us", flush=True)
            if abs(r["ratio"] - 1) > RATIO_LIMIT:
                failures.append(f"{stmt} {how}: ours / torch's {r['ratio']:.3f}")
            if r["ours"] < 10 * launch:
                failures.append(f"{stmt} {how}: ours read {r['ours'] * 1e6:.1f} us, about the launch alone")

    print("== 2. CUDA ops: ours / torch's median (the better of 5 interleaved)")
    out["ops"] = []
    for n in (64, 1024, 4096):
        env = {"torch": torch, "a": torch.randn(n, n, device="cuda"), "b": torch.randn(n, n, device="cuda")}
        for stmt in ("torch.matmul(a, b)", "torch.add(a, b)"):
            for how in ("blocked", "adaptive"):
                r = interleaved(stmt, env, how) | {"n": n}
                out["ops"].append(r)
                print(f"  {stmt:20} {n:5}x{n:<5} {how:8} ours {r['ours'] * 1e6:10.2f} us  torch "
                      f"{r['torch'] * 1e6:10.2f} us  ratio {r['ratio']:.3f}", flush=True)
                if abs(r["ratio"] - 1) > RATIO_LIMIT:
                    failures.append(f"{stmt} {n} {how}: ours / torch's {r['ratio']:.3f}")

    print("== 3. BinaryOpFuzzer(cuda=True), Timers over its tensors, Compare")
    results = []
    for i, (tensors, properties, _) in enumerate(binary.BinaryOpFuzzer(seed=0, cuda=True).take(4)):
        devices = {t.device.type for t in tensors.values()}
        if devices != {"cuda"}:
            failures.append(f"fuzzed case {i}: tensors on {sorted(devices)}, not cuda")
        shape = "x".join(str(s) for s in tensors["x"].shape)
        for lib, timer in (("torchbench_core", tbc.Timer), ("torch.utils.benchmark", tub.Timer)):
            results.append(timer("x + y", globals=tensors, label="add (fuzzed, cuda)", sub_label=f"case {i} {shape}",
                                 description=lib).blocked_autorange(min_run_time=0.05))
    table = str(tbc.Compare(results))
    print(table)
    medians = [m.median for m in results]
    out["fuzzed"] = {"medians": medians, "table_rows": table.count("case ")}
    if table.count("case ") != 4:
        failures.append(f"Compare showed {table.count('case ')} fuzzed rows, not 4")
    ratios = [a / b for a, b in zip(medians[::2], medians[1::2])]
    print(f"  ours / torch's per fuzzed case: {', '.join(f'{r:.3f}' for r in ratios)}; "
          f"median {statistics.median(ratios):.3f}")
    out["fuzzed"]["ratios"] = ratios
    out["failures"] = failures
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    print("\n== " + ("every check held" if not failures else "failed: " + "; ".join(failures)))
    return 2 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
