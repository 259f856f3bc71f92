"""System calls per call of each benchmark case, by type, under strace: the asv worker's `syscalls` mode.

    python -m torchbench_core.asv_worker syscalls SUITE_DIR --jobs JOBS.json --out OUT.json [--cache-dir DIR]

Instruction counts cannot see what the kernel does for a statement; wall time sees it under the machine's
noise. The number of system calls one call makes, by type, is neither: it is exact where the code is
deterministic. The parent (`collect`) runs the jobs natively in one process under `strace -f -qq` (this
module's `trace` mode); that process runs each job's statement (a TimerSuite case, or a `track_` or
`time_` method that times a Timer, in that Timer's loop, as the counting worker counts it) or method (a
plain asv `time_` method, each call after asv's setup, as the counting worker's AsvCall calls it)
WARMUP_CALLS times, then CALLS times, then 2 * CALLS times, and writes a marker (a `write` of
"TORCHBENCH_SYSCALLS <position> <region> <edge>" to /dev/null) at the start and end of each counted
stretch, so that the one trace splits per job and region. Every system call between a region's
markers, of any thread or child process, counts (the markers themselves do not); one that is cut by
another's line (strace's "<unfinished ...>") counts once.

Per job: {"syscalls": {"per_call": {name: calls a call, over both regions}, "exact": whether the 2N
region made exactly twice the N region's calls of every type, "calls": N, "regions": {"N": {name: calls},
"2N": {...}}}}, {"skipped": true} (a combination the suite does not define), {"uncountable": why} or
{"error": why}. The GC is off in the regions (collected before) and the counting worker's environment
(fixed hash seed and malloc thresholds) is set, so that an allocation's mmap or brk comes where the
code's does, not where the allocator's thresholds drift to.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CALLS, WARMUP_CALLS = 10, 16  # the N region's calls (the second region has 2N), and the calls before
MARKER = b"TORCHBENCH_SYSCALLS"
REGIONS = ("N", "2N")
TRACE_TIMEOUT = 1500.0  # the traced process, set-ups and imports included (rounds.collect_syscalls waits 1800 s)

_START = re.compile(r"^(?:\d+\s+)?(?:\[pid\s+\d+\]\s+)?([A-Za-z_][A-Za-z0-9_]*)\(")
_MARK = re.compile(MARKER.decode() + r" (\d+) (N|2N) (start|end)")


def collect(suite: Path, jobs: list[list], out: Path, cache_dir: Path | None = None,
            timeout: float = TRACE_TIMEOUT) -> None:
    """Trace `jobs` ([name, index, ...]) in one process under strace; writes {job key: result} to `out`."""
    from .callgrind import WORKER_ENV

    keys = [f"{job[0]}|{job[1]}" for job in jobs]
    strace = shutil.which("strace")
    if strace is None:
        out.write_text(json.dumps({key: {"error": "strace is not installed"} for key in keys}))
        return
    with tempfile.TemporaryDirectory(prefix="torchbench_syscalls_") as tmp:
        trace, manifest, jobs_file = Path(tmp) / "trace", Path(tmp) / "manifest.json", Path(tmp) / "jobs.json"
        jobs_file.write_text(json.dumps(jobs))
        cmd = [strace, "-f", "-qq", "-s", "128", "-o", str(trace), sys.executable, "-m", "torchbench_core.syscalls",
               "trace", str(suite), str(jobs_file), str(manifest), *([str(cache_dir)] if cache_dir else [])]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **WORKER_ENV),
                                  timeout=timeout)
            why = "" if proc.returncode == 0 and manifest.exists() else (
                f"the traced process failed (exit {proc.returncode}): {(proc.stderr.strip().splitlines() or [''])[-1]}")
        except subprocess.TimeoutExpired:
            why = f"the traced process took over {timeout:.0f} s"
        if why:
            out.write_text(json.dumps({key: {"error": why} for key in keys}))
            return
        ran = json.loads(manifest.read_text())
        counted = split_trace(trace.read_text(errors="replace"))
    result = {}
    for position, key in enumerate(keys):
        outcome = ran.get(str(position)) or {"error": "the traced process reported nothing for it"}
        if "calls" in outcome:
            outcome = {"syscalls": per_call(counted.get(position, {}), outcome["calls"])}
        result[key] = outcome
    out.write_text(json.dumps(result))


def split_trace(text: str) -> dict[int, dict[str, collections.Counter]]:
    """strace's output -> {job position: {region: Counter(system call -> calls)}}: every call that starts
    between a region's start and end markers (of any process or thread), the markers' own writes left out."""
    found: dict[int, dict[str, collections.Counter]] = {}
    inside: tuple[int, str] | None = None
    for line in text.splitlines():
        mark = _MARK.search(line) if MARKER.decode() in line else None
        if mark is not None:
            position, region, edge = int(mark.group(1)), mark.group(2), mark.group(3)
            inside = (position, region) if edge == "start" else None
            found.setdefault(position, {r: collections.Counter() for r in REGIONS})
            continue
        if inside is None:
            continue
        call = _START.match(line)
        if call is None:  # "<... x resumed>", signals, exits: not the start of a call
            continue
        found[inside[0]][inside[1]][call.group(1)] += 1
    return found


def per_call(regions: dict[str, collections.Counter], calls: int) -> dict:
    """A job's result from its two regions' calls (N and 2N calls of the statement)."""
    n, twice = regions.get("N", collections.Counter()), regions.get("2N", collections.Counter())
    names = sorted(set(n) | set(twice))
    return {"per_call": {name: (n[name] + twice[name]) / (3 * calls) for name in names},
            "exact": all(twice[name] == 2 * n[name] for name in names), "calls": calls,
            "regions": {"N": dict(sorted(n.items())), "2N": dict(sorted(twice.items()))}}


# -- the traced process ----------------------------------------------------------

def _mark(fd: int, position: int, region: str, edge: str) -> None:
    os.write(fd, b"%s %d %s %s" % (MARKER, position, region.encode(), edge.encode()))


def _regions(fd: int, position: int, run, each=None) -> None:
    """WARMUP_CALLS calls, then the N and 2N regions. run(n): n calls at once (a Timer's block); with `each`
    (asv's setup between calls), run(1) after each(), one call a marked stretch."""
    if each is None:
        run(WARMUP_CALLS)
    else:
        for _ in range(WARMUP_CALLS):
            each()
            run(1)
    gc.collect()
    gc.disable()
    try:
        for region, calls in zip(REGIONS, (CALLS, 2 * CALLS)):
            if each is None:
                _mark(fd, position, region, "start")
                run(calls)
                _mark(fd, position, region, "end")
            else:
                for _ in range(calls):
                    each()
                    _mark(fd, position, region, "start")
                    run(1)
                    _mark(fd, position, region, "end")
    finally:
        gc.enable()


def _call_n(call, n: int) -> None:
    for _ in range(n):
        call()


def _timer_of(benchmark, index: int, cache_dir: Path) -> tuple[object | None, dict | None]:
    """The Timer a job's statement runs in, as the counting worker finds it: a TimerSuite case's, or the one a
    `track_` or `time_` method times (asv_worker._timed_statements); or the job's answer where it has one
    already (skipped, failed, a track_ that times none)."""
    from .asv_worker import _timed_statements, _timer_suite, uncountable

    suite_instance = _timer_suite(benchmark)
    if suite_instance is not None:
        benchmark.set_param_idx(index)
        spec = suite_instance._specs.get(tuple(benchmark._current_params))
        return (None, {"skipped": True}) if spec is None else (spec.timer(), None)
    why = uncountable(benchmark)
    if why:
        return None, {"uncountable": why}
    key, answer = f"{benchmark.name}|{index}", {}
    timed = _timed_statements({benchmark.name: benchmark}, [[benchmark.name, index]], cache_dir, answer)
    return timed.get(key), answer.get(key)


def _trace_one(suite: Path, benchmark, index: int, position: int, fd: int, cache_dir: Path) -> dict:
    """A job's regions: a Timer's statement in its loop (setup once), or a plain `time_` method call by call
    after asv's setup (as the counting worker's AsvCall calls it)."""
    from .asv_worker import AsvCall, _by_call, _not_measured

    timer, answer = _timer_of(benchmark, index, cache_dir)
    if answer is not None:
        return answer
    if timer is not None:
        with contextlib.ExitStack() as stack:
            stack.enter_context(timer._threads)
            session = timer._session()
            stack.callback(session.close)
            _regions(fd, position, functools.partial(timer._block, session))
        return {"calls": CALLS}
    failed = {}
    planned = _by_call({benchmark.name: benchmark}, [[benchmark.name, index, 1, 1]], cache_dir,
                       lambda key, error: failed.__setitem__(key, error))
    if not planned:
        return _not_measured(next(iter(failed.values()), "cannot be set up"))
    _, _, _, cache_file, _ = planned[0]
    call = AsvCall(str(suite.resolve()), benchmark.name, index, cache_file)
    try:
        _regions(fd, position, functools.partial(_call_n, call), call.each)
    finally:
        call.teardown()
    return {"calls": CALLS}


def trace(suite: Path, jobs: list[list], manifest: Path, cache_dir: Path | None) -> None:
    """The process strace follows: each job's regions, in order; {position: {"calls": N} or why not} to
    `manifest` at the end."""
    import traceback

    from .asv_worker import _discover, _not_measured

    benchmarks = _discover(suite)
    fd = os.open(os.devnull, os.O_WRONLY)
    ran = {}
    with tempfile.TemporaryDirectory(prefix="torchbench_syscalls_cache_") as tmp:
        for position, (name, index, *_) in enumerate(jobs):
            benchmark = benchmarks.get(name)
            if benchmark is None:
                ran[position] = {"error": f"LookupError: {name}: no such benchmark"}
                continue
            try:
                ran[position] = _trace_one(suite, benchmark, index, position, fd, cache_dir or Path(tmp))
            except Exception as e:  # a row this machine cannot run is skipped, with its reason (skips.py)
                ran[position] = _not_measured(f"{type(e).__name__}: {e}")
                if "error" in ran[position]:
                    ran[position]["traceback"] = traceback.format_exc(limit=-3)
    manifest.write_text(json.dumps(ran))


if __name__ == "__main__":
    if sys.argv[1] != "trace":
        raise SystemExit("usage: python -m torchbench_core.syscalls trace SUITE JOBS.json MANIFEST.json [CACHE_DIR]")
    trace(Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text()), Path(sys.argv[4]),
          Path(sys.argv[5]) if len(sys.argv) > 5 else None)
