"""Which design a run goes on with, chosen from its own first rounds (Rounds.schedule "auto", the default).

A round is one base and one head process, either one after the other, each
alone on the machine ("alternating"), or both at once, one core each
("duet", rounds._duet). Which wins depends on the day: on a busy one a duet's
two processes share most of their noise, the paired test removes it, and a
duet round takes half the time, so duets reached a third of alternating's MDE
at equal minutes (docs/results.md#duet-rounds-built-and-validated); on a quiet
one they share little and disturb each other. So an "auto" run measures both:

  trial      the first TRIAL_ROUNDS rounds of each design, interleaved (each
             pair of rounds one of each, which first drawn at random), so that
             drift hits both alike;
  estimate   for each design and each test it may be decided by, a
             round's contrast spread as that test reads it
             (`contrast_spread`): sqrt(n) x the sd of the test's own
             estimate over n rounds resampled from the trial's residuals,
             pooled over the rows: for the paired test (duets; alternating
             rounds too under Policy.paired) the Walsh averages' median of
             the rounds' log ratios head/base, for the unpaired test (either
             design) the head's faster-half mean less the base's (it removes
             nothing a round's two processes share, and cuts the slow half of
             each side). Not the sd of a round: both tests are rank tests
             with robust estimates, and the sd of this machine's slow
             processes overstated the unpaired test's spread 2-4x on a busy
             day (docs/results.md). And a round's seconds (the median of the
             design's trial rounds, at the run times allocation.py set where
             it has such rounds);
  choose     the design and test whose projected median MDE at the end of
             the budget is smallest: (z(1 - bar/2) + z(power)) x spread /
             sqrt(rounds), the rounds being its trial rounds and those the
             seconds left hold at its rate (at most max_rounds). At equal
             minutes that is spread x sqrt(seconds a round): the MDE scale of
             a minute. The paired test only where every round's pair could
             reach the bar by then (2 / 2**n), and under Policy.paired
             there only it (the verdict then pairs whatever the choice). The unpaired test is also held
             to the machine's slow processes, as the verdict holds it
             (stats.compare's power ceiling): a change d is projected found
             with Phi(d / se - z(1 - bar/2)) x the ceiling at d, the ceiling
             read from the design's own trial processes beyond d
             (stats.slow_excesses, stats.power_ceiling at the projected
             rounds a side), and the MDE is the smallest d found with the
             power (`projected_mde`). Without it the projection stated duets
             3.9% and alternating 5.7% on a run whose final MDEs were 26%,
             the value the slow processes' ceiling set for most rows
             (docs/results.md). The paired test has no such ceiling (a
             round's two processes share the slow moment).
             Duets decided by the unpaired test: twice alternating's
             processes a minute, each side's slow half cut. On a busy day
             (the pools of 2026-11-28) that reached 10.5% at 30 duet rounds,
             where the paired test of the same rounds reached 31.7% and 15
             alternating rounds (the same minutes) 27.8%; on a quiet day
             (2026-11-26) the paired test stays the better (2.3% against
             2.6%). Valid: the unpaired test's relabellings mix a round's
             two processes with other rounds', and a duet's two processes
             move together (Spearman 0.25-0.74 on three days' pools), so the
             relabelled spread is, if anything, wider than the estimate's:
             the test is conservative there (the replay's identical-code
             rows: evaluation/design_choice.py).
             A tie goes to alternating (its ratios are what the code costs
             alone), and within a design to the unpaired test.

TRIAL_ROUNDS = 4 each: the replay of this rule on three days' recorded pools
(evaluation/design_choice.py, docs/results.md) reached 0.52-1.03x the better
fixed design's MDE at equal minutes (on constructed adverse days
0.44-1.19x); fewer trial rounds
estimate the spreads too loosely (a round's sd from 2 rounds has 1 degree of
freedom), more spend the budget on the design that loses. The trial needs
max_rounds >= 4 x TRIAL_ROUNDS (the trial at most half the rounds) and two
usable cores; otherwise the rounds alternate and a note says why.

Which trial rounds stay evidence: each round runs both sides under one
design, with the order drawn by a fair coin, so each round's log ratio is
symmetric about 0 under no change whatever its design (all the signed-rank
test assumes). The paired test of a duet run pairs every round, the trial's
alternating ones too (Evidence.paired): they are few and valid, and they
bring the pairs to the bar sooner (the replay measures it beside pairing
only the duets). A run that went on alternating tests its alternating rounds
only (Evidence.wall_values): the trial's duet rounds, whose processes a
partner may have disturbed, widened its unpaired test (on the replay's
constructed day whose duets spread twice as far, 1.17x the better fixed
design's MDE with them, 1.08x without). The unpaired test of a run that went
on in duets reads every round's processes. Which rounds count depends on the trial's
spreads, never on the sides' difference, so the test stays valid.

The guard (`duet_only`): a process beside a partner shares the L3 cache, so
a memory-bound change reads larger in a duet (+2.5% alone read +6-8%). A
wall-time regression of a run that went on in duets is confirmed where its
alternating rounds alone read the head slower (one-sided exact Mann-Whitney
at CONFIRM_LEVEL on their log values; from 3 rounds a side it can), and
otherwise labelled UNCONFIRMED in the verdict and the comment.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

from .. import stats
from ..paired import smallest_paired_p, walsh_medians
from .allocation import ESTIMATE_AFTER
from .evidence import Evidence, Job
from .options import Policy
from .sequential import FLOOR_MARGIN

__all__ = ["ALTERNATING", "AUTO", "CONFIRM_LEVEL", "DUET", "Choice", "Figures", "TRIAL_ROUNDS", "UNCONFIRMED",
           "choose", "contrast_spread", "duet_only", "go_on", "projected_mde", "start", "trial_designs"]

AUTO, ALTERNATING, DUET = "auto", "alternating", "duet"
TRIAL_ROUNDS = 4  # rounds of each design before the choice (see the module's docstring)
MIN_PAIRS = 2  # rounds of a design a row needs for its spread there
SPREAD_DRAWS = 1000  # resampled sets of rounds a design's spread is read from (the sd's own error about 2%)
CONFIRM_LEVEL = 0.05  # the guard's one-sided level
UNCONFIRMED = "duet only: not confirmed in alternating rounds"


@dataclass(frozen=True)
class Figures:
    """One design's figures from the trial rounds."""

    design: str
    rounds: int  # its trial rounds
    seconds: float  # a round of it (median)
    test: str  # the test its rounds would be decided by: "paired" or "unpaired"
    spread: float  # a round's contrast spread (log) as its test reads it (contrast_spread)
    projected_rounds: float  # its trial rounds and those the rest of the budget holds at its rate
    mde: float  # the projected median MDE at the end (normal approximation, at the bar)

    @property
    def per_minute(self) -> float:
        """The MDE scale of one minute of its rounds: spread x sqrt(seconds a round / 60)."""
        return self.spread * math.sqrt(self.seconds / 60)


@dataclass(frozen=True)
class Choice:
    """The design a run goes on with, and why."""

    design: str
    figures: dict[str, Figures]  # by design; empty where nothing could be estimated
    rows: int  # the rows the spreads are medians of
    why: str  # one sentence with the figures

    @property
    def test(self) -> str:
        """The test the chosen design's rounds are decided by: "paired" or "unpaired" (Figures.test)."""
        chosen = self.figures.get(self.design)
        return chosen.test if chosen else "unpaired"

    def to_dict(self) -> dict:
        return {"design": self.design, "test": self.test, "rows": self.rows, "why": self.why,
                "figures": {d: {**asdict(f), "per_minute": f.per_minute} for d, f in self.figures.items()}}


def trial_designs(seed: int, each: int = TRIAL_ROUNDS) -> list[str]:
    """The designs of the trial's rounds in order: `each` pairs, one of each design a pair, which first drawn
    at random (its own generator, so the rounds' coin and shuffle draw as in a fixed design)."""
    rng = random.Random(f"design-trial-{seed}")
    order: list[str] = []
    for _ in range(each):
        pair = [ALTERNATING, DUET]
        rng.shuffle(pair)
        order += pair
    return order


def contrast_spread(rows: list[tuple[np.ndarray, np.ndarray]], paired: bool, rounds: float) -> float:
    """A round's contrast spread (log scale) as the design's test reads it: sqrt(rounds) x the sd of the
    test's own estimate over `rounds` rounds, those rounds drawn (SPREAD_DRAWS times, with replacement) from
    the rows' residuals pooled. The estimate: for the paired test the median of the Walsh averages of the
    rounds' log ratios head/base (paired.walsh_medians; residuals: each row's log ratios about their median,
    drawn with random signs); for the unpaired one the head's faster-half mean less the base's
    (stats.faster_half_mean; residuals: each side's log values about that side's faster-half mean, the
    test's own location: about a median of 4, one slow process among them moves the others' residuals too).
    `rows`: each row's (base, head) values aligned by round.

    Not the sd of a round's log ratio: both tests are rank tests with robust estimates, and this machine's
    slow processes (a tenth of them 20-60% slow) inflate an sd far beyond what the tests feel. On the pools
    of 2026-11-28 (a busy day) the sd of all 60 rounds of each design stated 0.28 unpaired and 0.28 paired,
    duets the better per minute; this reads 0.063 and 0.152, alternating the better, as the verdict's MDEs
    at equal minutes were (16% against 28%; docs/results.md).

    The residuals are pooled in log units, not in each row's own unit: from 4 rounds a row's unit (its median
    absolute deviation about a median of 4) is mostly the gap between its two middle values, and in such units
    the paired spread came out at half its value on normal draws, the unpaired one near its own."""
    n = max(int(rounds), 2)
    rng = np.random.default_rng(0)
    logs = [(np.log(base), np.log(head)) for base, head in rows]

    def drawn(pool: np.ndarray) -> np.ndarray:
        return pool[rng.integers(0, len(pool), (SPREAD_DRAWS, n))]

    if paired:
        pool = np.concatenate([(lh - lb) - np.median(lh - lb) for lb, lh in logs])
        if not np.any(pool):
            return 0.0
        estimates = walsh_medians(drawn(pool) * rng.choice((-1.0, 1.0), (SPREAD_DRAWS, n)))
    else:
        pool = np.concatenate([x - stats.faster_half_mean(x) for pair in logs for x in pair])
        if not np.any(pool):
            return 0.0
        estimates = stats.faster_half_mean(drawn(pool)) - stats.faster_half_mean(drawn(pool))
    return math.sqrt(n) * float(np.std(estimates, ddof=1))


def _seconds(evidence: Evidence, design: str) -> tuple[int, float]:
    """How many rounds of `design` ran, and a round's seconds: the median of those that ran at the allocated
    run times (from round ESTIMATE_AFTER on), or of all of them where none did."""
    ran = [(r, s) for r, (d, s) in enumerate(zip(evidence.round_designs, evidence.round_seconds)) if d == design]
    settled = [s for r, s in ran if r >= ESTIMATE_AFTER] or [s for _, s in ran]
    return len(ran), float(np.median(settled)) if settled else math.nan


def projected_mde(spread: float, rounds: float, bar: float, power: float,
                  excess: np.ndarray | None = None) -> float:
    """The projected MDE of a design (normal approximation) after `rounds` rounds of contrast sd `spread`:
    (z(1 - bar/2) + z(power)) x spread / sqrt(rounds). Given `excess` (stats.slow_excesses of the design's
    processes: an unpaired test's slow processes), held to their ceiling as stats.compare holds the verdict's
    MDE: the smallest change d, from that one on, found with Phi(d / se - z(1 - bar/2)) x ceiling(d) >= power,
    ceiling(d) = stats.power_ceiling at the rounds a side with the processes beyond d slow; infinite where no
    change the excesses reach is."""
    if not (rounds > 0 and math.isfinite(spread)):
        return math.inf
    normal = NormalDist()
    se = spread / math.sqrt(rounds)
    critical = normal.inv_cdf(1 - bar / 2)
    first = (critical + normal.inv_cdf(power)) * se
    if excess is None or len(excess) == 0:
        return math.expm1(first)
    n = max(int(rounds), 1)
    resamples = stats.resamples_for(bar, 1)
    # the MDE first read, then each step up that leaves one slow process fewer (a change sees only the
    # processes beyond it as slow)
    changes = np.concatenate([[first], excess[excess > first]])
    slow = len(excess) - np.searchsorted(excess, changes, side="right")
    ceilings = np.atleast_1d(stats.power_ceiling(n, n, bar, None, resamples,
                                                 slow_counts=(slow, np.full(len(slow), len(excess)))))
    # from each step on, at most its slow processes: a change found with (its chance to pass the bar) x that
    # ceiling; where the ceiling leaves the power, the change needed there, and never below the step
    held = [max(d, (critical + normal.inv_cdf(power / c)) * se) for d, c in zip(changes, ceilings)
            if c > power]
    return math.expm1(float(min(held))) if held else math.inf


def choose(evidence: Evidence, jobs: list[Job], *, seconds_left: float, rounds_left: int, bar: float,
           power: float = 0.8, paired_alternating: bool = False) -> Choice:
    """The design to go on with and its test, from the rounds in `evidence` (Evidence.round_designs,
    round_seconds) of the rows `jobs`: those whose projected median MDE at the end is the smallest (see the
    module's docstring).
    `seconds_left`, `rounds_left`: what the budget still holds; `bar`: a lone row's final bar;
    `paired_alternating`: alternating rounds are decided by the paired test too (Policy.paired)."""
    pairs = {job: {d: evidence.paired(job, d) for d in (ALTERNATING, DUET)} for job in jobs}
    rows = [job for job, by in pairs.items() if all(len(by[d][0]) >= MIN_PAIRS for d in by)]
    if not rows:
        return Choice(ALTERNATING, {}, 0, f"design: alternating (no row had {MIN_PAIRS} rounds of each design to "
                                          "weigh them by)")
    figures = {}
    for design in (ALTERNATING, DUET):
        ran, seconds = _seconds(evidence, design)
        more = min(float(rounds_left), max(seconds_left, 0.0) / seconds) if seconds > 0 else 0.0
        projected = ran + more
        values = [tuple(np.asarray(v, dtype=float) for v in pairs[job][design]) for job in rows]
        # the tests this design may be decided by (contrast.compare_row): the paired one only where every
        # round's pair together can reach the bar; under Policy.paired the verdict then pairs whatever the
        # choice says, so that is the only one projected; else duets may have either, alternating the unpaired
        reachable = smallest_paired_p(int(len(evidence.round_designs) + more)) * FLOOR_MARGIN <= bar
        tests = (("paired",) if paired_alternating and reachable else
                 ("unpaired", "paired") if design == DUET and reachable else ("unpaired",))
        found = []
        for test in tests:  # the unpaired test held to this design's slow processes, as the verdict holds it
            spread = contrast_spread(values, test == "paired", projected)
            excess = None if test == "paired" else stats.slow_excesses([side for pair in values for side in pair])
            found.append(Figures(design, ran, seconds, test, spread, projected,
                                 projected_mde(spread, projected, bar, power, excess)))
        figures[design] = min(found, key=lambda f: f.mde)  # a tie: the first, the unpaired test
    alt, duet = figures[ALTERNATING], figures[DUET]
    design = DUET if duet.mde < alt.mde else ALTERNATING
    why = (f"design: {'duets' if design == DUET else 'alternating rounds'}, decided by the {figures[design].test} "
           f"test, chosen after {alt.rounds} alternating "
           f"and {duet.rounds} duet rounds interleaved: a round took {alt.seconds:.1f} s alternating, "
           f"{duet.seconds:.1f} s as a duet; a round's contrast spread {alt.spread:.2%} ({alt.test} test) against "
           f"{duet.spread:.2%} ({duet.test}), as each test reads it, pooled over {len(rows)} rows; at a lone row's "
           f"bar the budget left would end at about {alt.projected_rounds:.0f} alternating rounds, projected median MDE "
           f"{alt.mde:.1%}, or {duet.projected_rounds:.0f} duets, {duet.mde:.1%} (normal approximation, an "
           f"unpaired test held to its design's slow processes; per "
           f"minute of rounds: {alt.per_minute:.2%} against {duet.per_minute:.2%})")
    return Choice(design, figures, len(rows), why)


def start(evidence: Evidence, schedule: str, max_rounds: int, two_cores: bool, seed: int = 0) -> list[str]:
    """Before the rounds: evidence.schedule for Rounds.schedule `schedule`, and the trial's designs (empty
    unless "auto" can try both: two usable cores and max_rounds >= 4 x TRIAL_ROUNDS; a note says why not)."""
    evidence.schedule = ALTERNATING
    if schedule == ALTERNATING:
        return []
    if not two_cores:
        evidence.notes.append(f"{'duet' if schedule == DUET else 'design auto: duet'} rounds need two usable cores "
                              "and this process has one: the rounds alternated")
        return []
    if schedule == DUET:
        evidence.schedule = DUET
        return []
    if max_rounds < 4 * TRIAL_ROUNDS:
        evidence.notes.append(f"design auto: at most {max_rounds} rounds leave no room to try both designs for "
                              f"{TRIAL_ROUNDS} rounds each (it takes {4 * TRIAL_ROUNDS} or more): the rounds "
                              "alternated")
        return []
    evidence.schedule = AUTO
    return trial_designs(seed)


def go_on(evidence: Evidence, jobs: list[Job], policy: Policy, *, seconds_left: float, rounds_left: int) -> Choice:
    """After the trial: `choose` over the wall-time rows among `jobs` (those evidence.weights holds, where it
    holds any) at a lone row's final bar, then record it: evidence.schedule (the design the rounds go on
    with, and the test it brings: contrast.compare_row), evidence.design_choice and a note with the figures."""
    rows = [job for job in jobs if job in evidence.weights] or jobs
    bar = evidence.design.final_bar(1.0) if evidence.design else policy.wall_fdr
    choice = choose(evidence, rows, seconds_left=seconds_left, rounds_left=rounds_left, bar=bar,
                    power=policy.power, paired_alternating=policy.paired)
    evidence.schedule = choice.design
    evidence.design_choice = choice.to_dict()
    evidence.notes.append(choice.why)
    return choice


def duet_only(evidence: Evidence, job: Job) -> str:
    """For a wall-time regression: "" where it does not rest on duets alone (the rounds did not go on in
    duets) or where the row's alternating rounds alone read the head slower (one-sided exact Mann-Whitney on
    their log values at CONFIRM_LEVEL); else UNCONFIRMED, with what the alternating rounds said."""
    if evidence.schedule != DUET:
        return ""
    base, head = (np.log(np.asarray(v)) for v in evidence.paired(job, ALTERNATING))
    if len(base) == 0:
        return f"{UNCONFIRMED} (none ran)"
    # the smallest one-sided p of n a side: 1 / C(2n, n) (2 a side: 1/6, above the level)
    if 1 / math.comb(2 * len(base), len(base)) > CONFIRM_LEVEL:
        return f"{UNCONFIRMED} ({len(base)} a side cannot reach p <= {CONFIRM_LEVEL:g})"
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(head, base, alternative="greater", method="exact").pvalue)
    if p <= CONFIRM_LEVEL:
        return ""
    ratio = math.exp(float(np.median(head) - np.median(base))) - 1
    return f"{UNCONFIRMED} ({len(base)} a side read {ratio:+.1%}, one-sided p={p:.2g})"
