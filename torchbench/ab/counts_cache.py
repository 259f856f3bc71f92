"""Instruction counts kept on disk per (commit, environment, interpreter, case), so nothing is counted twice.

Counts are deterministic to ~0.05%: a commit's counts in one environment do
not change, and valgrind costs minutes a side. `alert` counts base and head,
`find` counts the same commits again for each candidate pair, and the next
pull request's alert counts the same base. So they are kept under
OUT/counts/<commit>/<key>.json, where the key hashes what else decides a count:

* the environment and interpreter: the Python executable's path in the
  workspace (asv's environment folder, whose name hashes its requirements and
  Python version) and that interpreter's version string;
* the suite: the content of every file of the benchmark folder (a changed
  benchmark is a different case, even under the same name);
* valgrind's version;
* the counting harness: the torchbench_core modules that run a count (how the
  valgrind process starts, and what it runs before and around each count,
  moves a count by up to ~1% through the memory layout: a count made by
  another torchbench version is not mixed with these).

Within a file, a case is its benchmark name, parameter index and parameters;
a jittered valgrind process's counts of it (collect.collect_counts(jitter=k),
its memory layout jittered after the imports: JITTERED names the k-th) are
kept under the case's name with JITTERED appended.
A file that cannot be read is reported and counted again; writes are atomic.
The simulated cycles and events a counting process gives beside its counts (asv_worker.counts) are kept
under the file's "simulated" key, by the same case keys: a file without one (written before they were kept)
reads as before, its cases without cycles.
The system calls of one call of a case (collect.collect_syscalls, under strace) are kept under the file's
"syscalls" key, by the case's key without a plan: a cached base is neither counted nor traced again.
What counted each case, and on which day, is kept under "kept_by" ("torchbench run, 2026-11-28"), so that an
alert can say where its base counts came from (a history's nightly `torchbench run`, an earlier alert).

An asv `time_` method is counted call by call, and its count per call moves
by up to 3% with the number of calls per counted run (measured on a plain
42-row suite: with each side planning its own calls from a native timing, 8
of 42 identical rows differed by 0.6-3.0% between an A/A pair's sides; with
one plan for both, all 42 agreed to the instruction). So each such case is
planned once (calls per run, warm-up calls) and the plan is kept beside the
counts, OUT/counts/plans/<suite digest>.json (CountPlans), for every commit
and process after; the plan is part of the case's key, so counts made under
another plan are never mixed with these.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import os
import subprocess
import threading
from pathlib import Path

from torchbench_core import memory_price
from torchbench_core.asv_worker import SIMULATE_ENV
from torchbench_core.storage import atomic_write_text

from .. import resources
from .evidence import Job

__all__ = ["CONTINUED", "CountPlans", "CountsCache", "DRAWN", "JITTERED", "REPEATED"]

JITTERED = "|jittered {}"  # the k-th jittered valgrind process's counts (an older "|again, layout 1" is unread)
REPEATED = "|repeat trace {}"  # a case's k-th repeat trace of system calls (collect.collect_syscalls(repeat))
DRAWN = ", {} draws"  # after JITTERED: that process counted each case in this many layout draws, draw by draw
# after DRAWN: those draws were counted in the first process, going on after its rows (collect.Continued), not in
# a process started jittered. Kept apart: on einops' 42 rows the two kinds' draws differ by 0.1-0.2% on many rows
# (20 of 42 at p < 0.05 between them), within what a commit moves them (the count test decided none), but a
# side's draws are held only against the other side's of the same kind
CONTINUED = " (continued)"


_WRITING = threading.Lock()  # a commit's cache file is read, merged and written by one thread at a time


def _suite_digest(suite: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in suite.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(suite)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


# the harness's modules that decide what a counting process runs (resources.harness(): benchmark
# processes import this installation's torchbench_core)
HARNESS_FILES = ("_callgrind_worker.py", "callgrind.py", "cpp.py", "asv_worker.py", "timing.py", "syscalls.py")


def _harness_digest() -> str:
    h = hashlib.sha256()
    for name in HARNESS_FILES:
        h.update(name.encode())
        h.update((resources.harness() / name).read_bytes())
    return h.hexdigest()


def _version(command: list[str]) -> str:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (proc.stdout + proc.stderr).strip()


class CountsCache:
    """Counts of one (environment, interpreter, suite, valgrind) under ROOT, by commit and case."""

    def __init__(self, root: Path, python: Path, suite: Path, valgrind: Path | None, origin: str = "torchbench alert"):
        self.root = root
        self.origin = origin  # what counts through this cache ("torchbench run", "torchbench alert", ...): kept by case
        # what a simulated last-level miss costs on this machine (memory_price.py: measured once a machine):
        # the counting worker weighs the estimated cycles with it, and a cached row's cycles were weighed at it
        self.miss_cycles = memory_price.price().miss_cycles
        self.identity = {"python": str(python.absolute()),
                         "interpreter": _version([str(python), "-c", "import sys; print(sys.version)"]),
                         "suite": _suite_digest(suite),
                         "valgrind": _version([str(valgrind), "--version"]) if valgrind else "none",
                         "harness": _harness_digest(),
                         # the counting worker simulates the caches unless told not to (its counts
                         # of a few rows move by up to 0.3% with it: evaluation/sim_channels.py)
                         "simulate": os.environ.get(SIMULATE_ENV, "1") != "0",
                         "ll_miss_cycles": self.miss_cycles}
        self.key = hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()[:16]
        self.problems: list[str] = []

    def view(self) -> CountsCache:
        """The same cache with its own list of problems (for one thread)."""
        other = copy.copy(self)
        other.problems = []
        return other

    def path(self, commit: str) -> Path:
        return self.root / commit / f"{self.key}.json"

    @staticmethod
    def case(job: Job, params: list[str], plan: tuple[int, int] | None = None) -> str:
        """A case's key: its name, index and parameters, and the plan it was counted under where it has one."""
        key = f"{job[0]}|{job[1]}|{json.dumps(params)}"
        return key if plan is None else f"{key}|plan {plan[0]}x{plan[1]}"

    def _read(self, commit: str, key: str, valid, what: str, unreadable: str, then: str = "") -> dict:
        """One key of the commit's file ("cases", "simulated" or "syscalls"), by case, each value checked by
        `valid`: empty where there is no file (or no such key beside the counts), and where it is unreadable,
        with the problem said (`unreadable` what, the error, `then` what follows)."""
        path = self.path(commit)
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text())
            found = data["cases"] if key == "cases" else data.get(key, {})
            if not isinstance(found, dict) or not all(valid(v) for v in found.values()):
                raise ValueError(f"{key!r} is not a mapping of case to {what}")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            self.problems.append(f"{path}: unreadable {unreadable} ({e}){then}")
            return {}
        return found

    def load(self, commit: str) -> dict[str, list[float]]:
        """The cached counts of `commit`, by case (empty where there are none or the file is unreadable)."""
        return self._read(commit, "cases", lambda v: isinstance(v, list) and all(isinstance(x, (int, float))
                                                                                 for x in v),
                          "a list of counts", "instruction-count cache", "; counting again")

    def load_simulated(self, commit: str) -> dict[str, dict]:
        """The cached simulated channels of `commit`, by case: {"cycles": [...], "events": [{...}, ...]} (the
        counting worker's, beside the case's counts; empty for a file written before they were kept)."""
        return self._read(commit, "simulated", lambda v: isinstance(v, dict) and isinstance(v.get("cycles"), list)
                          and all(isinstance(x, (int, float)) for x in v["cycles"]),
                          "its cycles and events", "simulated cycles in the instruction-count cache")

    def origins(self, commit: str) -> dict[str, str]:
        """What counted each of `commit`'s cached cases, and when ("torchbench run, 2026-11-28"), by case; empty
        for a file written before they were kept."""
        return self._read(commit, "kept_by", lambda v: isinstance(v, str), "what counted it",
                          "origins in the instruction-count cache")

    def load_syscalls(self, commit: str) -> dict[str, dict]:
        """The cached system calls of `commit`, by case: the worker's `syscalls` result for it, what it traced
        of one call ({"syscalls": {"per_call": {name: calls a call}, "exact": ..., ...}}) or why it cannot
        ({"uncountable": why}); empty where none were kept."""
        return self._read(commit, "syscalls", lambda v: isinstance(v, dict) and (
            isinstance(v.get("syscalls"), dict) and isinstance(v["syscalls"].get("per_call"), dict)
            or isinstance(v.get("uncountable"), str)),
            "its system calls a call", "system calls in the instruction-count cache", "; tracing again")

    def _write(self, commit: str, cases: dict | None = None, simulated: dict | None = None,
               syscalls: dict | None = None) -> None:
        """Add these, by case, to the commit's file (atomically), each under its own key, the file's other
        keys kept: a reader of "cases" alone reads it as before. One thread at a time reads and writes (a side's
        first and confirming processes store into the same commit's file, side by side: schedule.count_both)."""
        with _WRITING:
            made = f"{self.origin}, {datetime.date.today().isoformat()}"
            kept = {"cases": {**self.load(commit), **(cases or {})},
                    "simulated": {**self.load_simulated(commit), **(simulated or {})},
                    "syscalls": {**self.load_syscalls(commit), **(syscalls or {})},
                    "kept_by": {**self.origins(commit), **dict.fromkeys(cases or {}, made)}}
            path = self.path(commit)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps({"identity": self.identity, "cases": kept["cases"],
                                                **{key: kept[key] for key in ("simulated", "syscalls", "kept_by")
                                                   if kept[key]}}, indent=1))

    def store_syscalls(self, commit: str, traced: dict[str, dict]) -> None:
        """Add `traced` (system calls a call, by case) to the commit's cache file (atomically), under a key
        of its own beside the counts: strace's counts of calls are as deterministic as valgrind's of
        instructions (torchbench_core.syscalls), and a traced process costs a side 10-25 s."""
        if traced:
            self._write(commit, syscalls=traced)

    def store(self, commit: str, counted: dict[str, list[float]], simulated: dict[str, dict] | None = None) -> None:
        """Add `counted` (and their `simulated` cycles and events, by case) to the commit's cache (atomically).
        The simulated channels are a key of their own beside "cases", so that a reader of "cases" alone
        reads the file as before."""
        if counted:
            self._write(commit, counted, simulated)


class CountPlans:
    """The plan of each `time_` case of one suite (calls per counted run, warm-up calls), made once and kept
    under ROOT/plans/<suite digest>.json, so that every commit's counts of a case come from the same plan."""

    def __init__(self, root: Path, suite: Path):
        self.path = root / "plans" / f"{_suite_digest(suite)[:16]}.json"
        self.problems: list[str] = []

    def load(self) -> dict[str, tuple[int, int]]:
        """The kept plans, by case (empty where there are none or the file is unreadable: planned again)."""
        if not self.path.exists():
            return {}
        try:
            plans = json.loads(self.path.read_text())["plans"]
            if not isinstance(plans, dict) or not all(
                    isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and x > 0 for x in v)
                    for v in plans.values()):
                raise ValueError("'plans' is not a mapping of case to [calls per run, warm-up calls]")
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.problems.append(f"{self.path}: unreadable plans of calls per counted run ({e}); planning again")
            return {}
        return {case: (v[0], v[1]) for case, v in plans.items()}

    def statements(self) -> set[str]:
        """The kept cases counted as a statement (a `track_` or `time_` method's Timer: its plan is runs of
        that statement), not call by call: their counts' noise is a statement's (count_decision.STATEMENT).
        Empty for a file written before they were kept."""
        if not self.path.exists():
            return set()
        try:
            found = json.loads(self.path.read_text()).get("statements", [])
            if not isinstance(found, list) or not all(isinstance(c, str) for c in found):
                raise ValueError("'statements' is not a list of cases")
        except (OSError, ValueError, TypeError, AttributeError) as e:
            self.problems.append(f"{self.path}: unreadable list of statement cases ({e}); planning again")
            return set()
        return set(found)

    def setups(self) -> dict[str, float]:
        """Each kept case's setup seconds, natively (its setup, one run of its method, its teardown: what its
        plan timed); empty for a file written before they were kept."""
        if not self.path.exists():
            return {}
        try:
            found = json.loads(self.path.read_text()).get("setups", {})
            if not isinstance(found, dict) or not all(
                    isinstance(v, (int, float)) and v >= 0 for v in found.values()):
                raise ValueError("'setups' is not a mapping of case to seconds")
        except (OSError, ValueError, TypeError, AttributeError) as e:
            self.problems.append(f"{self.path}: unreadable setup seconds ({e}); planning again")
            return {}
        return {case: float(v) for case, v in found.items()}

    def store(self, made: dict[str, tuple[int, int]], statements: set[str] = frozenset(),
              setups: dict[str, float] | None = None) -> None:
        """Add `made` (and which of them are `statements`, and the cases' `setups` seconds) to the kept plans
        (atomically); a case keeps its first plan and its first setup seconds."""
        if not made and not statements and not setups:
            return
        plans = {**made, **self.load()}
        kept = sorted(self.statements() | set(statements))
        timed = {**(setups or {}), **self.setups()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps({"plans": {c: list(v) for c, v in sorted(plans.items())},
                                                 **({"statements": kept} if kept else {}),
                                                 **({"setups": dict(sorted(timed.items()))} if timed else {})},
                                                indent=1))
