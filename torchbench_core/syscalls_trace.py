"""The process strace follows for torchbench_core.syscalls.collect: an asv suite's jobs run natively, each
job's N and 2N regions marked (syscalls.regions), as the counting worker finds the job's statement or call.

    python -m torchbench_core.syscalls_trace trace SUITE JOBS.json MANIFEST.json [CACHE_DIR]

Apart from syscalls.py, which parses the trace, so that the asv worker (whose `syscalls` mode calls
syscalls.collect) and this process (which finds jobs as the asv worker does) import in one direction.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from .asv_worker import AsvCall, _by_call, _discover, _not_measured, _timed_statements, _timer_suite, alarm, uncountable
from .syscalls import CALLS, DEADLINE_ENV, OUT_OF_TIME, REPEAT_ENV, regions


def _call_n(call, n: int) -> None:
    for _ in range(n):
        call()


def _timer_of(benchmark, index: int, cache_dir: Path) -> tuple[object | None, dict | None]:
    """The Timer a job's statement runs in, as the counting worker finds it: a TimerSuite case's, or the one a
    `track_` or `time_` method times (asv_worker._timed_statements); or the job's answer where it has one
    already (skipped, failed, a track_ that times none)."""
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
    timer, answer = _timer_of(benchmark, index, cache_dir)
    if answer is not None:
        return answer
    if timer is not None:
        with contextlib.ExitStack() as stack:
            stack.enter_context(timer._threads)
            session = timer._session()
            stack.callback(session.close)
            regions(fd, position, functools.partial(timer._block, session))
        return {"calls": CALLS}
    failed = {}
    planned = _by_call({benchmark.name: benchmark}, [[benchmark.name, index, 1, 1]], cache_dir,
                       lambda key, error: failed.__setitem__(key, error))
    if not planned:
        return _not_measured(next(iter(failed.values()), "cannot be set up"))
    _, _, _, cache_file, _ = planned[0]
    call = AsvCall(str(suite.resolve()), benchmark.name, index, cache_file)
    try:
        regions(fd, position, functools.partial(_call_n, call), call.each)
    finally:
        call.teardown()
    return {"calls": CALLS}


class _OutOfTime(BaseException):
    """A row's share of the phase ran out (a BaseException: a suite's `except Exception` does not swallow it)."""


def trace(suite: Path, jobs: list[list], manifest: Path, cache_dir: Path | None) -> None:
    """The process strace follows: each job's regions, in order; one line {position: {"calls": N} or why not}
    appended to `manifest` as each job ends, so that a process stopped at the phase's end keeps the rows it
    finished. Where the environment sets syscalls.DEADLINE_ENV, each row may take its share of the time left
    (what is left over its rows still to trace: a slow row's set-up costs that row alone, and what a quick
    row leaves goes to the next); a row past it is stopped and answers {OUT_OF_TIME: why}. A repeat trace
    (syscalls.REPEAT_ENV k > 0: a row whose first traces differed between the sides) runs in another
    process state: its layout jittered after the imports as the counting worker's k-th jittered process is
    (_callgrind_worker._jitter_layout), and the jobs in reverse order, so that each row follows other rows'
    allocations and threads than it did in the first trace."""
    from ._callgrind_worker import _jitter_layout

    benchmarks = _discover(suite)
    repeat = int(os.environ.get(REPEAT_ENV) or 0)
    deadline = float(os.environ[DEADLINE_ENV]) if os.environ.get(DEADLINE_ENV) else None
    jittered = _jitter_layout(repeat, "system calls")  # noqa: F841 - alive until the end
    order = list(enumerate(jobs))
    fd = os.open(os.devnull, os.O_WRONLY)
    with tempfile.TemporaryDirectory(prefix="torchbench_syscalls_cache_") as tmp, open(manifest, "a") as out:
        todo = list(reversed(order) if repeat else order)
        for left, (position, (name, index, *_)) in zip(range(len(todo), 0, -1), todo):
            benchmark = benchmarks.get(name)
            share = None if deadline is None else (deadline - time.time()) / left
            if benchmark is None:
                answer = {"error": f"LookupError: {name}: no such benchmark"}
            elif share is not None and share <= 0:
                answer = {OUT_OF_TIME: "not traced: the system calls' share of the budget ran out before it "
                                       "(its wall time decides it)"}
            else:
                try:
                    with alarm(None if share is None else max(share, 0.01), _OutOfTime):
                        answer = _trace_one(suite, benchmark, index, position, fd, cache_dir or Path(tmp))
                except _OutOfTime:
                    answer = {OUT_OF_TIME: f"not traced: its set-up and calls outlasted its share of the system "
                                           f"calls' budget ({share:.0f} s; its wall time decides it)"}
                    with contextlib.suppress(Exception):
                        benchmark.do_teardown()
                except Exception as e:  # a row this machine cannot run is skipped, with its reason (skips.py)
                    answer = _not_measured(f"{type(e).__name__}: {e}")
                    if "error" in answer:
                        answer["traceback"] = traceback.format_exc(limit=-3)
            out.write(json.dumps({str(position): answer}) + "\n")
            out.flush()


if __name__ == "__main__":
    if sys.argv[1] != "trace":
        raise SystemExit("usage: python -m torchbench_core.syscalls_trace trace SUITE JOBS.json MANIFEST.json [CACHE_DIR]")
    trace(Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text()), Path(sys.argv[4]),
          Path(sys.argv[5]) if len(sys.argv) > 5 else None)
