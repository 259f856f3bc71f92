"""Instruction counts as a channel of evidence: what they decide alone, and how they weigh the wall-time test.

A TimerSuite case is counted under valgrind (callgrind), COUNT_REPEATS times in
one process a side; the counts of identical code agree to about 0.05%. Counts
see compute (more Python bytecode, more dispatch, more arithmetic), not memory
or cache effects. Like PyTorch's own pull-request instruction-count benchmarks
(a per-benchmark noise margin, no wall time) and CodSpeed (simulated
instruction costs), a compute change is decided from one process a side:

* **compute change (decided by counts).** The head's counts differ from the
  base's by at least Policy.count_floor (1% by default) and by more than
  SPREAD_FACTOR times the repeats' own spread. Its error control is that
  margin: identical code moves its counts by about 0.05% between processes; the
  A/A validation measures the rate (evaluation/suite_validation.py). The wall
  time is still reported, and where its interval lies wholly on the other side
  of 1 the row is inconclusive: the counts do not explain the time.
* **everything else** goes to the wall-time test. Its rows are weighted for
  weighted Benjamini-Hochberg (Genovese, Roeder and Wasserman 2006: reject
  p_i <= w_i k q / m, weights averaging 1, fixed before the wall-time p-values are
  seen): a row whose counts moved a little (beyond their noise, below the floor)
  or that has no counts weighs PRIOR_WEIGHT[...] = 1, a row whose counts are flat
  a quarter of that: a wall-time change without a compute change is more often
  the machine than the code, so it must clear a stricter bar.

The suite's false alerts are then of two kinds, stated apart: among the
wall-time rows, a false discovery rate of at most q (Benjamini-Hochberg); and
each count-decided row's own chance of a false decision, which is the counts'
A/A rate (measured: 0 count-decided rows of 268 A/A rows,
evaluation/suite_validation.py), not a share of q.

Where the two sides are different builds (an upgrade verdict between torch
releases), counts move with the build as well as the code (the README's
upgrade run: counts said *improved* while the wall time was +2.4%), so they
are advisory: they label the row ("counts advisory") and decide and weigh
nothing; the wall time decides every row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .evidence import Evidence, Job

__all__ = ["ADVISORY", "COMPUTE", "CountChange", "NO_COUNTS", "PRIOR_WEIGHT", "SPREAD_FACTOR", "WALL_ONLY",
           "count_change", "no_counts", "weights"]

COMPUTE = "compute"
WALL_ONLY = "wall time only (memory, cache, or noise)"
NO_COUNTS = "wall time (no counts)"
SPREAD_FACTOR = 5  # a count change beyond this many times the repeats' spread is not noise
NOISE_FLOOR = 0.001  # nor one beyond 0.1% (the label's bar; deciding alone needs Policy.count_floor)
# A time_ method counted call by call: measured on an A/A pair of a plain 42-row suite
# (evaluation/plain_suite_counts.py, 2026-11-25), the two sides' counts of 4 identical rows differed by
# 1.3-2.7%, beyond their repeats' spread (two processes of one side agreed to 0.01%: the difference follows
# the side's process, its plan of calls per run and what ran before). Until that is made repeatable, such
# counts label and weigh a row only beyond this floor, and never decide it alone.
BY_CALL_NOISE_FLOOR = 0.03
PRIOR_WEIGHT = {COMPUTE: 1.0, NO_COUNTS: 1.0, WALL_ONLY: 0.25}
ADVISORY = "counts advisory"  # in the label of a row whose sides are different builds (weighs as NO_COUNTS)


@dataclass(frozen=True)
class CountChange:
    """One row's instruction counts: each side's median, the change, and what it means."""

    base: float
    head: float
    delta: float  # head / base - 1
    margin: float  # the noise margin it was held against
    label: str  # COMPUTE when beyond the noise, else WALL_ONLY
    decides: bool  # beyond count_floor too: the counts decide the row alone


def count_change(evidence: Evidence, job: Job, count_floor: float) -> CountChange | None:
    """The counts of `job` on both sides, held against their noise; None without counts on a side."""
    base, head = evidence.counts["base"].get(job), evidence.counts["head"].get(job)
    if not base or not head:
        return None
    mb, mh = float(np.median(base)), float(np.median(head))
    if mb <= 0:
        return None
    spread = max((max(v) - min(v)) / max(float(np.median(v)), 1e-300) for v in (base, head))
    delta = mh / mb - 1
    info = evidence.jobs.get(job)
    by_call = bool(info and info.by_call)
    margin = max(SPREAD_FACTOR * spread, BY_CALL_NOISE_FLOOR if by_call else NOISE_FLOOR)
    moved = abs(delta) > margin
    label = COMPUTE if moved else WALL_ONLY
    if evidence.builds_differ:  # the build moves counts too: a label to read, not evidence to weigh
        return CountChange(mb, mh, delta, margin, f"{label}; {ADVISORY} ({evidence.builds_differ})", False)
    return CountChange(mb, mh, delta, margin, label, moved and abs(delta) >= count_floor and not by_call)


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
