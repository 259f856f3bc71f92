"""``python -m torchbench_core.operators``: record operator inputs from models, and benchmark them.

    python -m torchbench_core.operators record                 # regenerate the shipped logs
    python -m torchbench_core.operators record --factory mypkg.models:make --name MyModel --out logs/
    python -m torchbench_core.operators bench --op aten.add.Tensor --max-samples 5
    python -m torchbench_core.operators bench --inp-file BertForMaskedLM_training.txt --dtype float16

Exit status: 0 when it ran (failed and skipped samples are counted in the
report), 2 for bad input (an unknown operator, a malformed log, a bad flag) or an unexpected error
(with its traceback); never 1, which torchbench keeps for a regression.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import traceback
from pathlib import Path

from . import LOGS, suite_log, suites
from .log_format import LogFormatError, OperatorLog

DTYPES = ("float32", "float16", "bfloat16", "float64", "as-logged")


def _record(args: argparse.Namespace) -> int:
    from . import models
    from .record import record_training

    if args.factory:
        if not args.name:
            raise ValueError("--factory needs --name (the log is <out>/<name>_training.txt)")
        chosen = {args.name: models.load_factory(args.factory)}
        out = Path(args.out or ".")
    else:
        chosen = {n: f for n, f in models.MODELS[args.suite].items() if not args.model or n in args.model}
        unknown = set(args.model or ()) - set(chosen)
        if unknown:
            raise ValueError(f"unknown model(s) {', '.join(sorted(unknown))}: one of "
                             f"{', '.join(models.MODELS[args.suite])}")
        out = Path(args.out) if args.out else LOGS / args.suite
    out.mkdir(parents=True, exist_ok=True)
    for name, factory in chosen.items():
        started = time.perf_counter()
        made = factory()
        if not (isinstance(made, tuple) and len(made) == 2):
            raise ValueError(f"{name}: the factory must return (model, inputs), got {type(made).__name__}")
        model, inputs = made
        log = (record_training(model, (), inputs) if isinstance(inputs, dict)
               else record_training(model, tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)))
        path = out / f"{name}_training.txt"
        log.write(path)
        samples = sum(len(log.samples(op)) for op in log)
        print(f"{path}: {len(log)} operators, {samples} distinct inputs ({time.perf_counter() - started:.1f} s)")
    return 0


def _bench(args: argparse.Namespace) -> int:
    import torch

    from .bench import BenchOptions, benchmark, compare_table, write_csv

    log = OperatorLog.read(*args.inp_file) if args.inp_file else suite_log(args.suite)
    source = "custom" if args.inp_file else args.suite
    operators = () if args.op in ([], ["all"]) else tuple(args.op)
    options = BenchOptions(operators=operators, dtype=None if args.dtype == "as-logged" else args.dtype,
                           max_samples=args.max_samples, start_idx=args.start_idx, channels_last=args.channels_last,
                           inductor_configs=tuple(args.inductor_config), device=args.device, repeats=args.repeats,
                           accuracy_only=args.accuracy_only, profile_dir=Path(args.profile) if args.profile else None,
                           min_run_time=args.min_run_time, num_threads=args.threads)
    if options.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {options.device}: torch {torch.__version__} sees no CUDA device")
    torch.set_float32_matmul_precision("high")
    print(f"operatorbench: {len(operators) or len(log)} operators of {source} ({', '.join(map(str, log.sources))}),"
          f" {options.dtype or 'logged dtypes'} on {options.device}, up to {options.max_samples} samples each")
    results = benchmark(log, options, progress=lambda r: print(r.summary(), flush=True))
    csv_path = Path(args.csv or f"operatorbench_{source}_{options.dtype or 'logged'}.csv")
    if not options.accuracy_only:
        write_csv(results, csv_path)
        if args.compare:
            print(compare_table(results))
    _report(results, csv_path if not options.accuracy_only else None)
    return 0


def _report(results, csv_path: Path | None) -> None:
    skipped_ops = collections.Counter(r.skip_reason for r in results if r.skip_reason)
    reasons = collections.Counter(reason.split(": ")[0] for r in results for _, reason in r.skipped)
    failures = collections.Counter(": ".join(reason.split(": ")[:2]) for r in results for _, reason in r.failed)
    built = sum(len(r.samples) for r in results)
    skipped = sum(len(r.skipped) for r in results)
    failed = sum(len(r.failed) for r in results)
    compile_s = sum(r.compile_seconds() for r in results)
    print(f"\n{len(results) - sum(skipped_ops.values())} operators benchmarked, {sum(skipped_ops.values())} skipped;"
          f" samples: {built} built, {skipped} skipped, {failed} failed;"
          f" {sum(len(r.inaccurate) for r in results)} inaccurate; compile {compile_s:.1f} s of "
          f"{sum(r.elapsed for r in results):.1f} s")
    for reason, n in skipped_ops.most_common():
        print(f"  operators skipped, {reason}: {n}")
    for reason, n in reasons.most_common():
        print(f"  samples skipped, {reason}: {n}")
    for reason, n in failures.most_common():
        print(f"  samples failed at {reason}: {n}")
    if csv_path:
        print(f"Wrote {csv_path}")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m torchbench_core.operators", description=__doc__.splitlines()[0])
    commands = top.add_subparsers(dest="command", required=True)
    record = commands.add_parser("record", help="record the operator inputs of models' training steps")
    record.add_argument("--suite", default="huggingface", choices=sorted(_model_suites()))
    record.add_argument("--model", action="append", help="one of the suite's models (repeatable; default all)")
    record.add_argument("--factory", help="module:function returning (model, inputs): your own model")
    record.add_argument("--name", help="the log's name for --factory (<out>/<name>_training.txt)")
    record.add_argument("--out", help="folder for the logs (default: the package's logs/<suite>)")
    bench = commands.add_parser("bench", help="benchmark logged operators, eager against inductor")
    bench.add_argument("--suite", default="huggingface", help=f"a recorded suite: {', '.join(suites())}")
    bench.add_argument("--inp-file", action="append", help="a log file or folder instead of the suite (repeatable;"
                                                           " PyTorch's own logs read unchanged)")
    bench.add_argument("--op", action="append", default=[], help="an operator overload, e.g. aten.add.Tensor "
                                                                  "(repeatable; default all)")
    bench.add_argument("--dtype", default="float32", choices=DTYPES)
    bench.add_argument("--max-samples", type=_positive, default=15, help="samples per operator (default 15, the seed's)")
    bench.add_argument("--start-idx", type=_non_negative, default=0, help="first sample of each operator")
    bench.add_argument("--channels-last", action="store_true", help="4-d inputs in channels-last memory format")
    bench.add_argument("--inductor-config", action="append", default=[],
                       help="also compile with a named inductor configuration: autotune, halide (repeatable)")
    bench.add_argument("--device", default="cpu", help="cpu or cuda")
    bench.add_argument("--repeats", type=_positive, default=3, help="interleaved rounds per sample")
    bench.add_argument("--accuracy-only", action="store_true", help="compile and check accuracy; no timing")
    bench.add_argument("--profile", metavar="DIR", help="a torch.profiler trace per operator under DIR")
    bench.add_argument("--min-run-time", type=float, default=0.05, help="seconds of each timed measurement")
    bench.add_argument("--threads", type=_positive, default=1, help="torch threads while timing")
    bench.add_argument("--csv", help="the CSV's path (default operatorbench_<suite>_<dtype>.csv)")
    bench.add_argument("--compare", action="store_true", help="also print a Compare table of every sample")
    return top


def _model_suites():
    from .models import MODELS

    return MODELS


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be 1 or more")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more")
    return value


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return _record(args) if args.command == "record" else _bench(args)
    except (LogFormatError, KeyError, ValueError, FileNotFoundError) as e:
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a bug or a model that fails: 2 with its traceback, never 1 (regression)
        traceback.print_exc()
        print("error: operatorbench stopped on the unexpected error above", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
