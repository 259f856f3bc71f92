"""What a comparison of two commits collects: per benchmark case, each side's per-process values.

A job is one parameter combination of one benchmark, (benchmark name, asv's
parameter index). Each process that measured it on a side adds one value
(stats.process_summary of its blocks); instruction counts, failures and
early stops are kept beside them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["Evidence", "Job", "JobInfo", "SIDES", "Side"]

Job = tuple[str, int]  # (benchmark name, parameter index)
SIDES = ("base", "head")


@dataclass(frozen=True)
class Side:
    name: str  # "base" or "head"
    commit: str
    install: Path  # where the commit is installed (put on PYTHONPATH)


@dataclass
class JobInfo:
    """A job as the suite lists it: its asv row name, parameters (asv's repr strings) and unit."""

    name: str
    params: list[str] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)
    unit: str | None = None
    on_base: bool = False  # the suite defines it on that side
    on_head: bool = False

    def on(self, side: str) -> bool:
        return self.on_base if side == "base" else self.on_head

    def mark(self, side: str) -> None:
        setattr(self, f"on_{side}", True)


@dataclass
class Evidence:
    """Per job: per-process values for each side, failures, instruction counts, early stops."""

    jobs: dict[Job, JobInfo] = field(default_factory=dict)
    values: dict[str, dict[Job, list[float]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    errors: dict[str, dict[Job, str]] = field(default_factory=lambda: {s: {} for s in SIDES})
    counts: dict[str, dict[Job, list[float]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    skipped: set[Job] = field(default_factory=set)  # combinations the suite does not define (asv's skip)
    decided: dict[Job, str] = field(default_factory=dict)  # job -> why it stopped early
    rounds: int = 0
    notes: list[str] = field(default_factory=list)

    def add_job(self, job: Job, info: JobInfo, side: str) -> JobInfo:
        """Register the job as listed on `side` (the first listing's info is kept)."""
        kept = self.jobs.setdefault(job, info)
        kept.mark(side)
        return kept

    def on_both(self, jobs: list[Job]) -> list[Job]:
        return [j for j in jobs if self.jobs[j].on_base and self.jobs[j].on_head]

    def to_dict(self) -> dict:
        def keyed(d):
            return {f"{name}|{index}": v for (name, index), v in d.items()}

        return {"rounds": self.rounds, "jobs": {k: asdict(v) for k, v in keyed(self.jobs).items()},
                "notes": self.notes, "values": {s: keyed(v) for s, v in self.values.items()},
                "errors": {s: keyed(v) for s, v in self.errors.items()},
                "counts": {s: keyed(v) for s, v in self.counts.items()},
                "skipped": sorted(f"{n}|{i}" for n, i in self.skipped), "decided": keyed(self.decided)}
