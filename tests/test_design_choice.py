"""The design chosen from the data (torchbench/ab/design_choice.py, issue 51 item 6): an "auto" run tries both
designs, goes on with the one whose projected MDE at the end of the budget is smaller, and says why; a
regression from duets that the alternating rounds do not confirm is labelled so.

The choice on the recorded pools of both designs (evaluation/results/duet_pool-*-2026-11-26.json.gz, read by
evaluation/design_choice.py's loader) and on synthetic rounds; the guard through the verdict and the comment;
the default through the options and one real run of the alert's rounds (worker processes on a tiny suite).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from torchbench import stats
from torchbench.ab import design_choice
from torchbench.ab.design_choice import ALTERNATING, AUTO, DUET, TRIAL_ROUNDS, UNCONFIRMED, choose, duet_only
from torchbench.ab.evidence import Evidence, JobInfo, Side
from torchbench.ab.options import Policy, Rounds
from torchbench.ab.rounds import duet_cores, measure_rounds
from torchbench.ab.verdict import decide
from torchbench.alert.comment import AlertReport
from torchbench.cli.options import add_measurement_arguments, rounds_of
from torchbench.project.commits import Commit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evaluation"))

import design_choice as replay  # noqa: E402  evaluation/design_choice.py

BAR = 0.01 / 60  # a lone row's bar among 60 rows


def _synthetic(spread: dict[str, float], seconds: dict[str, float], shared: dict[str, float], rows: int = 12,
               seed: int = 0) -> Evidence:
    """TRIAL_ROUNDS rounds of each design interleaved: per row and design, a round's two log values share
    `shared` of their variance `spread`**2; each round takes `seconds` of its design."""
    rng = np.random.default_rng(seed)
    evidence = Evidence(schedule=AUTO)
    jobs = [(f"bench.row_{i}", 0) for i in range(rows)]
    for job in jobs:
        evidence.jobs[job] = JobInfo(job[0], unit="seconds", on_base=True, on_head=True)
    for r, design in enumerate(design_choice.trial_designs(seed)):
        evidence.round_designs.append(design)
        evidence.round_seconds.append(seconds[design])
        s, rho = spread[design], shared[design]
        for job in jobs:
            common = rng.normal(0, s * np.sqrt(rho))
            for side in ("base", "head"):
                evidence.add_value(side, job, float(np.exp(common + rng.normal(0, s * np.sqrt(1 - rho)))) * 1e-6, r)
    evidence.rounds = 2 * TRIAL_ROUNDS
    return evidence


def _choose(evidence: Evidence, seconds_left: float = 300) -> design_choice.Choice:
    return choose(evidence, sorted(evidence.jobs), seconds_left=seconds_left, rounds_left=100, bar=BAR)


def test_the_choice_goes_with_the_smaller_mde_per_minute_on_synthetic_rounds():
    # a busy day: the duet's two processes share 80% of their variance, and a duet round takes half the time
    busy = _choose(_synthetic({ALTERNATING: 0.03, DUET: 0.03}, {ALTERNATING: 4.6, DUET: 2.4},
                              {ALTERNATING: 0.0, DUET: 0.8}))
    assert busy.design == DUET, busy.why
    assert busy.figures[DUET].mde < busy.figures[ALTERNATING].mde
    assert busy.figures[DUET].test == "paired" and busy.figures[ALTERNATING].test == "unpaired"
    # a quiet day turned bad for duets: nothing shared, and beside its partner a process spreads 2.5x
    quiet = _choose(_synthetic({ALTERNATING: 0.02, DUET: 0.05}, {ALTERNATING: 4.6, DUET: 2.4},
                               {ALTERNATING: 0.0, DUET: 0.0}))
    assert quiet.design == ALTERNATING, quiet.why
    assert quiet.figures[ALTERNATING].mde < quiet.figures[DUET].mde
    # equal spreads and nothing shared: the rounds a minute decide (the duet's twice as many)
    rate = _choose(_synthetic({ALTERNATING: 0.03, DUET: 0.03}, {ALTERNATING: 4.6, DUET: 2.4},
                              {ALTERNATING: 0.0, DUET: 0.0}, rows=40))
    assert rate.design == DUET and rate.figures[DUET].projected_rounds > 1.5 * rate.figures[ALTERNATING].projected_rounds
    # and where a duet round were as slow as two alternating ones, alternating
    slow = _choose(_synthetic({ALTERNATING: 0.03, DUET: 0.03}, {ALTERNATING: 4.6, DUET: 12.0},
                              {ALTERNATING: 0.0, DUET: 0.0}, rows=40))
    assert slow.design == ALTERNATING, slow.why


def _pool_trial(pools: dict, seed: int) -> Evidence:
    """The trial's rounds (4 of each design, as trial_designs draws them) from the pools, in a random order."""
    rng = np.random.default_rng(seed)
    orders = {d: rng.permutation(len(pools[d].seconds)) for d in pools}
    designs = design_choice.trial_designs(seed)
    plan = [(d, int(orders[d][designs[:i].count(d)])) for i, d in enumerate(designs)]
    return replay.evidence_of(pools, plan, seed % 2, AUTO)


def test_the_choice_on_the_recorded_pools_picks_duets_and_alternating_when_duets_share_nothing():
    """On 2026-11-26 duets reached a third of alternating's MDE at equal minutes: the first 4 rounds of each
    say so in each of 5 draws; with the duets' rounds made to share nothing and spread twice as far (the
    replay's constructed adverse day), alternating."""
    recorded = {d: replay.Pool(p) for d, p in replay.pool_paths().items()}
    adverse = {ALTERNATING: recorded[ALTERNATING], DUET: recorded[DUET].unshared(2.0, np.random.default_rng(7))}
    for pools, expected, least in ((recorded, DUET, 5), (adverse, ALTERNATING, 4)):
        chosen = []
        for seed in range(5):
            choice = _choose(_pool_trial(pools, seed), seconds_left=60)
            chosen.append((choice.design, choice.why))
            assert choice.rows == 6 and "pooled over 6 rows" in choice.why
        # the adverse day's first draw is a near tie once alternating is held to its slow processes (projected
        # 4.48% against the duets' 4.46%): 4 of 5
        assert sum(design == expected for design, _ in chosen) >= least, chosen


def test_on_a_busy_day_duets_go_on_with_the_unpaired_test_and_the_verdict_uses_it():
    """On the pools of 2026-11-28 (a busy day) duets decided by the unpaired test reached a third of either
    fixed design's MDE at equal minutes (10.5% at 30 duet rounds; the paired test of the same rounds 31.7%,
    15 alternating rounds 27.8%). The trial says so in most draws, and the verdict then decides the rows by
    the unpaired test over every round (each side's processes of both designs)."""
    from torchbench.ab.contrast import compare_row

    busy = {d: replay.Pool(p) for d, p in replay.pool_paths("2026-11-28").items()}
    chosen = []
    for seed in range(10):
        choice = _choose(_pool_trial(busy, seed), seconds_left=90)
        chosen.append((choice.design, choice.test))
        assert choice.to_dict()["test"] == choice.test and f"decided by the {choice.test} test" in choice.why
    # from 4 rounds of each on 6 rows the spreads vary 3-5x between draws: 7 of these 10 (the replay: 68-92%)
    assert chosen.count((DUET, "unpaired")) >= 6, chosen
    # the verdict of a run that went on so: the trial's 8 rounds, then 26 more duets
    rng = np.random.default_rng(0)
    orders = {d: rng.permutation(len(busy[d].seconds)) for d in busy}
    designs = design_choice.trial_designs(0)
    plan = [(d, int(orders[d][designs[:i].count(d)])) for i, d in enumerate(designs)]
    plan += [(DUET, int(i)) for i in orders[DUET][TRIAL_ROUNDS:TRIAL_ROUNDS + 26]]
    evidence = replay.evidence_of(busy, plan, 0, DUET)
    evidence.design_choice = {"design": DUET, "test": "unpaired"}
    policy = Policy()
    job = sorted(evidence.jobs)[0]
    c = compare_row(evidence, job, policy, BAR, policy.confidence)
    assert c.test == "unpaired" and c.n_base == evidence.rounds  # every round's processes
    unpaired = replay.figures(evidence, policy, BAR)["mde"]
    evidence.design_choice = {**evidence.design_choice, "test": "paired"}
    assert compare_row(evidence, job, policy, BAR, policy.confidence).test == "paired"
    assert unpaired < 0.6 * replay.figures(evidence, policy, BAR)["mde"]  # the same rounds, the median row


def test_under_paired_the_choice_projects_the_paired_test_the_verdict_will_use():
    """Policy.paired (`--paired`): the verdict pairs every design's rounds wherever the pairs reach the bar, so
    the choice projects the paired test for both designs there, not the unpaired one it would take on the
    busy day; where the pairs cannot reach the bar, the unpaired test."""
    busy = {d: replay.Pool(p) for d, p in replay.pool_paths("2026-11-28").items()}
    evidence = _pool_trial(busy, 0)
    jobs = sorted(evidence.jobs)
    free = choose(evidence, jobs, seconds_left=90, rounds_left=100, bar=BAR)
    assert free.figures[DUET].test == "unpaired" and free.figures[ALTERNATING].test == "unpaired", free.why
    paired = choose(evidence, jobs, seconds_left=90, rounds_left=100, bar=BAR, paired_alternating=True)
    assert {d: f.test for d, f in paired.figures.items()} == {ALTERNATING: "paired", DUET: "paired"}, paired.why
    assert paired.test == "paired"
    short = choose(evidence, jobs, seconds_left=0, rounds_left=0, bar=BAR, paired_alternating=True)
    assert {f.test for f in short.figures.values()} == {"unpaired"}  # 8 rounds cannot reach a lone row's bar


def test_the_unpaired_test_of_duet_rounds_keeps_its_level_when_a_rounds_processes_move_together():
    """Under no change, duet rounds whose two processes share some of their noise (as on both recorded days:
    Spearman 0.25-0.74) or none: the unpaired test's relabellings mix rounds, so sharing only widens its
    reference distribution. At most 5% of identical rows at p <= 0.05 (plus twice the draws' error)."""
    rng = np.random.default_rng(3)
    for shared in (0.0, 0.5, 0.9):
        ps = []
        for _ in range(300):
            common = rng.normal(0, 0.03 * np.sqrt(shared), 24)
            slow = (rng.random((2, 24)) < 0.1) * rng.uniform(0.1, 0.5, (2, 24))  # a tenth of them slow
            base, head = (np.exp(common + rng.normal(0, 0.03 * np.sqrt(1 - shared), 24) + slow[i]) for i in (0, 1))
            ps.append(stats.compare(base, head, alpha=0.05, with_mde=False).p_value)
        rate = np.mean(np.asarray(ps) <= 0.05)
        assert rate <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 300), (shared, rate)


def test_the_projection_holds_an_unpaired_design_to_its_slow_processes():
    """projected_mde: without slow processes the normal approximation; with a fifth of the processes 50%
    slower, raised where the verdict's MDE is (stats.compare with the same slow excesses: within a quarter of
    it at 8 and 10 a side), infinite where no change is found with the power, and back to the normal
    approximation once enough rounds make the slow processes harmless."""
    from torchbench.ab.design_choice import projected_mde

    rng = np.random.default_rng(0)

    def side(n):
        x = rng.normal(0, 0.03, n)
        x[rng.random(n) < 0.2] += 0.4
        return np.exp(x) * 1e-6

    normal = projected_mde(0.05, 16, BAR, 0.8)
    assert normal == pytest.approx(np.expm1((3.76 + 0.8416) * 0.05 / 4), rel=0.01)
    assert projected_mde(0.05, 16, BAR, 0.8, np.zeros(40)) == pytest.approx(normal, rel=1e-3)  # nobody slow
    trial = [side(4) for _ in range(84)]  # a trial: 42 rows, 4 rounds a side
    excess = stats.slow_excesses(trial)
    rows = [(trial[2 * i], trial[2 * i + 1]) for i in range(42)]
    spread = design_choice.contrast_spread(rows, False, 16)
    assert projected_mde(spread, 4, BAR, 0.8, excess) == np.inf
    for n in (8, 10):
        spread = design_choice.contrast_spread(rows, False, n)
        held = projected_mde(spread, n, BAR, 0.8, excess)
        verdict = np.median([stats.compare(side(n), side(n), alpha=BAR, resamples=stats.resamples_for(BAR, 1),
                                           excess=stats.slow_excesses([side(n) for _ in range(60)])).mde
                             for _ in range(5)])
        assert held > projected_mde(spread, n, BAR, 0.8) and held == pytest.approx(verdict, rel=0.25), n
    assert projected_mde(spread, 64, BAR, 0.8, excess) == pytest.approx(projected_mde(spread, 64, BAR, 0.8))


def test_the_trial_interleaves_both_designs_in_pairs():
    designs = design_choice.trial_designs(3)
    assert len(designs) == 2 * TRIAL_ROUNDS
    assert all(sorted(designs[i:i + 2]) == [ALTERNATING, DUET] for i in range(0, len(designs), 2))
    assert len({tuple(design_choice.trial_designs(s)) for s in range(8)}) > 1  # which first: drawn


def _duet_regression(alternating_change: float) -> Evidence:
    """30 duet rounds that read the head 10% slower, after 4 alternating rounds that read it
    `alternating_change` slower; 3 rows."""
    rng = np.random.default_rng(1)
    evidence = Evidence(schedule=DUET)
    jobs = [(f"bench.row_{i}", 0) for i in range(3)]
    designs = [ALTERNATING] * 4 + [DUET] * 30
    for job in jobs:
        evidence.jobs[job] = JobInfo(job[0], unit="seconds", on_base=True, on_head=True)
    for r, design in enumerate(designs):
        change = alternating_change if design == ALTERNATING else 0.10
        for job in jobs:
            common = rng.normal(0, 0.01)
            evidence.add_value("base", job, float(np.exp(common + rng.normal(0, 0.005))) * 1e-6, r)
            evidence.add_value("head", job, float(np.exp(common + rng.normal(0, 0.005))) * 1e-6 * (1 + change), r)
    evidence.round_designs, evidence.rounds = designs, len(designs)
    return evidence


def test_a_regression_from_duets_that_alternating_rounds_do_not_confirm_is_labelled():
    report_of = {}
    for change in (0.0, 0.10):
        evidence = _duet_regression(change)
        rows = decide(evidence, Policy())
        assert all(r.status == stats.REGRESSED for r in rows)  # the duets decide it either way
        report_of[change] = AlertReport(Commit("a" * 40, "base"), Commit("b" * 40, "head"), rows, Policy(),
                                        evidence.rounds, time_spent=evidence.time_spent())
    unconfirmed = report_of[0.0]
    assert all(r.unconfirmed.startswith(UNCONFIRMED) for r in unconfirmed.rows)
    assert all("4 a side" in r.unconfirmed for r in unconfirmed.rows)
    assert unconfirmed.markdown().count("duet only: not confirmed in alternating rounds") == 3
    confirmed = report_of[0.10]
    assert all(r.unconfirmed == "" for r in confirmed.rows)
    assert "duet only" not in confirmed.markdown()


def test_the_guard_speaks_only_of_runs_that_went_on_in_duets():
    evidence = _duet_regression(0.0)
    job = sorted(evidence.jobs)[0]
    assert duet_only(evidence, job).startswith(UNCONFIRMED)
    evidence.schedule = ALTERNATING  # the rounds went on alternating: nothing rests on duets alone
    assert duet_only(evidence, job) == ""
    evidence.schedule, evidence.round_designs = DUET, [DUET] * evidence.rounds  # a --design duet run
    assert duet_only(evidence, job) == f"{UNCONFIRMED} (none ran)"


def test_auto_is_the_default_of_the_options_and_of_the_command_line():
    assert Rounds().schedule == AUTO
    parser = argparse.ArgumentParser()
    add_measurement_arguments(parser, 9.0)
    assert rounds_of(parser.parse_args([])).schedule == AUTO
    assert rounds_of(parser.parse_args(["--design", "duet"])).schedule == DUET
    with pytest.raises(Exception, match="alternating or duet, or auto"):
        Rounds(schedule="trio")


SUITE = '''
import random


class Noisy:
    params = [0, 1]

    def track_value(self, i):
        return 1.0 + i + random.gauss(0, 0.01)
'''


def test_an_auto_run_of_real_rounds_tries_both_then_goes_on_with_the_choice_and_says_why(tmp_path):
    """The alert's own rounds (real worker processes, a tiny suite), at default Rounds but for the run's
    length: 9 rounds, the trial's 8 and one after the choice."""
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_noisy.py").write_text(SUITE)
    sides = {name: Side(name, name[0] * 40, suite, Path(sys.executable)) for name in ("base", "head")}
    jobs = [("bench_noisy.Noisy.track_value", i) for i in range(2)]
    evidence = Evidence(counts_off="no counts: --no-counts")
    for job in jobs:
        evidence.jobs[job] = JobInfo(f"{job[0]}({job[1]})", on_base=True, on_head=True)
    rounds = Rounds(min_rounds=9, max_rounds=4 * TRIAL_ROUNDS, counts=False, until_reachable=False)
    assert rounds.schedule == AUTO
    measure_rounds(suite, sides, jobs, evidence, rounds=rounds, policy=Policy(), deadline=time.monotonic(),
                   cache_dir=tmp_path / "cache")
    assert evidence.rounds == 9 and not [note for note in evidence.notes if "died" in note], evidence.notes
    assert all(len(evidence.values[side][job]) == 9 for side in ("base", "head") for job in jobs)
    if duet_cores() is None:  # one usable core: no duets, and the note says so
        assert evidence.round_designs == [ALTERNATING] * 9 and evidence.schedule == ALTERNATING
        assert any("need two usable cores" in note for note in evidence.notes)
        return
    trial = evidence.round_designs[:2 * TRIAL_ROUNDS]
    assert trial == design_choice.trial_designs(0)
    assert evidence.schedule in (ALTERNATING, DUET) and evidence.round_designs[-1] == evidence.schedule
    choice = evidence.design_choice
    assert choice["design"] == evidence.schedule and choice["rows"] == 2
    assert set(choice["figures"]) == {ALTERNATING, DUET}
    better = min(choice["figures"], key=lambda d: (choice["figures"][d]["mde"], d != ALTERNATING))
    assert choice["design"] == better
    assert any(note.startswith("design: ") and "projected median MDE" in note for note in evidence.notes)
    spent = evidence.time_spent()
    assert spent["designs"][ALTERNATING] >= TRIAL_ROUNDS and spent["designs"][DUET] >= TRIAL_ROUNDS
    text = AlertReport(Commit("a" * 40, "base"), Commit("b" * 40, "head"), decide(evidence, Policy()), Policy(),
                       evidence.rounds, evidence.notes, time_spent=spent).markdown()
    assert "both designs tried first, then" in text and "design: " in text
    # the test the run went on with: the chosen design's own, named in the record and the comment
    assert choice["test"] == choice["figures"][choice["design"]]["test"] == evidence.wall_test()
    assert f"{'duets' if choice['design'] == DUET else 'alternating'}, decided by the {choice['test']} test" in text


def test_auto_alternates_with_a_note_where_max_rounds_leaves_no_room_for_the_trial():
    evidence = Evidence()
    assert design_choice.start(evidence, AUTO, 4 * TRIAL_ROUNDS - 1, True) == []
    assert evidence.schedule == ALTERNATING and "no room to try both designs" in evidence.notes[0]
    evidence = Evidence()
    assert len(design_choice.start(evidence, AUTO, 4 * TRIAL_ROUNDS, True)) == 2 * TRIAL_ROUNDS
    assert evidence.schedule == AUTO


def test_a_run_that_went_on_alternating_tests_its_alternating_rounds_only():
    """After the trial chose alternating rounds, the trial's duet rounds (a partner may have disturbed their
    processes) leave the unpaired test: the verdict's comparison is that of the alternating rounds alone; in
    a run that went on in duets, or one that never chose, every round counts."""
    from torchbench.ab.contrast import compare_row

    rng = np.random.default_rng(5)
    evidence = Evidence(schedule=AUTO)
    job = ("bench.row", 0)
    evidence.jobs[job] = JobInfo(job[0], unit="seconds", on_base=True, on_head=True)
    designs = design_choice.trial_designs(0) + [ALTERNATING] * 12
    for r, design in enumerate(designs):
        spread = 0.3 if design == DUET else 0.01  # duets disturbed: a wide spread
        for side in ("base", "head"):
            evidence.add_value(side, job, float(np.exp(rng.normal(0, spread))) * 1e-6, r)
    evidence.round_designs, evidence.rounds = designs, len(designs)
    every = evidence.wall_values(job)
    assert len(every[0]) == len(designs)
    evidence.schedule = ALTERNATING  # went on alternating, but chose nothing: every round
    assert evidence.wall_values(job) == every
    evidence.design_choice = {"design": ALTERNATING}
    base, head = evidence.wall_values(job)
    assert (base, head) == evidence.paired(job, ALTERNATING) and len(base) == TRIAL_ROUNDS + 12
    policy = Policy()
    c = compare_row(evidence, job, policy, 0.01, 0.95)
    alone = stats.compare(base, head, alpha=0.01, resamples=stats.resamples_for(0.01, 1), floor=policy.floor)
    assert (c.ratio, c.ci_low, c.ci_high, c.mde) == (alone.ratio, alone.ci_low, alone.ci_high, alone.mde)
    assert c.n_base == TRIAL_ROUNDS + 12
    evidence.schedule = DUET  # went on in duets: every round
    assert evidence.wall_values(job) == every


def test_the_spread_is_the_tests_own_so_slow_processes_do_not_inflate_it():
    """contrast_spread reads a design's spread from its test's own robust estimate: on the pools of
    2026-11-28 (a busy day; all 60 rounds of each design) alternating rounds reach the smaller spread per
    minute, as the verdict's MDEs at equal minutes were (16% against 28% at 21 alternating rounds), where
    the sd of a round's contrast said duets (0.28 for both). On normal draws it is the sd's, to a tenth."""
    pools = {d: replay.Pool(p) for d, p in replay.pool_paths("2026-11-28").items()}
    per_minute = {}
    for design, paired in ((ALTERNATING, False), (DUET, True)):
        rows = [(v[:, 0], v[:, 1]) for v in pools[design].cases.values()]
        robust = design_choice.contrast_spread(rows, paired, 20)
        sd = float(np.median([np.std(np.log(h) - np.log(b), ddof=1) if paired else
                              np.sqrt(np.var(np.log(b), ddof=1) + np.var(np.log(h), ddof=1)) for b, h in rows]))
        seconds = float(np.median(pools[design].seconds))
        per_minute[design] = (robust * np.sqrt(seconds), sd * np.sqrt(seconds))
    assert per_minute[ALTERNATING][0] < 0.7 * per_minute[DUET][0], per_minute  # robust: alternating
    assert per_minute[ALTERNATING][1] > per_minute[DUET][1], per_minute  # the sd: duets
    # normal draws, 42 rows of 60 rounds: sqrt(2) x 3% for both tests, within their efficiency on normal data
    rng = np.random.default_rng(1)
    rows = [(np.exp(rng.normal(0, 0.03, 60)), np.exp(rng.normal(0, 0.03, 60))) for _ in range(42)]
    paired = design_choice.contrast_spread(rows, True, 30)
    unpaired = design_choice.contrast_spread(rows, False, 30)
    assert 0.9 * np.sqrt(2) * 0.03 < paired < 1.15 * np.sqrt(2) * 0.03, paired  # the Walsh median: 95% efficient
    assert np.sqrt(2) * 0.03 < unpaired < 2.0 * np.sqrt(2) * 0.03, unpaired  # the faster half: less so
