"""operatorbench: each logged operator on its logged inputs, eager against inductor.

For each operator and sample (seed 003's flow): the single-op graph is built
(``torch._inductor.utils.gen_gm_and_inputs``) and compiled by inductor once per
requested configuration, outside any timed region (its seconds are kept apart);
the compiled output is checked against eager; then eager and each compiled
graph are timed interleaved, ``repeats`` rounds of one block-timed measurement
each (torchbench_core's Timer; on CUDA, events with the L2 cache flushed
before each call). A sample's speedup is eager's median over the compiled
one's; an operator's summary is the 20th, 50th and 80th percentiles of its
samples' speedups.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import math
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import torch

from ..compare import Compare
from ..measurement import Measurement
from ..task_spec import TaskSpec
from ..timing import Timer
from .inputs import SampleSkipped, build_sample, resolve_operator
from .log_format import OperatorLog
from .record import computes

__all__ = ["BenchOptions", "INDUCTOR_CONFIGS", "OperatorResult", "QUANTILES", "SampleResult", "benchmark",
           "benchmark_operator", "compare_table", "csv_header", "skip_reason", "write_csv"]

# seed 003's named inductor configurations (--inductor-config)
INDUCTOR_CONFIGS = {
    "autotune": {"max_autotune_pointwise": True, "max_autotune": True, "max_autotune_gemm": True,
                 "coordinate_descent_tuning": True},
    "halide": {"cpu_backend": "halide", "cuda_backend": "halide"},
}
QUANTILES = (0.2, 0.5, 0.8)
L2_FLUSH_BYTES = 256 * 2**20  # larger than any GPU's L2 today (an H100 has 50 MB)


@dataclasses.dataclass(frozen=True)
class BenchOptions:
    """What to benchmark and how (seed 003's options)."""
    operators: tuple[str, ...] = ()  # overload names; empty: every operator of the logs
    dtype: str | None = "float32"  # floating inputs cast to it; None keeps the log's dtypes
    max_samples: int = 15  # seed 003's default
    start_idx: int = 0
    channels_last: bool = False
    inductor_configs: tuple[str, ...] = ()  # names in INDUCTOR_CONFIGS, besides inductor's defaults
    device: str = "cpu"
    repeats: int = 3
    accuracy_only: bool = False
    profile_dir: Path | None = None  # a torch.profiler trace per operator, under it
    min_run_time: float = 0.05  # seconds of each blocked measurement
    num_threads: int = 1

    def backends(self) -> list[str]:
        return ["inductor", *self.inductor_configs]


@dataclasses.dataclass
class SampleResult:
    index: int  # position among the operator's logged samples
    text: str
    eager: Measurement | None
    compiled: list[Measurement | None]  # one per backend
    compile_seconds: list[float]
    accurate: bool

    def speedups(self) -> list[float]:
        return [self.eager.median / c.median for c in self.compiled] if self.eager else []


@dataclasses.dataclass
class OperatorResult:
    name: str
    backends: list[str]
    samples: list[SampleResult] = dataclasses.field(default_factory=list)
    skipped: list[tuple[int, str]] = dataclasses.field(default_factory=list)  # (sample index, reason)
    failed: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    skip_reason: str | None = None  # the whole operator skipped
    elapsed: float = 0.0

    @property
    def timed(self) -> list[SampleResult]:
        return [s for s in self.samples if s.eager is not None]

    def speedup_quantiles(self) -> list[list[float]]:
        """Per backend, the (20th, 50th, 80th) percentiles of eager time / compiled time over the samples."""
        speedups = np.array([s.speedups() for s in self.timed])
        return [np.quantile(speedups[:, b], QUANTILES).tolist() for b in range(len(self.backends))]

    def mean_times(self) -> list[float]:
        """Eager's and each backend's mean over the samples of their median time (the seed's "abs" columns)."""
        timed = self.timed
        return [float(np.mean([s.eager.median for s in timed]))] + [
            float(np.mean([s.compiled[b].median for s in timed])) for b in range(len(self.backends))]

    def eager_geomean(self) -> float:
        return float(np.exp(np.mean([math.log(s.eager.median) for s in self.timed])))

    def compile_seconds(self) -> float:
        return float(sum(sum(s.compile_seconds) for s in self.samples))

    @property
    def inaccurate(self) -> list[int]:
        return [s.index for s in self.samples if not s.accurate]

    def summary(self) -> str:
        parts = [f"{self.name}:"]
        if self.skip_reason:
            return f"{self.name}: skipped ({self.skip_reason})"
        if self.timed:
            for backend, (low, mid, high) in zip(self.backends, self.speedup_quantiles()):
                parts.append(f"{backend}={mid:.4f}x ({low:.4f}-{high:.4f})")
        parts.append(f"{len(self.samples)} built, {len(self.skipped)} skipped, {len(self.failed)} failed"
                     + (f", {len(self.inaccurate)} inaccurate" if self.inaccurate else ""))
        parts.append(f"compile {self.compile_seconds():.1f}s, took {self.elapsed:.0f}s")
        return " ".join(parts)


def skip_reason(name: str) -> str | None:
    """Why an operator is not benchmarked, or None. Inductor must have a lowering or a decomposition for it
    (else the compiled graph calls eager's kernel: a fallback, nothing to compare), and it must compute."""
    from torch._inductor.decomposition import decompositions
    from torch._inductor.lowering import lowerings

    try:
        operator = resolve_operator(name)
    except KeyError as e:
        return str(e.args[0])
    if name == "aten._unsafe_view.default" or not computes(operator):
        return "computes nothing (a view or constructor)"
    if all(op not in decompositions and op not in lowerings for op in (operator, operator.overloadpacket)):
        return "no inductor lowering or decomposition (inductor would call eager's kernel)"
    return None


def _l2_flushed_times(fn: Callable, args: list, min_run_time: float, buffer: torch.Tensor) -> list[float]:
    """Per call seconds on CUDA, events around each call, with the L2 cache written over before it."""
    times: list[float] = []
    start_all = time.perf_counter()
    while time.perf_counter() - start_all < min_run_time or len(times) < 10:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        buffer.zero_()
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return times


def _measure(fn: Callable, args: list, spec: dict, options: BenchOptions, flush: torch.Tensor | None) -> Measurement:
    if flush is not None:
        return Measurement(1, _l2_flushed_times(fn, args, options.min_run_time, flush),
                           TaskSpec(stmt="fn(*args)", setup="pass", num_threads=options.num_threads, **spec))
    timer = Timer("fn(*args)", globals={"fn": fn, "args": args}, num_threads=options.num_threads, **spec)
    return timer.blocked_autorange(min_run_time=options.min_run_time)


def _shapes(args: Iterable) -> str:
    shapes = [("x".join(map(str, a.shape)) or "scalar") for a in args if isinstance(a, torch.Tensor)]
    return ", ".join(shapes)


def _sample(name: str, operator, index: int, text: str, options: BenchOptions, dtype: torch.dtype | None,
            flush: torch.Tensor | None, result: OperatorResult) -> None:
    from torch._dynamo.testing import same
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import gen_gm_and_inputs

    try:
        args, kwargs = build_sample(name, text, dtype=dtype, device=options.device,
                                    channels_last=options.channels_last)
    except SampleSkipped as e:
        result.skipped.append((index, str(e)))
        return
    except ValueError as e:
        result.skipped.append((index, f"not in the log format: {e}"))
        return
    stage = "eager"
    try:
        gm, gm_args = gen_gm_and_inputs(operator, tuple(args), kwargs)
        expected = gm(*gm_args)
        stage = "inductor"
        models, seconds = [gm], []
        for backend in options.backends():
            patches = INDUCTOR_CONFIGS.get(backend, {})
            started = time.perf_counter()
            models.append(compile_fx(gm, gm_args, config_patches=patches))
            seconds.append(time.perf_counter() - started)
        stage = "accuracy check"
        accurate = all(same(model(*gm_args), expected, cos_similarity=True, equal_nan=True) for model in models[1:])
        stage = "timing"
        measurements: list[list[Measurement]] = [[] for _ in models]
        if not options.accuracy_only:
            sub_label = f"[{index}] {_shapes(gm_args)}"
            for _ in range(options.repeats):  # interleaved: eager, compiled, eager, ... (drift hits all alike)
                for m, model in enumerate(models):
                    spec = {"label": name, "sub_label": sub_label, "description": (["eager"] + options.backends())[m]}
                    measurements[m].append(_measure(model, gm_args, spec, options, flush))
    except Exception as e:  # noqa: BLE001 - one sample's failure is reported and the others go on
        message = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        result.failed.append((index, f"{stage}: {message}"))
        return
    merged = [Measurement.merge(ms)[0] if ms else None for ms in measurements]
    result.samples.append(SampleResult(index, text, merged[0], merged[1:], seconds, bool(accurate)))


def _profiler(name: str, options: BenchOptions):
    if options.profile_dir is None:
        return contextlib.nullcontext()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.device(options.device).type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(activities=activities, on_trace_ready=torch.profiler.tensorboard_trace_handler(
        str(Path(options.profile_dir) / f"operator_{name}"), use_gzip=True))


def benchmark_operator(log: OperatorLog, name: str, options: BenchOptions) -> OperatorResult:
    """One operator on its logged samples [start_idx, start_idx + max_samples)."""
    result = OperatorResult(name, options.backends())
    started = time.perf_counter()
    result.skip_reason = skip_reason(name)
    if result.skip_reason:
        return result
    operator = resolve_operator(name)
    dtype = None if options.dtype is None else getattr(torch, options.dtype)
    on_cuda = torch.device(options.device).type == "cuda"
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=options.device) if on_cuda else None
    chosen = log.samples(name)[options.start_idx:options.start_idx + options.max_samples]
    # a repeated in-place op (div_ by 8) drives its input into denormals, which CPUs compute far slower
    with _flush_denormal(not on_cuda), _profiler(name, options):
        for index, (text, _calls) in enumerate(chosen, start=options.start_idx):
            with torch.profiler.record_function(f"sample_{index}"):
                _sample(name, operator, index, text, options, dtype, flush, result)
    result.elapsed = time.perf_counter() - started
    return result


def benchmark(log: OperatorLog, options: BenchOptions,
              progress: Callable[[OperatorResult], None] | None = None) -> list[OperatorResult]:
    """Every chosen operator of the logs, in the logs' order; ``progress`` is called after each."""
    unknown = [name for name in options.operators if name not in log.operators]
    if unknown:
        raise KeyError(f"not in the logs: {', '.join(unknown)} (the logs have {len(log)} operators)")
    for backend in options.inductor_configs:
        if backend not in INDUCTOR_CONFIGS:
            raise KeyError(f"unknown inductor configuration {backend!r}: one of {', '.join(INDUCTOR_CONFIGS)}")
    results = []
    for name in options.operators or log.names():
        results.append(benchmark_operator(log, name, options))
        if progress:
            progress(results[-1])
    return results


@contextlib.contextmanager
def _flush_denormal(enabled: bool):
    previous = torch.set_flush_denormal(True) if enabled else None
    try:
        yield
    finally:
        if previous is not None:
            torch.set_flush_denormal(False)


def csv_header(backends: Sequence[str]) -> list[str]:
    """Seed 003's columns (operator, each backend's speedup percentiles, elapsed, each one's mean time), then
    ours: compile seconds and the sample counts."""
    names = list(backends)
    if len(names) == 2:
        names.append(f"{names[0]}/{names[1]}")
    return (["operator"] + [f"{b} {round(q * 100)}th" for b in names for q in QUANTILES] + ["elapsed"]
            + [f"{b} abs" for b in ["eager", *backends]]
            + ["compile", "samples", "skipped", "failed", "inaccurate"])


def _row(result: OperatorResult) -> list[str]:
    quantiles = result.speedup_quantiles()
    if len(result.backends) == 2:  # the seed's third column group: the first backend over the second
        ratios = [s.compiled[1].median / s.compiled[0].median for s in result.timed]
        quantiles.append(np.quantile(ratios, QUANTILES).tolist())
    return ([result.name] + [f"{v:.6f}" for q in quantiles for v in q] + [f"{result.elapsed:.1f}"]
            + [f"{v:.8f}" for v in result.mean_times()]
            + [f"{result.compile_seconds():.2f}", str(len(result.samples)), str(len(result.skipped)),
               str(len(result.failed)), str(len(result.inaccurate))])


def write_csv(results: Sequence[OperatorResult], path: str | Path) -> None:
    """One row per operator with timed samples (written whole, then renamed into place)."""
    path = Path(path)
    backends = results[0].backends if results else ["inductor"]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(csv_header(backends))
    for result in results:
        if result.timed:
            writer.writerow(_row(result))
    partial = path.with_name(path.name + ".partial")
    partial.write_text(buffer.getvalue(), encoding="utf-8")
    partial.replace(path)


def compare_table(results: Sequence[OperatorResult]) -> str:
    """torchbench_core's Compare of every timed sample: a row per sample, eager and each backend as columns."""
    measurements = [m for r in results for s in r.timed for m in (s.eager, *s.compiled)]
    compare = Compare(measurements)
    compare.trim_significant_figures()
    return str(compare)
