"""How long each benchmark measures in each process: time goes where the variance is.

A process's value of a benchmark is the median of k timed blocks. Its variance
is the between-process part plus the within-process part over k:

    Var = s_B^2 + (pi/2) s_W^2 / k   (pi/2: the median of k near-normal values)

and a process costs c0 + c1 k seconds for the benchmark: c0 its set-up, block
sizing and share of the process start-up (interpreter, torch, the suite's
imports), c1 a block. The verdict compares n processes a side, so its variance
per second of measuring is (s_B^2 + (pi/2) s_W^2 / k)(c0 + c1 k) / n^2 per n,
minimal at the classic two-stage sampling optimum (Cochran, Sampling
Techniques, ch. 10):

    k* = sqrt((c0 / c1) ((pi/2) s_W^2 / s_B^2))

On this machine whole processes move (s_B is large) while blocks within a
process agree, so k* is usually small: fewer blocks a process, more processes
a minute. Estimated once, after ESTIMATE_AFTER rounds, from both sides' values
pooled (each side's run time is the same, so base and head stay exchangeable
within every round), then kept. Bounded to [MIN_RUN_TIME, MAX_RUN_TIME].
Written here: the allocation rule is two lines of algebra on estimates no
library computes for this layout of data.
"""

from __future__ import annotations

import math

import numpy as np

from .evidence import SIDES, Evidence, Job

__all__ = ["ESTIMATE_AFTER", "MAX_RUN_TIME", "MIN_RUN_TIME", "allocate", "run_time_for"]

ESTIMATE_AFTER = 3  # rounds of the default run time before the allocation is estimated
MIN_RUN_TIME, MAX_RUN_TIME = 0.05, 1.0  # seconds of blocks a process: at least ~5 blocks for the median


def run_time_for(evidence: Evidence, job: Job, start_up: float) -> float | None:
    """The seconds of blocks a process that minimise the verdict's variance per second (None: too little
    data, or a benchmark without blocks). start_up: a process's start-up seconds shared per benchmark."""
    within = [w for s in SIDES for w in evidence.within[s].get(job, [])]
    values = [evidence.values[s].get(job, []) for s in SIDES]
    elapsed = [evidence.seconds[s].get(job) for s in SIDES]
    if len(within) < 4 or min(len(v) for v in values) < 3 or None in elapsed:
        return None
    k = float(np.mean([n for n, _, _ in within]))
    s_w2 = float(np.mean([v for _, v, _ in within]))
    timed = float(np.mean([t for _, _, t in within]))  # seconds of blocks a process
    # between-process variance of the per-process values (log scale), each side apart, minus the within part
    total = float(np.mean([np.var(np.log(v), ddof=1) for v in values]))
    s_b2 = max(total - math.pi / 2 * s_w2 / k, 1e-12)
    per_process = sum(elapsed) / sum(len(v) for v in values)  # seconds a process spent on the job
    c1 = timed / k
    c0 = max(per_process - timed, 0.0) + start_up
    k_star = math.sqrt(c0 / c1 * (math.pi / 2) * s_w2 / s_b2)
    return min(max(k_star * c1, MIN_RUN_TIME), MAX_RUN_TIME)


def allocate(evidence: Evidence, jobs: list[Job]) -> None:
    """Set evidence.run_time for the jobs that have blocks, once the rounds allow an estimate."""
    if evidence.rounds != ESTIMATE_AFTER or not evidence.process_seconds:
        return
    processes = len(evidence.process_seconds)
    measured = sum(sum(evidence.seconds[s].values()) for s in SIDES)
    start_up = max(sum(evidence.process_seconds) - measured, 0.0) / processes / max(len(jobs), 1)
    for job in jobs:
        chosen = run_time_for(evidence, job, start_up)
        if chosen is not None:
            evidence.run_time[job] = chosen
