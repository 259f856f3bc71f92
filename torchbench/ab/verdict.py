"""From evidence to verdicts: one row per benchmark, the suite's false discovery rate controlled.

Wall time decides through stats.compare / stats.fdr / stats.classify. Where
a suite has instruction counts (TimerSuite cases, counted under valgrind
once per side), they label the change:

  compute      the counts moved beyond their spread, the same way as the time;
  wall time only (memory, cache, or noise)
               the counts are flat: such a row must also pass the FDR test at
               a tenth of the level and twice the floor, or it is not an alert.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .. import stats
from ..asv_bridge.results import param_value
from .evidence import Evidence, Job
from .options import Policy

__all__ = ["COMPUTE", "FAILED", "NEW", "NO_COUNTS", "REMOVED", "Verdict", "WALL_ONLY", "decide"]

COMPUTE = "compute"
WALL_ONLY = "wall time only (memory, cache, or noise)"
NO_COUNTS = "wall time (no counts)"
NEW, REMOVED, FAILED = "new", "removed", "failed"
COUNT_SPREAD_FACTOR = 5  # a count change must exceed this many times the repeats' spread
COUNT_FLOOR = 0.001  # and 0.1%


@dataclass
class Verdict:
    """One benchmark case's verdict: its status, values, interval and label."""

    name: str  # asv's row name: benchmark(params)
    benchmark: str
    params: list
    status: str  # stats verdicts, or new / removed / failed
    label: str = ""
    base: float | None = None  # median of per-process values
    head: float | None = None
    unit: str | None = None
    comparison: stats.Comparison | None = None
    counts_base: float | None = None
    counts_head: float | None = None
    counts_delta: float | None = None  # head / base - 1
    error: str = ""
    stopped: str = ""  # why it stopped early, if it did
    index: int = 0  # the parameter combination's position in asv's order

    @property
    def title(self) -> str:
        """Compare's placement when the parameters are the task-spec fields: sub_label, description (label)."""
        from torchbench_core.asv_suite import TASK_SPEC_PARAMS

        values = [param_value(v) for v in self.params]
        if len(values) == len(TASK_SPEC_PARAMS):
            label, sub_label, description, threads = values
            suffix = f", {threads} threads" if threads != 1 else ""
            return f"{sub_label} · {description}{suffix} ({label})"
        return self.name

    def to_dict(self) -> dict:
        d = asdict(self)
        d["title"] = self.title
        d["comparison"] = self.comparison.to_dict() if self.comparison else None
        return d


def _counts(evidence: Evidence, job: Job) -> tuple[float | None, float | None, float | None, bool | None]:
    base, head = evidence.counts["base"].get(job), evidence.counts["head"].get(job)
    if not base or not head:
        return None, None, None, None
    mb, mh = float(np.median(base)), float(np.median(head))
    spread = max((max(v) - min(v)) / float(np.median(v)) for v in (base, head))
    delta = mh / mb - 1
    return mb, mh, delta, abs(delta) > max(COUNT_SPREAD_FACTOR * spread, COUNT_FLOOR)


def decide(evidence: Evidence, policy: Policy) -> list[Verdict]:
    rows, compared = [], []
    for job, info in sorted(evidence.jobs.items()):
        row = Verdict(info.name, job[0], info.params, "", unit=info.unit, stopped=evidence.decided.get(job, ""),
                      index=job[1])
        base, head = evidence.values["base"].get(job, []), evidence.values["head"].get(job, [])
        err = evidence.errors["head"].get(job) or evidence.errors["base"].get(job)
        if err:
            side = "head" if job in evidence.errors["head"] else "base"
            row.status, row.error = FAILED, f"{side}: {err}"
        elif job in evidence.skipped and not (base and head):
            continue  # combinations the suite does not define
        elif not info.on_base:
            row.status = NEW
        elif not info.on_head:
            row.status = REMOVED
        elif len(base) < 2 or len(head) < 2:
            row.status, row.error = FAILED, "fewer than 2 processes measured it on a side"
        else:
            compared.append((row, base, head))
        row.base = float(np.median(base)) if base else None
        row.head = float(np.median(head)) if head else None
        row.counts_base, row.counts_head, row.counts_delta, moved = _counts(evidence, job)
        row.label = NO_COUNTS if moved is None else COMPUTE if moved else WALL_ONLY
        rows.append(row)
    # draws enough for a lone change to pass the strictest bar at this suite's size (wall time only: q/10)
    resamples = stats.resamples_for(policy.fdr / 10, len(compared))
    for row, base, head in compared:
        # the minimum detectable effect at the bar a lone change must pass here: BH's q/m (wall time only: q/10m)
        bar = policy.fdr / max(len(compared), 1) / (10 if row.label == WALL_ONLY else 1)
        row.comparison = stats.compare(base, head, confidence=policy.confidence, alpha=bar, power=policy.power,
                                       resamples=resamples)
    compared = [row for row, _, _ in compared]
    p = [r.comparison.p_value for r in compared]
    significant = stats.fdr(p, policy.fdr)
    strict = stats.fdr(p, policy.fdr / 10)
    for row, sig, sig_strict in zip(compared, significant, strict):
        if row.label == WALL_ONLY:
            sig = sig_strict and abs(row.comparison.ratio - 1) >= 2 * policy.floor
        elif row.label == COMPUTE and row.counts_delta is not None and sig:
            # counts that moved the other way do not explain the time: treat as wall time only
            if (row.counts_delta > 0) != (row.comparison.ratio > 1):
                row.label = WALL_ONLY
                sig = sig_strict and abs(row.comparison.ratio - 1) >= 2 * policy.floor
        row.status = stats.classify(row.comparison, sig, floor=policy.floor, threshold=policy.threshold)
    return rows
