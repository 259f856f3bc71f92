"""Which test compares a row's two sides at a look or at the final analysis: unpaired or paired by round.

Two tests are available (stats.compare, paired.compare_paired). Which one a
row gets is fixed by the design and the number of processes, never by which
gives the smaller p-value: the paired test only where the values are paired by
round (measured rounds, not result files), Policy.paired asks for it or the
rounds were duets (both processes at once: pairing is what they are for), and the
pairs are enough for its smallest p-value, 2 / 2**n, to reach the bar with
room (sequential.FLOOR_MARGIN). Whichever test a look uses, its p-value is
valid, so the looks' Bonferroni combination stays valid.

Both compare the *faster half* of each side's processes (or the rounds' ratios),
where the code's own speed shows; "unchanged" there says nothing of a change
that slows only some processes. `slow_processes_moved` tests the slower half
before a row is called unchanged.
"""

from __future__ import annotations

import numpy as np

from .. import paired, stats
from .evidence import Evidence, Job
from .options import Policy
from .sequential import FLOOR_MARGIN

__all__ = ["compare_row", "slow_processes_moved"]


def compare_row(evidence: Evidence, job: Job, policy: Policy, bar: float, confidence: float, *,
                with_mde: bool = True, excess: np.ndarray | None = None) -> stats.Comparison:
    """The row's comparison at this bar (its p-value resolved down to it) and interval level; `excess`, the
    suite's slow processes (stats.slow_excesses), holds the MDE of the unpaired test to its stated power."""
    if policy.paired or evidence.schedule == "duet":
        base, head = evidence.paired(job)
        if base and paired.smallest_paired_p(len(base)) * FLOOR_MARGIN <= bar:
            return paired.compare_paired(base, head, confidence=confidence, alpha=bar, power=policy.power,
                                         with_mde=with_mde)
    return stats.compare(evidence.values["base"][job], evidence.values["head"][job], confidence=confidence,
                         alpha=bar, power=policy.power, resamples=stats.resamples_for(bar, 1), with_mde=with_mde,
                         excess=excess)


def slow_processes_moved(evidence: Evidence, job: Job, policy: Policy) -> str:
    """Why a row whose faster half is within +-threshold may still not be called unchanged: its slower half
    of processes moved by at least the threshold, at p <= 1 - confidence (stats.slower_half). "" otherwise.
    Only ever turns "unchanged" into "inconclusive": it adds no alert, so it spends none of the suite's FDR."""
    base, head = evidence.values["base"].get(job, []), evidence.values["head"].get(job, [])
    if min(len(base), len(head)) < 3:
        return ""
    ratio, p = stats.slower_half(base, head)
    if p <= 1 - policy.confidence and abs(ratio - 1) >= policy.threshold:
        return (f"the faster half of processes is within +-{policy.threshold:.0%}, but the slower half moved "
                f"{ratio - 1:+.1%} (p={p:.2g}): some processes changed")
    return ""
