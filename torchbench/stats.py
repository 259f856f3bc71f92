"""The statistics every verdict uses: alerts, the published pages and change points.

The unit of evidence is one process's summary of a benchmark (the median of
its blocks), never a block: blocks within a process are correlated, and on a
shared machine whole processes move. Measured here (tensorlib's dispatch
suite, 26-40 fresh processes a side): per-process values of one benchmark
spread up to 2x, from a tight fast group up to a slow tail of disturbed
processes. A test on all processes (Mann-Whitney) is diluted by that tail. So
two sets of per-process values (base, head) are compared on the log scale
through the mean of each side's *faster half* (scipy's trim1: the slower half
cut off), which is where the code's own speed shows:

* effect: the head/base ratio of those means;
* its confidence interval: scipy's bootstrap (percentile method);
* the test: a permutation test of the same statistic (under no change, base
  and head processes are exchangeable: alternation makes them so), exact for
  up to 8 processes a side, else sequential Monte Carlo (Besag-Clifford) with
  as many draws as the suite's size needs (`resamples_for`), so a lone change
  among hundreds of rows can still reach Benjamini-Hochberg's q/m;
* the minimum detectable effect: (z(1 - alpha/2) + z(power)) bootstrap
  standard errors;
* across a suite: Benjamini-Hochberg false discovery rate (statsmodels).

Replayed on the same saved evidence (7 alert runs, evaluation/alert_validation.py),
the faster-half mean flagged the injected +30% in 2 of 2 runs, the lower
quartile in 0 of 2 and Mann-Whitney on all processes in 1 of 2; none of the
three flagged any of 24 rows of identical code.

`classify` turns a comparison into a verdict: regressed / improved when the
test is significant after FDR control *and* the effect clears the floor;
unchanged when the interval rules out a change of the threshold size;
inconclusive otherwise. Resampling uses a fixed seed: the same data give the
same verdict.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

__all__ = ["Comparison", "compare", "permutation_p", "resamples_for", "classify", "fdr", "process_summary",
           "processes_to_detect", "Interval", "interval", "interval_columns", "level", "LEVEL_QUANTILE", "within", "cells_differ",
           "PAGE_FLOOR", "PAGE_CONFIDENCE", "REGRESSED", "IMPROVED", "UNCHANGED", "INCONCLUSIVE"]

REGRESSED, IMPROVED, UNCHANGED, INCONCLUSIVE = "regressed", "improved", "unchanged", "inconclusive"
TRIM = 0.5  # the slower half of each side's processes is cut off before the mean
RESAMPLES = 20000  # the fewest most-draws of a p-value: down to 5e-5 (resamples_for raises it for large suites)
EXACT_LIMIT = 50_000  # up to this many relabellings (8 processes a side: 12,870) the p-value is exact
EXCEEDANCES = 20  # Besag-Clifford: draws as extreme as the observed before a Monte Carlo p-value stops


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


def _faster_half_mean(x, axis=-1):
    from scipy import stats

    return np.mean(stats.trim1(x, TRIM, tail="right", axis=axis), axis=axis)


def _shift(base, head, axis=-1):
    return _faster_half_mean(head, axis) - _faster_half_mean(base, axis)


def _shift_rows(pooled: np.ndarray, base_rows: np.ndarray, head_rows: np.ndarray) -> np.ndarray:
    """_shift for each row of relabelled samples (rows of positions into `pooled`)."""
    return _shift(pooled[base_rows], pooled[head_rows])


def _tails(shifts: np.ndarray, observed: float) -> tuple[int, int]:
    """How many relabellings are at least as high, and at least as low, as the observed (up to rounding)."""
    tol = 1e-12 * max(1.0, abs(observed))
    return int(np.sum(shifts >= observed - tol)), int(np.sum(shifts <= observed + tol))


def _exact_p(b: np.ndarray, h: np.ndarray, observed: float) -> float:
    """Every way of labelling the pooled processes base or head: the exact permutation p-value."""
    n, nb = len(b) + len(h), len(b)
    pooled = np.concatenate([b, h])
    chosen = np.array(list(itertools.combinations(range(n), nb)), dtype=np.intp)
    mask = np.zeros((len(chosen), n), dtype=bool)
    mask[np.arange(len(chosen))[:, None], chosen] = True
    others = np.nonzero(~mask)[1].reshape(len(chosen), n - nb)
    high, low = _tails(_shift_rows(pooled, chosen, others), observed)
    return min(1.0, 2 * min(high, low) / len(chosen))


def _sequential_p(b: np.ndarray, h: np.ndarray, observed: float, resamples: int, rng) -> float:
    """Besag and Clifford's sequential Monte Carlo p-value (Biometrika 1991), on the nearer tail: draw
    relabellings in batches until EXCEEDANCES of them are as extreme as the observed on that tail (then
    p = 2 * EXCEEDANCES / draws), or until `resamples` draws (then p = 2 * (exceedances + 1) / (draws + 1)).
    A row far from significance stops after a few dozen draws; a clear change gets all `resamples`, so its
    p-value can go as low as 2/(resamples + 1)."""
    n, nb = len(b) + len(h), len(b)
    pooled = np.concatenate([b, h])
    high = low = drawn = 0
    batch = 64
    while drawn < resamples:
        k = min(batch, resamples - drawn)
        order = rng.permuted(np.tile(np.arange(n), (k, 1)), axis=1)
        more_high, more_low = _tails(_shift_rows(pooled, order[:, :nb], order[:, nb:]), observed)
        high, low, drawn = high + more_high, low + more_low, drawn + k
        if min(high, low) >= EXCEEDANCES:
            return min(1.0, 2 * min(high, low) / drawn)
        batch = min(batch * 4, 1 << 16)
    return min(1.0, 2 * (min(high, low) + 1) / (drawn + 1))


def _permutation_p(b: np.ndarray, h: np.ndarray, resamples: int, rng) -> float:
    """Two-sided permutation p-value of _shift (twice the nearer tail, as scipy's permutation_test): exact
    where the relabellings are few (<= EXACT_LIMIT), else sequential Monte Carlo with at most `resamples`
    draws. Written here rather than with scipy's permutation_test, which has no early stop: at suite scale
    (hundreds of rows, most of them unchanged, and a lone change that must reach p <= q/m) a fixed number of
    resamples is either too few for the change or wasted on every unchanged row."""
    observed = float(_shift(b, h))
    if math.comb(len(b) + len(h), len(b)) <= EXACT_LIMIT:
        return _exact_p(b, h, observed)
    return _sequential_p(b, h, observed, resamples, rng)


def resamples_for(q: float, m: int) -> int:
    """The most draws a suite of M tests at false discovery rate Q needs: a lone change among M passes
    Benjamini-Hochberg only with p <= q/m, and a Monte Carlo p-value can go no lower than its floor,
    so that floor, 2/(draws + 1) two-sided, must be well below q/m (4x here). Never fewer than RESAMPLES."""
    return max(RESAMPLES, math.ceil(8 * max(m, 1) / q))


def permutation_p(base: Sequence[float], head: Sequence[float], *, resamples: int = RESAMPLES) -> float:
    """compare's p-value alone (no interval): for a first look that drops what is nowhere near significant."""
    return _permutation_p(np.log(np.asarray(base, dtype=float)), np.log(np.asarray(head, dtype=float)), resamples,
                          np.random.default_rng(0))


def compare(base: Sequence[float], head: Sequence[float], *, confidence: float = 0.95, alpha: float = 0.01,
            power: float = 0.8, resamples: int = RESAMPLES) -> Comparison:
    """Compare per-process values of one benchmark (times: higher is slower)."""
    from scipy import stats

    b = np.log(np.asarray(base, dtype=float))
    h = np.log(np.asarray(head, dtype=float))
    if len(b) < 1 or len(h) < 1:
        raise ValueError("compare needs at least one process per side")
    shift = float(_shift(b, h))
    if len(b) < 3 or len(h) < 3:  # too few processes for resampling to say anything
        return Comparison(math.exp(shift), 0.0, math.inf, 1.0, math.inf, len(b), len(h), confidence)
    rng = np.random.default_rng(0)
    p = _permutation_p(b, h, resamples, rng)
    boot = stats.bootstrap((b, h), _shift, vectorized=True, n_resamples=min(resamples, 5000),
                           confidence_level=confidence, method="percentile", random_state=rng)
    low, high = boot.confidence_interval
    mde = math.expm1((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * float(boot.standard_error))
    return Comparison(math.exp(shift), math.exp(float(low)), math.exp(float(high)), p, mde, len(b), len(h),
                      confidence)


def processes_to_detect(c: Comparison, effect: float) -> int | None:
    """Processes a side at which this comparison's minimum detectable effect would come down to `effect`:
    compare's own computation (the z-sum times the bootstrap standard error of the shift), with that
    standard error shrinking as 1/sqrt(n), so this and the stated MDE never disagree. None where the MDE
    is not finite (too few processes to estimate the noise)."""
    if not math.isfinite(c.mde) or effect <= 0:
        return None
    n = min(c.n_base, c.n_head)
    return max(n, math.ceil(n * (math.log1p(c.mde) / math.log1p(effect)) ** 2))


# The published pages colour a cell against its baseline cell. A history has a
# few processes per commit (`run --rounds`, 4 by default), so a
# cell's interval is that of their pooled blocks: it says how precisely those
# processes measured, not how much fresh ones would move (up to 2x on a shared
# machine). The pages say so; `torchbench alert` is the verdict that accounts
# for processes.
PAGE_CONFIDENCE = 0.99
PAGE_FLOOR = 0.05  # a coloured cell differs from its baseline by at least this much


@dataclass(frozen=True, slots=True)
class Interval:
    median: float
    low: float  # nan where too few samples for the confidence level
    high: float
    n: int  # samples (blocks)
    level: float  # the commit's value for change points (see `level`)


# A history's commit is measured by `torchbench run --rounds K`: K processes whose blocks asv keeps together
# in one sample list, process boundaries lost. A process lands in a fast group or a slow tail by chance (up to
# 2x here), so the commit's median moves with how many of its K processes were slow. A low quantile of the
# pooled blocks sits in the fastest processes' blocks: it moves only when nearly all K were slow. Replayed on
# real per-process values of this machine (K = 4, 30-commit histories, 80 series, before confirmation):
# the 10% quantile found a 10% step at its exact commit in 96% of series, the 25% quantile in 81%, the mean
# of the faster half of the blocks (the alert's statistic, on blocks instead of processes) in 88%, the median in
# about half; none raised a false step on identical code. evaluation/changepoint_validation.py measures the chosen one. The quantile's value depends on K (the fastest of
# more processes is faster): measure one history with one --rounds.
LEVEL_QUANTILE = 0.1


def level(samples: Sequence[float]) -> float:
    """A commit's value for change detection: the LEVEL_QUANTILE quantile of its blocks (numpy's default)."""
    return float(np.quantile(np.asarray(samples, dtype=float), LEVEL_QUANTILE))


@functools.lru_cache(maxsize=None)
def _median_ci_ranks(n: int, confidence: float) -> tuple[int | None, int | None]:
    """Which order statistics bound the median's interval for n samples (None: too few).

    scipy's quantile_test interval (two-sided, p = 0.5) is a pair of order statistics whose ranks depend
    on n alone: int(binom(n, 0.5).ppf(a)) - 1 and int(binom(n, 0.5).isf(a)), a = (1 - confidence) / 2.
    Those two quantiles are computed here from exact binomial sums (math.comb) rather than through
    scipy.stats, whose import costs 0.8 s and 75 MiB inside every asv publish that runs our pages; tests
    check the ranks equal scipy's for every n up to 400.
    """
    if n < 1:
        return None, None
    tail = Fraction((1 - confidence) / 2) * 2 ** n  # exact, for any n: a float would overflow past n = 1023
    total = 2 ** n
    cdf, ppf, isf = 0, None, None  # cdf: sum of C(n, i) for i <= k, over 2**n
    for k in range(n + 1):
        cdf += math.comb(n, k)
        if ppf is None and cdf >= tail:  # ppf: the smallest k with P(X <= k) >= a
            ppf = k
        if isf is None and total - cdf <= tail:  # isf: the smallest k with P(X > k) <= a
            isf = k
            break
    low, high = ppf - 1, isf
    return (low if low >= 0 else None), (high if high < n else None)


def interval(samples: Sequence[float], confidence: float = PAGE_CONFIDENCE) -> Interval:
    """A cell's median and its distribution-free confidence interval (order statistics, scipy's quantile_test)."""
    x = np.sort(np.asarray(samples, dtype=float))
    n = len(x)
    median = float((x[(n - 1) // 2] + x[n // 2]) / 2)  # np.median's value, on the sorted samples
    low, high = _median_ci_ranks(len(x), confidence) if len(x) >= 2 else (None, None)
    return Interval(median, math.nan if low is None else float(x[low]), math.nan if high is None else float(x[high]),
                    len(x), level(x))


def interval_columns(samples: Sequence[Sequence[float]], confidence: float = PAGE_CONFIDENCE) -> np.ndarray:
    """`interval` of each sample list as one (len(samples), 5) array of Interval's fields, computed per sample
    count as one array: a published history asks for one per cell (400,000 for 2000 commits x 200 rows), and
    numpy's per-call overhead was most of a first publish (evaluation/publish_speed.py)."""
    out = np.empty((len(samples), 5))
    by_n: dict[int, list[int]] = {}
    for i, s in enumerate(samples):
        by_n.setdefault(len(s), []).append(i)
    for n, where in by_n.items():
        if n == 0:
            raise ValueError("an interval needs at least one sample")
        x = np.sort(np.array([samples[i] for i in where], dtype=float), axis=1)
        low, high = _median_ci_ranks(n, confidence) if n >= 2 else (None, None)
        out[where, 0] = (x[:, (n - 1) // 2] + x[:, n // 2]) / 2
        out[where, 1] = x[:, low] if low is not None else math.nan
        out[where, 2] = x[:, high] if high is not None else math.nan
        out[where, 3] = n
        out[where, 4] = np.quantile(x, LEVEL_QUANTILE, axis=1)
    return out


def cells_differ(base: Interval, head: Interval, floor: float = PAGE_FLOOR) -> int:
    """+1 head slower, -1 head faster, 0 no shown difference: the intervals are disjoint and
    the ratio of medians clears the floor. Cells without an interval never differ.

    The page's script applies the same rule to the intervals computed here
    (html_templates/static/compare.js, `differ`); tests check both agree.
    """
    if any(math.isnan(v) for v in (base.low, base.high, head.low, head.high)) or base.median <= 0:
        return 0
    ratio = head.median / base.median
    if head.low > base.high and ratio >= 1 + floor:
        return 1
    if head.high < base.low and ratio <= 1 / (1 + floor):
        return -1
    return 0


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
    if within(c, threshold):
        return UNCHANGED
    return INCONCLUSIVE


def within(c: Comparison, threshold: float) -> bool:
    """The 'unchanged' rule: the whole interval lies inside +-threshold (on the ratio scale)."""
    return 1 / (1 + threshold) <= c.ci_low and c.ci_high <= 1 + threshold
