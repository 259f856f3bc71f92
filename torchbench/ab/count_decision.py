"""The instruction-count test: did a row's counts move beyond what a commit that changes nothing it runs does?

The counts are the instructions of **the code itself**: outside code whose path follows memory addresses rather
than the code, the memory allocators (glibc's malloc, CPython's pymalloc) and CPython's type cache's misses,
with what they call (torchbench_core._callgrind_worker.dump_layout_driven). A commit that only adds an unused
function to the module a suite imports moves the heap and the interned names: with those instructions in, such
commits moved rows by up to 2.7-3.4% on three suites of 40 commits (by up to 14.6% in earlier pools), and
923-1,937 of a suite's 32,760 A/A row pairs past the 1% floor; the code itself by at most 0.08-0.39%, none past
it (evaluation/counts_noise_pool.py, counts_noise_pool-2026-12-07). What still moves between layouts in the code
itself is code whose own path follows addresses (a dict or set keyed by objects' identity: 1.1-1.9% between 8
layouts) and the interpreter's re-specialisation (a few tenths of a percent on a torch op whose setup makes new
lambdas), so the test keeps its layout draws:

1. **First process.** Each side counts every row once, in the default layout. A row whose counts moved by
   at least Policy.count_floor is a candidate; one that moved less decides nothing (and, below
   FIRST_MOVE of its kind, is "flat": wall time only). One whose counts doubled or halved (FIRST_CEILING) is
   decided there, without layout draws.
2. **Layout draws.** A candidate is counted again in DRAWS layout draws a side (the first valgrind process
   going on, or one whose layout is jittered after the imports, torchbench_core._callgrind_worker.
   _jitter_layout): before each draw after the first, a drawn set of objects is allocated and the case's
   objects are made again after them (_draw_layout), so that they land at other addresses, as after a
   commit. A row still near its bar (counts.NEAR) gets a second such process (MAX_PASSES).
3. **The test.** On each side's layout means (log counts: the first process and every draw), Student's t
   with the pooled variance between layouts (df = layouts - 2), plus the commit noise the draws do not
   show: COMMIT_RATIO[kind]**2 times that pooled variance (a commit moves a row about as far as its layouts
   do) and COMMIT_SD[kind]**2 (evaluation/counts_calibration.py). A row is decided when its change is at least
   the floor and p is at most the alert's level (Policy.deterministic_level: the deterministic channels' share
   of the suite's false-alert budget, Bonferroni over the suite's counted rows, about 4e-5 for 64 rows); the
   margin printed is the smallest change this row's noise lets the test decide. COUNT_ALPHA is the level of a
   test made outside a suite (the default of a direct call).

The rule's errors out of sample: docs/results.md#the-codes-own-counts-issue-61-2026-12-07 (the constants fitted
on the first 20 commits of a plain suite, einops 0.8.1's suite and a Timer-in-track_ suite, measured on their
other commits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BY_CALL", "COMMIT_RATIO", "COMMIT_SD", "COUNT_ALPHA", "CountDecision", "DRAWS", "FIRST_CEILING", "FIRST_MOVE", "JITTERS", "LABEL_ALPHA",
           "MAX_PASSES", "STATEMENT", "count_decision"]

STATEMENT, BY_CALL = "statement", "by call"  # a TimerSuite statement; an asv time_ method counted call by call
DRAWS = 8  # layout draws a jittered valgrind process counts a candidate in (collect_callgrind_many(draws))
MAX_PASSES = 2  # jittered processes a side at most: the second for a row whose test is near its bar (NEAR)
JITTERS = DRAWS  # the jittered layouts a side a candidate's test rests on after the first jittered process
WITH_FIRST = True  # the first (default-layout) process is one of the test's processes beside the draws
COUNT_ALPHA = 0.01  # the two-sided level of a test outside a suite (the alert's: Policy.deterministic_level)
LABEL_ALPHA = 0.05  # a row whose counts moved at this level is labelled compute (weights, not decisions)
# evaluation/counts_calibration.py on the first FIT_COMMITS (20) commits of each suite of
# evaluation/results/counts_noise_pool-2026-12-07 (the code's own counts; each commit's layouts drawn anew): the
# commit noise the draws do not show beyond COMMIT_RATIO's part (log sd: the smallest at which the A/A p-values
# of the commits with layout draws hold at 5% and 1% and the rule at the alert's level decides none of their A/A
# rows), and the 99th percentile of a first process's A/A move between adjacent commits, per kind of row (the
# largest over its suites: time_ methods counted call by call, the plain suite's and einops'; statements, the
# Timer-in-track_ suite's). Held out: each suite's commits after them. The fit: plain 0.0000 and 0.0008, einops
# 0.0004 and 0.0024, track 0.0002 and 0.0003 (evaluation/results/counts_calibration-2026-12-07.txt).
COMMIT_SD = {STATEMENT: 0.0002, BY_CALL: 0.0004}
# the part of the commit noise that grows with the row's own spread between layouts (sd between layouts
# times this): a row whose layouts move it far is one a commit moves far. Set, not fitted: the commit noise as
# large as the layouts' own spread (on the totals, the allocators' instructions in, a commit pair's excess
# variance regressed on the layouts' across rows read 0.26-0.90; fitted at 0.26 the rule decided 1-3 of 66
# held-out A/A suites of the plain suite, at 1.0 none)
COMMIT_RATIO = {STATEMENT: 1.0, BY_CALL: 1.0}
FIRST_MOVE = {STATEMENT: 0.0003, BY_CALL: 0.0024}
# A first process a side whose counts doubled or halved (|log| >= FIRST_CEILING) decides the row alone, without
# layout draws. Set on the totals (the allocators' instructions in), at five times their largest first move of
# identical code over 198,384 A/A row pairs of four suites (14.6%, the plain suite's torch.cat on 4 elements),
# held on 133,560 pairs recorded after it (14.8%). The code itself moved at most 0.39% between any two of
# 40 commits (einops' rearrange; 0.29% plain, 0.08% track), but the ceiling is not lowered to five times that:
# a dict keyed by objects' identity moved 1.1-1.9% between 8 layouts in the code itself
# (tests/test_callgrind_valgrind.py), which only its layout draws show. A change that large, a 3x
# slowdown (+200% counts), then needs no jittered process, whose valgrind start-up a short budget may not afford
# (evaluation/fresh_folder.py). Counts only: simulated cycles moved identical code by up to 0.29 (the plain
# suite's), so cycles keep their draws.
FIRST_CEILING = math.log(2.0)


@dataclass(frozen=True)
class CountDecision:
    """One row's counts test: the change (head / base - 1), the smallest change its noise lets the test
    decide (the margin), its p-value (1.0 on first processes alone), and what follows."""

    delta: float
    margin: float
    p_value: float
    processes: int  # a side's processes the test rests on (the fewer side's)
    moved: bool  # decided, or beyond FIRST_MOVE and the noise at LABEL_ALPHA (first processes: beyond FIRST_MOVE)
    decides: bool  # beyond the floor and the noise at COUNT_ALPHA, on jittered processes
    pending: bool  # a candidate that rests on first processes alone: count it in jittered ones


def _means(processes: list[list[float]]) -> np.ndarray:
    return np.log([float(np.mean(p)) for p in processes])


def count_decision(base: list[list[float]], head: list[list[float]], kind: str, floor: float, *,
                   commit_sd: float | None = None, commit_ratio: float | None = None,
                   alpha: float = COUNT_ALPHA, ceiling: float | None = None,
                   first_move: float | None = None) -> CountDecision | None:
    """The test of one row from each side's valgrind processes (the first, then any jittered ones), each a
    list of per-call counts (one per repeat); None where a side has none or a count is not positive.
    `commit_sd`, `commit_ratio`, `first_move`: the commit noise's constants and the largest first move of
    identical code a row may make and still be flat (default COMMIT_SD, COMMIT_RATIO and FIRST_MOVE of `kind`:
    the counts'; simulated cycles give theirs, channels.CYCLES_*).
    `ceiling` (instruction counts: FIRST_CEILING): on first processes alone, a move of at least this |log|
    decides (p-value 0: beyond anything identical code did in the pools), where any smaller one is pending."""
    if not base or not head or any(min(p) <= 0 for p in base + head):
        return None
    from scipy import stats

    if not WITH_FIRST and len(base) > 1 and len(head) > 1:
        base, head = base[1:], head[1:]
    mb, mh = _means(base), _means(head)
    d = float(mh.mean() - mb.mean())
    delta = math.expm1(d)
    n = min(len(mb), len(mh))
    sd = COMMIT_SD[kind] if commit_sd is None else commit_sd
    ratio = COMMIT_RATIO[kind] if commit_ratio is None else commit_ratio
    flat = FIRST_MOVE[kind] if first_move is None else first_move
    if n < 2:  # first processes: a candidate or not, nothing decided below the ceiling
        if ceiling is not None and abs(d) >= ceiling and abs(delta) >= floor:
            return CountDecision(delta, math.expm1(ceiling), 0.0, n, True, True, False)
        within = np.concatenate([np.log(p) - np.log(np.mean(p)) for p in base + head])
        moved = abs(d) >= max(flat, 2 * float(np.std(within)))
        return CountDecision(delta, math.inf, 1.0, n, moved, False, abs(d) >= floor)
    df = len(mb) + len(mh) - 2
    pooled = (float(np.sum((mb - mb.mean()) ** 2)) + float(np.sum((mh - mh.mean()) ** 2))) / df
    # the commit noise: a floor, and a part as large as the row's own spread between layouts times the ratio
    # (a row whose layouts move it far is one a commit moves far: evaluation/counts_calibration.py)
    se = math.sqrt(pooled * (1 / len(mb) + 1 / len(mh) + ratio ** 2) + sd ** 2)
    if se == 0:
        p = 0.0 if d else 1.0
    else:
        p = float(2 * stats.t.sf(abs(d) / se, df))
    margin = max(floor, math.expm1(float(stats.t.isf(alpha / 2, df)) * se))
    decides = abs(delta) >= floor and p <= alpha
    return CountDecision(delta, margin, p, n, decides or (abs(d) >= flat and p <= LABEL_ALPHA),
                         decides, False)
