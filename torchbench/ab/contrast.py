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
that slows only some processes. The slower half is tested before a row is
called unchanged: across the suite's rows with its own error budget
(`slow_halves`, Benjamini-Hochberg at 1 - confidence; `slow_processes_moved`
at an interim look, Bonferroni).
"""

from __future__ import annotations


from .. import paired, stats
from .evidence import Evidence, Job
from .options import Policy
from .sequential import FLOOR_MARGIN

__all__ = ["compare_row", "slow_halves", "slow_processes_moved"]


def compare_row(evidence: Evidence, job: Job, policy: Policy, bar: float, confidence: float, *,
                with_mde: bool = True, noise: stats.SuiteNoise | None = None) -> stats.Comparison:
    """The row's comparison at this bar (its p-value resolved down to it) and interval level; `noise`, the
    suite's processes (stats.SuiteNoise: the slow excesses and the residuals the rule's power is simulated
    from), holds the MDE of the unpaired test to its stated power."""
    if policy.paired or evidence.wall_test() == "paired":
        base, head = evidence.paired(job, evidence.wall_design())
        if base and paired.smallest_paired_p(len(base)) * FLOOR_MARGIN <= bar:
            return paired.compare_paired(base, head, confidence=confidence, alpha=bar, power=policy.power,
                                         with_mde=with_mde, floor=policy.floor)
    base, head = evidence.wall_values(job)
    return stats.compare(base, head, confidence=confidence, alpha=bar, power=policy.power,
                         resamples=stats.resamples_for(bar, 1), with_mde=with_mde, floor=policy.floor, noise=noise)


def _slower_half(evidence: Evidence, job: Job, resamples: int) -> tuple[float, float] | None:
    base, head = evidence.wall_values(job)
    if min(len(base), len(head)) < 3:
        return None
    return stats.slower_half(base, head, resamples=resamples)


def _why(ratio: float, p: float, policy: Policy) -> str:
    return (f"the faster half of processes is within +-{policy.threshold:.0%}, but the slower half moved "
            f"{ratio - 1:+.1%} (p={p:.2g}): some processes changed")


def slow_processes_moved(evidence: Evidence, job: Job, policy: Policy, family: int = 1) -> str:
    """At an interim look: why a row whose faster half is within +-threshold may not stop as unchanged yet: its
    slower half of processes moved by at least the threshold at p <= (1 - confidence) / family (Bonferroni
    over the suite's rows: the check's own budget, as `slow_halves` spends it at the final analysis). ""
    otherwise. Only ever keeps a row from "unchanged": it adds no alert, so it spends none of the FDR."""
    level = (1 - policy.confidence) / max(family, 1)
    found = _slower_half(evidence, job, stats.resamples_for(1 - policy.confidence, family))
    if found is not None and found[1] <= level and abs(found[0] - 1) >= policy.threshold:
        return _why(*found, policy)
    return ""


def slow_halves(evidence_of: list[tuple[Evidence, Job]], unchanged: list[bool], policy: Policy) -> list[str]:
    """At the final analysis: for each of the suite's wall-time rows (evidence, job), why it may not be called
    unchanged although its faster half is within +-threshold ("" where it may, or where it is not unchanged).

    The slower half's test (stats.slower_half) of every row in the family, then Benjamini-Hochberg at
    1 - confidence across them (statsmodels, stats.fdr): its own error budget across rows, apart from the
    alert's FDR (it adds no alert). Under no change in any row the chance that any row of the suite is held
    back is then at most 1 - confidence, 5%, whatever the suite's size; tested per row at 1 - confidence (as
    before issue 51), 4.2% of identical rows were held back at 24 a side, and about 93% of 60-row A/A suites
    could not end "no regression". The family is every wall-time row, fixed before the data, not only those
    whose faster half came out unchanged."""
    resamples = stats.resamples_for(1 - policy.confidence, len(evidence_of))
    found = [_slower_half(evidence, job, resamples) for evidence, job in evidence_of]
    tested = [i for i, f in enumerate(found) if f is not None]
    rejected = dict(zip(tested, stats.fdr([found[i][1] for i in tested], 1 - policy.confidence)))
    return [_why(*found[i], policy) if unchanged[i] and rejected.get(i) and abs(found[i][0] - 1) >= policy.threshold
            else "" for i in range(len(evidence_of))]
