"""torchbench.stats on synthetic per-process values with a known truth.

The noise models are this machine's: log-normal process-to-process spread,
a slow cluster of processes ~2x slower, heavy tails, one wild outlier process,
and drift over the run shared by alternating base/head processes.
"""

import math

import numpy as np
import pytest

from torchbench import stats


def draw(rng, n, *, ratio=1.0, spread=0.03, slow_share=0.0, tail_df=None, drift=None, median=2e-6):
    noise = rng.standard_t(tail_df, n) * spread if tail_df else rng.normal(0, spread, n)
    values = median * ratio * np.exp(noise)
    values *= np.where(rng.random(n) < slow_share, 2.0, 1.0)
    if drift is not None:
        values *= drift
    return values


def verdict(base, head, *, q=0.01, floor=0.02, threshold=0.05, resamples=2000):
    c = stats.compare(base, head, resamples=resamples)  # fewer resamples than the tool's: hundreds of trials
    (sig,) = stats.fdr([c.p_value], q)
    return stats.classify(c, sig, floor=floor, threshold=threshold), c


def rate(rng, trials, **kwargs):
    """How often each verdict comes out over `trials` synthetic A/B pairs."""
    ratio = kwargs.pop("ratio", 1.0)
    n = kwargs.pop("n", 20)
    seen = {}
    for _ in range(trials):
        v, _ = verdict(draw(rng, n, **kwargs), draw(rng, n, ratio=ratio, **kwargs))
        seen[v] = seen.get(v, 0) + 1
    return {k: v / trials for k, v in seen.items()}


def test_the_ratio_its_interval_and_the_test_find_a_known_shift():
    rng = np.random.default_rng(0)
    c = stats.compare(draw(rng, 30), draw(rng, 30, ratio=1.10))
    assert 1.07 < c.ratio < 1.13 and c.ci_low < 1.10 < c.ci_high and c.ci_low > 1
    assert c.p_value <= 2 / stats.RESAMPLES and c.n_base == c.n_head == 30  # the permutation test's floor
    assert 0 < c.mde < 0.05  # 3% noise, 30 processes a side: a few % detectable


def test_identical_code_is_unchanged_and_never_an_alert():
    rates = rate(np.random.default_rng(1), 300, spread=0.02)
    assert rates.get(stats.REGRESSED, 0) + rates.get(stats.IMPROVED, 0) <= 0.02
    assert rates.get(stats.UNCHANGED, 0) > 0.9


def test_a_slow_cluster_of_processes_raises_no_false_alarm():
    rates = rate(np.random.default_rng(2), 300, spread=0.03, slow_share=0.3)
    assert rates.get(stats.REGRESSED, 0) + rates.get(stats.IMPROVED, 0) <= 0.02


def test_heavy_tails_and_one_wild_process_raise_no_false_alarm_and_barely_move_the_estimate():
    rng = np.random.default_rng(3)
    rates = rate(rng, 300, spread=0.02, tail_df=2)
    assert rates.get(stats.REGRESSED, 0) + rates.get(stats.IMPROVED, 0) <= 0.03
    base, head = draw(rng, 20), draw(rng, 20)
    _, clean = verdict(base, head)
    head[3] *= 50  # one process went badly wrong
    _, c = verdict(base, head)
    assert abs(c.ratio / clean.ratio - 1) < 0.01


def test_drift_shared_by_alternating_processes_cancels():
    rng = np.random.default_rng(4)
    false_alarms = 0
    for _ in range(200):
        drift = np.linspace(1.0, 1.5, 20)  # the machine slows by half over the run
        v, _ = verdict(draw(rng, 20, drift=drift), draw(rng, 20, drift=drift))
        false_alarms += v in (stats.REGRESSED, stats.IMPROVED)
    assert false_alarms / 200 <= 0.02


def test_power_for_5_10_and_30_percent_at_this_machines_noise():
    rng = np.random.default_rng(5)
    # 30%: one draw in 100 has 11 slow base processes against 4 slow head ones, and the
    # rank test, diluted by the slow cluster, stays above q (the interval is 1.21-1.28).
    for ratio, power in ((1.05, 0.8), (1.10, 0.95), (1.30, 0.99)):
        rates = rate(rng, 100, ratio=ratio, spread=0.03, slow_share=0.2, n=30)
        assert rates.get(stats.REGRESSED, 0) >= power, (ratio, rates)
    rates = rate(rng, 100, ratio=1 / 1.10, spread=0.03, n=30)
    assert rates.get(stats.IMPROVED, 0) >= 0.95


def test_a_tiny_significant_change_is_below_the_floor():
    rng = np.random.default_rng(6)
    base, head = draw(rng, 200, spread=0.001), draw(rng, 200, ratio=1.003, spread=0.001)
    v, c = verdict(base, head, resamples=stats.RESAMPLES)
    assert c.p_value <= 2 / stats.RESAMPLES and v == stats.UNCHANGED  # 0.3%: significant, never an alert


def test_too_few_processes_are_inconclusive_not_unchanged():
    rng = np.random.default_rng(7)
    v, c = verdict(draw(rng, 3, spread=0.1), draw(rng, 3, spread=0.1))
    assert v == stats.INCONCLUSIVE and c.ci_high > 1.05
    v, c = verdict(draw(rng, 2), draw(rng, 2))
    assert v == stats.INCONCLUSIVE and math.isinf(c.ci_high) and c.p_value == 1


def test_fdr_rejects_the_real_changes_among_many_nulls():
    rng = np.random.default_rng(8)
    p = [stats.compare(draw(rng, 20), draw(rng, 20), resamples=5000).p_value for _ in range(60)]
    p += [stats.compare(draw(rng, 20), draw(rng, 20, ratio=1.2), resamples=5000).p_value for _ in range(3)]
    reject = stats.fdr(p, 0.05)
    assert reject[-3:] == [True, True, True] and sum(reject[:-3]) <= 1
    assert stats.fdr([], 0.05) == []


def test_the_minimum_detectable_effect_shrinks_with_more_processes_and_grows_with_noise():
    rng = np.random.default_rng(9)

    def mde(n, spread):
        return stats.compare(draw(rng, n, spread=spread), draw(rng, n, spread=spread)).mde

    assert mde(40, 0.03) < mde(10, 0.03)
    assert mde(20, 0.06) > mde(20, 0.02)
    assert stats.compare([1.0, 1.1], [1.0, 1.2]).mde == math.inf


def test_bad_input():
    with pytest.raises(ValueError):
        stats.compare([], [1.0])


def test_a_cells_interval_is_scipys_order_statistic_interval_of_the_median():
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(3)
    for n in (2, 5, 8, 9, 17, 60, 401):
        x = rng.lognormal(size=n)
        got = stats.interval(x)
        want = scipy_stats.quantile_test(np.sort(x), q=np.median(x), p=0.5).confidence_interval(confidence_level=0.99)
        assert got.median == np.median(x) and got.n == n
        np.testing.assert_equal([got.low, got.high], [want.low, want.high])
    assert math.isnan(stats.interval([1.0]).low)


def test_the_median_interval_ranks_are_scipys_for_every_sample_count():
    """Computed without scipy.stats (its import is 75 MiB inside asv's publish): the same ranks."""
    from scipy import stats as scipy_stats

    for confidence in (0.99, 0.95, 0.9):
        for n in range(1, 401):
            ci = scipy_stats.quantile_test(np.arange(n, dtype=float), q=(n - 1) / 2, p=0.5).confidence_interval(
                confidence_level=confidence)
            want = tuple(None if math.isnan(v) else int(v) for v in (ci.low, ci.high))
            assert stats._median_ci_ranks(n, confidence) == want, (n, confidence)
    assert stats._median_ci_ranks(3000, 0.99)[0] > 1400  # past where a float 2**n would overflow


def _levels(rng, n, shift=0.0, noise=0.02):
    return np.exp(shift + rng.normal(0, noise, n))


def _changes(base_levels, head_levels, group=None, **kwargs):
    """page_changes on cells given as lists of per-process levels (each cell's level: their 10% quantile)."""
    level = [stats.level(x) if len(x) else math.nan for x in base_levels]
    head = [stats.level(x) if len(x) else math.nan for x in head_levels]
    group = group if group is not None else [0] * len(head_levels)
    return stats.page_changes(level, head, stats.spread_columns(base_levels), stats.spread_columns(head_levels),
                              group, **kwargs)


def test_a_cell_is_coloured_when_its_processes_moved_not_when_one_process_was_slow():
    rng = np.random.default_rng(3)
    base = [_levels(rng, 4) for _ in range(8)]
    head = [_levels(rng, 4) for _ in range(8)]
    head[0] = _levels(rng, 4, math.log(1.25))  # every process 25% slower
    head[1] = _levels(rng, 4, math.log(0.8))  # every process 20% faster
    head[2] = np.append(_levels(rng, 3), 2.0)  # one process in the slow tail (2x)
    base[3] = np.append(_levels(rng, 3), 2.0)  # the baseline's, likewise
    found = _changes(base, head, group=np.arange(8))  # one cell a commit: no common shift to take out
    assert found.direction.tolist() == [1, -1, 0, 0, 0, 0, 0, 0]
    assert found.reason[:2] == [stats.EVIDENCE, stats.EVIDENCE] and found.reason[2:] == [""] * 6
    np.testing.assert_allclose(found.common, 1.0)


def test_a_shift_every_cell_of_a_commit_shares_is_the_machines_and_is_taken_out():
    rng = np.random.default_rng(4)
    base = [_levels(rng, 4) for _ in range(6)]
    head = [_levels(rng, 4, math.log(1.2)) for _ in range(6)]  # the whole commit read 20% high
    head[5] = _levels(rng, 4, math.log(3.6))  # and one case really moved, 3x on top
    found = _changes(base, head)
    assert found.direction.tolist() == [0, 0, 0, 0, 0, 1]
    assert found.common[0] == pytest.approx(1.2, rel=0.05)
    # without the common shift taken out (one cell a commit), every cell would be coloured
    assert _changes(base, head, group=np.arange(6)).direction.tolist() == [1] * 6


def test_steps_colour_or_mark_a_cell_before_any_test_and_one_process_is_never_coloured():
    rng = np.random.default_rng(5)
    base = [_levels(rng, 4) for _ in range(5)]
    head = [_levels(rng, 1, math.log(1.5)), _levels(rng, 4, math.log(1.5)), _levels(rng, 1, math.log(1.5)),
            _levels(rng, 4), np.array([])]
    found = _changes(base, head, group=np.arange(5), step_ratio=[1.5, 1.0, 1.0, 1.02, 1.0],
                     candidate=[False, True, False, False, False])
    assert found.direction.tolist() == [1, 0, 0, 0, 0]
    # a confirmed step decides even a one-process cell; a candidate marks a cell its processes would colour;
    # a confirmed step under the floor decides nothing; a cell without kept levels says so
    assert found.reason == [stats.STEP, stats.CANDIDATE, stats.ONE_PROCESS, "", stats.NO_LEVELS]
    assert math.isnan(found.p[0]) and math.isnan(found.p[1]) and math.isnan(found.p[2]) and found.p[3] > 0


def test_a_change_below_the_floor_is_not_coloured_however_clear():
    rng = np.random.default_rng(6)
    base = [_levels(rng, 8, noise=0.001) for _ in range(2)]
    head = [_levels(rng, 8, math.log(1.03), noise=0.001), _levels(rng, 8, math.log(1.08), noise=0.001)]
    found = _changes(base, head, group=[0, 1])
    assert found.p[0] < 1e-6 and found.direction.tolist() == [0, 1]


def test_welchs_p_is_scipys_and_the_false_discovery_control_is_statsmodels():
    from scipy import stats as scipy_stats
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(8)
    for nb, nh in ((2, 2), (4, 4), (3, 9), (12, 5)):
        for _ in range(20):
            b, h = rng.lognormal(0, 0.1, nb), rng.lognormal(rng.normal(0, 0.1), rng.uniform(0.01, 0.3), nh)
            got = stats._welch_p(stats.spread_columns([b]), stats.spread_columns([h]), np.zeros(1))[0]
            want = scipy_stats.ttest_ind(np.log(h), np.log(b), equal_var=False).pvalue
            assert got == pytest.approx(want, rel=1e-9, abs=1e-14)
    for _ in range(50):
        p = rng.uniform(0, 0.1, 40) ** rng.uniform(1, 4)
        p[rng.integers(0, 40, 5)] = math.nan  # untested cells take no part
        tested = np.isfinite(p)
        want = np.zeros(40, dtype=bool)
        want[tested] = multipletests(p[tested], alpha=0.05, method="fdr_bh")[0]
        assert stats._bh(p, 0.05).tolist() == want.tolist()


def test_intervals_of_many_sample_lists_are_each_lists_interval():
    """stats.interval_columns (a published history's 400,000 cells at once, packed by stats.pack_samples)
    gives what interval gives one list, as a row of Interval's fields."""
    rng = np.random.default_rng(7)
    lists = [tuple(rng.lognormal(0, 0.3, n)) for n in rng.integers(1, 40, 500)]
    columns = stats.interval_columns(*stats.pack_samples(lists))
    assert columns.shape == (len(lists), 5)
    for one, (median, low, high, n, level) in zip((stats.interval(s) for s in lists), columns.tolist()):
        assert (one.median, one.n, one.level) == (median, n, level)
        assert (math.isnan(one.low) and math.isnan(low)) or one.low == low
        assert (math.isnan(one.high) and math.isnan(high)) or one.high == high
    with pytest.raises(ValueError):
        stats.interval_columns(*stats.pack_samples([()]))


def test_the_plugin_keeps_each_process_level_as_stats_defines_it():
    from torchbench.asv_bridge import plugin

    rng = np.random.default_rng(9)
    samples = list(rng.lognormal(0, 0.2, 7))
    assert plugin._round_level(samples, 1.0) == [stats.level(samples)]
    assert plugin._round_level(None, 2.5) == [2.5]  # a value asv kept without samples
    assert plugin._round_level(None, None) == [] and plugin._round_level(None, math.nan) == []


def test_levels_without_a_log_scale_count_as_none_kept():
    spread = stats.spread_columns([[1.0, 2.0], [0.0, 2.0], [-1.0], [], [3.0]])
    assert spread[:, 0].tolist() == [2, 0, 0, 0, 1]
    assert spread[0, 1] == pytest.approx(math.log(2) / 2) and math.isnan(spread[4, 2])


def test_the_rank_weight_form_of_the_statistic_gives_the_exact_permutation_p_value_row_by_row():
    """rank_weights (many rows' relabellings as one matrix product: the suite-scale tests, the rule's power) and
    permutation_p (one row's relabellings gathered, _shift_rows) are two forms of the one statistic: at sizes
    where both are exact, each row's p-value is the same."""
    rng = np.random.default_rng(3)
    for n_base, n_head in ((5, 5), (6, 8), (8, 8)):
        base = np.exp(rng.normal(0, 0.2, (40, n_base)))
        head = np.exp(rng.normal(0, 0.2, (40, n_head)) + rng.choice([0.0, 0.1, 0.3], size=(40, 1)))
        weights = stats.exact_rank_weights(n_base, n_head)
        high, low = stats.relabelled_tails(np.log(base), np.log(head), weights)
        by_matrix = np.minimum(1.0, 2 * np.minimum(high, low) / len(weights))
        by_row = [stats.permutation_p(b, h) for b, h in zip(base, head)]
        np.testing.assert_allclose(by_matrix, by_row, rtol=1e-12)
        assert (by_matrix < 0.01).any() and (by_matrix > 0.5).any()  # both tails of the range were compared


def test_suite_noise_groups_rows_by_tail_and_survives_tied_tails():
    """SuiteNoise puts a row with a long slow tail in a heavier group than a quiet one, and rows whose tails
    tie (so a group between two bounds holds none) still give every group residuals to simulate from."""
    rng = np.random.default_rng(0)
    quiet = [(np.exp(rng.normal(0, 0.01, 10)), np.exp(rng.normal(0, 0.01, 10))) for _ in range(30)]
    slow = [(np.exp(rng.normal(0, 0.01, 10) + np.r_[np.zeros(8), 0.3, 0.3]), np.exp(rng.normal(0, 0.01, 10)))
            for _ in range(30)]
    noise = stats.SuiteNoise(quiet + slow)
    assert len(noise.groups) == 3
    assert noise.group(*map(np.log, slow[0])) > noise.group(*map(np.log, quiet[0]))
    same = (np.array([1.0, 1.1] * 5), np.array([1.0, 1.1] * 5))
    tied = stats.SuiteNoise([same] * 40)
    assert len(tied.groups) == 3 and all(len(g) for g in tied.groups)
