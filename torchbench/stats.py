"""The statistics every verdict uses: alerts, the published pages and change points.

The unit of evidence is one process's summary of a benchmark (the median of
its blocks), never a block: blocks within a process are correlated, and on a
shared machine whole processes move by up to 2x. Two sets of per-process
values (base, head) are compared on the log scale:

* effect: the head/base ratio, as the Hodges-Lehmann shift of the logs (the
  median of all pairwise differences), robust to an outlier process;
* its confidence interval: Moses' distribution-free interval for that shift,
  the one that inverts the Mann-Whitney test (scipy has the test but not the
  interval, so the order statistics are picked here);
* the test: two-sided Mann-Whitney U (scipy), on per-process values;
* the minimum detectable effect at the observed noise: statsmodels' power
  solver for a two-sample z test, on a robust (MAD) scale, divided by the
  Mann-Whitney test's efficiency;
* across a suite: Benjamini-Hochberg false discovery rate (statsmodels).

`classify` turns a comparison into a verdict: regressed / improved when the
test is significant after FDR control *and* the effect clears the floor;
unchanged when the interval rules out a change of the threshold size;
inconclusive otherwise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

__all__ = ["Comparison", "compare", "classify", "fdr", "process_summary", "REGRESSED", "IMPROVED", "UNCHANGED",
           "INCONCLUSIVE"]

REGRESSED, IMPROVED, UNCHANGED, INCONCLUSIVE = "regressed", "improved", "unchanged", "inconclusive"
MANN_WHITNEY_EFFICIENCY = 3 / math.pi  # asymptotic relative efficiency against the t test, normal data


def process_summary(samples: Sequence[float]) -> float:
    """One process's value for a benchmark: the median of its blocks' per-call times."""
    return float(np.median(np.asarray(samples, dtype=float)))


@dataclass(frozen=True)
class Comparison:
    ratio: float  # head / base
    ci_low: float
    ci_high: float
    p_value: float
    mde: float  # smallest |ratio - 1| this many processes would detect at this noise (alpha, power)
    n_base: int
    n_head: int
    confidence: float

    def to_dict(self) -> dict:
        return asdict(self)


def _moses_interval(diffs: np.ndarray, n1: int, n2: int, confidence: float) -> tuple[float, float]:
    from scipy import stats

    # The k-th smallest and k-th largest pairwise difference, where k comes
    # from the Mann-Whitney statistic's (normal-approximated) null quantile.
    z = stats.norm.ppf(0.5 + confidence / 2)
    k = int(math.floor(n1 * n2 / 2 - z * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)))
    if k < 1:  # too few processes for this confidence: the interval is unbounded
        return -math.inf, math.inf
    ordered = np.sort(diffs)
    return float(ordered[k - 1]), float(ordered[-k])


def _robust_scale(base: np.ndarray, head: np.ndarray) -> float:
    from scipy import stats

    residuals = np.concatenate([base - np.median(base), head - np.median(head)])
    scale = float(stats.median_abs_deviation(residuals, scale="normal"))
    return scale if scale > 0 else float(np.std(residuals, ddof=1)) if len(residuals) > 2 else 0.0


def minimum_detectable(scale: float, n_base: int, n_head: int, alpha: float, power: float) -> float:
    """Smallest |ratio - 1| detected with probability `power` at level `alpha`, for log-scale noise `scale`."""
    from statsmodels.stats.power import NormalIndPower

    if n_base < 2 or n_head < 2:
        return math.inf
    if scale == 0:
        return 0.0
    d = NormalIndPower().solve_power(effect_size=None, nobs1=n_base, alpha=alpha, power=power,
                                     ratio=n_head / n_base, alternative="two-sided")
    return math.expm1(float(d) * scale / math.sqrt(MANN_WHITNEY_EFFICIENCY))


def compare(base: Sequence[float], head: Sequence[float], *, confidence: float = 0.95, alpha: float = 0.05,
            power: float = 0.8) -> Comparison:
    """Compare per-process values of one benchmark (times: higher is slower)."""
    from scipy import stats

    b = np.log(np.asarray(base, dtype=float))
    h = np.log(np.asarray(head, dtype=float))
    if len(b) < 1 or len(h) < 1:
        raise ValueError("compare needs at least one process per side")
    diffs = (h[None, :] - b[:, None]).ravel()
    shift = float(np.median(diffs))
    low, high = _moses_interval(diffs, len(b), len(h), confidence)
    p = float(stats.mannwhitneyu(h, b, alternative="two-sided").pvalue) if len(b) > 1 and len(h) > 1 else 1.0
    mde = minimum_detectable(_robust_scale(b, h), len(b), len(h), alpha, power)
    return Comparison(math.exp(shift), math.exp(low), math.exp(high), p, mde, len(b), len(h), confidence)


def fdr(p_values: Sequence[float], q: float) -> list[bool]:
    """Benjamini-Hochberg at false discovery rate q: which hypotheses are rejected."""
    from statsmodels.stats.multitest import multipletests

    if len(p_values) == 0:
        return []
    reject, *_ = multipletests(list(p_values), alpha=q, method="fdr_bh")
    return [bool(r) for r in reject]


def classify(c: Comparison, significant: bool, *, floor: float, threshold: float) -> str:
    """The verdict for one benchmark.

    significant: the test survived FDR control (see `fdr`). floor: changes
    smaller than this are never alerts. threshold: the size of change that
    matters; 'unchanged' means the interval rules it out.
    """
    if significant and abs(c.ratio - 1) >= floor and (c.ci_low > 1 or c.ci_high < 1):
        return REGRESSED if c.ratio > 1 else IMPROVED
    if 1 / (1 + threshold) <= c.ci_low and c.ci_high <= 1 + threshold:
        return UNCHANGED
    return INCONCLUSIVE
