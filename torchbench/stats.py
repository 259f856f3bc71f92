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
* its confidence interval: the permutation test inverted under a shift model
  (`shift_interval`), so interval and test agree;
* the test: a permutation test of the same statistic (under no change, base
  and head processes are exchangeable: alternation makes them so), exact for
  up to 8 processes a side, else sequential Monte Carlo (Besag-Clifford) with
  as many draws as the suite's size needs (`resamples_for`), so a lone change
  among hundreds of rows can still reach Benjamini-Hochberg's q/m;
* the minimum detectable effect: read from the permutation test itself
  (the shift it rejects at alpha, plus the power quantile of the estimate's
  spread), and infinite where the permutation test cannot reach alpha with
  these many processes (`smallest_attainable_p`); with few processes, held
  to the machine's slow processes, which cap the test's power
  (`power_ceiling`), and where the bar is thinner than the relabellings
  resolve, to the verdict's whole rule simulated on the suite's own processes
  (`SuiteNoise`, `_rule_mde`);
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
from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["Comparison", "compare", "permutation_p", "resamples_for", "classify", "fdr", "process_summary",
           "processes_to_detect", "smallest_attainable_p", "shift_interval", "slower_half", "Interval", "interval",
           "power_ceiling", "ceiling_free", "slow_excesses", "SuiteNoise", "rank_weights", "exact_rank_weights",
           "relabelled_tails", "faster_half_mean",
           "interval_columns", "level", "pack_samples", "LEVEL_QUANTILE", "within",
           "PAGE_FLOOR", "PAGE_CONFIDENCE", "PAGE_Q", "page_changes", "spread_columns", "Changes", "REGRESSED", "IMPROVED", "UNCHANGED", "INCONCLUSIVE"]

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
    # which test: "unpaired" (the faster-half means, a permutation test, here) or "paired" (a round's two
    # processes, the signed-rank test: paired.py)
    test: str = "unpaired"
    # the most power the machine's slow processes leave the test at the MDE first read (power_ceiling); 1.0
    # where not estimated. Below the stated power the MDE was raised to where it holds, or made infinite
    power_ceiling: float = 1.0
    # the MDE read from the relabellings alone, before that ceiling or the suite's simulated rule raised it
    # (nan: not raised)
    relabelled_mde: float = math.nan
    # where the ceiling raised the MDE: the processes a side at which it stops binding (ceiling_free; 0: none)
    ceiling_free: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def _faster_half_mean(x, axis=-1):
    """scipy.stats.trim1(x, TRIM, tail="right") averaged: the mean of the n - int(TRIM * n) smallest values
    (written out with np.partition, which trim1 calls, to spare its checks in the relabelling loops; tests
    check it equals trim1's)."""
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    keep = x.shape[-1] - int(TRIM * x.shape[-1])
    return np.mean(np.partition(x, keep - 1, axis=-1)[..., :keep], axis=-1)


def _shift(base, head, axis=-1):
    return _faster_half_mean(head, axis) - _faster_half_mean(base, axis)


def faster_half_mean(x, axis=-1):
    """The unpaired test's location of log values along `axis` (`_faster_half_mean`): its estimate of a change
    is the head's less the base's."""
    return _faster_half_mean(x, axis)


def _shift_rows(pooled: np.ndarray, base_rows: np.ndarray, head_rows: np.ndarray) -> np.ndarray:
    """_shift for each row of relabelled samples (rows of positions into `pooled`)."""
    return _shift(pooled[base_rows], pooled[head_rows])


def _tails(shifts: np.ndarray, observed: float) -> tuple[int, int]:
    """How many relabellings are at least as high, and at least as low, as the observed (up to rounding)."""
    tol = 1e-12 * max(1.0, abs(observed))
    return int(np.sum(shifts >= observed - tol)), int(np.sum(shifts <= observed + tol))


def _exact_p(b: np.ndarray, h: np.ndarray, observed: float) -> float:
    """Every way of labelling the pooled processes base or head: the exact permutation p-value."""
    base_rows, head_rows = _exact_relabellings(len(b), len(h))
    high, low = _tails(_shift_rows(np.concatenate([b, h]), base_rows, head_rows), observed)
    return min(1.0, 2 * min(high, low) / len(base_rows))


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


def slower_half(base: Sequence[float], head: Sequence[float], *, resamples: int = RESAMPLES) -> tuple[float, float]:
    """The head/base ratio of the means of each side's *slower* half of per-process values, and its
    two-sided permutation p-value: compare's own test on the negated log values (the slower half of x is the
    faster half of -x). What 'unchanged' in the faster half cannot see: a change that slows only some
    processes (a collector, the allocator, a lock), which lands in the slow half."""
    b, h = -np.log(np.asarray(base, dtype=float)), -np.log(np.asarray(head, dtype=float))
    return math.exp(-float(_shift(b, h))), _permutation_p(b, h, resamples, np.random.default_rng(0))


def compare(base: Sequence[float], head: Sequence[float], *, confidence: float = 0.95, alpha: float = 0.01,
            power: float = 0.8, resamples: int = RESAMPLES, with_mde: bool = True,
            excess: np.ndarray | None = None, floor: float = 0.0, noise: SuiteNoise | None = None) -> Comparison:
    """Compare per-process values of one benchmark (times: higher is slower). with_mde=False: no minimum
    detectable effect (nan), for a look that only decides (the MDE's inversion costs about as much again).
    `excess`: the suite's processes' excesses over their fast group (slow_excesses); given, the MDE is raised
    to where the machine's slow processes still leave the test its power (power_ceiling). `floor`: the verdict's
    floor (classify): the MDE is that of the whole rule (the test at alpha, the estimate beyond the floor and
    the interval excluding 1), never below the floor. `noise`: the suite's processes (SuiteNoise: its excess
    serves where `excess` is not given); where the bar is thinner than the relabellings resolve
    (`_thin_bar`), the MDE is also raised to the rule's power simulated from them (`_rule_mde`)."""
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
    if max(len(b), len(h)) <= INVERT_LIMIT:
        low, high = shift_interval(b, h, confidence, rng)
    else:  # long segments of a history: the bootstrap's large-sample argument holds, at a fraction of the cost
        low, high = stats.bootstrap((b, h), _shift, vectorized=True, n_resamples=min(resamples, 5000),
                                    confidence_level=confidence, method="percentile",
                                    random_state=rng).confidence_interval
    if not with_mde:
        mde = math.nan
    elif smallest_attainable_p(len(b), len(h), resamples) > alpha:
        mde = math.inf  # no change, however large, can reach the bar with this many processes
    else:
        critical, spread = _permutation_mde(b, h, shift, alpha, rng, floor)
        mde = math.expm1(critical + float(np.quantile(spread, power)))
    ceiling, relabelled, free = 1.0, math.nan, 0
    if excess is None and noise is not None:
        excess = noise.excess
    first = mde
    if excess is not None and math.isfinite(mde):
        held, ceiling, free = _held_mde(mde, critical, spread, len(b), len(h), alpha, power, resamples, excess)
        # "raised" (relabelled_mde kept) where the ceiling binds at the MDE first read; below that the product
        # of the two chances still lifts it a little
        mde, relabelled = held, (mde if ceiling < power else math.nan)
    if noise is not None and math.isfinite(mde) and _thin_bar(len(b), len(h), alpha):
        simulated = _rule_mde(noise, b, h, alpha, power, resamples, floor, confidence)
        if simulated > mde:  # raised by the suite's own processes: "without them" is the relabellings' MDE
            mde, relabelled = simulated, first
    return Comparison(math.exp(shift), math.exp(float(low)), math.exp(float(high)), p, mde, len(b), len(h),
                      confidence, power_ceiling=ceiling, relabelled_mde=relabelled,
                      ceiling_free=free)


INTERVAL_RELABELLINGS = 4000  # relabellings an interval and the MDE are inverted on, where too many to list
MDE_WORK = 800_000  # pooled values over all the MDE's relabellings (20,000 relabellings of 20 a side)
INVERT_LIMIT = 64  # processes a side up to which the interval is the inverted test (beyond: bootstrap percentile)
RESOLVED = 20  # relabellings beyond a quantile for it to be read from them (else it is stretched: _rejects)


@functools.lru_cache(maxsize=64)
def _exact_relabellings(n_base: int, n_head: int) -> tuple[np.ndarray, np.ndarray]:
    """Every relabelling of n_base + n_head pooled processes: positions of its base and its head."""
    n = n_base + n_head
    chosen = np.array(list(itertools.combinations(range(n), n_base)), dtype=np.intp)
    mask = np.zeros((len(chosen), n), dtype=bool)
    mask[np.arange(len(chosen))[:, None], chosen] = True
    return chosen, np.nonzero(~mask)[1].reshape(len(chosen), n_head)


def _relabellings(n_base: int, n_head: int, draws: int, rng) -> tuple[np.ndarray, np.ndarray, bool]:
    """Positions into the pooled processes of each relabelling's base and head, and whether they are all of
    them: all where they are at most twice `draws` (7 processes a side for an interval), else `draws` drawn
    at random."""
    n = n_base + n_head
    if math.comb(n, n_base) <= 2 * draws:
        return (*_exact_relabellings(n_base, n_head), True)
    order = rng.permuted(np.tile(np.arange(n), (draws, 1)), axis=1)
    return order[:, :n_base], order[:, n_base:], False


def _rejects(shifts: np.ndarray, observed: float, side: int, tail: float, exact: bool) -> bool:
    """Does the one-sided permutation test (side 0: head beyond base; 1: below) reject at level `tail`?

    From the relabellings' counts where they resolve the tail (all relabellings, or RESOLVED of them beyond
    it); where a bar is thinner than RESOLVED random draws can show, the thinnest quantile they resolve is
    stretched to it by the normal's ratio of quantiles (about the median), an approximation that keeps the
    extra width a shifted pooled sample gives its relabellings."""
    n = len(shifts)
    if exact or tail * n >= RESOLVED:
        high, low = _tails(shifts, observed)
        return (high if side == 0 else low) / n <= tail
    from scipy.stats import norm

    resolved = RESOLVED / n
    centre = float(np.median(shifts))
    quantile = float(np.quantile(shifts, 1 - resolved if side == 0 else resolved))
    critical = centre + (quantile - centre) * norm.ppf(1 - tail) / norm.ppf(1 - resolved)
    return observed >= critical if side == 0 else observed <= critical


def _inverted(b: np.ndarray, h: np.ndarray, tail: float, rows, sides=(0, 1)) -> tuple[float, float]:
    """The shifts d (log scale) for which neither one-sided test of base against head - d rejects at `tail`:
    each bound by bisection over d, the same relabellings for every d; -inf / inf where even perfect
    separation would not reject (too few processes). Only the bounds of `sides` are sought (0: lower,
    1: upper; the other is nan)."""
    base_rows, head_rows, exact = rows
    observed = float(_shift(b, h))

    def rejects(d: float, side: int) -> bool:
        shifts = _shift_rows(np.concatenate([b, h - d]), base_rows, head_rows)
        return _rejects(shifts, observed - d, side, tail, exact)

    span = float(max(b.max(), h.max()) - min(b.min(), h.min())) + 1e-9
    # the scale of the statistic: its spread over the relabellings, the estimate's own spread
    scale = float(np.std(_shift_rows(np.concatenate([b, h - observed]), base_rows, head_rows))) or span
    bounds = [math.nan, math.nan]
    for side, sign in ((0, -1), (1, 1)):
        if side not in sides:
            continue
        step = 4 * scale  # the bound usually lies 2-3 scales out: bracket it, doubling up to beyond the data
        bracketed = rejects(observed + sign * step, side)
        while not bracketed and step < 4 * span:
            step *= 2
            bracketed = rejects(observed + sign * step, side)
        if not bracketed:
            bounds[side] = sign * math.inf  # not even perfect separation rejects
            continue
        inner, outer = 0.0, step  # distances from the estimate: not rejected at inner, rejected at outer
        while outer - inner > 0.02 * scale:
            mid = (inner + outer) / 2
            inner, outer = (inner, mid) if rejects(observed + sign * mid, side) else (mid, outer)
        bounds[side] = observed + sign * inner
    return bounds[0], bounds[1]


def shift_interval(b: np.ndarray, h: np.ndarray, confidence: float, rng) -> tuple[float, float]:
    """The permutation test inverted under a shift model (log scale): the shifts d for which the test of base
    against head - d rejects at neither one-sided level (1 - confidence) / 2. Consistent with the test, and its
    coverage does not rest on a bootstrap's large-sample argument: measured at the +-5% boundary on the real
    pool (evaluation/stats_validation.py, 6-24 processes a side) it covered 96.5-99%, where the percentile
    bootstrap it replaced fell to 94.0% at 8 a side (one side missed 3.5%, for a stated 2.5%)."""
    return _inverted(b, h, (1 - confidence) / 2, _relabellings(len(b), len(h), INTERVAL_RELABELLINGS, rng))


def _permutation_mde(b: np.ndarray, h: np.ndarray, observed: float, alpha: float, rng,
                     floor: float = 0.0) -> tuple[float, np.ndarray]:
    """The minimum detectable effect read from the permutation test itself (ratio - 1).

    Take the estimated shift out of the head (centred data), and shift it back by d: the test rejects at
    alpha once d passes the upper bound of the centred data's (1 - alpha) inverted interval, which is where a
    change of that size is found half the time; a change is found with probability `power` where it is
    larger by the power quantile of the estimate's spread (read from the centred relabellings, the spread of
    the statistic for exchangeable processes). The normal approximation this replaced, z-sum times a
    bootstrap standard error, stated MDEs that the test reached in well under half of fresh draws on the
    real pool (evaluation/stats_validation.py): relabelling a shifted pooled sample widens the test's null,
    and the trimmed mean's tails are heavier than the normal's at the bars a suite sets.
    """
    centred = h - observed
    # enough relabellings to read as thin a tail as the bar's (RESOLVED beyond it) within MDE_WORK values
    draws = max(INTERVAL_RELABELLINGS, min(math.ceil(RESOLVED / (alpha / 2)), MDE_WORK // (len(b) + len(h))))
    rows = _relabellings(len(b), len(h), draws, rng)
    _, bound = _inverted(b, centred, alpha / 2, rows, sides=(1,))
    spread = _shift_rows(np.concatenate([b, centred]), rows[0], rows[1])
    # the verdict's whole rule (classify): the estimate must also clear the floor, so the critical shift is the
    # larger of the test's and the floor's; the interval excluding 1 follows from the test at any bar below
    # 1 - confidence (the interval is the same test inverted). Returned as (that critical shift, the estimate's
    # spread about its median): a change d is found with probability mean(spread >= critical - d), and the MDE
    # at power P is critical + the spread's P quantile
    return max(bound, math.log1p(floor)), spread - np.median(spread)


# What caps the power of few processes. The test compares the faster halves, so a slow process (a collector,
# a disturbed core: this machine's slow group, up to 2x) on the faster side is ignored by the statistic, but not
# by the relabellings: swapping it with the other side's fastest process raises the statistic, so the observed
# split is no longer the most extreme. Where the bar needs (nearly) the most extreme split (8-10 processes a
# side at a lone row's bar in a suite), each such process costs a factor in the p-value, whatever the shift:
# the power levels off (at 8 a side on the real pool: 54-66% for changes 1.0-1.5x the MDE read from the
# relabellings, a stated 80%; docs/results.md). Measured on the real pool (evaluation/stats_validation.py) the
# ceiling below predicts that plateau; the MDE is then raised to where it holds, or infinite.
#
# Nothing here is set by hand (issue 51): the stylized tail is counted exactly at any number of processes (by
# the classes of relabellings, not by listing them), so the ceiling is computed beyond 16 a side too; where the
# real test is Monte Carlo, the chance that its p-value reaches the bar is the binomial chance over its draws
# (stated before as a hand-set margin); and the number of slow processes on a side is the beta-binomial
# predictive of the suite's own processes (Jeffreys' reference prior, the share's uncertainty included), where a
# pseudo-count was set by hand.
CEILING_SEARCH = 128  # processes a side up to which `ceiling_free` looks for where the ceiling stops binding


def slow_excesses(sides: Sequence[Sequence[float]]) -> np.ndarray:
    """Each process's excess over its side's fastest (log value minus the side's smallest), pooled over the
    sides given (a suite's rows, both sides), sorted: what power_ceiling reads the slow share from. A process
    breaks the most extreme split of a change d when it lies beyond the other side's fastest, about d above
    its own side's fastest (over the lower quartile instead, the stated MDE at 10 a side was found 58% of the
    time for a stated 80%: the fast group's own spread counts too). Sides of fewer than 4 are left out."""
    found = [x - x.min() for x in (np.log(np.asarray(v, dtype=float)) for v in sides) if len(x) >= 4]
    return np.sort(np.concatenate(found)) if found else np.zeros(0)


def _kept_mean(fast: np.ndarray, middle: np.ndarray, slow: np.ndarray, size: int) -> np.ndarray:
    """The faster-half mean of a group of `size` holding `fast` values at 0, `middle` at 0.5, `slow` at 1."""
    keep = size - int(TRIM * size)
    mid = np.minimum(middle, np.maximum(keep - fast, 0))
    top = np.maximum(keep - fast - middle, 0)
    return (0.5 * mid + top) / keep


@functools.lru_cache(maxsize=4096)
def _stylized_tail(n_fast_side: int, n_other: int, slow: int) -> float:
    """The share of relabellings at least as extreme as the observed split when the faster side's `slow`
    processes lie beyond the whole other side and the rest below it (a shift larger than the fast group's
    spread, smaller than the slow excess). One tail, ties counted as extreme (the relabellings that tie the
    observed split keep the fastest values on the faster side, as it does: they are at least as extreme).
    Counted exactly by classes: a relabelling's statistic depends only on how many fast, slow and other-side
    values it gives each side, and each class holds a product of binomial coefficients of them."""
    from scipy.special import comb

    f, s, o = n_fast_side - slow, slow, n_other
    a, b = np.meshgrid(np.arange(f + 1), np.arange(s + 1), indexing="ij")
    c = n_fast_side - a - b  # the other side's values relabelled onto the faster side
    ok = (c >= 0) & (c <= o)
    a, b, c = a[ok], b[ok], c[ok]
    weight = comb(f, a, exact=False) * comb(s, b, exact=False) * comb(o, c, exact=False)
    statistic = _kept_mean(f - a, o - c, s - b, n_other) - _kept_mean(a, c, b, n_fast_side)
    observed = float(_kept_mean(np.array(0), np.array(o), np.array(0), n_other)
                     - _kept_mean(np.array(f), np.array(0), np.array(s), n_fast_side))
    return float(weight[statistic >= observed - 1e-9].sum() / comb(n_fast_side + n_other, n_fast_side, exact=False))


@functools.lru_cache(maxsize=1024)
def _reach(n_fast_side: int, n_other: int, alpha: float, resamples: int) -> np.ndarray:
    """For each number of slow processes on the faster side (0 to the side's size), the chance that compare's
    test still reaches alpha: 0 or 1 where its p-value is exact; where it is Monte Carlo (Besag-Clifford, at
    most `resamples` draws, p = 2 (exceedances + 1) / (draws + 1) on a rare tail), the binomial chance that
    the draws hold few enough exceedances. Beyond half the side the "slow" processes are the faster half
    itself (what the statistic averages): the stylized split no longer describes the data, and the chance is
    taken as at half the side. So where the test tolerates half the side slow (many processes a side), the
    ceiling does not bind: counted as slow against the side's fastest, most of a large side's own fast group
    lies "beyond" a small change, and holding the MDE to that stated 15% at 200 a side for rows of 2-4%."""
    from scipy.stats import binom

    out = np.zeros(n_fast_side + 1)
    exact = math.comb(n_fast_side + n_other, n_fast_side) <= EXACT_LIMIT
    allowed = math.floor(alpha * (resamples + 1) / 2) - 1  # exceedances a Monte Carlo p-value may hold

    def chance(slow: int) -> float:
        tail = _stylized_tail(n_fast_side, n_other, slow)
        if exact:
            return float(2 * tail <= alpha * (1 + 1e-9))
        return float(binom.cdf(allowed, resamples, tail)) if allowed >= 0 else 0.0

    # the tail only grows with more slow processes: find the last that surely reaches by bisection, then count
    # on until none does
    low, high = -1, n_fast_side // 2 + 1  # surely reaching up to low; not surely at high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if chance(mid) >= 1 - 1e-12 else (low, mid)
    out[:low + 1] = 1.0
    for slow in range(high, n_fast_side // 2 + 1):
        out[slow] = chance(slow)
        if out[slow] < 1e-12:
            break
    out[n_fast_side // 2 + 1:] = out[n_fast_side // 2]
    out.setflags(write=False)  # cached
    return out


def power_ceiling(n_base: int, n_head: int, alpha: float, slow_share, resamples: int = RESAMPLES, *,
                  slow_counts: tuple | None = None):
    """The most power compare's test has at alpha when each process is slow (beyond the shift sought) with
    probability `slow_share` (a number, or an array of them): the chance, over how many slow processes the
    faster side holds, that the test still reaches alpha (_reach), the worse of the two directions. Given
    `slow_counts` = (slow, processes) instead (arrays alike: the suite's processes beyond the shift, and all of
    them), the number of slow processes on a side is the beta-binomial predictive of those counts under
    Jeffreys' prior, so a suite of few processes is not taken at its point estimate. At any number of
    processes: the stylized tail is counted exactly."""
    from scipy.stats import betabinom, binom

    worst = None
    for faster, other in ((n_base, n_head), (n_head, n_base)):
        reach = _reach(faster, other, alpha, resamples)
        k = np.arange(faster + 1)
        if slow_counts is not None:
            slow, total = (np.asarray(x, dtype=float)[..., None] for x in slow_counts)
            pmf = betabinom.pmf(k, faster, slow + 0.5, total - slow + 0.5)
        else:
            pmf = binom.pmf(k, faster, np.asarray(slow_share, dtype=float)[..., None])
        ceiling = np.sum(pmf * reach, axis=-1)
        worst = ceiling if worst is None else np.minimum(worst, ceiling)
    return worst if np.ndim(worst) else float(worst)


def ceiling_free(alpha: float, slow_counts: tuple[int, int], power: float, start: int,
                 resamples: int = RESAMPLES) -> int:
    """The fewest processes a side (from `start`) at which the suite's slow processes (`slow_counts`: slow,
    processes) leave the test at least `power` at alpha (power_ceiling): where a raised MDE starts to shrink
    like the relabellings' again. CEILING_SEARCH + 1 where not found up to it. By bisection: the ceiling rises
    with the processes (more slow ones are tolerated, and the chance of more grows slower)."""
    def enough(n: int) -> bool:
        return power_ceiling(n, n, alpha, None, resamples, slow_counts=slow_counts) >= power

    low, high = max(start, 2) - 1, CEILING_SEARCH  # not enough at low (or below the start), enough at high
    if not enough(high):
        return CEILING_SEARCH + 1
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def _held_mde(mde: float, critical: float, spread: np.ndarray, n_base: int, n_head: int, alpha: float,
              power: float, resamples: int, excess: np.ndarray) -> tuple[float, float, int]:
    """The MDE raised to the smallest change found with `power` once the slow processes are counted: a process
    counts as slow for a change d when it lies more than d above its fast group (the suite's `excess`), so
    larger changes see fewer of them. A change d is found with about (the estimate's chance to pass the
    critical shift) x (the ceiling at d): so where the ceiling is C, the change needed is the critical shift
    plus the spread's power / C quantile (`critical`, `spread`: _permutation_mde), and never below where that
    ceiling starts. Returns (MDE, the ceiling at the MDE first read, the processes a side at which that
    ceiling stops binding: 0 where it does not bind); the MDE infinite where no change within the slow
    processes' reach is found with `power`."""
    # the MDE first read, then each step up that leaves one slow process fewer
    changes = np.concatenate([[mde], np.expm1(excess[excess > math.log1p(mde)])])
    slow = len(excess) - np.searchsorted(excess, np.log1p(changes), side="right")
    ceilings = np.atleast_1d(power_ceiling(n_base, n_head, alpha, None, resamples,
                                           slow_counts=(slow, np.full(len(slow), len(excess)))))
    ok = ceilings >= power
    levels, where = np.unique(power / ceilings[ok], return_inverse=True)  # one sort of the spread for all
    needed = critical + np.quantile(spread, np.minimum(levels, 1.0))[where]
    held = np.maximum(np.log1p(changes[ok]), needed)
    free = 0
    if ceilings[0] < power:
        free = ceiling_free(alpha, (int(slow[0]), len(excess)), power, min(n_base, n_head) + 1, resamples)
    return (math.expm1(float(held.min())) if len(held) else math.inf), float(ceilings[0]), free


# What the relabellings' MDE cannot see with few processes (issue 51). Where the bar needs nearly the most
# extreme split (8-10 processes a side at a lone row's bar in a suite), a change is found only when the base's
# slowest processes lie below most of the head's: it hangs on the base's largest values, which a sample of 8
# cannot know, and on a suite whose slow processes are a tail rather than a distant group the ceiling above
# barely binds (on the alternating pool of 2026-11-26 the MDE read from the relabellings was found 60-69% of
# the time at 8 a side, a stated 80%: docs/results.md). So the rule's power is also simulated from the suite's
# own processes: each row's log values about its sides' medians, scaled by the row's spread (`_scale`), pooled
# over the rows whose slow tail reaches about as far (a third of the suite's rows: SuiteNoise.group); draws of
# n + n of them, the head shifted by d, decided by the verdict's whole rule (the test as compare runs it at the
# bar, the floor, the interval), once per suite, group and (processes, bar) in those standardized units; a
# row's MDE is then the larger of this and what it reads from its own relabellings.
RULE_DRAWS = 1000  # simulated rows: the power's own error sqrt(0.8 x 0.2 / 1000) = 1.3 points, a sixth of the
# +-8 points a validation of 100 fresh rows can check (and the MDE is read at its upper bound: `_rule_mde`)
RULE_GROUP = 10  # simulated rows that share one set of random relabellings where the test is Monte Carlo: 100
# sets, so that which rare relabellings a set holds moves the power by at most sqrt(0.8 x 0.2 / 100) = 4 points
# (far less where the draws' extreme splits differ); building a set costs about as much as testing 10 rows on it
BISECTIONS = 12  # halvings of a draw's bracket (the sides' overlap plus a spread: about 10 spreads without slow
# processes): the shift to about 0.003 spreads, a few tenths of a percent of a 5-10 spread MDE
RULE_WORK = 50_000_000  # rows x pooled values x relabellings of one matrix product in `relabelled_tails`: its
# statistics then hold RULE_WORK / (pooled values) floats (25 MB at 8 a side); a memory bound, not a statistical one


def rank_weights(base_rows: np.ndarray, head_rows: np.ndarray) -> np.ndarray:
    """Each relabelling's statistic as weights on the ranks of the pooled values: row r holds +1/keep on the
    ranks its head keeps in its faster half and -1/keep on those its base keeps, so that _shift of relabelling
    r is weights[r] @ (the pooled values, sorted). With n processes a side the statistics of every relabelling
    of many rows are then one matrix product. base_rows, head_rows: each relabelling's ranks, each row sorted.
    The second form of _shift_rows' statistic, kept for its speed where many rows share one set of
    relabellings (the rule's power, the suite-scale tests); tests/test_stats.py holds the two to the same
    p-values."""
    n_base, n_head = base_rows.shape[1], head_rows.shape[1]
    keep_base, keep_head = n_base - int(TRIM * n_base), n_head - int(TRIM * n_head)
    rows = np.arange(len(base_rows))[:, None]
    w = np.zeros((len(base_rows), n_base + n_head))
    w[rows, head_rows[:, :keep_head]] = 1 / keep_head
    w[rows, base_rows[:, :keep_base]] = -1 / keep_base
    return w


@functools.lru_cache(maxsize=16)
def exact_rank_weights(n_base: int, n_head: int) -> np.ndarray:
    """rank_weights of every relabelling of n_base + n_head processes (cached, read-only)."""
    w = rank_weights(*_exact_relabellings(n_base, n_head))
    w.setflags(write=False)
    return w


def relabelled_tails(b: np.ndarray, h: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For many rows at once (b: (rows, n_base), h: (rows, n_head) log values), how many of the relabellings
    `weights` (rank_weights) are at least as high, and at least as low, as each row's observed statistic (up
    to rounding, as _tails counts them, the rounding taken at the values' own magnitude: the product sums
    them in another order than _shift)."""
    observed = _shift(b, h)
    pooled = np.sort(np.concatenate([b, h], axis=1), axis=1)
    high, low = np.empty(len(b), dtype=np.int64), np.empty(len(b), dtype=np.int64)
    chunk = max(1, RULE_WORK // (len(weights) * pooled.shape[1]))
    for start in range(0, len(b), chunk):
        s = pooled[start:start + chunk] @ weights.T
        o = observed[start:start + chunk, None]
        tol = 1e-12 * np.maximum(np.maximum(1.0, np.abs(o)), np.abs(pooled[start:start + chunk]).max(axis=1)[:, None])
        high[start:start + chunk], low[start:start + chunk] = np.sum(s >= o - tol, axis=1), np.sum(s <= o + tol, axis=1)
    return high, low


def _scale(b: np.ndarray, h: np.ndarray) -> float:
    """A row's spread, the unit its residuals are pooled in: the median absolute deviation of its log values
    from their own side's median, both sides together. Robust to the slow processes (up to half of them),
    which the residuals keep as they are (in units of the fast group's spread)."""
    return float(np.median(np.abs(np.concatenate([b - np.median(b), h - np.median(h)]))))


class SuiteNoise:
    """A suite's processes as compare's MDE reads them: their slow excesses (slow_excesses: the power
    ceiling) and their residuals (each row's log values about its sides' medians, in units of the row's
    `_scale`), from which the rule's power is simulated (`rule_power`), once per (processes, bar)."""

    def __init__(self, rows: Sequence[tuple[Sequence[float], Sequence[float]]]):
        """rows: each row's (base, head) per-process values. Sides of fewer than 4 are left out (as
        slow_excesses does); a row whose spread is 0 gives no residuals."""
        logs = [(np.log(np.asarray(b, dtype=float)), np.log(np.asarray(h, dtype=float))) for b, h in rows]
        self.excess = slow_excesses([np.exp(x) for pair in logs for x in pair])
        rows = [_residuals(b, h) for b, h in logs if min(len(b), len(h)) >= 4 and _scale(b, h) > 0]
        self.residuals = np.concatenate(rows) if rows else np.zeros(0)
        # the rows grouped by how far their slow tail reaches (`_tail`): a row's MDE is simulated from the
        # residuals of the rows whose tail is like its own (`group`), not from the suite's average tail
        tails = np.array([_tail(r) for r in rows])
        groups = min(TAIL_GROUPS, len(rows) // TAIL_GROUP_ROWS) if rows else 0
        self.bounds = np.quantile(tails, np.arange(1, groups) / groups) if groups > 1 else np.zeros(0)
        which = np.searchsorted(self.bounds, tails, side="right") if rows else np.zeros(0, dtype=int)
        # a group no row fell in (tails tied at a bound) is simulated from every row's residuals
        self.groups = [np.concatenate([r for r, g in zip(rows, which) if g == k] or rows)
                       for k in range(max(groups, 1))] if rows else []
        self._rules: dict = {}

    def group(self, b: np.ndarray, h: np.ndarray) -> int:
        """The group of rows (by `_tail`) whose residuals a row of these log values is simulated from."""
        return int(np.searchsorted(self.bounds, _tail(_residuals(b, h)), side="right"))

    def rule_power(self, n_base: int, n_head: int, alpha: float, resamples: int,
                   group: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """RULE_DRAWS rows of n_base + n_head residuals drawn from the suite's: for each, the smallest shift of
        its head (standardized units) at which compare's test rejects at alpha, and its estimate with no shift.
        Such a row changed by d is flagged by the verdict's rule when d passes the first and the estimate plus
        d passes the floor: `_rule_mde`. The test as compare runs it: exact where the relabellings are at most
        EXACT_LIMIT, else `resamples` random relabellings with Besag and Clifford's p-value (its early stop
        needs EXCEEDANCES beyond the observed, never a rejection at a bar it can reach). Cached."""
        key = (n_base, n_head, alpha, resamples, group)
        if key not in self._rules:
            residuals = self.residuals if group is None else self.groups[group]
            self._rules[key] = _rule_thresholds(residuals, n_base, n_head, alpha, resamples)
        return self._rules[key]


TAIL_GROUPS = 3  # groups of rows by their tail (SuiteNoise.group)
TAIL_GROUP_ROWS = 10  # rows a group needs at least (fewer rows: fewer groups, one for a small suite)


def _residuals(b: np.ndarray, h: np.ndarray) -> np.ndarray:
    """A row's log values about its sides' medians, in units of its spread (`_scale`)."""
    s = _scale(b, h)
    return np.concatenate([(b - np.median(b)) / s, (h - np.median(h)) / s])


def _tail(residuals: np.ndarray) -> float:
    """How far a row's slow tail reaches: the mean of its largest tenth of residuals (at least 2), in units
    of its spread. The slow processes are slower, never faster, so the upper tail is the one that hides a
    change: the test finds it only once the head's processes lie above the base's slowest."""
    k = max(2, len(residuals) // 10)
    return float(np.mean(np.sort(residuals)[-k:]))


def _random_rank_weights(n_base: int, n_head: int, draws: int, rng) -> np.ndarray:
    """rank_weights of `draws` relabellings drawn at random (as _relabellings draws them): each a random
    choice of the head's ranks; a side keeps the ranks it holds up to its faster half's size."""
    n = n_base + n_head
    head = rng.permuted(np.tile(np.arange(n) < n_head, (draws, 1)), axis=1)
    keep_base, keep_head = n_base - int(TRIM * n_base), n_head - int(TRIM * n_head)
    kept_head = head & (np.cumsum(head, axis=1) <= keep_head)
    kept_base = ~head & (np.cumsum(~head, axis=1) <= keep_base)
    return kept_head / keep_head - kept_base / keep_base


def _rule_thresholds(residuals: np.ndarray, n_base: int, n_head: int, alpha: float,
                     resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """SuiteNoise.rule_power, computed: each draw's shift by bisection (BISECTIONS halvings of the way to where
    its sides no longer overlap, the most extreme split; where even that does not reject, inf). Where the test is
    Monte Carlo, each RULE_GROUP draws get relabellings of their own: with one set for all, whether it holds
    the few relabellings that tie an extreme split would decide every draw alike (measured at 10 a side on the
    48-round pool: one set stated 95% power for a change found 70-78% of the time)."""
    rng = np.random.default_rng(0)
    b = rng.choice(residuals, (RULE_DRAWS, n_base))
    h = rng.choice(residuals, (RULE_DRAWS, n_head))
    exact = math.comb(n_base + n_head, n_base) <= EXACT_LIMIT
    if exact:
        sets = [exact_rank_weights(n_base, n_head)]
        allowed = alpha * len(sets[0]) / 2 * (1 + 1e-9)  # p = 2 min(high, low) / relabellings <= alpha
        group = RULE_DRAWS
    else:
        group = RULE_GROUP
        sets = [_random_rank_weights(n_base, n_head, resamples, rng) for _ in range(0, RULE_DRAWS, group)]
        allowed = math.floor(alpha * (resamples + 1) / 2) - 1  # p = 2 (min + 1) / (resamples + 1) <= alpha

    def rejects(d: np.ndarray, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows), dtype=bool)
        for k, weights in enumerate(sets):
            mine = np.flatnonzero(rows // group == k)
            if len(mine):
                high, low = relabelled_tails(b[rows[mine]], h[rows[mine]] + d[mine, None], weights)
                out[mine] = np.minimum(high, low) <= allowed
        return out

    everyone = np.arange(RULE_DRAWS)
    outer = b.max(axis=1) - h.min(axis=1) + 1.0  # the sides apart by a spread: the most extreme split
    needed = np.full(RULE_DRAWS, math.inf)
    at_once = rejects(np.zeros(RULE_DRAWS), everyone)
    needed[at_once] = 0.0
    open_ = np.flatnonzero(rejects(outer, everyone) & ~at_once)
    lo, hi = np.zeros(len(open_)), outer[open_]  # not rejected at lo, rejected at hi
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        yes = rejects(mid, open_)
        lo, hi = np.where(yes, lo, mid), np.where(yes, mid, hi)
    needed[open_] = hi
    return needed, _shift(b, h)


def _thin_bar(n_base: int, n_head: int, alpha: float) -> bool:
    """Is the bar thinner than the relabellings resolve: fewer than RESOLVED of all of them beyond it (one
    tail)? There a change is found only through one of the few most extreme splits, which hang on each side's
    few largest values, and the MDE read from the relabellings' spread is optimistic: at a lone row's bar in
    60 rows (1.7e-4) that is up to 10 a side (1 relabelling beyond it at 8, 15 at 10), where it was found
    60-79% of the time for a stated 80%; at 12 (224 beyond) it held (docs/results.md). Only there is the rule's
    power simulated (`_rule_mde`, seconds a bar)."""
    return alpha / 2 * math.comb(n_base + n_head, n_base) < RESOLVED


def _rule_mde(noise: SuiteNoise, b: np.ndarray, h: np.ndarray, alpha: float, power: float, resamples: int,
              floor: float, confidence: float) -> float:
    """The smallest change the verdict's rule flags with `power` in the suite's simulated rows (rule_power),
    drawn from the residuals of the rows whose slow tail reaches as far as this row's, or from the whole
    suite's where that states more (SuiteNoise.group: at 10
    a side on draws with this machine's slow tail, the rows with the longest tail were found 55-59% of the time
    simulated from the whole suite's residuals, 76-78% from their group's; docs/results.md), in this row's
    units (`_scale`): a draw is flagged at d once d passes its test's shift and its estimate plus
    d passes the floor (the interval excluding 1 follows from the test at a bar below 1 - confidence: it is
    the same test inverted). Read at the upper `confidence` bound of the power quantile over RULE_DRAWS draws
    (an order statistic), so the simulation's own error does not make it optimistic. The row's units are its
    own spread (`_scale`, from its 2n values: coefficient of variation about 35% at 8 a side), as the MDE read
    from its relabellings is: shrunk towards the suite's rows' spreads (normal empirical Bayes), the median
    stated MDE at 8 a side on the alternating pool was found 68-79% of the time, unshrunk 75-93% (3 runs of
    300 rows each). nan where the suite has no residuals or the row no spread."""
    from scipy.stats import binom

    s = _scale(b, h)
    if not len(noise.residuals) or s <= 0:
        return math.nan
    d = -math.inf
    # its group's, and never below the whole suite's: a row of a long-tailed benchmark whose 2n values caught
    # none of its slow processes looks light, and was stated less than the pooled simulation gave it (found 67%
    # at 8 a side in one suite of the alternating pool, tests/test_error_rates.py)
    for group in (noise.group(b, h), None):
        test, estimate = noise.rule_power(len(b), len(h), alpha, resamples, group)
        needed = np.sort(np.maximum(test, math.log1p(floor) / s - estimate))
        d = max(d, needed[min(int(binom.ppf(confidence, len(needed), power)), len(needed) - 1)])
    return math.expm1(s * d) if math.isfinite(d) else math.inf


def smallest_attainable_p(n_base: int, n_head: int, resamples: int = RESAMPLES) -> float:
    """The smallest p-value compare's permutation test can give these many processes: every head process
    beyond every base one, 2 / C(n, n_base) where the relabellings are counted exactly, else the Monte Carlo
    floor 2 / (resamples + 1). A bar below it cannot be reached by any change: the MDE is then infinite."""
    relabellings = math.comb(n_base + n_head, n_base)
    if relabellings <= EXACT_LIMIT:
        return min(1.0, 2 / relabellings)
    return min(1.0, 2 / (resamples + 1))


def processes_to_detect(c: Comparison, effect: float) -> int | None:
    """Processes a side at which this comparison's minimum detectable effect would come down to `effect`:
    the stated MDE (read from the permutation test: a critical shift plus a quantile of the estimate's
    spread, both scales of the statistic's spread) shrinking as 1/sqrt(n), as that spread does, so at the
    processes measured this and the stated MDE agree. An approximation: the critical value also falls as
    more processes make smaller p-values reachable, so it overstates what is needed where the bar was
    nearly out of reach. None where the MDE is not finite (too few processes to reach the bar). Where the
    slow processes' ceiling raised the MDE (power_ceiling), the relabellings' MDE scales, and at least the
    processes at which the ceiling stops binding are needed (Comparison.ceiling_free, computed)."""
    if effect <= 0:
        return None
    n = min(c.n_base, c.n_head)
    raised = math.isfinite(c.relabelled_mde)
    mde = c.relabelled_mde if raised else c.mde
    if not math.isfinite(mde):
        return None
    needed = max(n, math.ceil(n * (math.log1p(mde) / math.log1p(effect)) ** 2))
    return max(needed, c.ceiling_free, n + 1) if raised else needed


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


def pack_samples(samples: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Sample lists as one array and its offsets (list i is flat[offsets[i]:offsets[i + 1]]): a few arrays,
    not a float object per sample, for interval_columns and for pickling."""
    sizes = [len(s) for s in samples]
    flat = np.fromiter(itertools.chain.from_iterable(samples), dtype=float, count=sum(sizes))
    return flat, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])


def interval_columns(flat: np.ndarray, offsets: np.ndarray, confidence: float = PAGE_CONFIDENCE) -> np.ndarray:
    """`interval` of each cell's samples (cell i's are flat[offsets[i]:offsets[i + 1]]) as one
    (cells, 5) array of Interval's fields, computed per sample count as one array: a published history
    asks for one per cell (400,000 for 2000 commits x 200 rows), and numpy's per-call overhead was most
    of a first publish (evaluation/publish_speed.py)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    out = np.empty((len(sizes), 5))
    for n in np.unique(sizes).tolist():
        if n == 0:
            raise ValueError("an interval needs at least one sample")
        where = np.flatnonzero(sizes == n)
        x = np.sort(flat[offsets[where][:, None] + np.arange(n)], axis=1)
        low, high = _median_ci_ranks(n, confidence) if n >= 2 else (None, None)
        out[where, 0] = (x[:, (n - 1) // 2] + x[:, n // 2]) / 2
        out[where, 1] = x[:, low] if low is not None else math.nan
        out[where, 2] = x[:, high] if high is not None else math.nan
        out[where, 3] = n
        out[where, 4] = np.quantile(x, LEVEL_QUANTILE, axis=1)
    return out


# A cell's colour, on every page (Compare cells, the landing page's change column, sparklines): one rule,
# `page_changes`, written once here and once in html_templates/static/compare.js for the views a reader
# lays there (tests check both agree). The pooled blocks' interval above says how precisely a commit's
# processes measured, not how much a fresh process would move; measured on the example's six-commit
# history, colouring where those intervals were disjoint painted 9 of 30 cells, 4 of them real. So the
# evidence is *between processes*: each process's level of the cell (the plugin keeps them), compared
# with the baseline's by Welch's t on the log scale, with Benjamini-Hochberg across the cells compared
# together; a cell also takes the colour of a step `torchbench find` confirmed between it and its
# baseline, and a cell past an unconfirmed step is marked a candidate instead. Before the test, the shift
# that a commit's cells share (the median over those no step moved, from COMMON_MIN_CELLS) is taken out: on a
# shared machine every row of a commit measured in a slow hour reads high together (seen: all rows of one
# commit 15-25% high), and that is the machine, not the code.
PAGE_Q = 0.05  # false discovery rate across the cells compared together
COMMON_MIN_CELLS = 3  # cells of one commit from which their shared shift is estimated
STEP, EVIDENCE, CANDIDATE, ONE_PROCESS, NO_LEVELS = "step", "evidence", "candidate", "one process", "no levels"


def spread_columns(levels: Sequence[Sequence[float]]) -> np.ndarray:
    """Each cell's per-process levels as (processes, mean, variance) of their logs (variance with ddof 1;
    nan where fewer than two): one (len(levels), 3) array, what `page_changes` needs of a cell. Levels that
    are not all positive (a track_ benchmark's own numbers) have no log scale: counted as none kept.
    Computed per number of processes as one array (a published history has 400,000 cells)."""
    out = np.full((len(levels), 3), math.nan)
    out[:, 0] = 0
    by_n: dict[int, list[int]] = {}
    for i, found in enumerate(levels):
        by_n.setdefault(len(found), []).append(i)
    for n, where in by_n.items():
        if n == 0:
            continue
        x = np.array([levels[i] for i in where], dtype=float).reshape(len(where), n)
        ok = np.all(np.isfinite(x) & (x > 0), axis=1)
        rows, logs = np.asarray(where)[ok], np.log(x[ok])
        out[rows, 0] = n
        out[rows, 1] = logs.mean(axis=1)
        if n >= 2:
            out[rows, 2] = logs.var(axis=1, ddof=1)
    return out


def _bh(p: np.ndarray, q: float) -> np.ndarray:
    """Benjamini-Hochberg at q over the finite p-values (nan: not tested, never rejected). The same few
    lines as compare.js `bh`; statsmodels' multipletests (`fdr`) would cost its import inside every asv
    publish, and the script must do the same arithmetic in a browser."""
    tested = np.flatnonzero(np.isfinite(p))
    out = np.zeros(len(p), dtype=bool)
    if not len(tested):
        return out
    order = tested[np.argsort(p[tested], kind="stable")]
    below = p[order] <= q * np.arange(1, len(order) + 1) / len(order)
    if below.any():
        out[order[: int(np.flatnonzero(below)[-1]) + 1]] = True
    return out


def _welch_p(base: np.ndarray, head: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Two-sided Welch t p-value of each cell's log-level difference (head minus `shift` against base), from
    (processes, mean, variance) columns; nan where a side has fewer than two processes. The t distribution's
    tail is the regularized incomplete beta function (scipy.special.betainc), as compare.js computes it."""
    from scipy.special import betainc

    nb, mb, vb = base.T
    nh, mh, vh = head.T
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = vb / nb, vh / nh
        se2 = a + b
        t = (mh - shift - mb) / np.sqrt(se2)
        df = se2 ** 2 / (a ** 2 / (nb - 1) + b ** 2 / (nh - 1))
        p = betainc(df / 2, 0.5, df / (df + t ** 2))
    same = se2 == 0  # identical processes on both sides (counts): any difference is decisive
    p = np.where(same, np.where(mh - shift == mb, 1.0, 0.0), p)
    return np.where((nb >= 2) & (nh >= 2) & np.isfinite(vb) & np.isfinite(vh), p, math.nan)


class Changes(NamedTuple):
    """What `page_changes` says of each cell (arrays, one entry a cell)."""

    direction: np.ndarray  # +1 slower, -1 faster, 0 not coloured
    reason: list[str]  # STEP, EVIDENCE, CANDIDATE, ONE_PROCESS, NO_LEVELS or ""
    p: np.ndarray  # Welch's p-value (nan: not tested)
    common: np.ndarray  # the shift the cell's commit shares with its other cells, as a ratio (1: none taken out)


def page_changes(base_level, head_level, base_spread, head_spread, group, step_ratio=None, candidate=None, *,
                 q: float = PAGE_Q, floor: float = PAGE_FLOOR) -> Changes:
    """The one colour rule of every page, for cells compared together (a Compare view's non-baseline cells,
    the landing page's changes): each cell's level against its baseline's, with their per-process spreads
    (`spread_columns`), the commit it belongs to (`group`: its cells share a common-mode shift), the net
    ratio of the confirmed steps between it and its baseline (1: none) and whether an unconfirmed step
    lies between (`candidate`). In order: a confirmed net step of at least `floor` colours the cell (STEP);
    a candidate step marks it (CANDIDATE); a side measured by fewer than two processes leaves it
    uncoloured (ONE_PROCESS; NO_LEVELS where no process's level was kept); else Welch's test of the
    per-process levels, the commit's common shift taken out, after Benjamini-Hochberg at `q` across the
    tested cells, and a level ratio (likewise adjusted) of at least `floor` colour it (EVIDENCE)."""
    base_level, head_level = np.asarray(base_level, dtype=float), np.asarray(head_level, dtype=float)
    base_spread = np.asarray(base_spread, dtype=float).reshape(-1, 3)
    head_spread = np.asarray(head_spread, dtype=float).reshape(-1, 3)
    group = np.asarray(group)
    m = len(base_level)
    step_ratio = np.ones(m) if step_ratio is None else np.asarray(step_ratio, dtype=float)
    candidate = np.zeros(m, dtype=bool) if candidate is None else np.asarray(candidate, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        moved = np.log(head_level / base_level)
    bar = math.log1p(floor)
    stepped = np.abs(np.log(step_ratio)) >= bar
    # the commit's shared shift, from its cells that no step moved (a real step's cells would drag a median
    # of few cells: in the example, two of six cells 3x up pulled the estimate and painted a flat cell)
    common = np.zeros(m)
    for g in np.unique(group) if m else ():
        mine = (group == g) & np.isfinite(moved) & ~stepped & ~candidate
        if mine.sum() >= COMMON_MIN_CELLS:
            common[group == g] = float(np.median(moved[mine]))
    levels_kept = (base_spread[:, 0] >= 1) & (head_spread[:, 0] >= 1)
    p = _welch_p(base_spread, head_spread, common)
    p = np.where(stepped | candidate, math.nan, p)
    rejected = _bh(p, q)
    adjusted = moved - common
    direction = np.zeros(m, dtype=np.int8)
    reason = [""] * m
    for i in range(m):
        if stepped[i]:
            direction[i], reason[i] = (1 if step_ratio[i] > 1 else -1), STEP
        elif candidate[i]:
            reason[i] = CANDIDATE
        elif not levels_kept[i]:
            reason[i] = NO_LEVELS
        elif math.isnan(p[i]):
            reason[i] = ONE_PROCESS
        elif rejected[i] and abs(adjusted[i]) >= bar:
            direction[i], reason[i] = (1 if adjusted[i] > 0 else -1), EVIDENCE
    return Changes(direction, reason, p, np.exp(common))


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
