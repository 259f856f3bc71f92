"""Instruction counts as a channel of evidence: what they decide alone, and how they weigh the wall-time test.

A TimerSuite case is counted under valgrind (callgrind), COUNT_REPEATS times in
one process a side. Counts see compute (more Python bytecode, more dispatch,
more arithmetic), not memory or cache effects. Like PyTorch's own pull-request
instruction-count benchmarks (a per-benchmark noise margin, no wall time) and
CodSpeed (simulated instruction costs), a compute change is decided from
counts, not from many timed processes:

* **compute change (decided by counts).** The head's counts differ from the
  base's by at least Policy.count_floor (1% by default) and by more than
  SPREAD_FACTOR times their noise. Their noise is measured, not assumed: the
  widest spread of the repeats inside a valgrind process and, because such a
  row is counted again in a second valgrind process a side before it decides
  (`pending` -> pair.py's second pass), the difference between the two
  processes. That second process runs with its memory layout shifted (each
  side by another amount), so the difference holds what a commit's layout
  does to the counts, not only what varies between processes. A row whose
  second process fails is decided by its wall time.
  The wall time is still reported, and where its interval lies wholly on the
  other side of 1 the row is inconclusive: the counts do not explain the time.
* **everything else** goes to the wall-time test. Its rows are weighted for
  weighted Benjamini-Hochberg (Genovese, Roeder and Wasserman 2006: reject
  p_i <= w_i k q / m, weights averaging 1, fixed before the wall-time p-values are
  seen): a row whose counts moved a little (beyond their noise, below the floor)
  or that has no counts weighs PRIOR_WEIGHT[...] = 1, a row whose counts are flat
  a quarter of that: a wall-time change without a compute change is more often
  the machine than the code, so it must clear a stricter bar.

The noise, measured on identical code (evaluation/counts_pool.py: 69 rows, 12
valgrind processes of three commits that change nothing the suite runs;
evaluation/stats_validation.py replays this rule on every way of taking two
processes a side):
  * between valgrind processes of one commit: none; every row's counts were
    the same to the instruction in every process;
  * between commits: a commit that changes the package elsewhere (an unused
    function added to the module the suite imports) moved 62 of 69 rows by
    up to 0.53%; a README edit moved none. A second process of the same
    commit cannot see that: it is the code's layout in memory, fixed per
    commit. NOISE_FLOOR (0.6%) sits above it for the label, and
    Policy.count_floor (1%) for a decision. A process whose layout is
    shifted (torchbench_core._callgrind_worker._shift_layout) moves the rows
    a layout moves, so the confirming process runs shifted, and its
    difference from the first widens those rows' margin (a plain suite's
    `time_` rows, which a layout moves wholesale, are compared layout by
    layout instead: below);
  * repeats inside a process spread by 0.13% (median) to 1.4%.
The rule decided 0 rows in 117 replayed A/A suites (8,073 rows). So the floor,
not the margin, does most of the work, and the second process is cheap
insurance (only rows that would decide are counted again) for suites whose
counts do vary between processes.

An asv `time_` method is counted call by call, its calls per counted run
planned once and shared by every commit (counts_cache.CountPlans): with a
plan made by each side, 8 of 42 identical rows of a plain suite differed by
0.6-3.0% between an A/A pair's sides; with one plan, all 42 agreed to the
instruction (evaluation/plain_suite_counts.py). Its counts move with the
memory layout far more than a TimerSuite case's (asv's setup allocates
between the calls): a shifted layout moves a row's counts by up to 9%
(median 1-3%), while under one layout two commits that change nothing a row
runs moved it by at most 0.21% (evaluation/plain_layouts.py, 2026-11-26: 39
untouched rows, 4 layouts, a README edit and a change of another function;
the +2% target moved +1.90-1.94% under every layout). So such a row is
compared layout by layout (`_matched`): the first processes of both sides
run the default layout and the confirming ones one shifted layout, the same
on both sides (rounds.SHIFTED_LAYOUT); the change must clear the floor and
the margin under both, the margin being SPREAD_FACTOR times the repeats'
spread inside the processes and the two layouts' disagreement about the
change (what a layout does to the change itself), never the layouts' own
difference, which the code does not make. (Measured on 2026-11-25 under the
harness before valgrind processes started uninstrumented, torch.neg(1) had
moved 2.8% between such commits; rows were then decided only beyond 5%.)

The suite's false alerts, in one account: among the wall-time rows,
Benjamini-Hochberg bounds the false discovery rate at q; the count-decided
rows add at most the chance that any of them is false in the suite (a false
count-decided row makes at most one false alert among at least one, so the
false discovery rate of all flagged rows is at most q plus that chance). That
chance is measured, like q's rows, per suite: 0 of the replayed A/A suites.

Where the two sides are different builds (an upgrade verdict between torch
releases), counts move with the build as well as the code: between torch
2.13.0 and 2.14.1, the same code's counts moved beyond margin and floor in 19
of 69 rows (up to 4.2%; counts_pool.py), and in the README's upgrade run the
counts said *improved* while the wall time was +2.4%. So they are advisory:
they label the row ("counts advisory") and decide and weigh nothing; the wall
time decides every row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .evidence import Evidence, Job

__all__ = ["ADVISORY", "COMPUTE", "CountChange", "NO_COUNTS", "PRIOR_WEIGHT", "SPREAD_FACTOR", "WALL_ONLY",
           "count_change", "no_counts", "to_confirm", "weights"]

COMPUTE = "compute"
WALL_ONLY = "wall time only (memory, cache, or noise)"
NO_COUNTS = "wall time (no counts)"
SPREAD_FACTOR = 5  # a count change beyond this many times the repeats' spread is not noise
# nor one within 0.6% (the label's bar; deciding alone needs Policy.count_floor): a commit that changes the
# package but not the code a suite runs moved the counts of 62 of 69 identical rows by up to 0.53% (the code's
# layout in memory; evaluation/counts_pool.py's commit C), where valgrind processes of one commit agree exactly
NOISE_FLOOR = 0.006
PRIOR_WEIGHT = {COMPUTE: 1.0, NO_COUNTS: 1.0, WALL_ONLY: 0.25}
ADVISORY = "counts advisory"  # in the label of a row whose sides are different builds (weighs as NO_COUNTS)


@dataclass(frozen=True)
class CountChange:
    """One row's instruction counts: each side's median, the change, and what it means."""

    base: float
    head: float
    delta: float  # head / base - 1
    margin: float  # the noise margin it was held against
    label: str  # COMPUTE when beyond the noise, else WALL_ONLY
    decides: bool  # beyond count_floor too, in two valgrind processes a side: the counts decide the row alone
    pending: bool = False  # it would decide, but rests on one valgrind process a side: count it again first


def _processes(evidence: Evidence, side: str, job: Job) -> list[list[float]]:
    """A side's counts of `job`, one list per valgrind process (the first, and the second where taken)."""
    return [v for v in (evidence.counts[side].get(job), evidence.counts_again[side].get(job)) if v]


def _inside(processes: list[list[float]]) -> float:
    """The widest range of the repeats inside any one of these valgrind processes, relative to its median."""
    return max((max(v) - min(v)) / max(float(np.median(v)), 1e-300) for v in processes)


def _spread(processes: list[list[float]]) -> float:
    """The relative noise of one side's counts: the widest range of repeats inside a process, and, with two
    processes, the difference of their medians (the second's memory layout is shifted: what the layout does
    to the counts, which a code change elsewhere does too)."""
    medians = [float(np.median(v)) for v in processes]
    spread = _inside(processes)
    if len(medians) == 2:
        spread = max(spread, abs(medians[0] - medians[1]) / max(min(medians), 1e-300))
    return spread


def _matched(runs: dict[str, list[list[float]]]) -> tuple[float, float, list[float], float] | None:
    """A `time_` method's counts compared layout by layout (its processes pair up by layout: the first ones,
    then the confirming ones): the first layout's medians, every layout's change, and the margin (the repeats'
    widest spread inside any process, and the layouts' disagreement about the change); None where a base
    median is not positive."""
    pairs = list(zip(runs["base"], runs["head"]))
    medians = [(float(np.median(b)), float(np.median(h))) for b, h in pairs]
    if any(mb <= 0 for mb, _ in medians):
        return None
    deltas = [mh / mb - 1 for mb, mh in medians]
    inside = _inside([v for pair in pairs for v in pair])
    margin = max(SPREAD_FACTOR * max(inside, max(deltas) - min(deltas)), NOISE_FLOOR)
    return medians[0][0], medians[0][1], deltas, margin


def count_change(evidence: Evidence, job: Job, count_floor: float) -> CountChange | None:
    """The counts of `job` on both sides, held against their noise; None without counts on a side."""
    runs = {side: _processes(evidence, side, job) for side in ("base", "head")}
    if not runs["base"] or not runs["head"]:
        return None
    if (info := evidence.jobs.get(job)) and info.by_call:  # layout by layout (see the module's doc)
        found = _matched(runs)
        if found is None:
            return None
        mb, mh, deltas, margin = found
        delta = deltas[0]
        moved = all(abs(d) > margin and d * delta > 0 for d in deltas)
        beyond = moved and all(abs(d) >= count_floor for d in deltas)
    else:
        mb, mh = (float(np.median(np.concatenate(runs[side]))) for side in ("base", "head"))
        if mb <= 0:
            return None
        spread = max(_spread(runs["base"]), _spread(runs["head"]))
        delta = mh / mb - 1
        margin = max(SPREAD_FACTOR * spread, NOISE_FLOOR)
        moved = abs(delta) > margin
        beyond = moved and abs(delta) >= count_floor
    label = COMPUTE if moved else WALL_ONLY
    if evidence.builds_differ:  # the build moves counts too: a label to read, not evidence to weigh
        return CountChange(mb, mh, delta, margin, f"{label}; {ADVISORY} ({evidence.builds_differ})", False)
    confirmed = len(runs["base"]) == 2 and len(runs["head"]) == 2
    return CountChange(mb, mh, delta, margin, label, beyond and confirmed, beyond and not confirmed)


def to_confirm(evidence: Evidence, jobs: list[Job], count_floor: float) -> list[Job]:
    """The jobs whose counts would decide them but rest on one valgrind process a side."""
    return [job for job in jobs if (c := count_change(evidence, job, count_floor)) is not None and c.pending]


def no_counts(reason: str) -> str:
    """The label of a row without counts, with the reason ("not countable: ...", "counting failed: ...",
    "no counts: --no-counts"): never "no counts" alone."""
    return f"wall time ({reason})"


def weights(labels: list[str]) -> list[float]:
    """Weighted BH's weights for rows with these labels: PRIOR_WEIGHT (a row without counts, whatever the
    reason, as NO_COUNTS), scaled to average 1."""
    raw = [PRIOR_WEIGHT.get(label, PRIOR_WEIGHT[NO_COUNTS]) for label in labels]
    total = sum(raw)
    return [len(raw) * w / total for w in raw] if total else []
