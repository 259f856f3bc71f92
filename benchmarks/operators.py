"""Seed 003 (operatorbench) tracked over history: logged operators, eager against inductor, on CPU.

The operators and their inputs are the recorded training steps of BERT,
GPT-2, ViT and ResNet-50 (torchbench_core/operators/logs/huggingface; see
`python -m torchbench_core.operators --help` for the full benchmark, its CSV
and its options). Per operator, on its first SAMPLES logged inputs:

- `OperatorEager.track_eager_time`: the geometric mean over the samples of
  eager's median time (seconds);
- `CompiledOverEager.track_compiled_over_eager`: compiled time as a fraction
  of eager time at the 20th, 50th and 80th percentiles of the samples'
  speedups (lower is better; 0.5 is a 2x speedup). asv treats higher values as
  worse, hence the inverse of the speedup.

Compilation stays out of every measurement: setup_cache compiles every sample
once (filling inductor's on-disk cache, and noting which operators have no
sample to time and why), and each measuring process compiles again from that
cache in `setup`, before the timed work. A process measures an operator once
and serves its eager row and its three quantile rows from that one
measurement, so the rows of one operator agree within a process.
"""

import dataclasses
import functools

from torch._inductor import compile_fx  # noqa: F401 - imported before asv forks its measuring processes

from torchbench_core.operators import suite_log
from torchbench_core.operators.bench import BenchOptions, benchmark_operator

SUITE = "huggingface"
SAMPLES = 3
LOG = suite_log(SUITE)
OPERATORS = LOG.names()
OPTIONS = BenchOptions(max_samples=SAMPLES, repeats=1, min_run_time=0.02, num_threads=1)
QUANTILES = {"p20": 0.2, "p50": 0.5, "p80": 0.8}
LABEL = "operators (huggingface training inputs)"
setup_cache_timeout = 1800


def setup_cache():
    """Compile every operator's samples once: {operator: why it is not measured, or None}."""
    reasons = {}
    for name in OPERATORS:
        result = benchmark_operator(LOG, name, dataclasses.replace(OPTIONS, accuracy_only=True))
        failures = "; ".join(f"sample {i}: {why}" for i, why in result.skipped + result.failed)
        reasons[name] = result.skip_reason or (None if result.samples else f"no sample to time ({failures})")
    return reasons


@functools.lru_cache(maxsize=None)
def _measured(name):
    result = benchmark_operator(LOG, name, OPTIONS)
    if not result.timed:
        raise RuntimeError(f"{name}: no sample was timed: {result.failed or result.skipped}")
    return result


class _Operator:
    def setup(self, reasons, label, sub_label, description, num_threads):
        if reasons[sub_label] is not None:
            raise NotImplementedError(f"{sub_label}: {reasons[sub_label]}")  # asv: skipped, not failed
        _measured(sub_label)  # compiled (from setup_cache's on-disk cache) and timed outside the tracked call


class OperatorEager(_Operator):
    params = ([LABEL], OPERATORS, ["eager"], [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "seconds"
    version = "2"

    def track_eager_time(self, reasons, label, sub_label, description, num_threads):
        return _measured(sub_label).eager_geomean()


class CompiledOverEager(_Operator):
    params = ([LABEL], OPERATORS, list(QUANTILES), [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "compiled/eager"
    version = "2"

    def track_compiled_over_eager(self, reasons, label, sub_label, description, num_threads):
        (low, mid, high), = _measured(sub_label).speedup_quantiles()
        return float(1.0 / {"p20": low, "p50": mid, "p80": high}[description])
