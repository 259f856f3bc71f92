"""Measure many asv benchmarks in one process: the worker of `torchbench alert`.

asv spawns a process per benchmark and parameter set; an A/B verdict needs
many processes per side, and paying interpreter and torch start-up for each
benchmark in each of them would eat the time budget. This worker discovers a
suite with asv_runner's own discovery and runs the selected (benchmark,
parameter index) pairs in one process, in the order given, the way asv's
runner runs one (setup_cache result loaded, setup, run, teardown).

    python -m torchbench_core.asv_worker list  SUITE_DIR
    python -m torchbench_core.asv_worker run   SUITE_DIR --jobs JOBS.json --out OUT.jsonl [--cache-dir DIR]
    python -m torchbench_core.asv_worker counts SUITE_DIR --jobs JOBS.json --out OUT.json

`run` appends one JSON line per job as it goes ({"start": job} before it, the
result after), so a benchmark that kills the process is known by its start
line without an end. A result is {"samples": [...], "number": n} for a
benchmark that returns asv's sample form (or a time_ benchmark), {"value": x}
for a plain track_ value, {"skipped": true}, or {"error": "..."}.

`counts` collects instruction counts (callgrind) for the jobs that are
TimerSuite cases, all in one valgrind process: {job key: [counts per run, ...]}.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import sys
import traceback
from pathlib import Path

COUNT_NUMBER, COUNT_REPEATS = 100, 3


def _discover(suite: Path) -> dict:
    from asv_runner._aux import update_sys_path
    from asv_runner.discovery import disc_benchmarks

    # asv's importer: the suite package alone, not its parent folder (which,
    # in a project's checkout, holds the working tree's copy of the project)
    root = str(suite.resolve())
    update_sys_path(root)
    return {b.name: b for b in disc_benchmarks(root)}


def _timer_suite(benchmark):
    """The TimerSuite instance a benchmark comes from (asv_runner keeps [func, instance, module]), or None."""
    return next((s for s in benchmark._attr_sources if hasattr(s, "_specs")), None)


def list_benchmarks(suite: Path) -> list[dict]:
    """Name, type, unit and parameters (as asv keeps them: repr strings) of every benchmark."""
    out = []
    for name, b in sorted(_discover(suite).items()):
        out.append({"name": name, "type": b.type, "unit": getattr(b, "unit", None),
                    "params": [list(p) for p in b.params], "param_names": list(b.param_names),
                    "setup_cache": b.setup_cache_key is not None,
                    "timer_suite": _timer_suite(b) is not None})
    return out


def _load_cache(benchmark, cache_dir: Path | None):
    if benchmark.setup_cache_key is None:
        return None
    if cache_dir is None:
        return benchmark.do_setup_cache()
    path = cache_dir / (benchmark.setup_cache_key.replace(os.sep, "_").replace(":", "_") + ".pickle")
    if path.exists():
        with open(path, "rb") as f:  # written by an earlier process of this same run, never user data
            return pickle.load(f)
    cache = benchmark.do_setup_cache()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        pickle.dump(cache, f)
    os.replace(tmp, path)
    return cache


def _run_one(benchmark, index: int, cache) -> dict:
    benchmark.set_param_idx(index)
    benchmark.set_cache(cache)
    if benchmark.do_setup():
        return {"skipped": True}
    try:
        result = benchmark.do_run()
    except NotImplementedError:
        return {"skipped": True}
    finally:
        benchmark.do_teardown()
    if isinstance(result, dict) and "samples" in result:
        return {"samples": [float(s) for s in result["samples"]], "number": int(result.get("number") or 1)}
    if result is None or (isinstance(result, float) and math.isnan(result)):
        return {"skipped": True}
    return {"value": float(result)}


def run(suite: Path, jobs: list[list], out: Path, cache_dir: Path | None) -> None:
    benchmarks = _discover(suite)
    caches: dict = {}
    with open(out, "a", buffering=1) as f:
        for name, index in jobs:
            f.write(json.dumps({"start": [name, index]}) + "\n")
            benchmark = benchmarks.get(name)
            try:
                if benchmark is None:
                    raise LookupError(f"{name}: no such benchmark in {suite}")
                if benchmark.setup_cache_key not in caches:
                    caches[benchmark.setup_cache_key] = _load_cache(benchmark, cache_dir)
                result = _run_one(benchmark, index, caches[benchmark.setup_cache_key])
            except Exception as e:  # one benchmark's failure is its own; the process goes on
                tail = traceback.format_exc().strip().splitlines()[-6:]
                result = {"error": f"{type(e).__name__}: {e}", "traceback": "\n".join(tail)}
            f.write(json.dumps({"job": [name, index], **result}) + "\n")
            f.flush()


def counts(suite: Path, jobs: list[list], out: Path) -> None:
    from .callgrind import CallgrindError, collect_callgrind_many

    benchmarks = _discover(suite)
    timers, keys = [], []
    for name, index in jobs:
        benchmark = benchmarks[name]
        suite_instance = _timer_suite(benchmark)
        if suite_instance is None:
            continue
        specs = suite_instance._specs
        benchmark.set_param_idx(index)
        key = tuple(benchmark._current_params)
        if key in specs:
            timers.append(specs[key].timer())
            keys.append(f"{name}|{index}")
    result: dict = {}
    if timers:
        for key, outcome in zip(keys, collect_callgrind_many(timers, COUNT_NUMBER, COUNT_REPEATS,
                                                             on_error="return")):
            if isinstance(outcome, CallgrindError):
                result[key] = {"error": str(outcome)}
            else:
                result[key] = {"counts": [s.counts(subtract_baseline=True) / COUNT_NUMBER for s in outcome]}
    out.write_text(json.dumps(result))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchbench_core.asv_worker")
    parser.add_argument("mode", choices=["list", "run", "counts"])
    parser.add_argument("suite", type=Path)
    parser.add_argument("--jobs", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache-dir", type=Path)
    args = parser.parse_args(argv)
    if args.mode == "list":
        json.dump(list_benchmarks(args.suite), sys.stdout)
        return 0
    jobs = json.loads(args.jobs.read_text())
    if args.mode == "run":
        run(args.suite, jobs, args.out, args.cache_dir)
    else:
        counts(args.suite, jobs, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
