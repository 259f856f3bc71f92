"""The sequential design of an A/B comparison: when to look, what a look may decide, and each decision's error.

Rounds come in one at a time; looking at every round and stopping at the first
small p-value would multiply the false alarms. So the looks are few and planned
before any wall time is seen, and each gets a share of the error fixed in
advance (an alpha-spending plan in its simplest, Bonferroni form):

* **changed.** A row's p-value is the combination over its looks,
  p_row = min_k p_k / s_k, where s_k is the look's share: INTERIM_SHARE split
  evenly over the planned interim looks, the rest for the final analysis. Under
  no change P(p_row <= t) <= sum_k s_k t = t whatever the correlation between
  looks (the union bound), so p_row is a valid p-value, and the suite's rows go
  through weighted Benjamini-Hochberg (verdict.py, weights from the counts). A
  look stops a row as changed only when p_k / s_k <= w q / m: weighted BH
  rejects such a row whatever the other rows do, so an early stop never
  disagrees with the final decision.
* **unchanged.** An equivalence decision (two one-sided tests, through an
  interval inside +-threshold): at the final analysis the reported interval
  (Policy.confidence); at each of the K interim looks the interval at level
  1 - (1 - confidence) / K. The chance of calling a row unchanged although it
  changed by the threshold or more is then at most (1 - confidence) / 2 at the
  final plus (1 - confidence) / 2 over the looks: 1 - confidence, 5% by default.
* **No share is lost to a look that never came.** The looks are planned from
  the rounds the budget allows at the rate the first round ran
  (`plan(expected_rounds=...)`); where the budget still ends the rounds
  before a planned look, that look's share goes to the final analysis
  (`Design.after`): the shares spent still add up to the row's alpha, and
  which looks happen depends on the clock, not on any p-value.
* **The first look can stop.** With n processes a side the smallest two-sided
  permutation p-value is 2 / C(2n, n) (every head process slower than every
  base one): 0.0022 at 6 a side. A first look whose bar is below that could
  never stop a row as changed. So the first look is the first number of rounds
  (at least min_rounds) whose smallest p-value is below half its bar, and the
  later looks double it. At q = 0.01 that is 9 rounds for 6 rows, 11 for 60 to
  118 rows, 12 for 500.

Rows that instruction counts decide (counts.py) need no look: they leave at the
first look, with the wall time measured so far for their reported ratio.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

__all__ = ["Design", "INTERIM_SHARE", "LOOK_GROWTH", "fewest_processes", "fixed", "plan", "smallest_p"]

INTERIM_SHARE = 0.5  # of each row's alpha, spent over the interim looks; the rest at the final analysis
LOOK_GROWTH = 2  # each interim look after the first doubles the rounds
FLOOR_MARGIN = 2  # the first look's smallest p-value is at most half its bar


def smallest_p(n: int) -> float:
    """The smallest two-sided permutation p-value of n processes a side (perfect separation)."""
    return min(1.0, 2 / math.comb(2 * n, n))


def fewest_processes(bar: float) -> int:
    """The fewest processes a side (at least 2) whose smallest p-value is at or below `bar`."""
    n = 2
    while smallest_p(n) > bar and n < 10_000:
        n += 1
    return n


@dataclass(frozen=True)
class Design:
    """The planned looks of one comparison and the shares of error each may spend."""

    looks: tuple[int, ...]  # rounds after which an interim look happens (empty: a fixed-sample comparison)
    m: int  # rows in the wall-time family (Benjamini-Hochberg's m)
    fdr: float
    confidence: float
    # how many of the planned looks happened, once the rounds are over (None: not known yet, as at the
    # plan): the shares of looks that never came go to the final analysis
    taken: int | None = None

    @property
    def look_share(self) -> float:
        """s_k: the share of a row's alpha each interim look spends."""
        return INTERIM_SHARE / len(self.looks) if self.looks else 0.0

    @property
    def final_share(self) -> float:
        """The final analysis's share: what the looks taken did not spend (before the rounds end, as if every
        planned look happens)."""
        if not self.looks:
            return 1.0
        taken = len(self.looks) if self.taken is None else min(self.taken, len(self.looks))
        return 1 - self.look_share * taken

    def after(self, rounds: int) -> "Design":
        """This design once `rounds` rounds have run: the looks at or before them taken, the rest unspent."""
        return replace(self, taken=sum(1 for look in self.looks if look <= rounds))

    def changed_bar(self, weight: float) -> float:
        """The p-value at an interim look that stops a row of this weight as changed."""
        return self.look_share * weight * self.fdr / max(self.m, 1)

    def final_bar(self, weight: float) -> float:
        """The p-value a lone changed row needs at the final analysis (its minimum detectable effect's alpha)."""
        return self.final_share * weight * self.fdr / max(self.m, 1)

    @property
    def interim_confidence(self) -> float:
        """The level of the interval that must lie inside +-threshold for 'unchanged' at an interim look."""
        return 1 - (1 - self.confidence) / max(len(self.looks), 1)

    def combined_p(self, final_p: float | None, interim_ps: list[float]) -> float:
        """p_row: the Bonferroni combination of a row's p-values over the looks it had."""
        candidates = [p / self.look_share for p in interim_ps] if self.looks else []
        if final_p is not None:
            candidates.append(final_p / self.final_share)
        return min([1.0, *candidates])

    def reachable(self, weight: float) -> int:
        """The fewest processes a side with which a row of this weight can reach its final bar at all
        (smallest_p at or below it): rounds must not end before (a deadline that stopped them at 6 for 6
        rows, whose final bar is 8.3e-4 while 6 a side cannot go below 2.2e-3, left a perfectly separated
        +10% change inconclusive). One bar for planning and deciding (issue 51): the bar is the one the
        verdict would use were the rounds to end at n, `after(n).final_bar` (the looks before n taken, the
        shares of the others returned to the final analysis), not the bar as if every planned look came."""
        n = 2
        while smallest_p(n) > self.after(n).final_bar(weight) and n < 10_000:
            n += 1
        return n

    def to_dict(self) -> dict:
        return {**asdict(self), "look_share": self.look_share, "final_share": self.final_share}


def fixed(m: int, fdr: float, confidence: float) -> Design:
    """One analysis at the end (results read from files; a replay): the whole alpha at the final look."""
    return Design((), m, fdr, confidence)


def plan(m: int, fdr: float, confidence: float, min_rounds: int, max_rounds: int,
         expected_rounds: int | None = None) -> Design:
    """The looks for a suite of M rows: the first where a stop is possible, then doubling, below max_rounds,
    or below expected_rounds where the budget is expected to end the rounds sooner."""
    if expected_rounds is not None:
        max_rounds = max(2, min(max_rounds, expected_rounds))
    first = max(min_rounds, 2)
    while first < max_rounds:
        looks = [first]
        while looks[-1] * LOOK_GROWTH < max_rounds:
            looks.append(looks[-1] * LOOK_GROWTH)
        design = Design(tuple(looks), m, fdr, confidence)
        if smallest_p(first) * FLOOR_MARGIN <= design.changed_bar(1.0):
            return design
        first += 1
    return fixed(m, fdr, confidence)  # max_rounds too few for any look to stop: only the final analysis
