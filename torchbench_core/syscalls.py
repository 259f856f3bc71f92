"""System calls per call of each benchmark case, by type, under strace: the asv worker's `syscalls` mode.

    python -m torchbench_core.asv_worker syscalls SUITE_DIR --jobs JOBS.json --out OUT.json [--cache-dir DIR]

Instruction counts cannot see what the kernel does for a statement; wall time sees it under the machine's
noise. The number of system calls one call makes, by type, is neither: it is exact where the code is
deterministic. The parent (`collect`) runs the jobs natively in one process under `strace -f -qq`
(torchbench_core.syscalls_trace); that process runs each job's statement (a TimerSuite case, or a `track_` or
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
import gc
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CALLS, WARMUP_CALLS = 10, 16  # the N region's calls (the second region has 2N), and the calls before
MARKER = b"TORCHBENCH_SYSCALLS"
REGIONS = ("N", "2N")
# a whole number k > 0: the k-th repeat trace of the rows whose first traces differed between the sides, in
# another process state (syscalls_trace.trace: a jittered layout, the jobs in reverse order)
REPEAT_ENV = "TORCHBENCH_SYSCALLS_REPEAT"
TRACE_TIMEOUT = 1500.0  # the traced process, set-ups and imports included (collect.collect_syscalls waits 1800 s)
# a time.time() when tracing ends (the system calls' share of the alert's budget): each row may take its share of
# what is left (syscalls_trace.trace), the process is stopped there, and the rows it finished keep their calls
DEADLINE_ENV = "TORCHBENCH_SYSCALLS_DEADLINE"
OUT_OF_TIME = "out_of_time"  # a row's answer key where its share of the phase ran out first (its reason)

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
    deadline = float(os.environ[DEADLINE_ENV]) if os.environ.get(DEADLINE_ENV) else None
    if deadline is not None:
        timeout = min(timeout, max(1.0, deadline - time.time()))
    with tempfile.TemporaryDirectory(prefix="torchbench_syscalls_") as tmp:
        trace, manifest, jobs_file = Path(tmp) / "trace", Path(tmp) / "manifest.jsonl", Path(tmp) / "jobs.json"
        jobs_file.write_text(json.dumps(jobs))
        cmd = [strace, "-f", "-qq", "-s", "128", "-o", str(trace), sys.executable, "-m", "torchbench_core.syscalls_trace",
               "trace", str(suite), str(jobs_file), str(manifest), *([str(cache_dir)] if cache_dir else [])]
        # its own session: a stop kills strace and the traced process with its children, none left orphaned
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, **WORKER_ENV), start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=timeout)
            why = "" if proc.returncode == 0 and manifest.exists() else (
                f"the traced process failed (exit {proc.returncode}): {(stderr.strip().splitlines() or [''])[-1]}")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            why = ""  # the rows it finished are kept; the others ran out of time
            stopped = (f"not traced: the system calls' share of the budget ({timeout:.0f} s) ran out first "
                       "(its wall time decides it)")
        else:
            stopped = "the traced process reported nothing for it"
        if why:
            out.write_text(json.dumps({key: {"error": why} for key in keys}))
            return
        ran = {}
        if manifest.exists():  # one line a row, as each ends: a stopped process's last may be cut
            for line in manifest.read_text().splitlines():
                with contextlib.suppress(ValueError):
                    ran.update(json.loads(line))
        counted = split_trace(trace.read_text(errors="replace")) if trace.exists() else {}
    result = {}
    for position, key in enumerate(keys):
        outcome = ran.get(str(position)) or ({OUT_OF_TIME: stopped} if stopped.startswith("not traced") else
                                             {"error": stopped})
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


# -- what the traced process (syscalls_trace) marks ------------------------------

def mark(fd: int, position: int, region: str, edge: str) -> None:
    os.write(fd, b"%s %d %s %s" % (MARKER, position, region.encode(), edge.encode()))


def regions(fd: int, position: int, run, each=None) -> None:
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
                mark(fd, position, region, "start")
                run(calls)
                mark(fd, position, region, "end")
            else:
                for _ in range(calls):
                    each()
                    mark(fd, position, region, "start")
                    run(1)
                    mark(fd, position, region, "end")
    finally:
        gc.enable()
