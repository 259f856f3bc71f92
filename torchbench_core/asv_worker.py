"""Measure many asv benchmarks in one process: the worker of `torchbench alert`.

asv spawns a process per benchmark and parameter set; an A/B verdict needs
many processes per side, and paying interpreter and torch start-up for each
benchmark in each of them would eat the time budget. This worker discovers a
suite with asv_runner's own discovery and runs the selected (benchmark,
parameter index) pairs in one process, in the order given, the way asv's
runner runs one (setup_cache result loaded, setup, run, teardown).

    python -m torchbench_core.asv_worker list  SUITE_DIR [--out LISTING.json]
    python -m torchbench_core.asv_worker run   SUITE_DIR --jobs JOBS.json --out OUT.jsonl [--cache-dir DIR]
    python -m torchbench_core.asv_worker plan   SUITE_DIR --jobs JOBS.json --out PLANS.json [--cache-dir DIR]
    python -m torchbench_core.asv_worker counts SUITE_DIR --jobs JOBS.json --out OUT.json [--cache-dir DIR]
    python -m torchbench_core.asv_worker profile SUITE_DIR --out OUT.jsonl --seconds S [--cache-dir DIR]
    python -m torchbench_core.asv_worker syscalls SUITE_DIR --jobs JOBS.json --out OUT.json [--cache-dir DIR]

`run` appends one JSON line per job as it goes ({"start": job} before it, the
result after), so a benchmark that kills the process is known by its start
line without an end. A result is {"samples": [...], "number": n} for a
benchmark that returns asv's sample form (or a time_ benchmark), {"value": x}
for a plain track_ value, {"skipped": true}, or {"error": "..."}; each with
"elapsed", the job's seconds in the process (set-up included). Where the
environment names a JSON file in TORCHBENCH_RUN_TIMES, {"name|index": seconds}
sets those TimerSuite cases' seconds of timed blocks in this process
(blocked_autorange's min_run_time), as `torchbench alert` allocates them. An
environment variable, not a job field or a flag: a worker of an older commit
(a project that measures its own history) ignores it and still runs.

Duet rounds (`torchbench alert --design duet`) run a base and a head worker
at once, one core each. Where the environment's TORCHBENCH_DUET_FDS names
two file descriptors "R,W" (pipes to the parent), the worker meets its
partner before each job's timed part, after its setup: it writes one byte on
W and waits for one on R, which the parent sends once both have written. So
the two processes time the same case during the same interval. An end of
file on R (the partner has ended or died) ends the meetings; the worker goes
on alone.

`counts` collects instruction counts (callgrind) for the jobs, all in one
valgrind process: {job key: {"counts": [per call, one per repeat]} or
{"error": why}}, the instructions of the code itself: outside the memory
allocators and CPython's type cache's misses, whose paths follow memory
addresses, not the code ("layout_driven" gives theirs per call beside:
CallgrindStats.code_counts); the same process simulates the caches, not the
branch predictors (unless TORCHBENCH_COUNTS_SIMULATE=0), adding "cycles" (the code's own
instructions plus what its last-level misses cost, per call, one per repeat:
callgrind.priced_cycles) and "events" (the simulated events per call, one
{event: value} per repeat). `syscalls` traces
the jobs natively under strace (torchbench_core.syscalls): {job key:
{"syscalls": {"per_call": {name: calls}, "exact": bool, "calls": N, ...}}}. A TimerSuite case counts its statement in Timer's loop; a
plain asv `time_` method is counted call by call, with asv's setup run before
every call (as asv runs it between timed calls) and setup_cache's value made
here, outside valgrind; its calls per counted run and warm-up calls are the
job's plan where the job carries one ([name, index, calls, warm-up]). `plan`
makes those plans, natively ({job key: {"plan": [calls, warm-up]}}): a
time_ method's counts depend on its plan by up to 3%, so the parent plans a
case once and gives every commit's valgrind process the same plan. A `track_`
or `time_` method that times a Timer (torch.utils.benchmark's or
torchbench_core's) is counted as that Timer's statement instead: the worker
first runs the case natively (asv's setup, the method, the teardown) with the
Timer classes' measuring methods patched to stop the method at their first
call, to learn whether it times one; then the valgrind process does the same
itself (AsvTimed) and counts the Timer so caught in place, as its
collect_callgrind would (its setup once, uncounted; its statement per run,
with its globals and num_threads), so that globals which do not pickle (a
function passed as an asv parameter, a closure) count too; its runs follow its
cost (_plan_statement).
A C++ Timer is compiled and counted from the native capture. The listing says of each benchmark why it cannot be counted
("uncountable"), where it cannot: a CountsSuite's or a `mem_` returns its own
value, a `timeraw_` times a fresh interpreter; whether a `track_` times a Timer
only running it tells, so the listing leaves it countable and `counts` answers
{"uncountable": "track_ returns its own measurement and times no Timer"} for
one that times none.

`profile` is the subject of `torchbench profile`: a sampling profiler (py-spy)
attaches to this process from outside. The worker discovers the suite, writes
{"ready": pid, "benchmarks": the listing of `list`}, and waits for one line on
stdin: the jobs, as JSON (an empty line: none). So the parent picks the jobs
without a second process importing the suite, and attaches the profiler
after the imports (sampling torch's import with native stacks is slow and
would swamp the benchmark), before it sends the line. Then, for each job in
turn, the worker sets the benchmark up and runs it over and over for S
seconds: a TimerSuite case's timed statement in Timer's own loop (setup once,
blocks of ~10 ms, as when measured), any other benchmark's function called in
a loop. That loop runs in a frame renamed per job
(`torchbench_profile_<position>`, in the result as "marker"), so one
recording of the whole process splits exactly into one profile per job,
without samples of setup, teardown or waiting. Results are JSON lines as in
`run`: {"start": job}, then {"job", "marker", "seconds", "batches",
"number"}, {"skipped": true} or {"error": ...}.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import json
import math
import os
import pickle
import sys
import time
import traceback
from pathlib import Path

from .skips import SKIPPED_BY_METHOD, SKIPPED_BY_SETUP, skipped_here

COUNT_NUMBER, COUNT_REPEATS = 100, 3
# a first process's counted runs of a row stop at two once their instruction totals agree within this (their
# spread over the smallest; a third only where they do not: collect_callgrind_many(agree)). Against a row's
# spread between layouts (median 0.36%: count_decision; a draw is one run), the third run of two that agree
# within 0.05% moves nothing the test reads. evaluation/counting_speed.py --both (64 plain rows, 2026-12-02):
# 22 rows stopped at two, both sides' first processes 84.7 s against 90.8 s with three runs each.
REPEATS_AGREE = 5e-4
STATEMENT_WARMUP = 128  # a statement's warm-up runs at most (the counting worker's WARMUP_RUNS)
CALLS_SECONDS, WARMUP_SECONDS = 2e-3, 0.05  # a time_ case's calls per counted run, and its warm-up (native time)
PLAN_CALLS, PLAN_SECONDS = 5, 0.2  # a plan times up to this many calls, and stops once they took this long
# a call of this many seconds or more (natively, its setup apart) warms up 8 calls: its interpreted part, which
# specialises over the first calls, is a small share of its instructions, and its calls cost most under
# valgrind (a convolution's or matmul's kernels run 500-1300x slower there). Six layer rows of 0.15-0.5 ms
# moved 0.004-0.05% between 8 and their 16-32 warm-up calls, at half the valgrind seconds
# (evaluation/warmup_ab.py; results/warmup_ab-2026-11-29.txt); einops rows of 1-100 us moved up to 1.4% at 4-32.
SHORT_WARMUP_CALL = 1e-4
DEFAULT_RUN_TIME = 0.2  # a time_ method's seconds of samples a process until `torchbench alert` allots its own
MAX_CALLS_A_SAMPLE = 10_000
# A time_ method's samples a process, where the suite leaves asv's `sample_time` to it: asv's 10 ms samples
# give a 50 ms allotment 2-5 samples (a median of so few is loose), so a sample is the run time's 1/SAMPLES_A_RUN,
# between MIN_SAMPLE_TIME and asv's own 10 ms; and asv's 0.1 s warm-up (2x a 50 ms allotment) becomes
# WARMUP_SAMPLES samples' time, as a TimerSuite case's block-size probes warm it up
SAMPLES_A_RUN, MIN_SAMPLE_TIME, ASV_SAMPLE_TIME, WARMUP_SAMPLES = 25, 1e-3, 0.01, 5
PROFILE_BATCH_SECONDS = 0.01  # a profiled batch: long enough that the loop's own frames are rare samples
PROFILE_MARKER = "torchbench_profile_{}"
PR_SET_PTRACER = 0x59616D61  # <linux/prctl.h>, Yama
DUET_ENV = "TORCHBENCH_DUET_FDS"
# "0": `counts` counts instructions alone; otherwise it simulates the caches (not the branches) in the same valgrind
# process and adds each job's priced "cycles" and simulated "events" (callgrind.simulated_per_run)
SIMULATE_ENV = "TORCHBENCH_COUNTS_SIMULATE"
# plan: a job whose setup (with one run of its method) takes longer than this many seconds natively is not
# planned (its setup is only timed)
SETUP_LIMIT_ENV = "TORCHBENCH_PLAN_SETUP_LIMIT"
DRAWS_ENV = "TORCHBENCH_COUNTS_DRAWS"  # counts: each case in this many layout draws (collect_callgrind_many(draws))
DEADLINE_ENV = "TORCHBENCH_COUNTS_DEADLINE"  # counts: a time.time() when counting stops, keeping what it counted
# counts: a file each row's answer is appended to as one JSON line ({"key": job key, **answer}) as soon as it is
# counted, before the whole answer is written (the parent acts on the first rows while the rest are counted)
PROGRESS_ENV = "TORCHBENCH_COUNTS_PROGRESS"
# counts, with PROGRESS_ENV: "1" has the valgrind process go on once every row is counted (no second start-up):
# the worker appends {"next": true} to the progress file and reads one JSON line from stdin, {"keys": [job
# keys], "jitter": k, "draws": D, "deadline": a time.time()}, whose rows the same process counts again in D
# jittered layout draws (callgrind.Again; each row's line then has "again": k), then asks again; an empty line
# (or stdin closed) ends it
CONTINUE_ENV = "TORCHBENCH_COUNTS_CONTINUE"


def _discover(suite: Path) -> dict:
    from asv_runner._aux import update_sys_path
    from asv_runner.discovery import disc_benchmarks

    # asv's importer: the suite package alone, not its parent folder (which,
    # in a project's checkout, holds the working tree's copy of the project)
    root = str(suite.resolve())
    update_sys_path(root)
    return {b.name: b for b in disc_benchmarks(root)}


def _timer_suite(benchmark):
    """The TimerSuite instance a benchmark comes from (asv_runner keeps [func, instance, module]), or None.
    A CountsSuite shares its TimerSuite's specs but is not one: its cases are counted, not timed."""
    from .asv_suite import TimerSuite

    return next((s for s in benchmark._attr_sources if isinstance(s, TimerSuite)), None)


def _plain_time(benchmark) -> bool:
    """A plain asv `time_` method (not a TimerSuite case, not `timeraw_`): counted call by call (unless it
    times a Timer: then that Timer's statement, see _capture), and timed by asv's own timing given its
    seconds a process."""
    return benchmark.type == "time" and _timer_suite(benchmark) is None and not uncountable(benchmark)


def uncountable(benchmark) -> str:
    """Why a benchmark's instruction counts cannot be collected ("" where they can). A `track_` method may
    time a Timer (its statement is then counted): only running it tells, so the listing calls it countable
    and the `counts` worker answers {"uncountable": why} for one that times none (_timed_statements)."""
    from .asv_suite import CountsSuite

    if _timer_suite(benchmark) is not None:
        return ""
    method = benchmark.name.rsplit(".", 1)[-1]
    if method.startswith("timeraw_"):
        return "timeraw_ times a fresh interpreter of its own"
    if benchmark.type == "time" or (benchmark.type == "track" and not any(
            isinstance(s, CountsSuite) for s in benchmark._attr_sources)):
        return ""
    return f"{benchmark.type}_ returns its own measurement"


MEASURING = ("timeit", "repeat", "autorange", "blocked_autorange", "adaptive_autorange", "collect_callgrind")


class _Captured(BaseException):
    """Raised by a Timer's measuring method during _capture: the Timer the benchmark times. A BaseException,
    so that a suite's own `except Exception` does not swallow it."""

    def __init__(self, timer):
        super().__init__()
        self.timer = timer


def _stop(timer, *args, **kwargs):
    raise _Captured(timer)


@contextlib.contextmanager
def _capturing():
    """While inside, every measuring method of torchbench_core's and torch.utils.benchmark's Timer raises
    _Captured(the timer). Patched on the classes, not on module names: a suite binds `Timer` at import."""
    from .timing import Timer

    classes = [Timer]
    with contextlib.suppress(ImportError):
        from torch.utils.benchmark.utils.timer import Timer as TorchTimer

        classes.append(TorchTimer)
    saved = [(cls, name, cls.__dict__[name]) for cls in classes for name in MEASURING if name in cls.__dict__]
    for cls, name, _ in saved:
        setattr(cls, name, _stop)
    try:
        yield
    finally:
        for cls, name, original in saved:
            setattr(cls, name, original)


def _skip(benchmark, why: str = SKIPPED_BY_SETUP) -> dict:
    """A skipped job's result: with the reason where it is a row of its own; a TimerSuite combination that no
    TimerSpec defines is no row (asv's product of parameters), and says none."""
    return {"skipped": True} if _timer_suite(benchmark) is not None else {"skipped": True, "why": why}


class _SetupSkipped(Exception):
    """The case's setup raised NotImplementedError: asv's skip (asv_runner's do_setup returned True)."""


def _not_measured(error: str) -> dict:
    """The result of a job that raised `error` ("Type: message"): skipped, with the reason, where asv skips it
    (its setup raised NotImplementedError; its method raised asv_runner's SkipNotImplemented) or it needs
    hardware this machine lacks (skips.skipped_here), else the error. A plain NotImplementedError raised by the
    method itself is a failure, as asv_runner's run counts it."""
    if error.startswith(_SetupSkipped.__name__):
        return {"skipped": True, "why": SKIPPED_BY_SETUP}
    if error.startswith("SkipNotImplemented"):
        return {"skipped": True, "why": SKIPPED_BY_METHOD}
    why = skipped_here(error)
    return {"skipped": True, "why": why, "detail": error} if why else {"error": error}


def _capture(benchmark, index: int, cache):
    """The Timer a `track_` or `time_` method times: its asv setup and the method run natively, until the
    method's first call of a Timer's measuring method (MEASURING), which runs nothing and ends the method;
    that Timer as torchbench_core's (what its collect_callgrind counts: the statement, with its globals and
    setup), or None where the method returns without timing one. The teardown runs either way. Raises
    _SetupSkipped where asv would skip the case, and what the setup or method raises."""
    try:
        return _capture_set_up(benchmark, index, cache)
    finally:
        benchmark.do_teardown()


def _capture_set_up(benchmark, index: int, cache):
    """_capture without the teardown: the case stays set up, its Timer's globals alive, until the caller
    tears it down (AsvTimed counts the Timer in the same process first). Raises as _capture does."""
    benchmark.set_param_idx(index)
    benchmark.set_cache(cache)
    if benchmark.do_setup():
        raise _SetupSkipped("skipped by its setup")
    try:
        with _capturing():
            benchmark.func(*benchmark._build_params())
        return None
    except _Captured as captured:
        return _counted_timer(captured.timer)


class AsvTimed:
    """One parameter combination of an asv `track_` or `time_` method that times a Python Timer, counted where
    it lives: the valgrind process discovers the suite itself, runs asv's setup with the row's parameters and
    the method until its Timer's first measuring call (_capture_set_up), and counts that Timer's statement with
    the very globals the method gave it, then tears the case down. Nothing of the case is pickled but the
    suite's folder, the benchmark's name, its parameter index and setup_cache's file, so functions and
    classes passed as asv parameters, closures and module globals all count (a Timer captured natively and
    copied into valgrind could not: a function whose module attribute is not itself does not pickle).
    Travels to the valgrind process as the `resolve` of its worker case (_callgrind_worker.main)."""

    def __init__(self, root: str, name: str, index: int, cache_file: str | None, num_threads: int = 1,
                 plan: tuple[int, int] = (COUNT_NUMBER, STATEMENT_WARMUP)):
        self.root, self.name, self.index, self.cache_file = root, name, index, cache_file
        self.num_threads, self.plan = num_threads, plan
        self._benchmark = None

    def __getstate__(self) -> dict:
        return {"root": self.root, "name": self.name, "index": self.index, "cache_file": self.cache_file,
                "num_threads": self.num_threads, "plan": self.plan}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _benchmark=None)

    @property
    def label(self) -> str:
        return f"{self.name}|{self.index}"

    @property
    def task_spec(self):
        from .task_spec import TaskSpec

        return TaskSpec(stmt=self.label, setup="", label=self.label)

    def prepare(self) -> None:
        """Import the suite (once per process), before any case, as AsvCall.prepare."""
        _discovered(self.root)

    def resolve(self) -> dict:
        """In the valgrind process: the case set up, and its Timer's statement, setup and globals (in place)."""
        b = _discovered(self.root)[self.name]
        cache = None
        if self.cache_file:
            with open(self.cache_file, "rb") as f:  # written by the parent, outside valgrind
                cache = pickle.load(f)
        self._benchmark = b
        try:
            timer = _capture_set_up(b, self.index, cache)
        except _SetupSkipped:
            raise LookupError(f"{self.label}: skipped by its setup (NotImplementedError)") from None
        if timer is None:
            raise LookupError(f"{self.label}: times no Timer in the counting process")
        return timer._worker_case(in_place=True)

    def teardown(self) -> None:
        if self._benchmark is not None:
            self._benchmark.do_teardown()
            self._benchmark = None

    def _worker_case(self) -> dict:
        # the plan: the statement's runs per counted run, and its warm-up runs (_plan_statement)
        return {"resolve": self.resolve, "teardown": self.teardown, "prepare": self.prepare, "stmt": "",
                "setup": "", "globals": {}, "scripted": {}, "num_threads": self.num_threads,
                "number": self.plan[0], "warmup": self.plan[1]}


def _plan_statement(timer) -> tuple[int, int]:
    """(runs per counted run, warm-up runs) of a Timer's statement, from its runs timed here (natively), as
    _plan_calls plans a `time_` method's calls: about CALLS_SECONDS of runs per counted run, at most
    COUNT_NUMBER (a TimerSuite case's fixed number, which a statement of up to ~15 us keeps), and
    WARMUP_SECONDS of warm-up, from 2 to 128 runs (a cheap statement keeps the counting worker's 128), powers of
    two: a 10 ms statement, 100 + 192 runs at ~1 s each under valgrind, exceeded the counting worker's 600 s a
    case (a graph library's softmax over 200,000 edges); planned, it runs 1 a repeat after 2 warm-up runs.
    One plan serves every commit (it is kept, CountPlans), so that both sides count the same runs."""
    with timer._threads:
        session = timer._session()  # its setup once, as a block's
        try:
            timer._block(session, 1)  # a first run pays lazy initialisation
            seconds, spent = math.inf, 0.0
            for _ in range(PLAN_CALLS):
                took = timer._block(session, 1)
                seconds, spent = min(seconds, took), spent + took
                if spent > PLAN_SECONDS:
                    break
        finally:
            session.close()
    each = max(seconds, 1e-7)
    return (_power_of_two(CALLS_SECONDS / each, 1, COUNT_NUMBER),
            _power_of_two(WARMUP_SECONDS / each, 2, STATEMENT_WARMUP))


def _counted_timer(timer):
    """torchbench_core's Timer for a captured Timer: itself, or the same statement, setup, globals (torch's
    CopyIfCallgrind as ours) and threads as a torch.utils.benchmark Timer's."""
    from .callgrind import CopyIfCallgrind
    from .timing import Timer

    if isinstance(timer, Timer):
        return timer
    spec, cpp = timer._task_spec, timer._language.name == "CPP"
    values = {name: CopyIfCallgrind(v.value, setup=v.setup) if type(v).__name__ == "CopyIfCallgrind" else v
              for name, v in timer._globals.items()}
    return Timer(spec.stmt, spec.setup, global_setup=spec.global_setup if cpp else "",
                 globals=None if cpp else values, label=spec.label, sub_label=spec.sub_label,
                 description=spec.description, env=spec.env, num_threads=spec.num_threads,
                 language="cpp" if cpp else "python")


def _timed_statements(benchmarks: dict, jobs: list[list], tmp: Path, result: dict, types=("track", "time"),
                      seconds: dict | None = None) -> dict:
    """{job key: the Timer it times} for the jobs of `types` (not TimerSuite cases) whose method times one
    (_capture). setup_cache's value is made here, natively, into `tmp`. In `result`: {"uncountable": why} for
    a `track_` that times none, {"skipped": true} for what asv skips, {"error": why} for what raises; a
    `time_` method that times none is left to _by_call (counted call by call). `seconds`: each captured job's
    seconds here (its setup, its method's run until its Timer, its teardown), by key; none for one that
    raised or was skipped."""
    found = {}
    if seconds is not None:
        with _capturing():  # its imports (torch's Timer) paid here, not in the first job's seconds
            pass
    for name, index, *_ in jobs:
        key, benchmark = f"{name}|{index}", benchmarks.get(name)
        if (benchmark is None or benchmark.type not in types or _timer_suite(benchmark) is not None
                or uncountable(benchmark) or key in result):
            continue
        try:
            cache = _load_cache(benchmark, tmp)  # (made once, natively; valgrind reads it from its file)
            start = time.perf_counter()
            timer = _capture(benchmark, index, cache)
        except _SetupSkipped:
            result[key] = _skip(benchmark)
            continue
        except Exception as e:
            result[key] = _not_measured(f"{type(e).__name__}: {e}")
            continue
        if seconds is not None:
            seconds[key] = time.perf_counter() - start
        if timer is not None:
            found[key] = timer
        elif benchmark.type != "time":
            result[key] = {"uncountable": f"{benchmark.type}_ returns its own measurement and times no Timer"}
    return found


def list_benchmarks(suite: Path) -> list[dict]:
    """Name, type, unit and parameters (as asv keeps them: repr strings) of every benchmark."""
    return _listing(_discover(suite))


def _listing(benchmarks: dict) -> list[dict]:
    out = []
    for name, b in sorted(benchmarks.items()):
        out.append({"name": name, "type": b.type, "unit": getattr(b, "unit", None),
                    "params": [list(p) for p in b.params], "param_names": list(b.param_names),
                    "setup_cache": b.setup_cache_key is not None,
                    "timer_suite": _timer_suite(b) is not None, "uncountable": uncountable(b)})
    return out


def _cache_path(benchmark, cache_dir: Path) -> Path:
    return cache_dir / (benchmark.setup_cache_key.replace(os.sep, "_").replace(":", "_") + ".pickle")


def _cache_file(benchmark, cache_dir: Path) -> str | None:
    """The file setup_cache's value is kept in under `cache_dir` (None for a benchmark without one)."""
    return None if benchmark.setup_cache_key is None else str(_cache_path(benchmark, cache_dir))


def _load_cache(benchmark, cache_dir: Path | None):
    if benchmark.setup_cache_key is None:
        return None
    if cache_dir is None:
        return benchmark.do_setup_cache()
    path = _cache_path(benchmark, cache_dir)
    if path.exists():
        with open(path, "rb") as f:  # written by an earlier process of this same run, never user data
            return pickle.load(f)
    cache = benchmark.do_setup_cache()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        pickle.dump(cache, f)
    os.replace(tmp, path)
    return cache


def _user_set(benchmark, name: str) -> bool:
    """Whether the suite sets asv's timing attribute `name` for this benchmark (asv_runner reads the first of
    the function, its class and its module that has it)."""
    return any(getattr(source, name, None) is not None for source in benchmark._attr_sources)


def _allot(benchmark, run_time: float, set_up: float = 0.0) -> None:
    """asv's own timing of a plain `time_` method, given this process's seconds for it, as a TimerSuite case
    gets its seconds of blocks: samples are taken until `run_time` has passed (asv's `repeat` as (min, max,
    max time)), and where the benchmark has a setup (asv then re-runs it before every timed call and, with
    `number` left to it, times one call a sample), each sample is `number` calls, each after its setup and
    timed alone (asv_runner's interleaved timer), about a `sample_time` of calls with their setups. Where
    the suite leaves them to asv, a sample is a 25th of `run_time` (at most asv's 10 ms) and the warm-up five
    samples (asv's 0.1 s would double a 50 ms allotment): per process, 3.7 s for the 42-row plain suite at
    50 ms a row, was 8.2 s, and what the timing inside a process adds to a row's spread 0.019 (log, robust),
    was 0.022, the twin TimerSuite's 0.016 (evaluation/results/plain_timing-2026-11-26.txt). A `repeat`,
    `number`, `sample_time` or `warmup_time` the suite sets is its own and kept, as are `timeout` and the
    setups. Called after asv's setup, which took `set_up` seconds: where that alone is a sample's time or
    more, a sample is one call without timing any to choose (each of those 3 calls re-ran the setup: 45 s
    a row a process for a suite whose setups run a 15 s forward pass). A setup (asv re-runs it between timed
    calls) reloads those attributes, so they are set last."""
    sample_time = (benchmark.sample_time if _user_set(benchmark, "sample_time")
                   else min(ASV_SAMPLE_TIME, max(MIN_SAMPLE_TIME, run_time / SAMPLES_A_RUN)))
    number = None
    if benchmark._setups and not _user_set(benchmark, "number"):
        # where the setup alone fills a sample, one call a sample (as asv times a benchmark with a setup)
        number = 1 if set_up >= sample_time else _calls_a_sample(benchmark, sample_time)
    if not _user_set(benchmark, "repeat"):
        benchmark.repeat = (2, 10**6, run_time)
    benchmark.sample_time = sample_time
    if not _user_set(benchmark, "warmup_time"):
        benchmark.warmup_time = WARMUP_SAMPLES * sample_time
    if number is not None:
        benchmark.number = number


def _calls_a_sample(benchmark, sample_time: float) -> int:
    """The calls a sample of a benchmark with a setup takes to fill `sample_time`, each after its setup: the
    fastest of 3 calls timed with their setups (the first uses the setup that has just run)."""
    timer = benchmark._get_interleaved_timer(*benchmark._build_params())
    benchmark._redo_setup_next = False  # the setup has just run: the first call uses it
    each = math.inf
    for _ in range(3):  # the first calls of a torch op are the slowest
        start = time.perf_counter()
        timer.timeit(1)
        each = min(each, time.perf_counter() - start)
    benchmark._redo_setup_next = True  # asv's first timed call gets a fresh set-up too
    return max(1, min(MAX_CALLS_A_SAMPLE, int(sample_time / max(each, 1e-9))))


class BenchmarkTimeout(TimeoutError):
    """A benchmark ran past the `timeout` its suite sets (asv's attribute), set-up included."""


@contextlib.contextmanager
def alarm(seconds: float | None, raised):
    """Raise raised() in this process after `seconds` (None or <= 0: no limit); SIGALRM raises between Python
    bytecodes, so one C call that does not return is not stopped so. The timer and handler are restored."""
    import signal

    if seconds is None or seconds <= 0:
        yield
        return

    def expired(signum, frame):
        raise raised()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _timeout(benchmark):
    """asv's `timeout` where the suite sets one: asv kills the benchmark's process past it and records a
    failure; here, where one process runs many benchmarks, the benchmark is stopped (alarm) and only its job
    fails, the process going on. A benchmark stuck inside one C call is not stopped so: the process's own
    limit (torchbench/ab/rounds.py) ends it. Without a timeout set, the process's limit alone applies, as
    before."""
    seconds = benchmark.timeout
    return alarm(seconds, lambda: BenchmarkTimeout(
        f"{benchmark.name} timed out after {seconds:g} s (its asv timeout), set-up included"))


class Meeting:
    """The duet partner's meeting point before each job's timed part (DUET_ENV); a no-op where there is no
    partner, and from the first end of file on (the partner ended: the worker goes on alone)."""

    def __init__(self, fds: str | None):
        self.fds = tuple(int(fd) for fd in fds.split(",")) if fds else None

    def __call__(self) -> None:
        if self.fds is None:
            return
        read, write = self.fds
        try:
            os.write(write, b".")
            met = os.read(read, 1) == b"."
        except OSError:
            met = False
        if not met:
            self.fds = None


def _run_one(benchmark, index: int, cache, run_time: float | None = None, meet=None) -> dict:
    benchmark.set_param_idx(index)
    suite_instance = _timer_suite(benchmark)
    if run_time is not None and suite_instance is not None:
        suite_instance.min_run_time = run_time  # this process's share of time for the case (torchbench alert)
    benchmark.set_cache(cache)
    with _timeout(benchmark):  # as asv_runner's run: teardown after a skip too, not after a failed setup
        start = time.perf_counter()
        skip = benchmark.do_setup()
        set_up = time.perf_counter() - start
        try:
            if skip:
                return _skip(benchmark)
            if _plain_time(benchmark):
                _allot(benchmark, DEFAULT_RUN_TIME if run_time is None else run_time, set_up)
            if meet is not None:
                meet()  # a duet's two processes start this case's timing together
            result = benchmark.do_run()
        except NotImplementedError as e:  # asv_runner's run: SkipNotImplemented skips, any other one fails
            if type(e).__name__ != "SkipNotImplemented":
                raise
            return _skip(benchmark, SKIPPED_BY_METHOD)
        finally:
            benchmark.do_teardown()
    if isinstance(result, dict) and "samples" in result:
        return {"samples": [float(s) for s in result["samples"]], "number": int(result.get("number") or 1)}
    if result is None or (isinstance(result, float) and math.isnan(result)):
        return _skip(benchmark, "skipped: it returned no value (asv's skip)")
    return {"value": float(result)}


def _each_job(suite: Path, benchmarks: dict, jobs: list, cache_dir: Path | None, f, measure_one) -> None:
    """Run `jobs` in order, one JSON line before each ({"start": job}) and one after (its result, with the
    seconds it took, set-up included, as "elapsed"), so a benchmark that kills the process is known by its start line.
    measure_one(benchmark, index, setup_cache value, position) gives the result; an exception is that job's
    error alone."""
    caches: dict = {}
    for position, (name, index) in enumerate(jobs):
        f.write(json.dumps({"start": [name, index]}) + "\n")
        benchmark = benchmarks.get(name)
        started = time.perf_counter()
        try:
            if benchmark is None:
                raise LookupError(f"{name}: no such benchmark in {suite}")
            if benchmark.setup_cache_key not in caches:
                caches[benchmark.setup_cache_key] = _load_cache(benchmark, cache_dir)
            result = measure_one(benchmark, index, caches[benchmark.setup_cache_key], position)
        except Exception as e:  # one benchmark's failure is its own; the process goes on
            tail = traceback.format_exc().strip().splitlines()[-6:]
            result = _not_measured(f"{type(e).__name__}: {e}")
            if "error" in result:
                result["traceback"] = "\n".join(tail)
        f.write(json.dumps({"job": [name, index], **result, "elapsed": time.perf_counter() - started}) + "\n")
        f.flush()


def run(suite: Path, jobs: list[list], out: Path, cache_dir: Path | None) -> None:
    benchmarks = _discover(suite)
    chosen = os.environ.get("TORCHBENCH_RUN_TIMES")
    run_times = json.loads(Path(chosen).read_text()) if chosen else {}
    meet = Meeting(os.environ.get(DUET_ENV))
    with open(out, "a", buffering=1) as f:
        _each_job(suite, benchmarks, jobs, cache_dir, f, lambda benchmark, index, cache, _: _run_one(
            benchmark, index, cache, run_times.get(f"{benchmark.name}|{index}"), meet))


class AsvCall:
    """One parameter combination of an asv `time_` benchmark, as the valgrind process calls it (a
    callgrind.CallCase's call, each and teardown). It travels by pickle with the suite's folder, the
    benchmark's name, its parameter index and the file holding setup_cache's value; in the valgrind process
    it discovers the suite (once per process), loads that value and runs asv's setup on the first `each`.
    Later `each`s re-run the setup (teardown first) where the benchmark has one, as asv_runner does between
    timed calls; `teardown` ends it."""

    def __init__(self, root: str, name: str, index: int, cache_file: str | None):
        self.root, self.name, self.index, self.cache_file = root, name, index, cache_file
        self._benchmark = None

    def __getstate__(self) -> dict:
        return {"root": self.root, "name": self.name, "index": self.index, "cache_file": self.cache_file}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _benchmark=None)

    def each(self) -> None:
        b = self._benchmark
        if b is None:
            b = _discovered(self.root)[self.name]
            b.set_param_idx(self.index)
            if self.cache_file:
                with open(self.cache_file, "rb") as f:  # written by the parent, outside valgrind
                    b.set_cache(pickle.load(f))
            if b.do_setup():
                raise LookupError(f"{self.name} [{self.index}]: skipped by its setup (NotImplementedError)")
            self._benchmark, self._call = b, functools.partial(b.func, *b._build_params())
            self._setup = functools.partial(_base_setup(), b)
        elif b._setups:
            b.do_teardown()
            self._setup()

    def __call__(self) -> None:
        self._call()

    def prepare(self) -> None:
        """Import the suite (once per process): its modules and what they hold at import, before any case."""
        _discovered(self.root)

    def teardown(self) -> None:
        if self._benchmark is not None:
            self._benchmark.do_teardown()
            self._benchmark = None


def _base_setup():
    """asv_runner's setup of a benchmark without what a time benchmark adds to it (called with the benchmark,
    before every counted call): TimeBenchmark.do_setup also reads the timing attributes again (number,
    repeat, ...: 18 attribute chains), 10-12 us here against a few us of the user's own setup and often less
    for the call, all run under valgrind's simulation (a 64-row suite: evaluation/counting_speed.py). A count
    needs none of them: the base class's do_setup runs the user's setups, as asv does. Looked up once a case,
    not imported on every call."""
    from asv_runner.benchmarks._base import Benchmark

    return Benchmark.do_setup


_DISCOVERED: dict[str, dict] = {}


def _discovered(root: str) -> dict:
    """The suite under ROOT, discovered once per process (every AsvCall of a batch shares it)."""
    if root not in _DISCOVERED:
        _DISCOVERED[root] = _discover(Path(root))
    return _DISCOVERED[root]


def _power_of_two(x: float, low: int, high: int) -> int:
    """The largest power of two <= x, within [low, high]: a coarse grid, so a plan made again on a
    slower or faster moment of the machine usually lands on the same value."""
    return max(low, min(high, 2 ** math.floor(math.log2(max(x, 1.0)))))


def _plan_calls(benchmark, index: int, cache) -> tuple[int, int]:
    """(calls per counted run, warm-up calls) for a `time_` case, from its set-up and its calls timed here
    (natively): about CALLS_SECONDS of calls per run (at most 64), WARMUP_SECONDS of warm-up (8 to 128
    calls; 8 for a call of SHORT_WARMUP_CALL or more), powers of two, each call's cost counting the set-up and
    teardown that run before it where the benchmark has them (asv re-runs them between timed calls), so that
    a slow benchmark, or a slow set-up, costs seconds under valgrind, not minutes. A call's cost is the
    fastest of up to PLAN_CALLS calls after one untimed call (a first call pays lazy initialisation: torch's
    first op on a new shape can be 100x).
    Raises what its setup or call raises.

    The plan changes a case's counts (a call's average over the run moves by up to 3% with the number of
    calls: the allocator's and caches' state cycles with it), so one plan serves every commit: `torchbench`
    plans each case once, keeps the plan, and passes it to every valgrind process (`counts` jobs with a plan)."""
    benchmark.set_param_idx(index)
    benchmark.set_cache(cache)
    start = time.perf_counter()
    if benchmark.do_setup():
        raise _SetupSkipped("skipped by its setup")
    set_up = time.perf_counter() - start
    try:
        call = functools.partial(benchmark.func, *benchmark._build_params())
        call()
        seconds, spent = math.inf, 0.0
        for _ in range(PLAN_CALLS):
            start = time.perf_counter()
            call()
            took = time.perf_counter() - start
            seconds, spent = min(seconds, took), spent + took
            if spent > PLAN_SECONDS:
                break
    finally:
        start = time.perf_counter()
        benchmark.do_teardown()
        set_up += time.perf_counter() - start
    each = max(seconds + (set_up if benchmark._setups else 0.0), 1e-7)
    warmup = 8 if seconds >= SHORT_WARMUP_CALL else _power_of_two(WARMUP_SECONDS / each, 8, 128)
    return _power_of_two(CALLS_SECONDS / each, 1, 64), warmup


def _by_call(benchmarks: dict, jobs: list[list], tmp: Path, fail, done=()) -> list[tuple]:
    """For each countable `time_` job (not a TimerSuite case, not a key in `done`: one that times a Timer, or
    failed its capture): (job key, benchmark, index, setup_cache's file,
    plan). A job's plan is its third and fourth fields where given, else made here. setup_cache's value is made
    here, natively, and reaches valgrind as a file. fail(key, error) records a job that cannot be planned."""
    out = []
    for name, index, *plan in jobs:
        key, benchmark = f"{name}|{index}", benchmarks.get(name)
        if benchmark is None:
            fail(key, f"LookupError: {name}: no such benchmark")
            continue
        if not _plain_time(benchmark) or key in done:
            continue
        try:
            cache = _load_cache(benchmark, tmp)
            cache_file = _cache_file(benchmark, tmp)
            if not plan:
                plan = list(_plan_calls(benchmark, index, cache))
        except Exception as e:  # it fails (or is skipped) outside valgrind too: no need to start it
            fail(key, f"{type(e).__name__}: {e}")
            continue
        out.append((key, benchmark, index, cache_file, (int(plan[0]), int(plan[1]))))
    return out


def plan(suite: Path, jobs: list[list], out: Path, cache_dir: Path | None = None) -> None:
    """{job key: {"plan": [calls per counted run, warm-up calls], "setup": seconds} or {"error": why}} for the
    countable `time_` jobs among `jobs`, with "statement": true for those that time a Timer (a Python one's
    plan is [runs per counted run, warm-up runs] of its statement: _plan_statement; a C++ one's is fixed);
    others are left out (a TimerSuite case's plan is fixed, COUNT_NUMBER; a `track_` method is planned by the
    counting worker). "setup": the seconds its setup, one run of its method (until its Timer, where it times
    one) and its teardown took here, natively. Where SETUP_LIMIT_ENV is set, a job that took longer is not
    planned ({"setup": seconds} alone): a setup that long cannot be counted in the counting's share (the
    parent leaves it to wall time), and planning it would run its setup again. setup_cache's values are
    read from, or made into, `cache_dir` (a temporary folder where None)."""
    import tempfile

    result: dict = {}
    benchmarks = _discover(suite)
    limit = float(os.environ[SETUP_LIMIT_ENV]) if os.environ.get(SETUP_LIMIT_ENV) else math.inf
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="torchbench_plan_") as tmp:
        # time_ methods only: a track_ method is run natively by the counting worker's own capture, where one
        # that crashes or hangs costs its own row (here it would cost every row its plan)
        timed = _timed_statements(benchmarks, jobs, cache_dir or Path(tmp), result, types=("time",),
                                  seconds=seconds)
        costly = {key for key, took in seconds.items() if took > limit and key not in result}
        for key in costly:
            result[key] = {}
        for key, timer in timed.items():  # a Python statement's runs (a C++ one's are fixed); either is counted
            if key in costly:
                continue
            result[key] = {"statement": True}  # as a statement, not call by call
            if timer.language.name != "CPP":
                try:
                    result[key]["plan"] = list(_plan_statement(timer))
                except Exception as e:
                    result[key] = _not_measured(f"{type(e).__name__}: {e}")
        for key, *_, made in _by_call(benchmarks, jobs, cache_dir or Path(tmp),
                                      lambda key, error: result.__setitem__(key, _not_measured(error)),
                                      set(timed) | set(result)):
            result[key] = {"plan": list(made)}
        for key, took in seconds.items():
            if key in result and "error" not in result[key] and "skipped" not in result[key]:
                result[key]["setup"] = round(took, 3)
    out.write_text(json.dumps(result))


def counts(suite: Path, jobs: list[list], out: Path, cache_dir: Path | None = None) -> None:
    """Count `jobs` ([name, index], or [name, index, calls per run, warm-up calls, by call] for a case planned
    by the parent: by call 1 where its plan counts it call by call, 0 where as its Timer's statement) in one
    valgrind process; writes {job key: {"counts": [...]} (a `time_` case's with its
    "plan": [calls, warm-up]; a case counted as its Timer's statement with "statement": true, and a Python
    one's "plan" [runs per counted run, warm-up runs]), {"uncountable": why}, {"skipped": true} (a TimerSuite combination without a
    TimerSpec, which asv skips too) or {"error": why}}. A `track_` or `time_` method that times a Timer is
    counted as that Timer's statement (_timed_statements; a plan it carries is not used). setup_cache's values
    are read from, or made into, `cache_dir` (a temporary folder where None), natively, and reach valgrind as
    files."""
    import tempfile

    # under `python -m` this module is __main__: pickle must name the real ones
    from .asv_worker import AsvCall, AsvTimed
    from .callgrind import Again, CallCase, CallgrindError, collect_callgrind_many, simulated_per_run

    benchmarks = _discover(suite)
    cases, keys, result, plans = [], [], {}, {}
    with tempfile.TemporaryDirectory(prefix="torchbench_counts_") as tmp:
        for name, index, *_ in jobs:
            key, benchmark = f"{name}|{index}", benchmarks.get(name)
            if benchmark is None:
                continue  # _by_call names it
            suite_instance = _timer_suite(benchmark)
            why = uncountable(benchmark)
            if why:
                result[key] = {"uncountable": why}
            elif suite_instance is not None:
                benchmark.set_param_idx(index)
                spec = suite_instance._specs.get(tuple(benchmark._current_params))
                if spec is None:  # a combination without a TimerSpec: asv skips it, and so does this
                    result[key] = {"skipped": True}
                else:
                    cases.append(spec.timer())
                    keys.append(key)
        # a job the parent's plan says is counted call by call (its fifth field 1: it times no Timer, as the
        # plan's own capture found) is not run natively again to find out
        timed = _timed_statements(benchmarks, [job for job in jobs if not (len(job) >= 5 and int(job[4]) == 1)],
                                  cache_dir or Path(tmp), result)
        given = {f"{name}|{index}": (int(rest[0]), int(rest[1])) for name, index, *rest in jobs if len(rest) >= 2}
        for key, timer in timed.items():  # a Python statement is counted in place (AsvTimed); C++ is compiled
            name, index = key.rsplit("|", 1)
            benchmark = benchmarks[name]
            cache_file = _cache_file(benchmark, cache_dir or Path(tmp))
            if timer.language.name == "CPP":
                cases.append(timer)
            else:
                try:
                    plans[key] = list(given.get(key) or _plan_statement(timer))
                except Exception as e:
                    result[key] = _not_measured(f"{type(e).__name__}: {e}")
                    continue
                cases.append(AsvTimed(str(suite.resolve()), name, int(index), cache_file,
                                      timer.task_spec.num_threads, tuple(plans[key])))
            keys.append(key)
        for key, benchmark, index, cache_file, (number, warmup) in _by_call(
                benchmarks, jobs, cache_dir or Path(tmp), lambda key, error: result.__setitem__(key, _not_measured(error)),
                set(timed) | set(result)):
            call = AsvCall(str(suite.resolve()), benchmark.name, index, cache_file)
            cases.append(CallCase(call, label=key, number=number, each=call.each, teardown=call.teardown,
                                  warmup=warmup, prepare=call.prepare))
            keys.append(key)
            plans[key] = [number, warmup]
        if cases:
            # totals only (functions=False): the alert reads a row's counts and cycles, never its functions
            draws = int(os.environ.get(DRAWS_ENV) or 1)
            deadline = float(os.environ[DEADLINE_ENV]) if os.environ.get(DEADLINE_ENV) else None
            # in layout draws, one repeat a draw: a layout's repeats agree (0.03% on a TimerSuite row), the
            # draws are what varies
            began: dict[int, float] = {}
            seconds: dict[int, float] = {}  # each case's seconds in its valgrind process (set-up included)

            def clock(index: int, event: str) -> None:
                if event == "start":
                    began[index] = time.monotonic()
                elif index in began:
                    seconds[index] = seconds.get(index, 0.0) + time.monotonic() - began.pop(index)

            def answer(key: str, outcome, draws: int = draws) -> dict:
                """Per run of the statement (per call of a time_ method); "cycles" and "events" simulated; with
                draws, a layout draw's values in turn."""
                found = {"counts": [s.code_counts(subtract_baseline=True) / s.number_per_run for s in outcome],
                         "layout_driven": [(s.layout_driven(subtract_baseline=True) or 0) / s.number_per_run
                                           for s in outcome],
                         "draws": draws, **simulated_per_run(outcome, draws)}
                if key in plans:
                    found["plan"] = plans[key]
                if key in timed:  # counted as its Timer's statement: a statement's noise, not a call's
                    found["statement"] = True
                return found

            progress_file = os.environ.get(PROGRESS_ENV)

            def feed(line: dict) -> None:  # one line of the progress file, flushed
                with open(progress_file, "a") as f:
                    f.write(json.dumps(line) + "\n")

            def counted(index: int, outcome) -> None:  # as each row is counted
                feed({"key": keys[index], **answer(keys[index], outcome)})

            def then() -> Again | None:
                """The rows to count again in this valgrind process, as the parent says (CONTINUE_ENV)."""
                feed({"next": True})
                line = sys.stdin.readline()
                asked = json.loads(line) if line.strip() else None
                if not asked:
                    return None
                index = {key: i for i, key in enumerate(keys)}
                return Again(tuple(index[key] for key in asked["keys"] if key in index), int(asked["jitter"]),
                             int(asked["draws"]), asked.get("deadline"))

            def again(index: int, asked: Again, outcome) -> None:  # a row counted again, its draws its own
                feed({"key": keys[index], **answer(keys[index], outcome, asked.draws), "draws": asked.draws,
                      "again": asked.jitter})

            go_on = bool(progress_file) and os.environ.get(CONTINUE_ENV) == "1"
            outcomes = collect_callgrind_many(cases, COUNT_NUMBER, COUNT_REPEATS if draws == 1 else 1, on_error="return",
                                              agree=REPEATS_AGREE if draws == 1 else None,
                                              simulate=os.environ.get(SIMULATE_ENV, "1") != "0", functions=False,
                                              branches=False,  # the priced cycles read no branch event
                                              draws=draws, deadline=deadline, progress=clock,
                                              on_result=counted if progress_file else None,
                                              then=then if go_on else None, on_again=again if go_on else None)
            for index, (key, outcome) in enumerate(zip(keys, outcomes)):
                if isinstance(outcome, CallgrindError):
                    result[key] = _not_measured(str(outcome))  # a row this machine cannot run: skipped
                else:
                    result[key] = answer(key, outcome)
                if index in seconds:
                    result[key]["seconds"] = round(seconds[index], 2)
    out.write_text(json.dumps(result))


def _allow_tracer(pid: int) -> None:
    """Let `pid` and its descendants ptrace this process.

    Under Yama's ptrace_scope=1 (the default on Ubuntu and others) only an
    ancestor may attach, and the profiler is our parent's child, not our
    ancestor. Declaring the parent as tracer admits its descendants. A no-op
    where there is no Yama (prctl fails with EINVAL) or no Linux.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, ctypes.c_ulong(pid), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _call_many(func, args: tuple, number: int) -> None:
    for _ in range(number):
        func(*args)


def _runner(benchmark, stack: contextlib.ExitStack):
    """f(number): run the benchmark `number` times. A TimerSuite case runs its statement in the
    Timer's loop (setup once, as a measurement does); anything else calls its function."""
    suite_instance = _timer_suite(benchmark)
    if suite_instance is not None:
        timer = suite_instance._specs[tuple(benchmark._current_params)].timer()
        stack.enter_context(timer._threads)
        session = timer._session()
        stack.callback(session.close)
        return functools.partial(timer._block, session)
    return functools.partial(_call_many, benchmark.func, benchmark._build_params())


def _calibrate(run_n) -> int:
    """The smallest power of two of runs that takes PROFILE_BATCH_SECONDS (at least one run)."""
    number = 1
    while number < 2**30:
        start = time.perf_counter()
        run_n(number)
        if time.perf_counter() - start >= PROFILE_BATCH_SECONDS:
            break
        number *= 2
    return number


def _loop(batch, seconds: float) -> int:
    """Run `batch` until `seconds` have passed; every sample of a profiled job is inside this frame."""
    batches = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        batch()
        batches += 1
    return batches


def _marked(name: str):
    """_loop under another name: the profiler shows the code object's name (co_qualname on 3.11+)."""
    names = {"co_name": name}
    if hasattr(_loop.__code__, "co_qualname"):
        names["co_qualname"] = name
    return type(_loop)(_loop.__code__.replace(**names), _loop.__globals__, name)


def _profile_one(benchmark, index: int, cache, seconds: float, marker: str) -> dict:
    benchmark.set_param_idx(index)
    benchmark.set_cache(cache)
    if benchmark.do_setup():
        return _skip(benchmark)
    try:
        with contextlib.ExitStack() as stack:
            run_n = _runner(benchmark, stack)
            number = _calibrate(run_n)
            start = time.perf_counter()
            batches = _marked(marker)(functools.partial(run_n, number), seconds)
            elapsed = time.perf_counter() - start
    finally:
        benchmark.do_teardown()
    return {"marker": marker, "seconds": elapsed, "batches": batches, "number": number}


def profile(suite: Path, out: Path, seconds: float, cache_dir: Path | None) -> None:
    benchmarks = _discover(suite)
    _allow_tracer(os.getppid())
    with open(out, "a", buffering=1) as f:
        f.write(json.dumps({"ready": os.getpid(), "benchmarks": _listing(benchmarks)}) + "\n")
        line = sys.stdin.readline()
        jobs = json.loads(line) if line.strip() else []  # nothing: the parent has nothing to profile
        _each_job(suite, benchmarks, jobs, cache_dir, f, lambda benchmark, index, cache, position: _profile_one(
            benchmark, index, cache, seconds, PROFILE_MARKER.format(position)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchbench_core.asv_worker")
    parser.add_argument("mode", choices=["list", "run", "plan", "counts", "profile", "syscalls"])
    parser.add_argument("suite", type=Path)
    parser.add_argument("--jobs", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--seconds", type=float, default=1.0, help="profile: how long each job runs")
    args = parser.parse_args(argv)
    if args.mode == "list":
        # a suite may print while it is imported: the listing goes to --out when given, never mixed with that
        listing = json.dumps(list_benchmarks(args.suite))
        if args.out:
            args.out.write_text(listing)
        else:
            sys.stdout.write(listing)
        return 0
    if args.mode == "profile":
        profile(args.suite, args.out, args.seconds, args.cache_dir)
        return 0
    jobs = json.loads(args.jobs.read_text())
    if args.mode == "run":
        run(args.suite, jobs, args.out, args.cache_dir)
    elif args.mode == "plan":
        plan(args.suite, jobs, args.out, args.cache_dir)
    elif args.mode == "syscalls":  # system calls per call, by type, under strace (torchbench_core.syscalls)
        from .syscalls import collect

        collect(args.suite, jobs, args.out, args.cache_dir)
    else:
        counts(args.suite, jobs, args.out, args.cache_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
