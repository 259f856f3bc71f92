"""Instruction counts as a channel of evidence: what they decide alone, and how they weigh the wall-time test.

Every countable row (a TimerSuite statement, an asv `time_` method counted call
by call, a method that times with a Timer) is counted under valgrind
(callgrind), in one process a side: twice where the two runs agree within
asv_worker.REPEATS_AGREE, else COUNT_REPEATS times. Counts see compute
(more Python bytecode, more dispatch, more arithmetic), not memory or cache
effects. Like PyTorch's own pull-request instruction-count benchmarks (a
per-benchmark noise margin, no wall time) and CodSpeed (simulated instruction
costs), a compute change is decided from counts, not from many timed
processes:

* **compute change (decided by counts).** count_decision.py's test: a row whose
  first process a side moved by at least Policy.count_floor (1% by default)
  is counted again in one valgrind process a side in count_decision.DRAWS layout
  draws (`pending` -> pair.py's jittered passes; a second such process for a
  row near its bar), and is decided when
  the change clears the floor and its own noise between layouts plus the
  commit noise calibrated on a pool of identical code at many commits
  (at Policy.deterministic_level; the margin stated is the smallest change
  that row's noise lets the test decide). A row whose jittered processes fail is decided by
  its wall time. How the verdict combines the counts with the other channels,
  the wall time's veto (opposite_p at VETO_LEVEL) included: verdict.py.
* **weights for the wall-time test.** The rows the counts do not decide are
  weighted for weighted Benjamini-Hochberg (Genovese, Roeder and Wasserman
  2006: reject p_i <= w_i k q / m, weights averaging 1, fixed before the
  wall-time p-values are seen): a row whose counts moved a little (beyond their noise, below the floor)
  or that has no counts weighs PRIOR_WEIGHT[...] = 1, a row whose counts are flat
  a quarter of that: a wall-time change without a compute change is more often
  the machine than the code, so it must clear a stricter bar.

The noise (evaluation/counts_noise_pool.py, 2026-11-27: the example's 69-row
TimerSuite and a 42-row plain asv suite, each at a chain of commits that add
one unused helper each to the module the suite imports):
  * between valgrind processes of one commit and layout: none, to the
    instruction;
  * between commits: torch-op rows moved by up to 2.8% (statements) and 11.2%
    (`time_` methods), pure-Python rows by tenths of a percent: the code's
    layout in memory, which a commit changes and no second process of the
    same commit sees. The earlier rule (5 x the repeats' spread, at least
    0.6%, from three commits whose moves stayed under 0.53%) decided such a
    move as a change; the jittered processes see it (count_decision.py);
  * repeats inside a process spread by 0.1% (median) to 1.4%.
The rule's A/A rate and power, replayed on that pool beside the earlier rule:
evaluation/counts_calibration.py (docs/results.md).

An asv `time_` method is counted call by call, its calls per counted run
planned once and shared by every commit (counts_cache.CountPlans): with a
plan made by each side, 8 of 42 identical rows of a plain suite differed by
0.6-3.0% between an A/A pair's sides; with one plan, all 42 agreed to the
instruction (evaluation/plain_suite_counts.py).

The suite's false alerts, in one account: Policy.fdr is split in advance
between the wall time (its weighted Benjamini-Hochberg at Policy.wall_fdr) and
the deterministic channels (each count or cycles test at
Policy.deterministic_level, Bonferroni over the suite's counted rows: every
counted row, candidate or not, since a row's chance to become a candidate
and pass is at most the test's level). Where no row changed, the chance that
any of them ends the suite in "regression" is at most their sum, Policy.fdr.

Where the two sides are different builds (an upgrade verdict between torch
releases), counts move with the build as well as the code: between torch
2.13.0 and 2.14.1, the same code's counts moved beyond margin and floor in 19
of 69 rows (up to 4.2%; counts_pool.py), and in the README's upgrade run the
counts said *improved* while the wall time was +2.4%. So they are advisory:
they label the row ("counts advisory") and decide and weigh nothing; the wall
time decides every row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import stats
from .count_decision import BY_CALL, FIRST_CEILING, STATEMENT, count_decision
from .evidence import Evidence, Job

__all__ = ["ADVISORY", "COMPUTE", "CountChange", "NO_COUNTS", "PRIOR_WEIGHT", "VETO_LEVEL", "WALL_ONLY",
           "NEAR", "VETO_PROCESSES", "count_change", "kind_of", "no_counts", "opposite_p", "processes",
           "weights"]

COMPUTE = "compute"
WALL_ONLY = "wall time only (memory, cache, or noise)"
NO_COUNTS = "wall time (no counts)"
PRIOR_WEIGHT = {COMPUTE: 1.0, NO_COUNTS: 1.0, WALL_ONLY: 0.25}
ADVISORY = "counts advisory"  # in the label of a row whose sides are different builds (weighs as NO_COUNTS)
# A deterministic channel never decides a row whose wall time moved the other way at this one-sided level
# (opposite_p): the stated false veto of a change whose wall time does not move against it is at most this
VETO_LEVEL = 0.05
VETO_TRIM = 0.2  # Yuen's trimmed means, below VETO_PROCESSES a side (opposite_p)
# a row a deterministic channel decides stays in the rounds until it has this many processes a side
# (rounds._counts_stop), where the veto is the permutation test of the faster halves (opposite_p)
VETO_PROCESSES = 6
NEAR = 0.2  # a row whose test is this near its bar after a jittered process gets another (count_decision.MAX_PASSES)


@dataclass(frozen=True)
class CountChange:
    """One row's instruction counts: each side's median, the change, and what it means."""

    base: float
    head: float
    delta: float  # head / base - 1
    margin: float  # the smallest change the test decides at this row's noise (inf on first processes alone)
    label: str  # COMPUTE when beyond the noise, else WALL_ONLY
    decides: bool  # beyond count_floor and the noise, on jittered processes: the counts decide the row alone
    pending: bool = False  # beyond the floor on first processes alone: count it in jittered processes first
    p_value: float = 1.0  # the count test's (count_decision.py); 1.0 on first processes alone


def processes(store: dict, job: Job) -> list[list[float]]:
    """A side's jittered processes of `job` in evidence.counts_again's side `store`: a list of per-process
    counts (an older record's one process, a flat list, as one)."""
    found = store.get(job) or []
    return [found] if found and not isinstance(found[0], list) else [p for p in found if p]


def _processes(evidence: Evidence, side: str, job: Job) -> list[list[float]]:
    """A side's counts of `job`, one list per valgrind process (the first, then the jittered ones)."""
    first = evidence.counts[side].get(job)
    return ([first] if first else []) + processes(evidence.counts_again[side], job)


def kind_of(evidence: Evidence, job: Job) -> str:
    """The kind of row the count test's constants are calibrated for."""
    info = evidence.jobs.get(job)
    return BY_CALL if info is not None and info.by_call else STATEMENT


def count_change(evidence: Evidence, job: Job, count_floor: float, level: float) -> CountChange | None:
    """The counts of `job` on both sides, held against their noise (count_decision.py), decided at `level`
    (the alert's: channels.deterministic_level); None without counts on a side."""
    runs = {side: _processes(evidence, side, job) for side in ("base", "head")}
    found = count_decision(runs["base"], runs["head"], kind_of(evidence, job), count_floor, alpha=level,
                           ceiling=FIRST_CEILING)
    if found is None:
        return None
    mb, mh = (float(np.median(np.concatenate(runs[side]))) for side in ("base", "head"))
    label = COMPUTE if found.moved else WALL_ONLY
    if evidence.builds_differ:  # the build moves counts too: a label to read, not evidence to weigh
        return CountChange(mb, mh, found.delta, found.margin, f"{label}; {ADVISORY} ({evidence.builds_differ})",
                           False, p_value=found.p_value)
    return CountChange(mb, mh, found.delta, found.margin, label, found.decides, found.pending, found.p_value)


def opposite_p(base: list[float], head: list[float], delta: float) -> float:
    """The one-sided p-value that the wall time moved against a deterministic change of sign `delta` (head
    faster where the counts rose), on the processes' log times. From VETO_PROCESSES a side: the wall time's
    own unpaired test, the permutation test of the faster halves' means (stats.permutation_p), whose level
    holds whatever the slow processes and which they cannot defeat (one slow process in a side is cut off
    with the slower half); with fewer (a run whose budget ended first): Yuen's trimmed t-test (Welch's, on
    20%-trimmed means, scipy.stats.ttest_ind(trim=VETO_TRIM)), which speaks from 2 a side where no
    relabelling can, but trims nothing below 5 a side, so that one slow process can defeat it (at 2-4 a side
    and a tenth of processes slow it vetoed 48-63% of -10% moves at sd 1%, the permutation test at 6 a side
    98%: tests/test_channels.py). 1.0 where it cannot be computed (fewer than 2 processes a side, or no spread
    at all)."""
    from scipy import stats as scipy_stats

    if min(len(base), len(head)) < 2 or delta == 0:
        return 1.0
    if min(len(base), len(head)) >= VETO_PROCESSES:
        b, h = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(head, dtype=float))
        against = stats.faster_half_mean(h) - stats.faster_half_mean(b)
        if against == 0 or (against > 0) == (delta > 0):
            return 1.0
        return stats.permutation_p(base, head) / 2
    with np.errstate(all="ignore"):
        p = scipy_stats.ttest_ind(np.log(head), np.log(base), equal_var=False, trim=VETO_TRIM,
                                  alternative="less" if delta > 0 else "greater").pvalue
    return float(p) if np.isfinite(p) else 1.0


def no_counts(reason: str) -> str:
    """The label of a row without counts, with the reason ("not countable: ...", "counting failed: ...",
    "no counts: --no-counts"): never "no counts" alone."""
    return f"wall time ({reason})"


def weights(labels: list[str]) -> list[float]:
    """Weighted BH's weights for rows with these labels: PRIOR_WEIGHT (a row without counts, whatever the
    reason, as NO_COUNTS), scaled to average 1."""
    raw = [PRIOR_WEIGHT.get(label, PRIOR_WEIGHT[NO_COUNTS]) for label in labels]
    total = sum(raw)
    return [len(raw) * w / total for w in raw] if total else []
