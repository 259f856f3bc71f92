"""Seed 003 (operatorbench): aten operators, eager against torch.compile, on CPU.

For each operator and each sample input: an accuracy check of compiled
against eager output, then timings with the two interleaved ("to handle
frequency scaling and load changes"), medians per model. Across the samples
the speedup (eager time / compiled time) is summarised at its 20th, 50th and
80th percentiles.

asv treats higher values as worse, so the tracked value is the inverse of the
speedup at that percentile: compiled time as a fraction of eager time (lower
is better; 0.5 means a 2x speedup). Compilation happens once per operator in
setup_cache (dynamic shapes), not in the measurement.
"""

import numpy as np
import torch

from torchbench_core.asv_suite import timer

aten = torch.ops.aten
SHAPES = [(64, 64), (128, 256), (256, 256), (512, 128), (1024, 64)]
OPERATORS = {
    "aten.add.Tensor": (aten.add.Tensor, lambda x: (x, x)),
    "aten.mul.Tensor": (aten.mul.Tensor, lambda x: (x, x)),
    "aten.relu.default": (aten.relu.default, lambda x: (x,)),
    "aten._softmax.default": (aten._softmax.default, lambda x: (x, -1, False)),
    "aten.sum.dim_IntList": (aten.sum.dim_IntList, lambda x: (x, [1])),
}
PERCENTILES = {"speedup p20": 20, "speedup p50": 50, "speedup p80": 80}
REPEATS = 3
setup_cache_timeout = 1800


def _median_time(fn, args):
    t = timer("fn(*args)", globals={"fn": fn, "args": args}, label="operators", sub_label="", description="")
    return t.blocked_autorange(min_run_time=0.02).median


def _speedups(op, make_args):
    eager = lambda *args: op(*args)  # noqa: E731
    compiled = torch.compile(lambda *args: op(*args), dynamic=True)
    generator = torch.Generator().manual_seed(0)
    speedups = []
    for shape in SHAPES:
        args = make_args(torch.rand(shape, generator=generator))
        torch.testing.assert_close(compiled(*args), eager(*args))  # accuracy
        timings = np.zeros((REPEATS, 2))
        for rep in range(REPEATS):  # interleaved: eager, compiled, eager, ...
            for m, model in enumerate((eager, compiled)):
                timings[rep, m] = _median_time(model, args)
        t_eager, t_compiled = np.median(timings, axis=0)
        speedups.append(t_eager / t_compiled)
    return speedups


def setup_cache():
    torch.set_num_threads(1)
    cache = {}
    for name, (op, make_args) in OPERATORS.items():
        try:
            cache[name] = _speedups(op, make_args)
        except Exception as e:  # one operator failing must not take the others down
            cache[name] = f"{type(e).__name__}: {e}"
    return cache


class CompiledOverEager:
    params = (["operators: compiled time / eager time"], list(OPERATORS), list(PERCENTILES), [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "compiled/eager"
    version = "1"

    def track_compiled_over_eager(self, cache, label, sub_label, description, num_threads):
        speedups = cache[sub_label]
        if isinstance(speedups, str):
            raise RuntimeError(f"{sub_label}: {speedups}")
        return float(1.0 / np.percentile(speedups, PERCENTILES[description]))
