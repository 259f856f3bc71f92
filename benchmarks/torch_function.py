"""Seed 004: the overhead of __torch_function__ dispatch on torch.add.

Tensor is the baseline; SubTensor is a plain subclass (re-wrapping costs);
WithTorchFunction is a Tensor-like with a (deprecated, plain-method)
__torch_function__; SubWithTorchFunction overrides and defers to super().
Changes of ~100 ns matter here, so every sample is kept. The same cases are
counted under valgrind too (TorchFunctionCounts): the Compare page shows each
case's instructions beside its time.
"""

import torch

from torchbench_core.asv_suite import CountsSuite, TimerSpec, TimerSuite


class SubTensor(torch.Tensor):
    pass


class WithTorchFunction:
    def __init__(self, data, requires_grad=False):
        if isinstance(data, torch.Tensor):
            self._tensor = data
            return
        self._tensor = torch.tensor(data, requires_grad=requires_grad)

    # A plain method, as in the seed; torch warns that this is deprecated.
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return WithTorchFunction(args[0]._tensor + args[1]._tensor)


class SubWithTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return super().__torch_function__(func, types, args, kwargs)


TYPES = {"Tensor": torch.tensor, "SubTensor": SubTensor, "WithTorchFunction": WithTorchFunction,
         "SubWithTorchFunction": SubWithTorchFunction}


class TorchFunctionOverhead(TimerSuite):
    timers = [TimerSpec("torch.add(t1, t2)", setup="t1, t2 = make([1.0]), make([2.0])", globals={"make": make},
                        label="__torch_function__ overhead", sub_label=name, description="torch.add(t1, t2)")
              for name, make in TYPES.items()]


class TorchFunctionCounts(CountsSuite):
    of = TorchFunctionOverhead


# -- seed 004's own workflow, on the tree as it is (no asv history, no commit) --------------------------------
#   python -m benchmarks.torch_function                       every case's overhead in ns (bench.py)
#   python -m benchmarks.torch_function --flame Tensor        one case's py-spy flame graph (pyspybench.py)
# From a wheel: python -m torchbench.benchmarks.torch_function.

# this module's importable name: benchmarks.torch_function in a checkout, torchbench.benchmarks.torch_function
# from a wheel (under `python -m`, __name__ is "__main__")
_MODULE = __spec__.name if __spec__ is not None else __name__


def _measure_in_this_process(seconds: float) -> dict:
    """{case: ns per torch.add} from blocked_autorange, the cases in turn."""
    from torchbench_core import Timer

    out = {}
    for name, make in TYPES.items():
        t1, t2 = make([1.0]), make([2.0])
        m = Timer("torch.add(t1, t2)", globals={"t1": t1, "t2": t2}).blocked_autorange(min_run_time=seconds)
        out[name] = m.median * 1e9
    return out


def overhead(processes: int = 3, seconds: float = 0.5) -> dict:
    """{case: [ns per call, one a fresh process]}: a process is the unit of evidence here (one lands in a fast
    group or a slow tail), so every case is measured in each of `processes` processes, not once."""
    import json
    import subprocess
    import sys

    per_case: dict = {name: [] for name in TYPES}
    for _ in range(processes):
        proc = subprocess.run([sys.executable, "-m", _MODULE, "--measure", "--seconds", str(seconds)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"measuring the cases failed:\n{proc.stderr[-2000:]}")
        for name, ns in json.loads(proc.stdout.strip().splitlines()[-1]).items():
            per_case[name].append(ns)
    return per_case


def _loop(case: str, seconds: float) -> None:
    import time

    make = TYPES[case]
    t1, t2 = make([1.0]), make([2.0])
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(1000):
            torch.add(t1, t2)


def main(argv=None) -> int:
    import argparse
    import json
    import os
    import shutil
    import statistics
    import subprocess
    import sys

    parser = argparse.ArgumentParser(description="__torch_function__ overhead of torch.add (seed 004's bench.py "
                                                 "and pyspybench.py), on the tree as it is")
    parser.add_argument("--processes", type=int, default=3, help="fresh processes measuring every case")
    parser.add_argument("--seconds", type=float, default=0.5, help="seconds of samples per case and process")
    parser.add_argument("--flame", choices=sorted(TYPES), help="record this case's py-spy flame graph instead")
    parser.add_argument("--out", help="the flame graph's SVG (default: <case>.svg)")
    parser.add_argument("--loop", choices=sorted(TYPES), help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.processes < 1 or args.seconds <= 0:
        parser.error("--processes must be >= 1 and --seconds > 0")
    if args.loop:
        _loop(args.loop, args.seconds)
        return 0
    if args.measure:
        print(json.dumps(_measure_in_this_process(args.seconds)))
        return 0
    if args.flame:
        pyspy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
        if pyspy is None:
            print("py-spy is not installed: pip install py-spy", file=sys.stderr)
            return 2
        out = args.out or f"{args.flame.lower()}.svg"
        proc = subprocess.run([pyspy, "record", "--native", "--rate", "200", "-o", out, "--", sys.executable, "-m",
                               _MODULE, "--loop", args.flame, "--seconds", str(max(args.seconds, 1.0))],
                              capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(out):
            print(f"py-spy failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
            return 2
        print(f"{args.flame}: flame graph in {out}")
        return 0
    results = overhead(args.processes, args.seconds)
    base = statistics.median(results["Tensor"])
    for name, values in results.items():
        median = statistics.median(values)
        print(f"{name:<22} {median:>8.0f} ns per torch.add ({len(values)} processes: {min(values):.0f}-"
              f"{max(values):.0f} ns); {median - base:>+6.0f} ns over Tensor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
