"""The alert's sequential design, counts channel and time allocation, each rule tested by simulation on real
per-process values (tests/data/alert_pool_12_rounds.json: the example's six dispatch cases in 12 rounds of fresh
processes on this machine, two arms of identical code; suites are drawn from it with replacement)."""

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as t_dist

from torchbench import stats
from torchbench.ab import rounds
from torchbench.ab.allocation import MAX_RUN_TIME, MIN_RUN_TIME, run_time_for
from torchbench.ab.count_decision import COMMIT_SD, COUNT_ALPHA, JITTERS
from torchbench.ab.channels import to_confirm
from torchbench.ab.counts import (ADVISORY, COMPUTE, NO_COUNTS, PRIOR_WEIGHT, VETO_PROCESSES, WALL_ONLY, count_change,
                                   opposite_p, weights)
from torchbench.ab.counts_cache import CountPlans, CountsCache
from torchbench.ab.evidence import Evidence, JobInfo
from torchbench.ab.options import Policy, Rounds
from torchbench.ab.sequential import plan, smallest_p
from torchbench.ab.verdict import COUNTS, WALL, decide

N = 22  # rounds a simulated comparison runs (looks at 10 and 20 for 60 rows)


def simulate(real_values, rows: int, effects: dict[int, float], rng, *, counts: dict[int, float] | None = None,
             policy: Policy = Policy(), max_rounds: int = N, builds_differ: str = "") -> tuple[Evidence, list]:
    """A comparison of ROWS cases run round by round through the alert's own looks (decided rows stop getting
    processes), then decided. effects: row -> head/base factor on its wall time; counts: row -> counts factor
    (rows without one have no counts, unless COUNTS is given: then the others' counts are flat)."""
    cases = sorted(real_values)
    evidence, jobs, full = Evidence(builds_differ=builds_differ), [], {}
    for i in range(rows):
        job = (f"bench.case_{i:03d}", 0)
        jobs.append(job)
        evidence.jobs[job] = JobInfo(job[0], unit="seconds", on_base=True, on_head=True)
        v = real_values[cases[i % len(cases)]]
        full[job] = rng.choice(v, N), rng.choice(v, N) * effects.get(i, 1.0)
        if counts is not None:  # the first valgrind process a side and the jittered ones a decision needs
            made = {"base": [], "head": []}
            for _ in range(1 + JITTERS):
                base = 1e5 * (1 + rng.normal(0, 2e-4, 3))
                made["base"].append(list(base))
                made["head"].append(list(base * counts.get(i, 1.0) * (1 + rng.normal(0, 2e-4, 3))))
            for side, found in made.items():
                evidence.counts[side][job], evidence.counts_again[side][job] = found[0], found[1:]
    rounds.plan_design(evidence, jobs, policy, Rounds(min_rounds=6, max_rounds=max_rounds))
    for r in range(1, N + 1):
        for job in jobs:
            if job not in evidence.decided:
                evidence.values["base"][job] = list(full[job][0][:r])
                evidence.values["head"][job] = list(full[job][1][:r])
        evidence.rounds = r
        rounds.interim_decisions(evidence, jobs, policy)
    return evidence, decide(evidence, policy)


def flagged(rows) -> list:
    return [r for r in rows if r.status in (stats.REGRESSED, stats.IMPROVED)]


@pytest.mark.parametrize("m", [1, 6, 60, 118, 500])
def test_the_first_look_can_stop_a_change_at_any_suite_size(m):
    design = plan(m, 0.01, 0.95, 6, 100)
    assert design.looks and design.looks[0] >= 6
    assert smallest_p(design.looks[0]) * 2 <= design.changed_bar(1.0)
    # the old design looked first at 6 processes a side, where no p-value goes below 2/924
    assert smallest_p(6) == pytest.approx(2 / 924) and smallest_p(6) > design.changed_bar(1.0)
    # the shares add up to the row's whole alpha
    assert design.look_share * len(design.looks) + design.final_share == pytest.approx(1.0)


def test_a_clear_change_stops_at_the_first_look(real_values, monkeypatch):
    monkeypatch.setattr(stats, "_thin_bar", lambda *a: False)  # no MDE asserted: the simulated one skipped
    evidence, rows = simulate(real_values, 60, {0: 2.0}, np.random.default_rng(3))
    first = evidence.design.looks[0]
    assert evidence.decided[("bench.case_000", 0)].startswith(f"clearly changed after {first} processes")
    assert rows[0].status == stats.REGRESSED and rows[0].comparison.n_base == first


def test_combined_p_is_a_valid_p_value_whatever_the_looks():
    """Bonferroni over the looks: under no change, P(p_row <= t) <= t even for perfectly correlated looks."""
    design = plan(60, 0.01, 0.95, 6, 100)
    u = np.random.default_rng(0).uniform(size=20000)
    combined = np.array([design.combined_p(x, [x] * len(design.looks)) for x in u])
    for t in (0.01, 0.05, 0.2):
        assert np.mean(combined <= t) <= t


# The suite-level A/A rate (<= q over 1,000 suites of 60 and 200 rows) and "unchanged" at exactly +-threshold
# are asserted in tests/test_error_rates.py (issue 51): here they were a per-row rate over 3 suites and +6%
# rows, weaker than the claims, at about 100 s each.


def test_counts_decide_a_small_compute_regression_from_their_layout_draws(real_values, monkeypatch):
    """A 2% compute regression that wall time cannot resolve here (the pool's minimum detectable effect is
    13-18%) is flagged by its counts, labelled, and leaves the rounds once its veto can see past a slow
    process (counts.VETO_PROCESSES a side), not at a look of the wall-time test."""
    # the rows' MDEs are read from their relabellings alone: the rule's power simulated at a thin bar
    # (stats._rule_mde, ~30 s a verdict of 60 rows) raises an MDE, and no status nor channel asserted here
    # reads it (tests/test_error_rates.py asserts the MDEs)
    monkeypatch.setattr(stats, "_thin_bar", lambda *a: False)
    rng = np.random.default_rng(2)
    found = leaned = 0
    for _ in range(5):
        evidence, rows = simulate(real_values, 60, {0: 1.02}, rng, counts={0: 1.02})
        row = rows[0]
        found += row.status == stats.REGRESSED
        # or vetoed: its wall time moved the other way at counts.VETO_LEVEL (5% of rows whose wall time does not)
        assert row.status == stats.REGRESSED or (row.status == stats.INCONCLUSIVE and "other way" in row.error)
        assert row.decided_by == COUNTS and row.label == COMPUTE
        # it left the rounds decided by its counts, or its wall time leaned against them to the end (vetoed, or
        # leaning: the rule keeps such a row measured)
        job = ("bench.case_000", 0)
        assert (evidence.decided.get(job, "").startswith("decided by instruction counts")
                or row.status == stats.INCONCLUSIVE
                or opposite_p(*(evidence.values[side][job] for side in ("base", "head")), 0.02) <= 0.5)
        # it left the rounds at VETO_PROCESSES a side (6: the veto's permutation test then cuts a slow process
        # off), unless its wall time then leaned against the counts: such a row stays, so that the veto can see it
        job = ("bench.case_000", 0)
        early = [evidence.values[side][job][:VETO_PROCESSES] for side in ("base", "head")]
        assert rounds.wall_check_rounds(0.95) == 4 < VETO_PROCESSES
        assert row.comparison.n_base == VETO_PROCESSES or opposite_p(*early, 0.02) <= 0.5
        leaned += row.comparison.n_base > VETO_PROCESSES
        assert not flagged(rows[1:])  # flat counts: the others are wall time only, and none is flagged
        assert {r.label for r in rows[1:]} == {WALL_ONLY} and {r.decided_by for r in rows[1:]} == {WALL}
    assert found >= 4 and leaned < 5
    # a count change below the floor (or within the noise) decides nothing alone
    evidence, rows = simulate(real_values, 6, {}, rng, counts={0: 1.005})
    assert rows[0].decided_by == WALL


def test_counts_against_the_wall_time_make_a_row_inconclusive(real_values):
    rng = np.random.default_rng(4)
    _, rows = simulate(real_values, 6, {0: 0.5}, rng, counts={0: 1.05})  # wall time clearly down (p 1.6e-4)
    assert rows[0].status == stats.INCONCLUSIVE and "the other way" in rows[0].error


def test_counts_between_different_builds_are_advisory_the_wall_time_decides(real_values):
    """An upgrade verdict (torch A vs torch B): the build moves counts by itself, so a 5% count change with an
    unchanged wall time is labelled, not decided, and flat counts do not make the other rows' bar stricter."""
    evidence, rows = simulate(real_values, 6, {}, np.random.default_rng(6), counts={0: 1.05},
                              builds_differ="torch 2.12.0 vs 2.13.0")
    assert rows[0].decided_by == WALL and rows[0].status != stats.REGRESSED
    assert ADVISORY in rows[0].label and "torch 2.12.0 vs 2.13.0" in rows[0].label
    assert set(evidence.weights.values()) == {1.0}  # every row weighs as one without counts
    assert not any(why.startswith("decided by instruction counts") for why in evidence.decided.values())


def test_weighted_bh_puts_flat_count_rows_behind_rows_without_counts():
    assert weights([NO_COUNTS, NO_COUNTS]) == [1.0, 1.0]
    w = weights([NO_COUNTS, WALL_ONLY, WALL_ONLY, COMPUTE])
    assert sum(w) == pytest.approx(4) and w[1] / w[0] == pytest.approx(PRIOR_WEIGHT[WALL_ONLY])
    # the same wall-time evidence: flagged without counts, not with flat counts beside rows without them
    evidence = Evidence()
    rng = np.random.default_rng(0)
    for i in range(4):
        job = (f"b.c{i}", 0)
        evidence.jobs[job] = JobInfo(job[0], unit="seconds", on_base=True, on_head=True)
        base = list(rng.lognormal(0, 0.02, 9))
        evidence.values["base"][job] = base
        evidence.values["head"][job] = [v * (1.3 if i == 0 else 1.0) for v in rng.permutation(base)]
    p = decide(evidence, Policy())[0].comparison.p_value
    policy = Policy(fdr=4 * p * 1.3)  # a lone row passes BH at this level with weight 1, not with 0.57
    assert decide(evidence, policy)[0].status == stats.REGRESSED
    for i in (0, 1, 2):  # row 0 and two others get flat counts, row 3 none
        evidence.counts["base"][(f"b.c{i}", 0)] = evidence.counts["head"][(f"b.c{i}", 0)] = [1e5, 1e5, 1e5]
    row = decide(evidence, policy)[0]
    assert row.label == WALL_ONLY and row.status != stats.REGRESSED


def test_count_change_counts_a_candidate_again_in_jittered_processes_before_it_decides():
    evidence = Evidence()
    job = ("b", 0)
    evidence.counts["base"][job], evidence.counts["head"][job] = [100.0, 100.01, 100.0], [103.0, 103.0, 103.0]
    change = count_change(evidence, job, 0.01, COUNT_ALPHA)
    # beyond the floor on one valgrind process a side: a candidate, counted again, deciding nothing yet
    assert change.label == COMPUTE and change.pending and not change.decides
    assert to_confirm(evidence, [job], 0.01, 1, COUNT_ALPHA) == [job]
    evidence.counts_again["base"][job] = [[100.0] * 3, [100.02] * 3]
    evidence.counts_again["head"][job] = [[103.01, 103.0, 103.0], [103.02] * 3]
    change = count_change(evidence, job, 0.01, COUNT_ALPHA)
    assert change.decides and not change.pending and change.delta == pytest.approx(0.03, rel=2e-3)
    assert change.margin < 0.03 and change.p_value < 0.01
    assert to_confirm(evidence, [job], 0.01, 1, COUNT_ALPHA) == []
    # an older record's one second process (a flat list) still reads as one process
    evidence.counts_again["base"][job], evidence.counts_again["head"][job] = [100.0] * 3, [103.0] * 3
    assert count_change(evidence, job, 0.01, COUNT_ALPHA).p_value < 1.0


def test_counts_tripled_on_first_processes_decide_and_are_not_counted_again():
    """Past count_decision.FIRST_CEILING (x2) the first processes decide: the row is not queued for layout
    draws (neither for its counts nor for its cycles), and it leaves the rounds decided by its counts, saying so."""
    evidence = Evidence()
    job = ("b", 0)
    evidence.jobs[job] = JobInfo("b", unit="seconds", on_base=True, on_head=True)
    evidence.counts["base"][job], evidence.counts["head"][job] = [100.0, 100.01, 100.0], [300.0, 300.0, 300.02]
    evidence.cycles["base"][job], evidence.cycles["head"][job] = [150.0] * 3, [420.0] * 3
    change = count_change(evidence, job, 0.01, COUNT_ALPHA)
    assert change.decides and not change.pending and change.label == COMPUTE and change.p_value == 0.0
    assert to_confirm(evidence, [job], 0.01, 1, COUNT_ALPHA) == []
    rng = np.random.default_rng(0)
    evidence.values["base"][job] = list(rng.lognormal(0, 0.05, VETO_PROCESSES))
    evidence.values["head"][job] = [3 * v for v in rng.lognormal(0, 0.05, VETO_PROCESSES)]
    why = rounds._counts_stop(evidence, job, Policy(), COUNT_ALPHA)
    assert why.startswith("decided by instruction counts (+200") and "on first processes" in why, why
    # a 60% move stays a candidate for the draws
    evidence.counts["head"][job] = [160.0] * 3
    assert count_change(evidence, job, 0.01, COUNT_ALPHA).pending
    assert to_confirm(evidence, [job], 0.01, 1, COUNT_ALPHA) == [job]


def test_counts_that_differ_between_jittered_processes_do_not_decide_a_change_of_that_size():
    """The processes' difference is noise the change must clear: base processes 2% apart (a row the
    layout moves, and so a commit moves as far: count_decision.COMMIT_RATIO) leave a 3% change undecided."""
    evidence = Evidence()
    job = ("b", 0)
    evidence.counts["base"][job], evidence.counts["head"][job] = [100.0] * 3, [103.0] * 3
    evidence.counts_again["base"][job] = [[102.0] * 3, [100.5] * 3]
    evidence.counts_again["head"][job] = [[105.0] * 3, [103.5] * 3]
    change = count_change(evidence, job, 0.01, COUNT_ALPHA)
    assert change.margin > change.delta > 0.025 and not change.decides and not change.pending
    # the commit noise as large as the layouts' spread (COMMIT_RATIO) is beside it: not moved at the label's level
    assert change.p_value > 0.05 and change.label == WALL_ONLY


def test_a_time_methods_counts_are_held_to_its_kinds_commit_noise():
    """A time_ method (by call) and a TimerSuite statement are held to their own kind's calibrated commit
    noise (count_decision.COMMIT_SD)."""
    evidence = Evidence()
    job = ("b.time_x", 0)
    for info in (JobInfo("b.time_x", by_call=True), JobInfo("b.time_x")):
        evidence.jobs[job] = info
        evidence.counts["base"][job], evidence.counts["head"][job] = [100.0] * 3, [102.0] * 3
        evidence.counts_again["base"][job], evidence.counts_again["head"][job] = [[100.0] * 3] * 2, [[102.0] * 3] * 2
        change = count_change(evidence, job, 0.01, COUNT_ALPHA)
        kind = "by call" if info.by_call else "statement"
        expected = max(0.01, np.expm1(t_dist.isf(0.005, 4) * COMMIT_SD[kind]))
        assert change.margin == pytest.approx(expected)


def test_counts_advisory_between_builds_are_never_counted_again():
    evidence = Evidence(builds_differ="torch 2.13.0 vs 2.14.1")
    job = ("b", 0)
    evidence.counts["base"][job], evidence.counts["head"][job] = [100.0] * 3, [110.0] * 3
    change = count_change(evidence, job, 0.01, COUNT_ALPHA)
    assert ADVISORY in change.label and not change.decides and not change.pending
    assert to_confirm(evidence, [job], 0.01, 1, COUNT_ALPHA) == []


def test_counts_cache_keeps_counts_per_commit_and_case_and_survives_a_bad_file(tmp_path):
    import sys

    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "bench.py").write_text("x = 1\n")
    cache = CountsCache(tmp_path / "counts", Path(sys.executable), suite, None)
    case = CountsCache.case(("bench.time_x", 0), ["'a'"])
    cache.store("c" * 40, {case: [10.0, 10.0, 10.0]})
    assert CountsCache(tmp_path / "counts", Path(sys.executable), suite, None).load("c" * 40) == {case: [10.0] * 3}
    assert cache.load("d" * 40) == {}
    # a changed suite is another key: its cases are counted again
    (suite / "bench.py").write_text("x = 2\n")
    assert CountsCache(tmp_path / "counts", Path(sys.executable), suite, None).load("c" * 40) == {}
    cache.path("c" * 40).write_text("{not json")
    assert cache.load("c" * 40) == {} and "unreadable" in cache.problems[0]


def test_a_time_case_keeps_its_first_plan_and_the_plan_is_part_of_its_counts_key(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "bench.py").write_text("x = 1\n")
    case = CountsCache.case(("bench.time_x", 0), ["'a'"])
    CountPlans(tmp_path / "counts", suite).store({case: (16, 128)})
    CountPlans(tmp_path / "counts", suite).store({case: (64, 8), "other": (1, 8)})  # a later plan does not replace it
    assert CountPlans(tmp_path / "counts", suite).load() == {case: (16, 128), "other": (1, 8)}
    assert CountsCache.case(("bench.time_x", 0), ["'a'"], (16, 128)) == f"{case}|plan 16x128"
    # a changed suite is planned again
    (suite / "bench.py").write_text("x = 2\n")
    assert CountPlans(tmp_path / "counts", suite).load() == {}
    plans = CountPlans(tmp_path / "counts", suite)
    plans.store({case: (2, 8)})
    plans.path.write_text('{"plans": {"c": [0, 8]}}')
    assert plans.load() == {} and "unreadable" in plans.problems[0]


def test_time_goes_where_the_variance_is():
    """Processes that disagree while their blocks agree: few blocks a process; the opposite: many."""
    def evidence_with(between: float, within: float) -> Evidence:
        rng = np.random.default_rng(0)
        evidence = Evidence()
        job = ("b", 0)
        for side in ("base", "head"):
            evidence.values[side][job] = list(np.exp(rng.normal(0, between, 4)))
            evidence.within[side][job] = [(20, within ** 2, 0.2)] * 4
            evidence.seconds[side][job] = 4 * 0.3  # 0.1 s of set-up a process beside 0.2 s of blocks
        return evidence

    assert run_time_for(evidence_with(0.2, 0.01), ("b", 0), start_up=0.05) == MIN_RUN_TIME
    assert run_time_for(evidence_with(0.001, 0.1), ("b", 0), start_up=0.05) == MAX_RUN_TIME
    assert run_time_for(Evidence(), ("b", 0), start_up=0.05) is None


def test_no_mde_is_stated_below_what_the_test_can_reach():
    """Issue 31's case: 6 rows, 6 processes a side, final bar 8.3e-4 while the test cannot go below 2.2e-3."""
    design = plan(6, 0.01, 0.95, 6, 100)
    bar = design.final_bar(1.0)
    assert bar == pytest.approx(0.5 * 0.01 / 6) and smallest_p(6) > bar
    rng = np.random.default_rng(11)
    base = 1e-6 * (1 + rng.normal(0, 0.01, 6))
    separated = base * 1.10  # every head process beyond every base one: the most extreme data 6 a side can give
    c = stats.compare(base, separated, alpha=bar)
    assert c.p_value == pytest.approx(smallest_p(6)) and c.mde == float("inf")
    # with one more process a side the bar is reachable, and the MDE is finite again
    c7 = stats.compare(np.append(base, 1e-6), np.append(separated, 1.1e-6), alpha=bar)
    assert smallest_p(7) <= bar and np.isfinite(c7.mde)
    assert stats.smallest_attainable_p(6, 6) == smallest_p(6)
    assert stats.smallest_attainable_p(40, 40, 20000) == pytest.approx(2 / 20001)


def test_slow_processes_cap_the_power_of_few_and_the_mde_says_so():
    """At a lone row's bar in 60 rows (1.7e-4), 8 processes a side reach it only with every base process below
    every head one (2/C(16, 8) = 1.55e-4): one slow base process, ignored by the faster-half statistic, breaks
    that split whatever the change. The stated MDE read from the relabellings alone was found 56% of the time
    there for a stated 80% (evaluation/stats_validation.py); held to the suite's slow processes it is raised."""
    bar = 0.01 / 60
    rng = np.random.default_rng(3)
    base = np.exp(rng.normal(0, 0.005, 8))
    head = base * 1.20
    assert stats.compare(base, head, alpha=bar).p_value <= bar  # perfectly separated: reached
    slow = base.copy()
    slow[0] *= 1.5  # one base process in the slow group, beyond every head process
    assert stats.compare(slow, head, alpha=bar).p_value > bar  # the same +20% no longer reaches the bar
    # the ceiling says so: no slow process is tolerated at 8 a side, so the power is the chance of none
    assert stats.power_ceiling(8, 8, bar, 0.1) == pytest.approx(0.9 ** 8)
    # computed at any number of processes (issue 51: it was set to 1.0 beyond 16 a side): it rises with them,
    # and where the share of slow processes is large it still binds at 24 and 32 a side
    ceilings = [stats.power_ceiling(n, n, bar, 0.1) for n in (8, 12, 16, 24, 32)]
    assert ceilings == sorted(ceilings) and 0.99 < ceilings[-2] < 1.0
    assert stats.power_ceiling(24, 24, bar, 0.4) < 0.9 and stats.power_ceiling(32, 32, bar, 0.4) < 1.0
    # where half a side may be slow and the test still reaches the bar (many processes), it does not bind
    assert stats.power_ceiling(200, 200, bar, 0.6) == pytest.approx(1.0)
    # the stylized tail, counted by classes, equals the relabellings listed one by one
    for slow in range(5):
        fast = np.arange(8) * 1e-6
        fast[8 - slow:] += 1.0
        other = 0.5 + np.arange(8) * 1e-6
        shifts = stats._shift_rows(np.concatenate([fast, other]), *stats._exact_relabellings(8, 8))
        high, _ = stats._tails(shifts, float(stats._shift(fast, other)))
        assert stats._stylized_tail(8, 8, slow) == pytest.approx(high / len(shifts))
    # a suite whose processes land in a slow group 30% above their fastest one time in ten
    sides = []
    for _ in range(60):
        side = np.exp(rng.normal(0, 0.005, 8))
        side[rng.random(8) < 0.1] *= 1.3
        sides.append(side)
    excess = stats.slow_excesses(sides)
    plain = stats.compare(base, base * 1.001, alpha=bar)
    held = stats.compare(base, base * 1.001, alpha=bar, excess=excess)
    assert np.isfinite(plain.mde) and plain.mde < 0.05 and np.isnan(plain.relabelled_mde)
    assert held.power_ceiling < 0.8 and held.relabelled_mde == pytest.approx(plain.mde)
    assert held.mde > 0.25  # past the slow group's excess, where its processes no longer overlap the head
    # more processes are needed than the ceiling lets bind (computed: where it reaches the stated power)
    free = held.ceiling_free
    assert free > 8 and stats.power_ceiling(free, free, bar, None, slow_counts=(
        int(np.sum(excess > np.log1p(plain.mde))), len(excess))) >= 0.8
    assert stats.processes_to_detect(held, 0.05) >= free


def test_the_budget_ends_rounds_only_once_every_row_can_reach_its_bar():
    design = plan(6, 0.01, 0.95, 6, 100)
    assert design.reachable(1.0) == 7  # 2/C(14, 7) = 5.8e-4 <= 8.3e-4 < 2/C(12, 6)
    assert smallest_p(design.reachable(1.0)) <= design.final_bar(1.0) < smallest_p(design.reachable(1.0) - 1)
    assert design.reachable(PRIOR_WEIGHT[WALL_ONLY]) >= design.reachable(1.0)  # a lighter row needs at least as many processes
    big = plan(69, 0.01, 0.95, 6, 100)
    assert big.reachable(1.0) > 6 and smallest_p(big.reachable(1.0)) <= big.final_bar(1.0)
    # one bar for planning and deciding: the bar the verdict uses once the rounds end there (Design.after)
    for d in (design, big, plan(500, 0.01, 0.95, 6, 100)):
        n = d.reachable(1.0)
        assert smallest_p(n) <= d.after(n).final_bar(1.0) and smallest_p(n - 1) > d.after(n - 1).final_bar(1.0)


def test_the_shares_of_looks_that_never_came_go_to_the_final_analysis():
    design = plan(60, 0.01, 0.95, 6, 100)
    assert len(design.looks) == 4 and design.final_share == pytest.approx(0.5)  # planned: 11, 22, 44, 88
    after = design.after(30)  # the budget ended the rounds at 30: the looks at 44 and 88 never came
    assert after.taken == 2 and after.final_share == pytest.approx(1 - 2 * design.look_share)
    assert after.final_bar(1.0) == pytest.approx(1.5 * design.final_bar(1.0))
    # still a valid p-value: the shares spent add up to the row's alpha, whatever the correlation of the looks
    u = np.random.default_rng(1).uniform(size=20000)
    combined = np.array([after.combined_p(x, [x, x]) for x in u])
    for t in (0.01, 0.05, 0.2):
        assert np.mean(combined <= t) <= t


def test_looks_are_planned_within_the_rounds_the_budget_holds():
    """22 rounds expected at the first round's rate: two looks (10 and 20), each with half the interim share,
    instead of four planned up to 100 rounds (11, 22, 44, 88) of which two would never come."""
    design = plan(60, 0.01, 0.95, 6, 100, expected_rounds=22)
    assert design.looks == (10, 20) and design.look_share == pytest.approx(0.25)
    assert smallest_p(10) * 2 <= design.changed_bar(1.0)  # the first look can still stop a row
    assert plan(60, 0.01, 0.95, 6, 100, expected_rounds=8).looks == ()  # no look can stop before 11: one analysis
    assert plan(60, 0.01, 0.95, 6, 100, expected_rounds=500) == plan(60, 0.01, 0.95, 6, 100)  # max_rounds binds


def test_a_verdict_spends_the_unused_shares_at_the_final_analysis(real_values):
    """decide() takes the design as it stood when the rounds ended: a lone change at 22 rounds of a design
    planned to 100 is held against 0.75 of its alpha, not 0.5."""
    evidence, rows = simulate(real_values, 60, {0: 1.3}, np.random.default_rng(5), max_rounds=100)
    assert evidence.rounds == N and evidence.design.looks == (11, 22, 44, 88)
    final = evidence.design.after(evidence.rounds)
    assert final.taken == 2
    policy, final_terms = Policy(), 0
    for row in rows:
        job = (row.benchmark, row.index)
        bar = final.final_bar(evidence.weights[job])
        raw = stats.compare(evidence.values["base"][job], evidence.values["head"][job], alpha=bar,
                            confidence=policy.confidence, resamples=stats.resamples_for(bar, 1)).p_value
        looks = evidence.looks.get(job, [])
        assert row.comparison.p_value == pytest.approx(final.combined_p(raw, looks))
        final_terms += raw / final.final_share < min([p / final.look_share for p in looks], default=1.0)
    assert final_terms > 0  # rows whose p-value is their final analysis's: 0.75 of the alpha, not 0.5
    assert evidence.to_dict()["design"]["taken"] == 2 and evidence.to_dict()["design"]["final_share"] == 0.75


def test_a_change_of_the_slow_processes_alone_is_not_called_unchanged():
    """Issue 31 item 7: 40% of the head's processes slowed 30% (a collector, the allocator): the faster half
    is unchanged, so the main test says 'unchanged'; the slower half's test turns it inconclusive, saying
    why. Identical processes stay unchanged."""
    rng = np.random.default_rng(12)
    evidence, policy = Evidence(), Policy()
    slowed, same = ("bench.slowed", 0), ("bench.same", 0)
    for job in (slowed, same):
        evidence.jobs[job] = JobInfo(job[0], unit="seconds", on_base=True, on_head=True)
        evidence.values["base"][job] = list(1e-6 * np.exp(rng.normal(0, 0.005, 30)))
        head = 1e-6 * np.exp(rng.normal(0, 0.005, 30))
        if job == slowed:
            head[:12] *= 1.3
        evidence.values["head"][job] = list(head)
    evidence.rounds = 30
    rows = {r.benchmark: r for r in decide(evidence, policy)}
    assert stats.within(rows["bench.slowed"].comparison, policy.threshold)  # the faster half did not move
    assert rows["bench.slowed"].status == stats.INCONCLUSIVE
    assert "the slower half moved +" in rows["bench.slowed"].error
    assert rows["bench.same"].status == stats.UNCHANGED and not rows["bench.same"].error
    ratio, p = stats.slower_half(evidence.values["base"][slowed], evidence.values["head"][slowed])
    assert ratio > 1.1 and p < 0.01


def test_several_comparisons_settled_as_one_family(real_values):
    """find's confirmations: two comparisons (6 rows each), each planned and prepared for the family of 12,
    then one weighted Benjamini-Hochberg over both: the real change is found, nothing else, and its bar (so
    its MDE) is that of 12 rows, not 6."""
    from torchbench.ab.verdict import prepare, settle

    policy = Policy(family=12)
    changed, _ = simulate(real_values, 6, {0: 1.5}, np.random.default_rng(7), policy=policy)
    same, _ = simulate(real_values, 6, {}, np.random.default_rng(8), policy=policy)
    assert changed.design.m == 12 and same.design.m == 12
    prepared = [prepare(changed, policy), prepare(same, policy)]
    settle(prepared, policy)
    rows = prepared[0].rows + prepared[1].rows
    assert rows[0].status == stats.REGRESSED
    assert not flagged(rows[1:])
    alone = decide(changed, Policy())
    assert alone[0].comparison.mde <= rows[0].comparison.mde  # a family of 12 sets a stricter bar than 6
