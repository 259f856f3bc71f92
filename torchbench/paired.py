"""The paired comparison of a round's two processes: Wilcoxon's signed-rank test on their log ratios.

A round runs one base and one head process, in an order drawn at random for
each round (ab/rounds.py). The load of the machine at that moment moves both
alike (measured on the example's pool: the two processes of a round correlate),
so the round's log ratio d = log(head) - log(base) carries the change without
the round's own luck. Because the order inside a round is random, under no
change d is symmetric about 0 by design, whatever the machine does: that is
all the signed-rank test assumes, so its p-value is exact.

* effect: the Hodges-Lehmann estimate, the median of the Walsh averages
  (d_i + d_j) / 2, i <= j: a process in the slow tail moves it by one rank;
* its interval: the signed-rank test inverted under a shift model (Walsh
  averages between the test's critical ranks), exact coverage for any
  continuous symmetric d, and consistent with the test (it excludes 0 exactly
  when the two-sided p is at most 1 - confidence);
* the test: the exact null distribution of the signed-rank sum W+, for any n;
* the minimum detectable effect: simulated from this test itself (the
  centred differences resampled with random signs, shifted until POWER of the
  draws reach the bar), infinite where the smallest attainable p-value,
  2 / 2**n, is above the bar.

The exact distribution is written here rather than taken from scipy: scipy's
`wilcoxon` is exact only up to 50 pairs and does not expose the distribution
that the interval and the simulated power need. tests/test_paired.py checks its
p-values equal scipy's exact ones.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from .stats import Comparison

__all__ = ["compare_paired", "signed_rank_p", "smallest_paired_p", "walsh_interval", "walsh_medians", "MDE_DRAWS"]

MDE_DRAWS = 400  # resampled rounds per effect size tried when the minimum detectable effect is simulated
_MAX_LOG_EFFECT = math.log(16.0)  # the largest effect the simulation tries (beyond: infinite)


def smallest_paired_p(n: int) -> float:
    """The smallest two-sided signed-rank p-value of n pairs: every difference of one sign."""
    return min(1.0, 2.0 / 2.0 ** n) if n > 0 else 1.0


@functools.lru_cache(maxsize=256)
def _cdf(n: int) -> np.ndarray:
    """P(W+ <= w) for w = 0 .. n(n+1)/2 under no change: each rank's sign a fair coin (dynamic programming
    over the ranks, in probabilities, so any n works in float64)."""
    dist = np.zeros(n * (n + 1) // 2 + 1)
    dist[0] = 1.0
    top = 0
    for r in range(1, n + 1):
        shifted = dist[: top + 1].copy()
        dist[: top + 1] *= 0.5
        dist[r: r + top + 1] += 0.5 * shifted
        top += r
    return np.minimum(np.cumsum(dist), 1.0)


def _p_from_w(w: np.ndarray, n: int) -> np.ndarray:
    """Two-sided p-values of signed-rank sums (tied ranks give half-integers: each tail taken conservatively)."""
    cdf = _cdf(n)
    lower = cdf[np.clip(np.ceil(w).astype(int), 0, len(cdf) - 1)]  # P(W <= w)
    below = np.floor(w).astype(int) - 1
    upper = 1.0 - np.where(below >= 0, cdf[np.clip(below, 0, len(cdf) - 1)], 0.0)  # P(W >= w)
    return np.minimum(1.0, 2.0 * np.minimum(lower, upper))


def _w_plus(d: np.ndarray) -> np.ndarray:
    """W+ of each row of d: the sum of the ranks of |d| (ties averaged) where d > 0."""
    from scipy.stats import rankdata

    ranks = rankdata(np.abs(d), axis=-1)
    return np.sum(ranks * (d > 0), axis=-1)


def _nonzero(d: Sequence[float]) -> np.ndarray:
    d = np.asarray(d, dtype=float)
    return d[d != 0]  # Wilcoxon's rule: a round whose two processes tie carries no sign


def signed_rank_p(d: Sequence[float]) -> float:
    """The exact two-sided signed-rank p-value of the differences d (zeros dropped)."""
    d = _nonzero(d)
    if len(d) == 0:
        return 1.0
    return float(_p_from_w(np.asarray([_w_plus(d)]), len(d))[0])


def _critical_rank(n: int, confidence: float) -> int:
    """k: the interval runs from the k-th smallest to the k-th largest Walsh average, the largest k with
    P(W+ <= k - 1) <= (1 - confidence) / 2 (0: no finite interval at this n)."""
    cdf = _cdf(n)
    return int(np.searchsorted(cdf, (1 - confidence) / 2, side="right"))


def _walsh(d: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(len(d))
    return np.sort((d[i] + d[j]) / 2)


def walsh_medians(draws: np.ndarray) -> np.ndarray:
    """The paired test's estimate (the median of the Walsh averages, as compare_paired states it) of each row
    of `draws` (rows of rounds' log ratios)."""
    i, j = np.triu_indices(draws.shape[-1])
    return np.median((draws[..., i] + draws[..., j]) / 2, axis=-1)


def walsh_interval(d: Sequence[float], confidence: float) -> tuple[float, float]:
    """The signed-rank test's interval for the shift of d (log scale): -inf / inf where too few pairs."""
    d = _nonzero(d)
    k = _critical_rank(len(d), confidence) if len(d) else 0
    if k < 1:
        return -math.inf, math.inf
    walsh = _walsh(d)
    return float(walsh[k - 1]), float(walsh[len(walsh) - k])


def _power(residuals: np.ndarray, shift: float, alpha: float, rng_seed: int, floor: float = 0.0) -> float:
    """The share of resampled rounds (residuals drawn with replacement, random signs, plus `shift`) that the
    verdict's rule flags: signed-rank p-value at most alpha and, where `floor` > 0, the estimate (the Walsh
    averages' median, as compare_paired states it) beyond the floor."""
    rng = np.random.default_rng(rng_seed)
    n = len(residuals)
    draws = residuals[rng.integers(0, n, (MDE_DRAWS, n))] * rng.choice((-1.0, 1.0), (MDE_DRAWS, n)) + shift
    found = _p_from_w(_w_plus(draws), n) <= alpha
    if floor > 0:
        found &= np.abs(walsh_medians(draws)) >= math.log1p(floor)
    return float(np.mean(found))


def _simulated_mde(d: np.ndarray, centre: float, alpha: float, power: float, floor: float = 0.0) -> float:
    """The smallest shift (log scale) the test detects with probability `power` at `alpha`, by bisection
    over shifts on resampled rounds (the same draws for every shift, so power rises with the shift)."""
    if smallest_paired_p(len(d)) > alpha:
        return math.inf
    residuals = d - centre
    if not np.any(residuals):
        return 0.0  # identical differences: any shift is seen
    if _power(residuals, _MAX_LOG_EFFECT, alpha, 0, floor) < power:
        return math.inf
    low, high = 0.0, _MAX_LOG_EFFECT
    while high - low > 1e-3 * max(high, 1e-3):
        mid = (low + high) / 2
        low, high = (low, mid) if _power(residuals, mid, alpha, 0, floor) >= power else (mid, high)
    return high


def compare_paired(base: Sequence[float], head: Sequence[float], *, confidence: float = 0.95,
                   alpha: float = 0.01, power: float = 0.8, with_mde: bool = True, floor: float = 0.0) -> Comparison:
    """Compare per-process values of one benchmark paired by round (base[i] and head[i] from round i);
    with_mde=False: no minimum detectable effect (nan), as stats.compare; `floor`: the MDE of the verdict's
    whole rule (the test and the estimate beyond the floor), as stats.compare."""
    b, h = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(head, dtype=float))
    if len(b) != len(h) or len(b) < 1:
        raise ValueError(f"compare_paired needs one base and one head value per round ({len(b)} vs {len(h)})")
    d = _nonzero(h - b)
    if len(d) == 0:
        return Comparison(1.0, 1.0, 1.0, 1.0, 0.0, len(b), len(h), confidence, test="paired")
    centre = float(np.median(_walsh(d)))
    low, high = walsh_interval(d, confidence)
    return Comparison(math.exp(centre), math.exp(low), math.exp(high), signed_rank_p(d),
                      math.expm1(_simulated_mde(d, centre, alpha, power, floor)) if with_mde else math.nan,
                      len(b), len(h), confidence,
                      test="paired")
