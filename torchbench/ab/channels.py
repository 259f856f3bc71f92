"""The deterministic channels of evidence, one shape each: what a row's counts, simulated cycles and system
calls say, in the order they decide.

Each channel reads its measurements from the evidence and gives a Finding: the change, whether it decides
the row alone, whether it needs jittered processes first, its label and its text for the comment. The
verdict (verdict.py) asks them in CHANNELS order; the first that decides decides the row (unless the wall
time moved the other way: counts.opposite_p), and the others are shown beside it.

  instruction counts  counts.count_change: count_test.py on the first and jittered valgrind processes;
                      compute ("compute")
  system calls        per call of the row, by type, traced natively under strace (torchbench_core.syscalls):
                      decided where they changed and both sides' traces were exact (the 2N calls made
                      exactly twice the N calls' system calls of every type): a count of calls, not a time;
                      labelled "system calls: getpid +1 a call"
  simulated cycles    valgrind's cache and branch simulation from the same valgrind processes as the counts
                      (callgrind.estimated_cycles: Ir + 10 x (L1 misses + mispredicts) + 100 x LL misses),
                      through the same test as the counts with its own calibrated commit noise
                      (CYCLES_COMMIT_SD); decides only a row whose counts did not move (what the counts
                      explain is theirs): "memory (simulated cache)"
"""

from __future__ import annotations

from dataclasses import dataclass

from .count_test import BY_CALL, DRAWS, MAX_PASSES, STATEMENT, count_test
from .counts import NEAR, count_change, kind_of, processes
from .evidence import Evidence, Job

__all__ = ["CHANNELS", "COUNTS", "CYCLES", "CYCLES_COMMIT_SD", "Finding", "MEMORY", "SYSCALLS", "findings",
           "to_confirm"]

COUNTS, SYSCALLS, CYCLES = "instruction counts", "system calls", "simulated cycles"  # what decided a row
CHANNELS = (COUNTS, SYSCALLS, CYCLES)
MEMORY = "memory (simulated cache)"
# evaluation/counts_calibration.py on the pool's simulated cycles (the plain suite's 15 pairs of commits with
# layout draws; the timer suite's 6, its first four commits simulated): the commit noise the draws do not
# show, log sd
CYCLES_COMMIT_SD = {STATEMENT: 0.0008, BY_CALL: 0.0004}


@dataclass(frozen=True)
class Finding:
    channel: str
    delta: float  # head / base - 1 (system calls: of the calls a call, all types)
    decides: bool
    pending: bool  # beyond the floor on first processes alone: count it in jittered ones
    label: str
    text: str  # the comment's cell
    margin: float = float("nan")
    p_value: float = 1.0


def _counts(evidence: Evidence, job: Job, floor: float) -> Finding | None:
    c = count_change(evidence, job, floor)
    if c is None:
        return None
    return Finding(COUNTS, c.delta, c.decides, c.pending, c.label, f"{c.delta:+.2%}", c.margin, c.p_value)


def _cycles_runs(evidence: Evidence, side: str, job: Job) -> list[list[float]]:
    first = evidence.cycles[side].get(job)
    return ([first] if first else []) + processes(evidence.cycles_again[side], job)


def _cycles(evidence: Evidence, job: Job, floor: float, counts: Finding | None) -> Finding | None:
    """`counts`: the row's counts finding (what the counts explain is theirs: cycles decide only beside flat
    counts)."""
    base, head = _cycles_runs(evidence, "base", job), _cycles_runs(evidence, "head", job)
    kind = kind_of(evidence, job)
    t = count_test(base, head, kind, floor, commit_sd=CYCLES_COMMIT_SD[kind])
    if t is None:
        return None
    flat = counts is None or (not counts.decides and abs(counts.delta) < floor)
    decides = t.decides and flat and not evidence.builds_differ
    return Finding(CYCLES, t.delta, decides, t.pending and flat and not evidence.builds_differ,
                   MEMORY if decides else "", f"cycles {t.delta:+.2%}", t.margin, t.p_value)


def _syscalls(evidence: Evidence, job: Job) -> Finding | None:
    b, h = evidence.syscalls["base"].get(job), evidence.syscalls["head"].get(job)
    if not b or not h:
        return None
    per_b, per_h = b.get("per_call", {}), h.get("per_call", {})
    moved = {name: per_h.get(name, 0.0) - per_b.get(name, 0.0) for name in sorted(set(per_b) | set(per_h))}
    moved = {name: d for name, d in moved.items() if d}
    total_b, total_h = sum(per_b.values()), sum(per_h.values())
    delta = (total_h / total_b - 1) if total_b else (float("inf") if total_h else 0.0)
    if not moved:
        return Finding(SYSCALLS, 0.0, False, False, "", "")
    text = ", ".join(f"{name} {d:+g}" for name, d in moved.items()) + " a call"
    exact = bool(b.get("exact")) and bool(h.get("exact"))
    decides = exact and total_h != total_b and not evidence.builds_differ
    return Finding(SYSCALLS, delta, decides, False, f"system calls: {text}" if decides else "",
                   f"syscalls {text}" + ("" if exact else " (not exact)"))


def findings(evidence: Evidence, job: Job, floor: float) -> dict[str, Finding]:
    """What each channel with measurements says of `job`, in CHANNELS order."""
    counts = _counts(evidence, job, floor)
    found = {COUNTS: counts, SYSCALLS: _syscalls(evidence, job), CYCLES: _cycles(evidence, job, floor, counts)}
    return {name: f for name, f in found.items() if f is not None}


def to_confirm(evidence: Evidence, jobs: list[Job], floor: float, jitter: int = 1) -> list[Job]:
    """The jobs to count in the `jitter`-th jittered valgrind process a side, each in DRAWS layout draws: in the
    first, every one whose first counts (or, counts flat, first simulated cycles) moved beyond the floor; in
    the next, up to count_test.MAX_PASSES, those whose test has not decided them, whose change clears the
    floor and whose p-value is within NEAR of the bar (noisy counts get more layouts)."""
    todo = []
    for job in jobs:
        if evidence.builds_differ:
            break
        had = min(len(processes(evidence.counts_again[side], job)) for side in ("base", "head"))
        if had > (jitter - 1) * DRAWS or jitter > MAX_PASSES:  # counted in this pass already (or an older one's)
            continue
        if jitter == 1:
            first = {side: evidence.counts[side].get(job) for side in ("base", "head")}
            cycles = {side: evidence.cycles[side].get(job) for side in ("base", "head")}
            kind = kind_of(evidence, job)
            moved = first["base"] and first["head"] and count_test(
                [first["base"]], [first["head"]], kind, floor).pending
            flat_memory = cycles["base"] and cycles["head"] and not moved and count_test(
                [cycles["base"]], [cycles["head"]], kind, floor).pending
            if moved or flat_memory:
                todo.append(job)
        else:
            found = [f for f in findings(evidence, job, floor).values() if f.channel in (COUNTS, CYCLES)]
            if any(not f.decides and abs(f.delta) >= floor and f.p_value <= NEAR for f in found) \
                    and not any(f.decides for f in found):
                todo.append(job)
    return todo

