"""A channel of evidence, one shape for each: instruction counts, system calls, simulated cycles and wall time.

A channel (`Channel`) says what it measures and who measures it (`measure`), the noise it is held against
(`noise`), the label of a row it decides (`label`) and its test: from the evidence of one row, a `Finding`
(the change, whether it decides the row alone, whether it needs jittered processes first, its p-value, its
label and its cell in the comment), or None where a side has no measurements. The deterministic channels
(DETERMINISTIC: counts, system calls, simulated cycles) decide a row alone; wall time's findings are decided
across the family. How the verdict combines them, in ORDER, is verdict.py's (its module docstring is the one
description of how a row is decided); who measures them: collect.py (the deterministic ones) and rounds.py
(wall time).
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

from .. import stats
from .contrast import compare_row
from .count_decision import DRAWS, FIRST_CEILING, MAX_PASSES, count_decision
from .counts import COMPUTE, NEAR, count_change, kind_of, processes
from .evidence import Evidence, Job
from .options import Policy
from .sequential import Design

__all__ = ["CHANNELS", "COUNTS", "CYCLES", "Channel",
           "DETERMINISTIC", "Finding", "INSTRUCTION_COUNTS", "InstructionCounts", "MEMORY", "ORDER",
           "SIMULATED_CYCLES", "SYSCALLS", "SCHEDULED", "SYSCALL_TRACES", "SYSTEM_CALLS", "SimulatedCycles", "SystemCalls", "WALL", "WALL_TIME",
           "WallTime", "counted_rows", "deterministic_level", "findings", "simulating", "syscall_moves",
           "syscall_traces", "to_confirm", "to_retrace", "wall_fdr"]

# what decided a row (Verdict.decided_by)
COUNTS, SYSCALLS, CYCLES, WALL = "instruction counts", "system calls", "simulated cycles", "wall time"
MEMORY = "memory (simulated cache)"
@dataclass(frozen=True)
class Finding:
    """What one channel says of one row: the common result of every channel's test."""

    channel: str
    delta: float  # head / base - 1 (system calls: of the calls a call, all types)
    decides: bool  # decides the row alone (wall time: never; its family's weighted BH does, verdict.settle)
    pending: bool  # beyond the floor on first processes alone: count it in jittered ones
    label: str
    text: str  # the comment's cell
    margin: float = float("nan")
    p_value: float = 1.0
    comparison: stats.Comparison | None = None  # wall time's: the interval, MDE and test behind its p-value
    base: float | None = None  # each side's value (counts: the median count a run), where the channel has one
    head: float | None = None


class Channel(ABC):
    """One channel of evidence. `name`: what decided a row (Verdict.decided_by); `measure`: what measures it
    (the collector); `noise`: its noise model, and the constants its test holds a change against; `label`:
    the label of a row it decides ("" where its finding's own label says it); `deterministic`: decides a row
    alone (else across the family: wall time)."""

    name: str
    measure: str
    noise: str
    label: str
    deterministic: bool = True

    @abstractmethod
    def test(self, evidence: Evidence, job: Job, floor: float, seen: Mapping[str, Finding],
             level: float) -> Finding | None:
        """What this channel says of `job`; None without measurements on both sides. `floor`: the smallest
        change a deterministic channel decides (Policy.count_floor); `seen`: the findings of the channels
        before it in ORDER, by name; `level`: the level a test with noise decides at (the alert's:
        deterministic_level, its share of the suite's budget)."""


class InstructionCounts(Channel):
    """Instructions executed by one run of the row (one call, for an asv `time_` method), counted under
    valgrind; counts.py says what they see and weigh."""

    name, label = COUNTS, COMPUTE
    measure = ("collect.collect_counts: callgrind, in the first valgrind process a side two counted runs that agree "
               "(asv_worker.REPEATS_AGREE) or three (COUNT_REPEATS), then jittered ones in count_decision.DRAWS layout draws (pair.py)")
    noise = ("count_decision.py: the row's own spread between layouts (the jittered processes) plus the commit "
             "noise calibrated on a pool of identical code at many commits (count_decision.COMMIT_RATIO and "
             "COMMIT_SD), tested at the suite's deterministic level (deterministic_level)")

    def test(self, evidence: Evidence, job: Job, floor: float, seen: Mapping[str, Finding],
             level: float) -> Finding | None:
        c = count_change(evidence, job, floor, level)
        if c is None:
            return None
        return Finding(COUNTS, c.delta, c.decides, c.pending, c.label, f"{c.delta:+.2%}", c.margin, c.p_value,
                       base=c.base, head=c.head)


# System calls whose number follows the scheduler or the allocator's state, not only the code: thread wake-ups
# and yields (futex, sched_yield, the sleeps a spinning pool takes), the heap's and the mappings' growth and
# release (brk, mmap, munmap, mremap, madvise, mprotect), threads made by a pool on demand (clone, clone3 and
# what a new thread sets up). Seen to move between traces of identical code (futex +0.1 a call on a loaded
# machine, brk +3 a call: issue 61; evaluation/syscalls_noise.py). Their noise is not calibrated: shown beside
# the row, never deciding it.
SCHEDULED = frozenset({"futex", "sched_yield", "nanosleep", "clock_nanosleep", "brk", "mmap", "munmap",
                       "mremap", "madvise", "mprotect", "clone", "clone3", "set_robust_list", "rseq",
                       "rt_sigprocmask", "sched_getaffinity", "sched_setaffinity"})
SYSCALL_TRACES = 2  # traced processes a side a system-call decision rests on: the first and a repeat trace


def syscall_traces(evidence: Evidence, side: str, job: Job) -> list[dict]:
    """A side's traces of `job`: the first, then the repeat traces (collect.collect_syscalls(repeat))."""
    first = evidence.syscalls[side].get(job)
    return ([first] if first else []) + list(evidence.syscalls_again[side].get(job, []))


def _exact(trace: dict, name: str) -> bool:
    """Whether `name`'s calls in the 2N region were exactly twice the N region's (a trace without its regions,
    an older record: the whole trace's exactness)."""
    regions = trace.get("regions")
    if not regions:
        return bool(trace.get("exact"))
    return regions.get("2N", {}).get(name, 0) == 2 * regions.get("N", {}).get(name, 0)


def syscall_moves(evidence: Evidence, job: Job) -> dict[str, dict]:
    """Each system call whose number a call differs between the sides' first traces: its change a call (head
    - base), and whether it may decide (`decides`) with why not (`why`): a call that follows the scheduler or
    the allocator (SCHEDULED) never does; another does where each side has SYSCALL_TRACES traces, every trace
    is exact for it, each side's traces agree on its calls a call (so the change is the same in every pairing
    of processes), and the change is a whole number of calls."""
    runs = {side: syscall_traces(evidence, side, job) for side in ("base", "head")}
    per = {side: [t.get("per_call", {}) for t in runs[side]] for side in runs}
    names = sorted(set(per["base"][0]) | set(per["head"][0]))
    moves = {}
    for name in names:
        change = per["head"][0].get(name, 0.0) - per["base"][0].get(name, 0.0)
        if not change:
            continue
        if name in SCHEDULED:
            why = "follows the scheduler or the allocator"
        elif min(len(runs["base"]), len(runs["head"])) < SYSCALL_TRACES:
            why = f"{min(len(runs['base']), len(runs['head']))} traced process(es) a side, not repeated"
        elif not all(_exact(t, name) for side in runs for t in runs[side]):
            why = "not exact"
        elif any(len({p.get(name, 0.0) for p in per[side]}) > 1 for side in per):
            why = "not repeatable"
        elif abs(change - round(change)) > 1e-9:
            why = "not a whole number a call"
        else:
            why = ""
        moves[name] = {"change": change, "decides": not why, "why": why}
    return moves


class SystemCalls(Channel):
    """System calls of one call of the row, by type, traced natively under strace (torchbench_core.syscalls):
    a count of calls, not a time. Decided only by calls that repeat: see syscall_moves."""

    name, label = SYSCALLS, "system calls: <the calls that moved> a call"
    measure = ("collect.collect_syscalls: the worker's `syscalls` mode, one traced process a side for every "
               "row, then SYSCALL_TRACES - 1 repeat traces, in another process state, for the rows whose "
               "first traces differed (pair.py)")
    noise = ("none for a call that repeats: its number a call the same, exactly, in every trace of a side "
             "(the 2N calls made twice the N calls' of it), a whole number apart between the sides; calls "
             "that follow the scheduler or the allocator (SCHEDULED) are shown and decide nothing")

    def test(self, evidence: Evidence, job: Job, floor: float, seen: Mapping[str, Finding],
             level: float) -> Finding | None:
        b, h = evidence.syscalls["base"].get(job), evidence.syscalls["head"].get(job)
        if not b or not h:
            return None
        moves = syscall_moves(evidence, job)
        if not moves:
            return Finding(SYSCALLS, 0.0, False, False, "", "")
        deciding = {name: m["change"] for name, m in moves.items() if m["decides"]}
        total_b = sum(b.get("per_call", {}).values())
        change = sum(deciding.values()) if deciding else sum(m["change"] for m in moves.values())
        delta = change / total_b if total_b else (math.copysign(math.inf, change) if change else 0.0)
        decides = bool(deciding) and not evidence.builds_differ
        label = ", ".join(f"{name} {d:+g}" for name, d in deciding.items()) + " a call"
        shown = [f"{name} {m['change']:+g}" + (f" ({m['why']})" if m["why"] else "") for name, m in moves.items()]
        return Finding(SYSCALLS, delta, decides, False, f"system calls: {label}" if decides else "",
                       f"syscalls {', '.join(shown)} a call")


def to_retrace(evidence: Evidence, jobs: list[Job], repeat: int) -> list[Job]:
    """The jobs to trace in the `repeat`-th repeat trace a side: those whose first traces differed between the
    sides in a call that may decide (not SCHEDULED), not yet traced that often."""
    todo = []
    for job in jobs:
        if evidence.builds_differ or not (evidence.syscalls["base"].get(job) and evidence.syscalls["head"].get(job)):
            continue
        if min(len(evidence.syscalls_again[side].get(job, [])) for side in ("base", "head")) >= repeat:
            continue
        if any(name not in SCHEDULED for name in syscall_moves(evidence, job)):
            todo.append(job)
    return todo


def _cycles_runs(evidence: Evidence, side: str, job: Job) -> list[list[float]]:
    first = evidence.cycles[side].get(job)
    return ([first] if first else []) + processes(evidence.cycles_again[side], job)


class SimulatedCycles(Channel):
    """valgrind's cache simulation, from the same valgrind processes as the counts, priced: the code's own
    instructions plus P x its last-level misses (callgrind.priced_cycles; P what a miss costs on this machine,
    measured: torchbench_core.memory_price, 362 cycles here, not KCachegrind's 100), the misses of each draw's
    warmest run (callgrind.simulated_per_run). callgrind.estimated_cycles' first-level and branch misses, the
    allocators' instructions and a draw's cold misses are left out: they follow the memory layout (on 40
    commits of identical code they moved 76 of 1,638 row pairs past the floor; these, none). Tested as the
    counts are, with their noise. Decides only a row whose counts did not move (what the counts explain is
    theirs: `seen`'s counts), labelled memory."""

    name, label = CYCLES, MEMORY
    measure = "collect.collect_counts: the same valgrind processes as the counts (asv_worker.counts, simulated)"
    noise = ("count_decision.py, the counts' test at the suite's deterministic level, with the counts' commit noise "
             "(COMMIT_SD, COMMIT_RATIO, FIRST_MOVE): priced from each draw's warmest run, identical code moves them "
             "as little (callgrind.simulated_per_run; docs/results.md, issue 61)")

    def test(self, evidence: Evidence, job: Job, floor: float, seen: Mapping[str, Finding],
             level: float) -> Finding | None:
        base, head = _cycles_runs(evidence, "base", job), _cycles_runs(evidence, "head", job)
        kind = kind_of(evidence, job)
        t = count_decision(base, head, kind, floor, alpha=level)
        if t is None:
            return None
        counts = seen.get(COUNTS)
        flat = counts is None or (not counts.decides and abs(counts.delta) < floor)
        decides = t.decides and flat and not evidence.builds_differ
        return Finding(CYCLES, t.delta, decides, t.pending and flat and not evidence.builds_differ,
                       MEMORY if decides else "", f"cycles {t.delta:+.2%}", t.margin, t.p_value)


@dataclass(frozen=True)
class WallTime(Channel):
    """The row's time per process, base and head processes round after round. Its test is contrast.compare_row
    at the row's final bar in weighted Benjamini-Hochberg, its p-value combined over the looks it had
    (sequential.Design.combined_p). It decides no row alone: its findings are decided across the family by
    weighted BH at Policy.fdr, then stats.classify (verdict.settle). Its label is the counts' weighing
    (counts.weights: compute, wall time only, no counts). Tested within its family (`in_family`): the policy,
    the design after the rounds, each row's weight and the suite's slow processes."""

    name, label, deterministic = WALL, "", False
    measure = "rounds.measure_rounds: stats.process_summary of each process's blocks, one value a process"
    noise = ("between processes, as measured (permutation or signed-rank tests: contrast.py), the machine's "
             "slow processes held apart (stats.slow_excesses, contrast.slow_halves)")
    policy: Policy | None = None
    design: Design | None = None  # after the rounds (Design.after): each row's final bar
    weights: Mapping[Job, float] = dataclasses.field(default_factory=dict)  # weighted BH's, by row (1 if absent)
    # the suite's processes (stats.SuiteNoise: their slow excesses and residuals), for the MDEs
    suite_noise: stats.SuiteNoise | None = None

    def in_family(self, policy: Policy, design: Design, weights: Mapping[Job, float],
                  suite_noise: stats.SuiteNoise | None = None) -> WallTime:
        return dataclasses.replace(self, policy=policy, design=design, weights=weights, suite_noise=suite_noise)

    def test(self, evidence: Evidence, job: Job, floor: float, seen: Mapping[str, Finding],
             level: float) -> Finding | None:
        if self.policy is None or self.design is None:
            raise ValueError("wall time is tested within its family: WALL_TIME.in_family(policy, design, weights)")
        if min(len(values) for values in evidence.wall_values(job)) < 2:
            return None
        c = compare_row(evidence, job, self.policy, self.design.final_bar(self.weights.get(job, 1.0)),
                        self.policy.confidence, noise=self.suite_noise)
        # the p-value the decision uses: this row's, combined over the looks it had
        c = dataclasses.replace(c, p_value=self.design.combined_p(c.p_value, evidence.looks.get(job, [])))
        return Finding(WALL, c.ratio - 1, False, False, "", f"wall {c.ratio - 1:+.1%}", c.mde, c.p_value, c)


INSTRUCTION_COUNTS, SYSTEM_CALLS, SIMULATED_CYCLES = InstructionCounts(), SystemCalls(), SimulatedCycles()
WALL_TIME = WallTime()
DETERMINISTIC = (INSTRUCTION_COUNTS, SYSTEM_CALLS, SIMULATED_CYCLES)  # the first that decides decides the row
ORDER = (*DETERMINISTIC, WALL_TIME)  # the order a row is decided in (verdict.py)
CHANNELS = tuple(channel.name for channel in DETERMINISTIC)  # the names of the deterministic channels


def counted_rows(evidence: Evidence) -> int:
    """The rows whose first counts (or simulated cycles) both sides have: the deterministic tests' Bonferroni
    family (Policy.deterministic_level), whether or not a row's first counts made it a candidate: a
    candidate's test is no valid p-value alone (it was chosen by its first processes' move), but each row's
    chance to be a candidate and pass is at most the test's level, so the sum over every counted row bounds
    the suite's."""
    return sum(1 for job in evidence.jobs
               if all(evidence.counts[side].get(job) or evidence.cycles[side].get(job) for side in ("base", "head")))


def wall_fdr(evidence: Evidence, policy: Policy) -> float:
    """Wall time's share of the suite's budget in this comparison: Policy.wall_fdr where a deterministic test
    may decide (some row counted on both sides), the whole Policy.fdr where none can (counts off or none
    taken: no share to set aside)."""
    return policy.wall_fdr if counted_rows(evidence) else policy.fdr


def deterministic_level(evidence: Evidence, policy: Policy) -> float:
    """The level this comparison's count and cycles tests decide at (Policy.deterministic_level)."""
    return policy.deterministic_level(counted_rows(evidence))


def findings(evidence: Evidence, job: Job, floor: float, level: float) -> dict[str, Finding]:
    """What each deterministic channel with measurements says of `job`, in DETERMINISTIC order, its tests
    deciding at `level` (the alert's: deterministic_level)."""
    found: dict[str, Finding] = {}
    for channel in DETERMINISTIC:
        finding = channel.test(evidence, job, floor, found, level)
        if finding is not None:
            found[channel.name] = finding
    return found


def _first_move(evidence: Evidence, job: Job, floor: float) -> str:
    """What moved `job`'s first processes beyond the floor, to be confirmed: COUNTS (its first counts), CYCLES
    (counts flat, its first simulated cycles), or "" (neither; or counts past FIRST_CEILING, decided on them)."""
    first = {side: evidence.counts[side].get(job) for side in ("base", "head")}
    cycles = {side: evidence.cycles[side].get(job) for side in ("base", "head")}
    kind = kind_of(evidence, job)
    first_test = count_decision([first["base"]], [first["head"]], kind, floor, ceiling=FIRST_CEILING) \
        if first["base"] and first["head"] else None
    if first_test and first_test.pending:
        return COUNTS
    if first_test and first_test.decides:  # past the ceiling: nothing to confirm
        return ""
    flat_memory = bool(cycles["base"] and cycles["head"]) and count_decision(
        [cycles["base"]], [cycles["head"]], kind, floor).pending
    return CYCLES if flat_memory else ""


def simulating(evidence: Evidence, jobs: list[Job], floor: float) -> bool:
    """Whether a jittered pass of `jobs` simulates the caches: only where simulated cycles may decide
    one of them, a row whose first counts did not move (moved by its cycles) or that an earlier pass simulated.
    A row whose counts moved beyond the floor is decided by its counts or by nothing (SimulatedCycles decides
    only rows whose counts stay within the floor: with its first processes' cycles alone, never), and counting
    without simulation takes half the valgrind seconds of a small row (1.6x over einops' 42 rows)."""
    return any(_first_move(evidence, job, floor) != COUNTS or any(
        evidence.cycles_again[side].get(job) for side in ("base", "head")) for job in jobs)


def to_confirm(evidence: Evidence, jobs: list[Job], floor: float, jitter: int, level: float) -> list[Job]:
    """The jobs to count in the `jitter`-th jittered valgrind process a side, each in DRAWS layout draws: in the
    first, every one whose first counts (or, counts flat, first simulated cycles) moved beyond the floor; in
    the next, up to count_decision.MAX_PASSES, those whose test has not decided them, whose change clears the
    floor and whose p-value is within NEAR of the bar (noisy counts get more layouts)."""
    todo = []
    for job in jobs:
        if evidence.builds_differ:
            break
        had = min(len(processes(evidence.counts_again[side], job)) for side in ("base", "head"))
        if had > (jitter - 1) * DRAWS or jitter > MAX_PASSES:  # counted in this pass already (or an older one's)
            continue
        if jitter == 1:
            if _first_move(evidence, job, floor):
                todo.append(job)
        else:
            found = [f for f in findings(evidence, job, floor, level).values() if f.channel in (COUNTS, CYCLES)]
            if any(not f.decides and abs(f.delta) >= floor and f.p_value <= NEAR for f in found) \
                    and not any(f.decides for f in found):
                todo.append(job)
    return todo

