"""What comparing two commits needs to know: how long to measure (Rounds) and how to decide (Policy).

Both are checked when made, so a bad value fails at once with a message that
names it, whether it came from the command line (whose flags are checked by
these same rules: torchbench/validate.py) or from the Python API.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError
from ..validate import (AT_LEAST_TWO, FRACTION, NON_NEGATIVE, POSITIVE, POSITIVE_WHOLE, SCHEDULE,
                        UNDECIDED_EXIT, check_all)

__all__ = ["MIN_ROUNDS", "Policy", "Rounds"]

MIN_ROUNDS = 6  # rounds before any early stop (the alert's and find's default; see sequential.plan)


@dataclass(frozen=True)
class Policy:
    """How evidence becomes a verdict (stats.classify across a suite)."""

    # the suite's false-alert budget: wall time's Benjamini-Hochberg runs at its (1 - deterministic_share), the
    # deterministic channels' tests at the rest (deterministic_level), split in advance, so that an A/A suite
    # ends "regression" from any channel with chance at most fdr (verdict.py's docstring)
    fdr: float = 0.01
    deterministic_share: float = 0.25
    floor: float = 0.02  # changes smaller than this are never alerts
    threshold: float = 0.05  # the change that matters: 'unchanged' rules it out
    confidence: float = 0.95  # of the reported interval
    power: float = 0.8  # for the minimum detectable effect
    count_floor: float = 0.01  # instruction counts moved this much (beyond their noise) decide a row alone
    # the paired (signed-rank, round by round) test where the pairs can reach the bar (ab/contrast.py). Off by
    # default: on this machine a round's two processes barely move together (median correlation 0.03 on the
    # 48-round pool), and the paired test found +5% in 57% of draws where the unpaired test found it in all
    # (24 a side, 60 rows: evaluation/stats_validation.py, docs/results.md#error-rates)
    paired: bool = False
    # the wall-time rows decided together with this comparison's, where several comparisons are settled as
    # one family (find's confirmations: verdict.settle); None: this comparison's own rows
    family: int | None = None
    undecided_exit: int = 0  # the exit status of an alert that found no regression but left rows undecided
    # (0: noise does not fail a CI gate; 3, inconclusive, for a project that gates on a decided verdict)

    @property
    def wall_fdr(self) -> float:
        """Wall time's share of the budget: the false discovery rate of its weighted Benjamini-Hochberg."""
        return self.fdr * (1 - self.deterministic_share)

    def deterministic_level(self, rows: int) -> float:
        """The level one deterministic test decides at, for a comparison whose `rows` rows have counts on both
        sides: the deterministic share of the budget, half for the counts' tests and half for the simulated
        cycles', each Bonferroni over the rows (or the family they are decided with: family_size). Under no
        change, the chance that any count or cycles test of the suite decides is then at most
        fdr * deterministic_share, whatever the rows' dependence (system calls decide only where they repeat
        exactly, with no noise to budget for: channels.SystemCalls)."""
        return self.fdr * self.deterministic_share / (2 * max(1, self.family_size(rows)))

    def family_size(self, rows: int) -> int:
        """Benjamini-Hochberg's m for a comparison of `rows` wall-time rows: its own, or the family it is
        decided with, whichever is larger."""
        return max(rows, self.family or 0)

    RULES = {"fdr": FRACTION, "deterministic_share": FRACTION, "floor": NON_NEGATIVE, "threshold": NON_NEGATIVE, "confidence": FRACTION,
             "power": FRACTION, "count_floor": NON_NEGATIVE, "undecided_exit": UNDECIDED_EXIT}

    def __post_init__(self):
        check_all(self)


@dataclass(frozen=True)
class Rounds:
    """How two commits are measured: round after round of a base and a head process, within a budget."""

    budget_minutes: float = 9.0  # stop adding rounds this long after the pair began (build and counts included)
    min_rounds: int = MIN_ROUNDS  # rounds before any early stop
    max_rounds: int = 100  # at most this many (the budget binds first on a noisy machine)
    counts: bool = True  # instruction counts under valgrind, once a side
    # the counting's share of the budget, from when counting starts (after the build): its valgrind processes
    # (first and jittered) stop there, and the rows left without counts keep their wall time
    count_share: float = 0.4
    # the candidates' confirmation (the jittered layouts of rows whose first counts moved beyond the floor) may
    # run this much of the budget past the counting's share, out of the rounds' time: those rows' changes are a
    # few percent, which this machine's wall time cannot decide in the budget (its MDE 5-40% a row in 9
    # minutes), and a Timer-in-track_ suite's candidates (3-17 s a row under valgrind) outlasted the share
    # (docs/results.md)
    confirm_share: float = 0.2
    # the system calls' share of the budget, from when tracing starts (after the counting): the traced processes
    # (first and repeat) stop there, each row within its share of what is left, and the rows left untraced keep
    # their wall time (a suite whose set-ups take 15 s a row traced for over 10 minutes without it)
    syscall_share: float = 0.15
    # the budget ends rounds only once every row can reach its bar at all (sequential.Design.reachable):
    # before that a changed row could only come out inconclusive. Off where a quick trial chose its own
    # min_rounds (the CLI's --min-rounds): its MDEs then say "too few processes for the bar".
    until_reachable: bool = True
    # how a round runs its two processes: "alternating", one after the other, each alone on the machine;
    # "duet", both at once, one core each (swapped every round), meeting before every case's timing, and
    # decided by the paired test of the rounds where it can reach the bar (ab/contrast.py); or "auto" (the
    # default), the first rounds of both interleaved, then the one whose projected MDE at the end of the
    # budget is smaller (ab/design_choice.py: the choice and its figures are in the notes). Duet needs two
    # usable cores: with one, the rounds alternate and the report says so
    # (the command line's --design; not `design`, which names the looks: sequential.Design)
    schedule: str = "auto"

    RULES = {"budget_minutes": POSITIVE, "min_rounds": POSITIVE_WHOLE, "max_rounds": AT_LEAST_TWO,
             "schedule": SCHEDULE, "count_share": FRACTION, "confirm_share": FRACTION, "syscall_share": FRACTION}

    def __post_init__(self):
        check_all(self)
        if self.min_rounds > self.max_rounds:
            raise UserError(f"min_rounds ({self.min_rounds}) must be <= max_rounds ({self.max_rounds})")
