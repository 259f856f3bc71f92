"""The paired comparison of a round's two processes (torchbench/paired.py): exact signed-rank p-values equal to
scipy's, an interval consistent with the test and of its stated coverage, an MDE the test itself reaches, and
the evidence that keeps each value's round (with a random order within each round)."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from torchbench import paired
from torchbench.ab.evidence import Evidence


@pytest.mark.parametrize("n", [1, 2, 5, 12, 30, 50])
def test_signed_rank_p_values_are_scipys_exact_ones(n):
    rng = np.random.default_rng(n)
    for shift in (0.0, 0.3, 1.0):
        d = rng.normal(shift, 1.0, n)
        assert paired.signed_rank_p(d) == pytest.approx(scipy_stats.wilcoxon(d, method="exact").pvalue, abs=1e-12)


def test_beyond_scipys_exact_range_the_p_value_is_still_exact():
    """80 pairs all of one sign: exactly 2 / 2**80 (scipy's normal approximation says ~1e-14)."""
    assert paired.signed_rank_p(np.linspace(0.01, 0.8, 80)) == pytest.approx(2 / 2 ** 80, rel=1e-9)
    assert paired.smallest_paired_p(80) == pytest.approx(2 / 2 ** 80)


def test_the_interval_excludes_no_change_exactly_when_the_test_rejects_at_its_level():
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(6, 30))
        d = rng.standard_t(3, n) * 0.05 + rng.normal(0, 0.03)
        low, high = paired.walsh_interval(d, 0.95)
        assert (low > 0 or high < 0) == (paired.signed_rank_p(d) <= 0.05)


def test_the_interval_covers_the_true_shift_at_its_stated_level_for_heavy_tailed_rounds():
    rng = np.random.default_rng(2)
    trials, covered = 4000, 0
    for _ in range(trials):
        d = rng.standard_t(2, 10) * 0.1 + 0.05
        low, high = paired.walsh_interval(d, 0.95)
        covered += low <= 0.05 <= high
    # exact for any continuous symmetric difference: 95% (a little more, the ranks being discrete)
    assert 0.945 <= covered / trials <= 0.975


def test_too_few_pairs_give_no_interval_and_an_infinite_mde():
    c = paired.compare_paired([1.0, 1.0, 1.0, 1.0], [1.1, 1.2, 1.15, 1.12], alpha=0.01)
    assert c.test == "paired" and c.p_value == pytest.approx(0.125)  # 2 / 2**4: the best 4 pairs can do
    assert c.ci_low == 0.0 and math.isinf(c.ci_high) and math.isinf(c.mde)  # no 95% interval from 4 pairs


def test_the_stated_mde_is_an_effect_the_test_detects_about_as_often_as_stated():
    """Simulated from the test itself: rounds with noise like these, shifted by the MDE, reach the bar in about
    `power` of fresh draws (not only of the resampled ones)."""
    rng = np.random.default_rng(3)
    n, alpha = 20, 1e-3
    base = np.exp(rng.normal(0, 0.05, n))
    c = paired.compare_paired(base, base * np.exp(rng.normal(0, 0.05, n)), alpha=alpha, power=0.8)
    assert 0 < c.mde < 0.2
    # the rounds' log ratios have a spread of 0.05 (the head's own noise): fresh rounds like them, shifted by the MDE
    hits = sum(paired.signed_rank_p(rng.normal(math.log1p(c.mde), 0.05, n)) <= alpha
               for _ in range(400))
    assert 0.6 <= hits / 400 <= 0.95


def test_a_clear_change_is_found_with_its_size():
    rng = np.random.default_rng(4)
    base = np.exp(rng.normal(0, 0.03, 16))
    c = paired.compare_paired(base, base * 1.10 * np.exp(rng.normal(0, 0.01, 16)), alpha=1e-3)
    assert c.p_value == pytest.approx(2 / 2 ** 16)
    assert c.ci_low > 1.08 and c.ci_high < 1.12 and 1.09 < c.ratio < 1.11


def test_bad_input_says_what_is_wrong():
    with pytest.raises(ValueError, match="one base and one head value per round"):
        paired.compare_paired([1.0, 2.0], [1.0])


def test_evidence_pairs_values_by_the_round_that_measured_them():
    evidence, job = Evidence(), ("bench.x", 0)
    for r, (b, h) in enumerate([(1.0, 1.1), (2.0, None), (3.0, 3.3), (None, 4.4)]):
        if b is not None:
            evidence.add_value("base", job, b, r)
        if h is not None:
            evidence.add_value("head", job, h, r)
    assert evidence.paired(job) == ([1.0, 3.0], [1.1, 3.3])
    # values read from result files have no rounds: nothing is paired
    files = Evidence()
    files.add_value("base", job, 1.0)
    files.add_value("head", job, 1.1)
    assert files.paired(job) == ([], [])
