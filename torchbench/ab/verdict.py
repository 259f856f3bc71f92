"""From evidence to verdicts: how a row is decided, in one place (`prepare`, then `settle` across the family).

Every source of evidence is a channel with one shape (channels.Channel: what measures it, its noise model,
its test, its label), and a row is decided by them in channels.ORDER, as `prepare` reads:

  1. what the evidence alone settles: a row that failed on a side, was
     skipped, is new or removed is not compared (`_rows`). A row this machine
     cannot run (asv's skip, or a CUDA device it lacks) is "skipped", with its
     reason, where every side that lists it skipped it; where one side
     measured it, hardware the other lacked is a failure of that side (the
     machine ran it), and asv's skip on one side a change of the suite.
  2. the deterministic channels, in their order; the first whose finding
     decides decides the row, and the others are shown beside it in the
     comment (`_deterministic`):
       instruction counts  counts moved by at least Policy.count_floor beyond
                           their noise (count_decision.py: the first and the
                           jittered valgrind processes, the calibrated commit
                           noise): "compute";
       system calls        calls that repeat, changed: each side traced in
                           channels.SYSCALL_TRACES processes, every trace
                           exact for the call, each side's traces agreeing,
                           a whole number a call apart; calls that follow the
                           scheduler or the allocator (channels.SCHEDULED)
                           are shown and never decide: labelled with the calls;
       simulated cycles    counts flat, the priced cycles (own instructions
                           plus this machine's price a simulated last-level
                           miss) moved beyond their noise: "memory (simulated
                           cache)".
     The suite's false-alert budget, Policy.fdr, is split in advance: the
     count and cycles tests decide at Policy.deterministic_level (their
     deterministic_share of it, half each, Bonferroni over the rows counted on
     both sides: channels.deterministic_level), wall time's weighted BH at
     Policy.wall_fdr, the rest (all of it where no row was counted:
     channels.wall_fdr). Where no row changed, the chance that any
     channel ends the suite in "regression" is then at most Policy.fdr
     (system calls decide only where they repeat exactly: no noise to
     budget for; evaluation/syscalls_noise.py measures that on identical code).
  3. the agreement veto: a row a deterministic channel decides is
     inconclusive where its wall time moved the other way (`_by_channel`:
     counts.opposite_p at counts.VETO_LEVEL, one-sided; the rounds keep such a
     row until counts.VETO_PROCESSES a side, where the test is the faster
     halves' permutation test, which a slow process cannot defeat).
  4. wall time, every other compared row, across the family: its finding
     (channels.WallTime: contrast.compare_row at its final bar, its p-value
     combined over the looks it had, sequential.py), then weighted
     Benjamini-Hochberg at Policy.wall_fdr across the family's rows (`settle`; one
     comparison's, or several settled as one: find), weighted by what the
     counts say (counts.weights: flat counts, a stricter bar), then
     stats.classify, the slower halves (contrast.slow_halves) before a row is
     called unchanged. A regression of a run that went on in duets is labelled
     "duet only" where its alternating rounds do not confirm it
     (design_choice.duet_only).

The rounds (rounds.py) stop a row early by the same rules: at a look, by its
wall time; once its wall time can disagree, by a deterministic channel.

Each row's minimum detectable effect is the one its final test demands: a lone
change's bar in weighted BH at this suite's size, w q / m, times the final
analysis's share of it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass

import numpy as np

from .. import stats
from torchbench_core.skips import lacks_hardware

from ..asv_bridge.results import param_value
from . import sequential
from .contrast import slow_halves
from .channels import (CHANNELS, COUNTS, CYCLES, SYSCALLS, WALL, WALL_TIME, Finding, deterministic_level, findings,
                       wall_fdr)
from .design_choice import duet_only
from .counts import COMPUTE, NO_COUNTS, VETO_LEVEL, WALL_ONLY, no_counts, opposite_p, weights
from .evidence import Evidence
from .options import Policy

__all__ = ["COMPUTE", "COUNTS", "CYCLES", "FAILED", "NEW", "NO_COUNTS", "Prepared", "REMOVED", "SKIPPED", "SYSCALLS",
           "Verdict", "WALL", "WALL_ONLY", "decide", "prepare", "settle"]

NEW, REMOVED, FAILED, SKIPPED = "new", "removed", "failed", "skipped"


@dataclass
class Verdict:
    """One benchmark case's verdict: its status, values, interval and label."""

    name: str  # asv's row name: benchmark(params), as asv prints it
    benchmark: str
    params: list  # asv's repr strings
    status: str  # stats verdicts, or new / removed / failed / skipped
    label: str = ""
    base: float | None = None  # median of per-process values
    head: float | None = None
    unit: str | None = None
    comparison: stats.Comparison | None = None
    counts_base: float | None = None
    counts_head: float | None = None
    counts_delta: float | None = None  # head / base - 1
    error: str = ""  # why it failed, or was skipped, or is inconclusive where a reason says more
    stopped: str = ""  # why it stopped early, if it did
    index: int = 0  # the parameter combination's position in asv's order
    decided_by: str = ""  # a deterministic channel (COUNTS, SYSCALLS, CYCLES) or WALL, for compared rows
    counts_margin: float | None = None  # the noise margin the count change was held against
    decided_delta: float | None = None  # the deciding deterministic channel's change (head / base - 1)
    channels_text: str = ""  # what every deterministic channel with measurements says, the decider's first
    param_names: list = dataclasses.field(default_factory=list)  # asv's param_names of its benchmark
    # a wall-time regression of a run that went on in duets which its alternating rounds do not confirm
    # (design_choice.duet_only: a change can read larger beside a partner process); "" otherwise
    unconfirmed: str = ""

    @property
    def title(self) -> str:
        """The row as the user wrote it: asv's name, benchmark(params). Compare's shorter placement, sub_label ·
        description (label), only for a suite that declares its parameters the task-spec fields (TimerSuite)."""
        from torchbench_core.asv_suite import TASK_SPEC_PARAMS

        if tuple(self.param_names) == TASK_SPEC_PARAMS and len(self.params) == len(TASK_SPEC_PARAMS):
            label, sub_label, description, threads = [param_value(v) for v in self.params]
            suffix = f", {threads} threads" if threads != 1 else ""
            return f"{sub_label} · {description}{suffix} ({label})"
        return self.name

    def to_dict(self) -> dict:
        d = asdict(self)
        d["title"] = self.title
        d["comparison"] = self.comparison.to_dict() if self.comparison else None
        return d


def _rows(evidence: Evidence) -> tuple[list[Verdict], list[tuple[Verdict, list, list]]]:
    """Step 1: every row with its status where the evidence alone settles it, and the rows to compare."""
    rows, compared = [], []
    for job, info in sorted(evidence.jobs.items()):
        row = Verdict(info.name, job[0], info.params, "", unit=info.unit, stopped=evidence.decided.get(job, ""),
                      index=job[1], param_names=list(info.param_names))
        base, head = evidence.wall_values(job)
        err = evidence.errors["head"].get(job) or evidence.errors["base"].get(job)
        skipped = _skipped(evidence, job)
        if err:
            side = "head" if job in evidence.errors["head"] else "base"
            row.status, row.error = FAILED, f"{side}: {err}"
        elif skipped:
            row.status, row.error = skipped
            if row.status == SKIPPED:  # nothing measured to compare, count or label
                rows.append(row)
                continue
        elif job in evidence.skipped and not (base and head):
            continue  # combinations the suite does not define
        elif not info.on_base:
            row.status = NEW
        elif not info.on_head:
            row.status = REMOVED
        elif (len(base) < 2 or len(head) < 2) and base and head and evidence.rounds < 2:
            # nothing failed: the budget ended the rounds after the first (a round of minutes, rounds.py)
            row.status, row.error = stats.INCONCLUSIVE, "one process a side: the budget held one round"
        elif len(base) < 2 or len(head) < 2:
            row.status, row.error = FAILED, "fewer than 2 processes measured it on a side"
        else:
            compared.append((row, base, head))
        row.base = float(np.median(base)) if base else None
        row.head = float(np.median(head)) if head else None
        rows.append(row)
    return rows, compared


def _deterministic(row: Verdict, evidence: Evidence, job, policy: Policy, level: float) -> dict[str, Finding]:
    """Step 2: the row's label from its counts, the deterministic channels' findings, in order, their tests
    at `level` (deterministic_level), and the first that decides as the row's decider (decided_by,
    decided_delta), the others beside it (channels_text)."""
    found = findings(evidence, job, policy.count_floor, level)
    counts = found.get(COUNTS)  # the label and the counts' cells, whichever channel decides
    row.label = no_counts(_why_no_counts(evidence, job)) if counts is None else counts.label
    if counts is not None:
        row.counts_base, row.counts_head, row.counts_delta = counts.base, counts.head, counts.delta
        row.counts_margin = counts.margin
    decider = next((f for f in found.values() if f.decides), None)
    if decider is not None:
        row.decided_by, row.decided_delta = decider.channel, decider.delta
        if decider.channel != COUNTS:
            row.label = f"{decider.label}; counts {row.label}"
    shown = [f for f in sorted(found.values(), key=lambda f: f is not decider) if f.text]
    row.channels_text = "; ".join(f"counts {f.text}" if f.channel == COUNTS and len(shown) > 1 else f.text
                                  for f in shown)
    return found


def _skipped(evidence: Evidence, job) -> tuple[str, str] | None:
    """(status, why) of a job a side skipped with a reason: SKIPPED where every side that lists it skipped it
    (one reason where both give the same); where the other side measured it, FAILED for hardware this side
    lacked (this machine ran it), SKIPPED for asv's skip (the suite's own choice). None where no side did."""
    info = evidence.jobs[job]
    why = {side: evidence.skips[side].get(job) for side in ("base", "head")}
    if not any(why.values()):
        return None
    if all(why[side] or not info.on(side) for side in ("base", "head")):
        reasons = set(filter(None, why.values()))
        return SKIPPED, reasons.pop() if len(reasons) == 1 else f"base: {why['base']}; head: {why['head']}"
    side = "head" if why["head"] else "base"
    other = "base" if side == "head" else "head"
    if lacks_hardware(why[side]):
        return FAILED, f"{side}: {why[side]}, but the {other} ran it on this machine"
    return SKIPPED, f"{side}: {why[side]}; the {other} measured it"


def _why_no_counts(evidence: Evidence, job) -> str:
    """Why a row has no count change: counts off, not countable, counting failed (a side's reason), or a
    side without counts for a reason the evidence does not hold (an older record)."""
    if evidence.counts_off:
        return evidence.counts_off
    for side in ("head", "base"):
        if job in evidence.uncounted[side]:
            return evidence.uncounted[side][job]
    missing = [s for s in ("base", "head") if not evidence.counts[s].get(job)]
    return f"no counts on the {' and '.join(missing)} side" if missing else "no counts: the base's are zero"


def _by_channel(row: Verdict, base: list[float], head: list[float]) -> str:
    """A row a deterministic channel decides: its direction, unless the wall time moved the other way at
    VETO_LEVEL (counts.opposite_p, one-sided: from counts.VETO_PROCESSES a side the faster halves'
    permutation test, below that Yuen's; its measured errors in evaluation/agreement_validation.py). One test, so that the stated false veto is its level: the interval
    beside it as a second test added its own 2.5% (7-9% vetoed of rows whose wall time did not move)."""
    slower = row.decided_delta > 0
    p = opposite_p(base, head, row.decided_delta)
    if p <= VETO_LEVEL:
        row.error = (f"{row.decided_by} moved {row.decided_delta:+.2%} but the wall time moved the other way "
                     f"({row.head / row.base - 1:+.1%}, one-sided p={p:.2g}): the {row.decided_by} do not explain "
                     "the time")
        return stats.INCONCLUSIVE
    return stats.REGRESSED if slower else stats.IMPROVED


@dataclass
class Prepared:
    """One comparison's rows before the false-discovery control: every row, and the wall-time family with
    each member's weighted p-value (p / w), so that several comparisons can be settled together."""

    evidence: Evidence
    rows: list[Verdict]
    family: list[tuple[Verdict, float]]


def prepare(evidence: Evidence, policy: Policy) -> Prepared:
    """How one comparison's rows are decided, step by step (the module's docstring); `settle` then ends step 4
    across the family. Every row, and the wall-time family with each member's weighted p-value."""
    rows, compared = _rows(evidence)  # 1. what the evidence alone settles
    seen = {}  # each row's deterministic findings, by job
    level = deterministic_level(evidence, policy)  # their share of the suite's budget, a test
    for row in rows:  # 2. the deterministic channels, in order
        if row.status != SKIPPED:  # nothing measured to compare, count or label
            seen[row.benchmark, row.index] = _deterministic(row, evidence, (row.benchmark, row.index), policy, level)
    for row, base, head in compared:  # 3. the agreement veto, for the rows a deterministic channel decides
        if row.decided_by in CHANNELS:
            row.comparison = stats.compare(base, head, confidence=policy.confidence, alpha=wall_fdr(evidence, policy),
                                           power=policy.power)
            row.status = _by_channel(row, base, head)
    # 4. wall time, every other compared row: its finding at its final bar in weighted BH (settle decides)
    wall = [(row, base, head) for row, base, head in compared if row.decided_by not in CHANNELS]
    # the looks that came spent their shares; those that did not go to the final analysis. m: this
    # comparison's wall-time rows, or the family it is decided with (Policy.family: find's candidates)
    fdr = wall_fdr(evidence, policy)  # wall time's share of the budget (all of it where nothing was counted)
    design = dataclasses.replace(evidence.design or sequential.fixed(0, fdr, policy.confidence),
                                 m=policy.family_size(len(wall)), fdr=fdr,
                                 confidence=policy.confidence).after(evidence.rounds)
    jobs = [(row.benchmark, row.index) for row, _, _ in wall]
    w = weights([row.label for row, _, _ in wall])
    # this comparison's processes, from all its wall-time rows: how often they land in the machine's slow group
    # (what caps the power of few processes: stats.power_ceiling), and their residuals, from which the rule's
    # power is simulated where few processes make the relabellings' MDE optimistic (stats.SuiteNoise)
    noise = stats.SuiteNoise([(base, head) for _, base, head in wall])
    channel = WALL_TIME.in_family(policy, design, dict(zip(jobs, w)), noise)
    family = []
    for (row, _, _), job, weight in zip(wall, jobs, w):
        found = channel.test(evidence, job, policy.count_floor, seen[job], level)  # wall time: unused
        row.comparison, row.decided_by = found.comparison, WALL
        family.append((row, min(1.0, found.p_value / weight)))
    return Prepared(evidence, rows, family)


def settle(prepared: list[Prepared], policy: Policy) -> None:
    """Weighted Benjamini-Hochberg (BH on p / w: Genovese, Roeder and Wasserman 2006) at wall time's share of the
    suite's budget (channels.wall_fdr: Policy.wall_fdr, or all of Policy.fdr where nothing was counted) over
    the wall-time rows of all these comparisons together, then each row's status."""
    members = [(one.evidence, row, adjusted) for one in prepared for row, adjusted in one.family]
    fdr = min((wall_fdr(one.evidence, policy) for one in prepared), default=policy.wall_fdr)
    for (evidence, row, _), significant in zip(members, stats.fdr([a for _, _, a in members], fdr)):
        if row.label == COMPUTE and (row.counts_delta > 0) != (row.comparison.ratio > 1):
            row.label = WALL_ONLY  # counts that moved the other way do not explain the time
        row.status = stats.classify(row.comparison, significant, floor=policy.floor, threshold=policy.threshold)
    # the slower halves, tested across the same rows with their own budget (contrast.slow_halves)
    whys = slow_halves([(evidence, (row.benchmark, row.index)) for evidence, row, _ in members],
                       [row.status == stats.UNCHANGED for _, row, _ in members], policy)
    for (_, row, _), why in zip(members, whys):
        if why:
            row.status, row.error = stats.INCONCLUSIVE, why
    # a regression from duets: confirmed by the row's alternating rounds, or labelled (design_choice.duet_only)
    for evidence, row, _ in members:
        if row.status == stats.REGRESSED:
            row.unconfirmed = duet_only(evidence, (row.benchmark, row.index))


def decide(evidence: Evidence, policy: Policy) -> list[Verdict]:
    """Every row's verdict (see the module's docstring): one comparison, settled on its own."""
    one = prepare(evidence, policy)
    settle([one], policy)
    return one.rows
