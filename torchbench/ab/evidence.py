"""What a comparison of two commits collects: per benchmark case, each side's per-process values.

A job is one parameter combination of one benchmark, (benchmark name, asv's
parameter index). Each process that measured it on a side adds one value
(stats.process_summary of its blocks); instruction counts, failures, skips
and early stops are kept beside them. A job skipped on a side (asv's skip, or
hardware this machine lacks: torchbench_core.skips) has its reason there and
no values; a TimerSuite combination that no TimerSpec defines is skipped
without one, and is no row.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from .sequential import Design

__all__ = ["Evidence", "Job", "JobInfo", "SIDES", "Side", "wall_test_of"]

Job = tuple[str, int]  # (benchmark name, parameter index)
SIDES = ("base", "head")


@dataclass(frozen=True)
class Side:
    name: str  # "base" or "head"
    commit: str
    install: Path  # where the commit is installed (put on PYTHONPATH)
    python: Path  # the interpreter of its asv environment
    torch: str = ""  # its environment's torch release, where the two sides differ in it (an upgrade verdict)


@dataclass
class JobInfo:
    """A job as the suite lists it: its asv row name, parameters (asv's repr strings) and unit."""

    name: str
    params: list[str] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)
    unit: str | None = None
    uncountable: str = ""  # why its instruction counts cannot be collected ("" where they can)
    by_call: bool = False  # counted call by call (an asv time_ method), not as a TimerSuite statement
    on_base: bool = False  # the suite defines it on that side
    on_head: bool = False

    def on(self, side: str) -> bool:
        return self.on_base if side == "base" else self.on_head

    def mark(self, side: str) -> None:
        setattr(self, f"on_{side}", True)


def wall_test_of(design_choice: dict, schedule: str) -> str:
    """The test a run's wall-time rows are decided by, from its recorded choice (Evidence.design_choice,
    design_choice.Choice.to_dict) and schedule: the test the choice went on with, else (no choice, or a record
    from before the choice named its test) "paired" for duets and "unpaired" for alternating rounds."""
    return design_choice.get("test") or ("paired" if schedule == "duet" else "unpaired")


@dataclass
class Evidence:
    """Per job: per-process values for each side, failures, instruction counts, early stops."""

    jobs: dict[Job, JobInfo] = field(default_factory=dict)
    values: dict[str, dict[Job, list[float]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    # the round each of those values came from (measured rounds; empty for result files, whose processes
    # have no rounds), and which side's process ran first in each round (drawn at random)
    value_rounds: dict[str, dict[Job, list[int]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    first: list[str] = field(default_factory=list)
    # how the rounds ran their two processes: "alternating" (one after the other) or "duet" (both at once, one
    # core each: `first` is then the side on the first core); "auto" while a run tries both (design_choice.py:
    # then the design it went on with); "" where no rounds ran (result files)
    schedule: str = ""
    # each measured round's design ("alternating" or "duet"; a run with schedule "auto" tries both first:
    # design_choice.py) and its seconds, and the choice with its figures (Choice.to_dict; empty: none made)
    round_designs: list[str] = field(default_factory=list)
    round_seconds: list[float] = field(default_factory=list)
    design_choice: dict = field(default_factory=dict)
    errors: dict[str, dict[Job, str]] = field(default_factory=lambda: {s: {} for s in SIDES})
    counts: dict[str, dict[Job, list[float]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    # the jittered valgrind processes' counts (one list per process), taken for the jobs whose first counts
    # moved beyond the floor: a count decision rests on them, and their spread is part of its noise
    # (count_decision.py)
    counts_again: dict[str, dict[Job, list[list[float]]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    # valgrind's simulated caches, from the same valgrind processes as `counts` and `counts_again`: priced
    # cycles per call, one per repeat (callgrind.priced_cycles: the code's own instructions + this machine's
    # price x last-level misses), where the worker simulated them
    cycles: dict[str, dict[Job, list[float]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    cycles_again: dict[str, dict[Job, list[list[float]]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    # the first process's simulated events per call behind `cycles`, one {event: value} per repeat (Ir, I1mr,
    # D1mr, D1mw, ILmr, DLmr, DLmw; Bcm, Bim where the branches were simulated too, as before 2026-12-08); only for
    # jobs counted now or cached with their events
    sim_events: dict[str, dict[Job, list[dict[str, float]]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    # system calls of one call by type, under strace (torchbench_core.syscalls): per side and job,
    # {"per_call": {name: calls a call}, "exact": bool, "calls": N, "regions": {"N": {...}, "2N": {...}}}
    syscalls: dict[str, dict[Job, dict]] = field(default_factory=lambda: {s: {} for s in SIDES})
    # the repeat traces of the rows whose first traces differed between the sides, one such dict per
    # process, in another process state each (collect.collect_syscalls(repeat)): a system-call decision
    # rests on every trace (channels.SystemCalls)
    syscalls_again: dict[str, dict[Job, list[dict]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    # why a job has no system calls on a side ("not traceable: ...", "tracing failed: ..."), and per side how
    # many were traced, exact, not traceable, failed
    no_syscalls: dict[str, dict[Job, str]] = field(default_factory=lambda: {s: {} for s in SIDES})
    syscall_tally: dict[str, dict[str, int]] = field(default_factory=dict)
    # why a job has no counts on a side ("not countable: ...", "counting failed: ..."); counts_off: why none
    # were taken ("no counts: --no-counts")
    uncounted: dict[str, dict[Job, str]] = field(default_factory=lambda: {s: {} for s in SIDES})
    counts_off: str = ""
    # the two sides are different builds (torch releases): counts then move with the build, not only the code,
    # and are advisory (they label a row, never decide or weigh it)
    builds_differ: str = ""
    # per side: how many jobs were counted now, came from the cache, are not countable, failed
    count_tally: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: set[Job] = field(default_factory=set)  # jobs a side skipped: measured no further
    # why a side skipped a job that is a row of its own ("skipped here: no CUDA device", asv's skip by its
    # setup); a skipped job without a reason is a combination the suite does not define (no row)
    skips: dict[str, dict[Job, str]] = field(default_factory=lambda: {s: {} for s in SIDES})
    decided: dict[Job, str] = field(default_factory=dict)  # job -> why it stopped early
    rounds: int = 0
    notes: list[str] = field(default_factory=list)
    design: Design | None = None  # the planned looks (None: one analysis at the end)
    looks: dict[Job, list[float]] = field(default_factory=dict)  # each interim look's p-value, in order
    # where the time went: seconds per job and side (set-up and measuring), per process, and each phase's total
    seconds: dict[str, dict[Job, float]] = field(default_factory=lambda: {s: {} for s in SIDES})
    # per process of a job: (blocks, variance of the log block times, seconds of blocks): within-process noise
    within: dict[str, dict[Job, list[tuple[int, float, float]]]] = field(default_factory=lambda: {s: {} for s in SIDES})
    process_seconds: list[float] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    run_time: dict[Job, float] = field(default_factory=dict)  # each job's time per process, where allocated
    weights: dict[Job, float] = field(default_factory=dict)  # weighted BH's weight, set with the design

    def add_job(self, job: Job, info: JobInfo, side: str) -> JobInfo:
        """Register the job as listed on `side` (the first listing's info is kept)."""
        kept = self.jobs.setdefault(job, info)
        kept.mark(side)
        return kept

    def skip(self, side: str, job: Job, why: str = "") -> None:
        """`side` skipped the job: no values from it; `why` where it is a row of its own."""
        self.skipped.add(job)
        if why:
            self.skips[side][job] = why

    def add_value(self, side: str, job: Job, value: float, round_index: int | None = None) -> None:
        """One process's value of a job; `round_index`: the round that measured it, where rounds were run."""
        self.values[side].setdefault(job, []).append(value)
        if round_index is not None:
            self.value_rounds[side].setdefault(job, []).append(round_index)

    def round_design(self, index: int) -> str:
        """The design of round `index` (its record, else the run's schedule)."""
        return self.round_designs[index] if index < len(self.round_designs) else self.schedule

    def paired(self, job: Job, design: str | None = None) -> tuple[list[float], list[float]]:
        """The job's base and head values of the rounds in which both sides measured it, round by round
        (empty where the values have no rounds); `design`: only the rounds of that design."""
        rounds = {s: self.value_rounds[s].get(job, []) for s in SIDES}
        if any(len(rounds[s]) != len(self.values[s].get(job, [])) for s in SIDES):
            return [], []
        head = dict(zip(rounds["head"], self.values["head"].get(job, [])))
        pairs = [(v, head[r]) for r, v in zip(rounds["base"], self.values["base"].get(job, []))
                 if r in head and (design is None or self.round_design(r) == design)]
        return [b for b, _ in pairs], [h for _, h in pairs]

    def wall_design(self) -> str | None:
        """The design whose rounds the wall-time tests rest on: "alternating" in a run that went on with
        alternating rounds after trying both (design_choice.go_on), so that the trial's duet rounds, whose
        processes a partner may have disturbed, do not widen the unpaired test (replayed on the recorded pools,
        evaluation/design_choice.py: on the constructed day whose duets spread twice as far, auto's MDE went from
        1.17x the better fixed design's with them to 1.08x without; where duets were no noisier, as on both
        recorded days, they would have helped the runs that went on alternating, but there the choice was
        duets in 68-100% of trials and auto's median moved 0-5%); None (every round) otherwise."""
        return "alternating" if self.design_choice and self.schedule == "alternating" else None

    def wall_test(self) -> str:
        """The test the wall-time rows are decided by (wall_test_of)."""
        return wall_test_of(self.design_choice, self.schedule)

    def wall_values(self, job: Job) -> tuple[list[float], list[float]]:
        """The job's base and head values the unpaired wall-time test compares: every process, or in a run
        that went on alternating after trying both, its alternating rounds' (wall_design)."""
        design = self.wall_design()
        if design is not None:
            base, head = self.paired(job, design)
            if base:
                return base, head
        return self.values["base"].get(job, []), self.values["head"].get(job, [])

    def on_both(self, jobs: list[Job]) -> list[Job]:
        return [j for j in jobs if self.jobs[j].on_base and self.jobs[j].on_head]

    def time_spent(self, top: int = 5) -> dict:
        """Where the time went: each phase, rounds per minute, process start-up, the costliest benchmarks."""
        measuring = {job: sum(self.seconds[s].get(job, 0.0) for s in SIDES) for job in self.jobs}
        total = sum(measuring.values())
        rounds_seconds = self.phases.get("rounds", 0.0)
        run_times = sorted(self.run_time.values())
        return {
            "phases": dict(self.phases), "rounds": self.rounds, "schedule": self.schedule,
            "designs": {d: self.round_designs.count(d) for d in dict.fromkeys(self.round_designs)},
            "design_choice": self.design_choice,
            "processes": len(self.process_seconds),
            "rounds_per_minute": 60 * self.rounds / rounds_seconds if rounds_seconds > 0 else None,
            "start_up_seconds": (sum(self.process_seconds) - total) / len(self.process_seconds)
            if self.process_seconds else None,
            "costliest": [{"name": self.jobs[job].name, "seconds": sec, "share": sec / total if total else 0.0}
                          for job, sec in sorted(measuring.items(), key=lambda kv: -kv[1])[:top] if sec > 0],
            "run_time": {"benchmarks": len(run_times), "min": run_times[0], "median": run_times[len(run_times) // 2],
                         "max": run_times[-1]} if run_times else None,
            "instruction_counts": self.count_tally or {"off": self.counts_off},
            "system_calls": self.syscall_tally or {"off": self.counts_off},
        }

    def to_dict(self) -> dict:
        def keyed(d):
            return {f"{name}|{index}": v for (name, index), v in d.items()}

        return {"rounds": self.rounds, "jobs": {k: asdict(v) for k, v in keyed(self.jobs).items()},
                "notes": self.notes, "values": {s: keyed(v) for s, v in self.values.items()},
                "value_rounds": {s: keyed(v) for s, v in self.value_rounds.items()}, "first": self.first,
                "schedule": self.schedule, "round_designs": self.round_designs,
                "round_seconds": self.round_seconds, "design_choice": self.design_choice,
                "errors": {s: keyed(v) for s, v in self.errors.items()},
                "counts": {s: keyed(v) for s, v in self.counts.items()},
                "counts_again": {s: keyed(v) for s, v in self.counts_again.items()},
                "cycles": {s: keyed(v) for s, v in self.cycles.items()},
                "cycles_again": {s: keyed(v) for s, v in self.cycles_again.items()},
                "sim_events": {s: keyed(v) for s, v in self.sim_events.items()},
                "syscalls": {s: keyed(v) for s, v in self.syscalls.items()},
                "syscalls_again": {s: keyed(v) for s, v in self.syscalls_again.items()},
                "no_syscalls": {s: keyed(v) for s, v in self.no_syscalls.items()},
                "uncounted": {s: keyed(v) for s, v in self.uncounted.items()}, "counts_off": self.counts_off,
                "builds_differ": self.builds_differ,
                "skipped": sorted(f"{n}|{i}" for n, i in self.skipped),
                "skips": {s: keyed(v) for s, v in self.skips.items()}, "decided": keyed(self.decided),
                "design": self.design.after(self.rounds).to_dict() if self.design else None,
                "looks": keyed(self.looks),
                "seconds": {s: keyed(v) for s, v in self.seconds.items()}, "process_seconds": self.process_seconds,
                "phases": self.phases, "run_time": keyed(self.run_time)}
