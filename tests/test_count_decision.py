"""The instruction-count test (torchbench/ab/count_decision.py): its behaviour on crafted rows, and its constants
and error rates recomputed from the recorded pool of identical code at many commits
(evaluation/results/counts_noise_pool-2026-11-28c.json.gz, evaluation/counts_calibration.py): fitted on the
commits recorded before the fit, measured on those recorded after."""

import sys
from pathlib import Path

import numpy as np
import pytest

from torchbench.ab import count_decision as ct
from torchbench.ab.count_decision import BY_CALL, COMMIT_SD, COUNT_ALPHA, DRAWS, FIRST_MOVE, STATEMENT, count_decision

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evaluation"))

import counts_calibration as calibration  # noqa: E402


def sides(base_means, head_means, spread=0.0, seed=0):
    """Processes (one list of 3 repeats each) around these per-process means, repeats spread this much."""
    rng = np.random.default_rng(seed)
    return ([list(m * (1 + rng.uniform(-spread, spread, 3))) for m in base_means],
            [list(m * (1 + rng.uniform(-spread, spread, 3))) for m in head_means])


def test_a_clear_change_with_noisy_repeats_is_decided():
    """The issue's row: six base counts between 19,922 and 20,130 and six head counts between 21,027 and
    21,291 (repeats about 1% apart, sides 4.5% apart with no overlap). The earlier margin (5 x the repeats'
    spread, 6.24%) left it a suspect; the test decides it once jittered processes agree."""
    base, head = sides([20_020, 19_990, 20_050], [21_150, 21_120, 21_180], spread=0.005)
    assert min(min(p) for p in head) > max(max(p) for p in base)
    first = count_decision(base[:1], head[:1], STATEMENT, 0.01)
    assert first.pending and not first.decides and first.margin == float("inf")
    found = count_decision(base, head, STATEMENT, 0.01)
    assert found.decides and found.delta == pytest.approx(0.057, abs=0.003) and found.margin < found.delta
    assert found.processes == 3


def test_a_row_whose_layouts_move_it_is_not_decided_by_a_move_of_that_size():
    """A torch-op row that the jittered layouts move by 3% is not decided by a 3% change: the commit that
    changes other code moves it that far too."""
    base, head = sides([14_270, 13_720, 14_160], [14_700, 14_150, 14_560])
    found = count_decision(base, head, BY_CALL, 0.01)
    assert not found.decides and found.margin > found.delta > 0.025
    quiet_base, quiet_head = sides([38_640, 38_650, 38_645], [39_420, 39_430, 39_425])
    assert count_decision(quiet_base, quiet_head, BY_CALL, 0.01).decides  # the same +2% on a quiet row


def test_the_floor_binds_however_quiet_the_row():
    base, head = sides([1e5] * 3, [1e5 * 1.0095] * 3)
    found = count_decision(base, head, BY_CALL, 0.01, commit_sd=0.0)  # no commit noise: the floor alone
    assert found.p_value < COUNT_ALPHA and not found.decides and found.margin == 0.01
    assert not count_decision(base[:1], head[:1], BY_CALL, 0.01).pending


def test_flat_first_processes_are_not_labelled_compute():
    base, head = sides([1e5], [1e5 * (1 + FIRST_MOVE[STATEMENT] / 2)])
    assert not count_decision(base, head, STATEMENT, 0.01).moved
    base, head = sides([1e5], [1e5 * (1 + FIRST_MOVE[STATEMENT] * 2 + 0.001)])
    assert count_decision(base, head, STATEMENT, 0.01).moved


def test_no_test_without_positive_counts_on_both_sides():
    assert count_decision([], [[1.0]], STATEMENT, 0.01) is None
    assert count_decision([[0.0, 1.0, 1.0]], [[1.0] * 3], STATEMENT, 0.01) is None


@pytest.fixture(scope="module")
def pool():
    if not calibration.POOL.exists():
        pytest.fail(f"{calibration.POOL} is missing: record it with evaluation/counts_noise_pool.py")
    return calibration.load()


def test_the_pool_holds_commits_recorded_after_the_fit(pool):
    """Pairs of any two commits of a suite (each commit adds an unused helper: an A/A pair); the commits the
    constants are fitted on (FIT_COMMITS) and those recorded after the fit, held out."""
    suites = pool["suites"]
    assert set(suites) == {"timer", "plain"}
    assert all(len(s["jobs"]) >= 40 for s in suites.values()) and sum(len(s["jobs"]) for s in suites.values()) >= 60
    for name, suite in suites.items():
        fit, held = calibration.fit_and_held_out(suite, name)
        assert len(calibration.jittered_commits(fit)) == calibration.FIT_COMMITS[name]
        assert set(calibration.jittered_commits(fit)).isdisjoint(calibration.jittered_commits(held))
    assert len(calibration.pairs(calibration.fit_and_held_out(suites["plain"], "plain")[1])) >= 66
    assert calibration.layouts(next(iter(suites.values())))[1:] == [f"j1d{d}" for d in range(DRAWS)]


# the pool drawn alike for every commit, and the one that holds every later chain (-28c's, -28d's, -29's and -29b's,
# grown: -29c's plain commits from AFTER_CEILING on were recorded after FIRST_CEILING was set at x2)
POOLS = ["counts_noise_pool-2026-11-27.json.gz", "counts_noise_pool-2026-11-29c.json.gz"]
AFTER_CEILING = ("counts_noise_pool-2026-11-29c.json.gz", "plain", 60)


def test_a_first_move_past_the_ceiling_decides_without_layout_draws():
    """A 3x slowdown's counts (+200%) on a first process a side decide the row (nothing to confirm in layout
    draws, whose valgrind start-up a short budget may not afford); a +80% move, below the ceiling, stays a
    candidate that its draws decide; without the ceiling (simulated cycles) a first process decides nothing."""
    base, head = sides([20_000], [60_000], spread=0.001)
    found = count_decision(base, head, BY_CALL, 0.01, ceiling=ct.FIRST_CEILING)
    assert found.decides and not found.pending and found.p_value == 0.0 and found.delta == pytest.approx(2, rel=0.01)
    assert count_decision(head, base, BY_CALL, 0.01, ceiling=ct.FIRST_CEILING).decides  # faster by as much
    assert not count_decision(base, head, BY_CALL, 0.01).decides  # no ceiling given: a candidate
    base, head = sides([20_000], [36_000], spread=0.001)  # +80%: below the ceiling
    below = count_decision(base, head, STATEMENT, 0.01, ceiling=ct.FIRST_CEILING)
    assert below.pending and not below.decides


def test_the_ceiling_is_far_beyond_the_largest_first_move_of_identical_code():
    """FIRST_CEILING against every pair of commits of every count pool (each commit's first process a side):
    the largest A/A first move is at most a third of it (it is a fifth: x2 against 14.6%). A first ceiling of
    x1.5 failed this on the chains recorded after it was set (14.6%, 2.97 times less). x2's held-out test: the
    plain chain's 40 commits recorded after it was set (133,560 A/A row pairs with one of them), largest 14.8%."""
    import itertools

    largest, pairs, held_largest, held_pairs = 0.0, 0, 0.0, 0
    for name in POOLS:
        path = ROOT / "evaluation" / "results" / name
        for suite_name, suite in calibration.load(path)["suites"].items():
            for a, b in itertools.combinations(sorted(suite["counts"], key=int), 2):
                held = (name, suite_name) == AFTER_CEILING[:2] and max(int(a), int(b)) >= AFTER_CEILING[2]
                first = [suite["counts"][c].get("0", {}) for c in (a, b)]
                for job in set(first[0]) & set(first[1]):
                    if first[0][job] and first[1][job]:
                        move = abs(float(np.log(np.mean(first[1][job]) / np.mean(first[0][job]))))
                        pairs, largest = pairs + 1, max(largest, move)
                        if held:
                            held_pairs, held_largest = held_pairs + 1, max(held_largest, move)
    assert pairs >= 330_000 and 0.1 < largest <= ct.FIRST_CEILING / 3, (pairs, largest)
    assert held_pairs >= 133_560 and 0.1 < held_largest <= ct.FIRST_CEILING / 3, (held_pairs, held_largest)


def test_the_constants_are_fitted_on_every_commit_recorded(pool):
    """COMMIT_SD, CYCLES_COMMIT_SD and FIRST_MOVE are what counts_calibration.py fits on every commit of the
    pool (COMMIT_RATIO's part beside them), not hand-set: not with a smaller constant. (Their figures out of
    sample are those of the procedure fitted on the first commits: test_the_rule_out_of_sample.)"""
    from torchbench.ab.channels import CYCLES_COMMIT_SD

    def fitted(whole: dict, kind: str, value: float, field: str) -> bool:
        """fit_commit_sd's answer, checked where it lies: the rule holds at `value` and not one grid step below
        (fit_commit_sd bisects the grid for that value; two evaluations of the rule where it takes nine)."""
        step = float(calibration.GRID[1] - calibration.GRID[0])
        return calibration.holds(whole, kind, value, field) and (
            value < step / 2 or not calibration.holds(whole, kind, value - step, field))

    for name, suite in pool["suites"].items():
        kind = calibration.KINDS[name]
        whole = calibration.subset(suite, calibration.jittered_commits(suite))
        assert fitted(whole, kind, COMMIT_SD[kind], "counts"), name
        assert fitted(whole, kind, CYCLES_COMMIT_SD[kind], "cycles"), name
        assert FIRST_MOVE[kind] == calibration.first_move(suite), name


def test_the_rule_out_of_sample(pool):
    """The constants fitted on the plain suite's commits recorded first, measured at the alert's level on those
    recorded after: no A/A suite ends "regression" (by counts, or by simulated cycles where the counts are
    flat) and no A/A row is decided; +2% and +5% decided on at least the measured shares (80.3%, 98.7%: the
    issue's goals, 95% and 99%, are not met: rows a commit moves by as much are left to the wall time). The
    TimerSuite's held-out commits are too few to assert on and ended 1 of 15 suites in regression
    (docs/results.md). Without COMMIT_RATIO the plain held-out commits end A/A suites in regression: the next
    test."""
    suite = pool["suites"]["plain"]
    fit, held = calibration.fit_and_held_out(suite, "plain")
    level = calibration.alert_level(suite)
    sd, cycles_sd = calibration.fit_commit_sd(fit, BY_CALL), calibration.fit_commit_sd(fit, BY_CALL, "cycles")
    m = calibration.measure(held, BY_CALL, 0.01, sd, cycles_sd, level)
    assert m["suites"]["of"] >= 66 and m["suites"]["flagged"] <= 0.01 * m["suites"]["of"], m["suites"]
    assert m["1.00"]["x"] <= 0.001 * m["1.00"]["n"], m["1.00"]
    assert m["1.02"]["share"] >= 0.78 and m["1.05"]["share"] >= 0.98, (m["1.02"], m["1.05"])


def test_a_suite_none_was_fitted_on_decides_no_row_in_its_disjoint_a_a_pairs():
    """The Timer-in-`track_` suite (graphlib, counted as statements; no constant fitted on it), its 40 commits
    in 20 disjoint adjacent A/A pairs counted as the alert counts them (a first process a side, then the pair's
    candidates alone in a jittered process of DRAWS draws at both commits: counts_noise_pool.py --candidates),
    with the shipped constants at the alert's level and this machine's price of a miss (362-724 measured): no
    row decided, so no suite ends "regression". The pairs share no commit (a commit in two pairs made them
    look more independent than they were: issue 61)."""
    pool = calibration.load(ROOT / "evaluation" / "results" / "counts_noise_pool-2026-11-28d.json.gz")
    suite = calibration.repriced(pool, 362)["suites"]["track"]
    from torchbench.ab.channels import CYCLES_COMMIT_SD

    found = calibration.candidate_pairs(suite, STATEMENT, 0.01, COMMIT_SD[STATEMENT], CYCLES_COMMIT_SD[STATEMENT],
                                        calibration.alert_level(suite))
    assert found["pairs"] >= 20 and found["rows"] >= 800, found
    assert found["candidates"] >= 40 and found["undrawn"] <= 0.05 * found["candidates"], found  # drawn as the alert
    assert found["decided"] == 0 and found["flagged"] == 0, found


def test_four_suites_commit_disjoint_a_a_pairs_out_of_sample_decide_no_row():
    """Issue 61 part 3: every suite of the pool recorded after the fit (counts_noise_pool-2026-11-29c: the
    timer and track chains of 40 commits, the plain one of 100 (its pairs from commit 60 on drawn with the later
    draws' short warm-up, LATER_WARMUP), and einops 0.8.1's 42-row plain suite, 40 commits, no
    constant fitted on it), its commit-disjoint adjacent A/A pairs whose commits no constant was fitted on (timer
    from commit 8, plain from 12: FIT_COMMITS; track and einops: none), counted as the alert counts them (a first
    process a side, the candidates' draws), at the alert's level with the shipped constants: no row decided, so
    no A/A suite ends "regression". Replayed with a last-level miss priced as the pool chose its candidates (100:
    every candidate drawn) and as this project's machines pay it (362: a few cycles-only candidates the pool did
    not draw). 100 pairs, none flagged: a 95% bound of 3.6% a suite (a bound of 1% needs ~370 with none flagged)."""
    from torchbench.ab.channels import CYCLES_COMMIT_SD

    for price in (100, 362):
        pool = calibration.load(ROOT / "evaluation" / "results" / "counts_noise_pool-2026-11-29c.json.gz")
        pool = calibration.repriced(pool, price) if price != 100 else pool
        pairs = rows = 0
        for name, suite in pool["suites"].items():
            kind = calibration.KINDS[name]
            fitted = calibration.FIT_COMMITS.get(name, 0)
            held = calibration.subset(suite, [c for c in suite["counts"] if int(c) >= fitted])
            found = calibration.candidate_pairs(held, kind, 0.01, COMMIT_SD[kind], CYCLES_COMMIT_SD[kind],
                                                calibration.alert_level(suite))
            # the candidates were drawn (at the price they were chosen at, every one)
            assert found["undrawn"] <= (0 if price == 100 else 0.3 * found["candidates"]), (name, price, found)
            assert found["decided"] == 0 and found["flagged"] == 0, (name, price, found)
            pairs, rows = pairs + found["pairs"], rows + found["rows"]
        assert set(pool["suites"]) == {"timer", "plain", "track", "einops"}
        assert pairs >= 100 and rows >= 4600, (pairs, rows)


def test_without_the_ratio_held_out_a_a_suites_end_in_regression(pool, monkeypatch):
    suite = pool["suites"]["plain"]
    fit, held = calibration.fit_and_held_out(suite, "plain")
    monkeypatch.setitem(ct.COMMIT_RATIO, BY_CALL, 0.0)
    sd = calibration.fit_commit_sd(fit, BY_CALL)
    m = calibration.measure(held, BY_CALL, 0.01, sd, None, calibration.alert_level(suite))
    assert m["suites"]["flagged"] >= 1, m["suites"]


def test_each_commit_of_the_pool_draws_layouts_of_its_own(pool):
    """The pool's A/A pairs are independent layout draws: its jittered processes were salted by commit
    (counts_noise_pool.py), so two commits repeat each other's draws only on rows whose counts no layout
    moves; the earlier pool, drawn alike, repeated them on most of the plain suite's rows."""
    alike = calibration.load(calibration.ALIKE_POOL)
    for name, suite in pool["suites"].items():
        assert suite.get("salted"), name
        assert calibration.repeated_layouts(suite) < 0.35, name
    assert calibration.repeated_layouts(alike["suites"]["plain"]) > 0.5


def test_the_jitter_salt_draws_other_layouts_and_leaves_the_alerts_alone():
    """SALT_ENV: unset (the alert), the layouts are the seeds' as before; set (the pool), other objects."""
    import random

    from torchbench_core._callgrind_worker import _jitter_layout

    plain = _jitter_layout(3)
    draw = random.Random(3)  # the unsalted objects are those of the jitter's own seed
    assert [len(b) for b in plain[0]] == [draw.randrange(1, 512) for _ in range(97 * 3 + draw.randrange(256))]
    salted = [_jitter_layout(3, f"commit {i}") for i in range(2)]
    sizes = [[len(b) for b in s[0]] for s in (plain, *salted)]
    assert sizes[0] != sizes[1] != sizes[2] != sizes[0]
    assert _jitter_layout(0, "commit 1") is None  # no jitter: no objects, salted or not


def test_the_commit_noise_is_part_of_the_test():
    base, head = sides([1e5] * 3, [1.012e5] * 3)
    assert count_decision(base, head, STATEMENT, 0.01, commit_sd=0.0).decides
    assert not count_decision(base, head, STATEMENT, 0.01, commit_sd=0.01).decides
    assert ct.count_decision(base, head, STATEMENT, 0.01, commit_sd=0.01).margin > 0.012



def test_the_second_jittered_pass_on_a_pool_recorded_after_the_constants():
    """Issue 61's power, as the alert decides: the plain suite's 8 commits recorded on 2026-12-01, after every
    constant was fitted (none fitted on them), each counted in a first process and two jittered processes of
    DRAWS draws (counts_noise_pool.py --jitters 2 --draws 8), replayed with the alert's two passes: a candidate
    near its bar after the first jittered process a side (counts.NEAR) is decided on both (MAX_PASSES), as the
    alert's second pass decides it. Identical code: no row decided. +2% and +5%: at least the shares measured
    (57.9%, 97.6%; 39.9% and 96.1% without the second pass), the second pass deciding rows the first left near;
    the issue's 95% and 99% are not met: the layouts of this recording spread 0.36% a row (median), 2.2 times
    the pool before's, and a commit moves a row about as far as its layouts (COMMIT_RATIO)."""
    pool = calibration.load(ROOT / "evaluation" / "results" / "counts_noise_pool-2026-12-01.json.gz")
    suite = pool["suites"]["plain"]
    assert len(calibration.jittered_commits(suite)) == 8
    assert all(calibration.second_pass(suite, c, job) for c in suite["counts"] for job in suite["jobs"])
    level = calibration.alert_level(suite)
    m = calibration.measure(suite, BY_CALL, 0.01, COMMIT_SD[BY_CALL], None, level)
    assert m["1.00"]["x"] == 0 and m["suites"]["flagged"] == 0 and m["1.00"]["n"] >= 1100, m["1.00"]
    assert m["1.02"]["share"] >= 0.57 and m["1.05"]["share"] >= 0.97, (m["1.02"], m["1.05"])
    assert m["1.02"]["second"] >= 200 and m["1.02"]["near"] == 0, m["1.02"]  # every near row got its pass
    first_only = {factor: sum(calibration.rule(calibration.processes(suite, a, job),
                                               calibration.processes(suite, b, job, factor), BY_CALL, 0.01,
                                               COMMIT_SD[BY_CALL], level, ct.FIRST_CEILING) == "decided"
                              for a, b, job in calibration._rows(suite, "counts", True)) for factor in (1.02, 1.05)}
    assert first_only[1.02] < m["1.02"]["x"] - 200 and first_only[1.05] < m["1.05"]["x"], first_only
