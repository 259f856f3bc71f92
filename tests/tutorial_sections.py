"""Seed tutorial (pytorch.org recipes/benchmark), sections 1-7, on torchbench_core.

The only change to the tutorial's code is the import line, plus smaller run
times and sizes so that it fits in a test. Run as a script so that the
tutorial's `from __main__ import ...` setups work as written.
"""

import os
import pickle
import sys
import timeit
from itertools import product

import torch
from torch import Tensor

import torchbench_core as benchmark  # was: from torch.utils import benchmark
from torchbench_core import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias  # noqa: F401
from torchbench_core.op_fuzzers import binary

MIN_RUN_TIME = float(os.environ.get("TUTORIAL_MIN_RUN_TIME", "0.01"))


# 1. Defining functions to benchmark
def batched_dot_mul_sum(a: Tensor, b: Tensor) -> Tensor:
    """Computes batched dot by multiplying and summing"""
    return a.mul(b).sum(-1)


def batched_dot_bmm(a: Tensor, b: Tensor) -> Tensor:
    """Computes batched dot by reducing to ``bmm``"""
    a = a.reshape(-1, 1, a.shape[-1])
    b = b.reshape(-1, a.shape[-1], 1)
    return torch.bmm(a, b).flatten()


x = torch.randn(10000, 64)
assert batched_dot_mul_sum(x, x).allclose(batched_dot_bmm(x, x))

# 2. Benchmarking with timeit.Timer
t0 = timeit.Timer(stmt="batched_dot_mul_sum(x, x)", setup="from __main__ import batched_dot_mul_sum", globals={"x": x})
t1 = timeit.Timer(stmt="batched_dot_bmm(x, x)", setup="from __main__ import batched_dot_bmm", globals={"x": x})
print(f"mul_sum(x, x):  {t0.timeit(100) / 100 * 1e6:>5.1f} us")
print(f"bmm(x, x):      {t1.timeit(100) / 100 * 1e6:>5.1f} us")

# 3. Benchmarking with torch.utils.benchmark.Timer
t0 = benchmark.Timer(stmt="batched_dot_mul_sum(x, x)", setup="from __main__ import batched_dot_mul_sum", globals={"x": x})
print(t0.timeit(100))
t1 = benchmark.Timer(stmt="batched_dot_bmm(x, x)", setup="from __main__ import batched_dot_bmm", globals={"x": x})
print(t1.timeit(100))

num_threads = torch.get_num_threads()
t0 = benchmark.Timer(
    stmt="batched_dot_mul_sum(x, x)", setup="from __main__ import batched_dot_mul_sum", globals={"x": x},
    num_threads=num_threads, label="Multithreaded batch dot", sub_label="Implemented using mul and sum",
)
print(t0.timeit(100))
t1 = benchmark.Timer(
    stmt="batched_dot_bmm(x, x)", setup="from __main__ import batched_dot_bmm", globals={"x": x},
    num_threads=num_threads, label="Multithreaded batch dot", sub_label="Implemented using bmm",
)
print(t1.timeit(100))

if torch.cuda.is_available():  # the tutorial's CUDA cells
    x = torch.randn(10000, 1024, device="cuda:0")
    t0 = benchmark.Timer(stmt="batched_dot_mul_sum(x, x)", setup="from __main__ import batched_dot_mul_sum", globals={"x": x})
    print(t0.timeit(100))
    t1 = benchmark.Timer(stmt="batched_dot_bmm(x, x)", setup="from __main__ import batched_dot_bmm", globals={"x": x})
    print(t1.timeit(100))

# 4. Benchmarking with Blocked Autorange
# At least 0.2 s here (the tutorial's own is 1 s): with a shorter run time a
# slow machine can spend it all in the sizing probe, which is then the only
# sample, and the section is about getting many.
m0 = t0.blocked_autorange(min_run_time=max(MIN_RUN_TIME, 0.2))
m1 = t1.blocked_autorange(min_run_time=max(MIN_RUN_TIME, 0.2))
print(m0)
print(m1)
print(f"Mean:   {m0.mean * 1e6:6.2f} us")
print(f"Median: {m0.median * 1e6:6.2f} us")

# 5. Comparing benchmark results
sizes = [1, 64, 1024]
results = []
for b, n in product(sizes, sizes):
    label = "Batched dot"
    sub_label = f"[{b}, {n}]"
    x = torch.ones((b, n))
    for num_threads in [1, 2]:
        results.append(benchmark.Timer(
            stmt="batched_dot_mul_sum(x, x)", setup="from __main__ import batched_dot_mul_sum", globals={"x": x},
            num_threads=num_threads, label=label, sub_label=sub_label, description="mul/sum",
        ).blocked_autorange(min_run_time=MIN_RUN_TIME))
        results.append(benchmark.Timer(
            stmt="batched_dot_bmm(x, x)", setup="from __main__ import batched_dot_bmm", globals={"x": x},
            num_threads=num_threads, label=label, sub_label=sub_label, description="bmm",
        ).blocked_autorange(min_run_time=MIN_RUN_TIME))
compare = benchmark.Compare(results)
compare.print()
compare.trim_significant_figures()
compare.colorize()
compare.print()

# 6. Saving/Loading benchmark results
ab_test_results = []
for env in ("environment A: mul/sum", "environment B: bmm"):
    for b, n in ((1, 1), (1024, 10000), (10000, 1)):
        x = torch.ones((b, n))
        dot_fn = batched_dot_mul_sum if env == "environment A: mul/sum" else batched_dot_bmm
        m = benchmark.Timer(
            stmt="batched_dot(x, x)", globals={"x": x, "batched_dot": dot_fn}, num_threads=1,
            label="Batched dot", description=f"[{b}, {n}]", env=env,
        ).blocked_autorange(min_run_time=MIN_RUN_TIME)
        ab_test_results.append(pickle.dumps(m))
ab_results = [pickle.loads(i) for i in ab_test_results]
compare = benchmark.Compare(ab_results)
compare.trim_significant_figures()
compare.colorize()
compare.print()
round_tripped_results = pickle.loads(pickle.dumps(results))
assert str(benchmark.Compare(results)) == str(benchmark.Compare(round_tripped_results))

# 7. Generating inputs with Fuzzed Parameters
example_fuzzer = Fuzzer(
    parameters=[
        FuzzedParameter(name="k0", minval=1, maxval=10000, distribution="loguniform"),
        FuzzedParameter(name="k1", minval=1, maxval=10000, distribution="loguniform"),
    ],
    tensors=[FuzzedTensor(name="x", size=("k0", "k1"), min_elements=128, max_elements=10000000, probability_contiguous=0.6)],
    seed=0,
)
print(list(example_fuzzer.take(1)))
results = []
for tensors, tensor_params, params in example_fuzzer.take(10):
    sub_label = f"{params['k0']:<6} x {params['k1']:<4} {'' if tensor_params['x']['is_contiguous'] else '(discontiguous)'}"
    results.append(benchmark.Timer(
        stmt="batched_dot_mul_sum(x, x)", setup="from __main__ import batched_dot_mul_sum", globals=tensors,
        label="Batched dot", sub_label=sub_label, description="mul/sum",
    ).blocked_autorange(min_run_time=MIN_RUN_TIME))
    results.append(benchmark.Timer(
        stmt="batched_dot_bmm(x, x)", setup="from __main__ import batched_dot_bmm", globals=tensors,
        label="Batched dot", sub_label=sub_label, description="bmm",
    ).blocked_autorange(min_run_time=MIN_RUN_TIME))
compare = benchmark.Compare(results)
compare.colorize()
compare.print()

results = []
for tensors, tensor_params, params in binary.BinaryOpFuzzer(seed=0).take(10):
    sub_label = f"{params['k0']:<6} x {params['k1']:<4} {'' if tensor_params['x']['is_contiguous'] else '(discontiguous)'}"
    results.append(benchmark.Timer(
        stmt="batched_dot_mul_sum(x, x)", setup="from __main__ import batched_dot_mul_sum", globals=tensors,
        label="Batched dot", sub_label=sub_label, description="mul/sum",
    ).blocked_autorange(min_run_time=MIN_RUN_TIME))
    results.append(benchmark.Timer(
        stmt="batched_dot_bmm(x, x)", setup="from __main__ import batched_dot_bmm", globals=tensors,
        label="Batched dot", sub_label=sub_label, description="bmm",
    ).blocked_autorange(min_run_time=MIN_RUN_TIME))
compare = benchmark.Compare(results)
compare.trim_significant_figures()
compare.colorize()
compare.print()
print("TUTORIAL DONE", file=sys.stderr)
