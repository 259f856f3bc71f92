"""Base and head measured in alternating processes, round after round, until decided.

A round is one base process and one head process (ABAB..., then BABA...,
so neither side always goes first), each measuring every benchmark still
undecided, in a shuffled order, with torchbench_core.asv_worker. A process is
the unit of evidence: its summary of a benchmark (stats.process_summary) is
one observation. Drift over time hits both sides alike.

Adaptive: at interim looks, after `min_rounds` and then each time the rounds
have grown by half (6, 9, 14, 21, 32, 48, 72, ...: `is_look`), a benchmark
stops when it is clearly changed (Haybittle-Peto: p < 0.001 at an interim
look; with a handful of looks that leaves the final test's level nearly
untouched, where a look every round for 100 rounds would not) or clearly
unchanged (its interval inside +-threshold). Borderline ones get more rounds,
up to `max_rounds` or the time budget, which then binds.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import stats
from ..asv_driver import harness_env
from ..errors import last_line

__all__ = ["Evidence", "Side", "list_benchmarks", "measure_rounds", "collect_counts", "is_look",
           "interim_decisions", "MIN_ROUNDS"]

MIN_ROUNDS = 6  # rounds before any early stop (the alert's and find's default --min-rounds)
INTERIM_P = 0.001
LOOK_GROWTH = 1.5  # an interim look each time the rounds have grown by this factor
INTERIM_RESAMPLES = 4000  # p-values down to 2.5e-4, below INTERIM_P
WORKER = ["-m", "torchbench_core.asv_worker"]
MEASURED_TYPES = {"track", "time"}


@dataclass
class Side:
    name: str  # "base" or "head"
    commit: str
    site: Path  # where the commit is installed (put on PYTHONPATH)


@dataclass
class Evidence:
    """Per (benchmark, parameter index): per-process values for each side, failures, counts."""

    jobs: dict[tuple[str, int], dict] = field(default_factory=dict)  # job -> {"name", "params", "unit"}
    values: dict[str, dict[tuple[str, int], list[float]]] = field(
        default_factory=lambda: {"base": {}, "head": {}})
    errors: dict[str, dict[tuple[str, int], str]] = field(default_factory=lambda: {"base": {}, "head": {}})
    counts: dict[str, dict[tuple[str, int], list[float]]] = field(default_factory=lambda: {"base": {}, "head": {}})
    skipped: set[tuple[str, int]] = field(default_factory=set)
    decided: dict[tuple[str, int], str] = field(default_factory=dict)  # job -> why it stopped early
    rounds: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        def keyed(d):
            return {f"{name}|{index}": v for (name, index), v in d.items()}

        return {"rounds": self.rounds, "jobs": keyed(self.jobs), "notes": self.notes,
                "values": {s: keyed(v) for s, v in self.values.items()},
                "errors": {s: keyed(v) for s, v in self.errors.items()},
                "counts": {s: keyed(v) for s, v in self.counts.items()},
                "skipped": sorted(f"{n}|{i}" for n, i in self.skipped), "decided": keyed(self.decided)}


def side_env(side: Side) -> dict[str, str]:
    """The environment of a process that imports this side's installation."""
    return dict(harness_env(), PYTHONPATH=str(side.site))


def list_benchmarks(python: Path, suite: Path, side: Side) -> list[dict]:
    """The suite's benchmarks as this side's code sees them (a suite may not import on the other)."""
    proc = subprocess.run([str(python), *WORKER, "list", str(suite)], capture_output=True, text=True,
                          env=side_env(side), timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"discovering {suite} with the {side.name} commit failed: "
                           f"{last_line(proc.stderr)}")
    return json.loads(proc.stdout)


def _one_process(python: Path, suite: Path, side: Side, jobs: list[tuple[str, int]], cache_dir: Path,
                 timeout: float) -> tuple[dict[tuple[str, int], dict], str | None]:
    """Run `jobs` in one worker process; returns results by job, and what killed the process if it died."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out = Path(tmp) / "jobs.json", Path(tmp) / "out.jsonl"
        jobs_file.write_text(json.dumps([list(j) for j in jobs]))
        try:
            proc = subprocess.run([str(python), *WORKER, "run", str(suite), "--jobs", str(jobs_file), "--out",
                                   str(out), "--cache-dir", str(cache_dir)], capture_output=True, text=True,
                                  env=side_env(side), timeout=timeout)
            died = None if proc.returncode == 0 else (
                f"the process died (exit status {proc.returncode}): "
                f"{last_line(proc.stderr)}")
        except subprocess.TimeoutExpired:
            died = f"the process ran past its {timeout:.0f} s limit"
        results, started = {}, None
        for line in out.read_text().splitlines() if out.exists() else []:
            record = json.loads(line)
            if "start" in record:
                started = tuple(record["start"])
            else:
                results[tuple(record.pop("job"))] = record
                started = None
        if died and started is not None:
            results[started] = {"error": died}
        return results, died


def _record(evidence: Evidence, side: str, job: tuple[str, int], result: dict) -> None:
    if "error" in result:
        evidence.errors[side][job] = result["error"]
    elif result.get("skipped"):
        evidence.skipped.add(job)
    elif "samples" in result:
        evidence.values[side].setdefault(job, []).append(stats.process_summary(result["samples"]))
    else:
        evidence.values[side].setdefault(job, []).append(float(result["value"]))


def is_look(rounds: int, min_rounds: int) -> bool:
    """Whether an interim look follows this round: at min_rounds, then each time the rounds grew by half."""
    look = max(min_rounds, 1)
    while look < rounds:
        look = math.ceil(look * LOOK_GROWTH)
    return look == rounds


def _interim(evidence: Evidence, job: tuple[str, int], threshold: float, floor: float) -> str | None:
    base, head = evidence.values["base"].get(job, []), evidence.values["head"].get(job, [])
    if len(base) < 2 or len(head) < 2:
        return None
    c = stats.compare(base, head, resamples=INTERIM_RESAMPLES)
    if c.p_value < INTERIM_P and abs(c.ratio - 1) >= floor:
        return f"clearly changed after {len(base)} processes a side (p={c.p_value:.1e})"
    if 1 / (1 + threshold) <= c.ci_low and c.ci_high <= 1 + threshold:
        return f"clearly within +-{threshold:.0%} after {len(base)} processes a side"
    return None


def interim_decisions(evidence: Evidence, jobs, min_rounds: int, threshold: float, floor: float) -> None:
    """After evidence.rounds rounds: at an interim look, mark the jobs among `jobs` that are clearly decided."""
    if is_look(evidence.rounds, min_rounds):
        for job in jobs:
            if job not in evidence.decided:
                why = _interim(evidence, job, threshold, floor)
                if why:
                    evidence.decided[job] = why


def measure_rounds(python: Path, suite: Path, sides: dict[str, Side], jobs: list[tuple[str, int]],
                   evidence: Evidence, *, min_rounds: int, max_rounds: int, deadline: float, threshold: float,
                   floor: float, cache_dir: Path, on_round=None, seed: int = 0) -> None:
    """Alternate base and head processes until every job is decided, max_rounds, or the deadline."""
    rng = random.Random(seed)
    failed: set[tuple[str, int]] = set()
    for r in range(max_rounds):
        active = [j for j in jobs if j not in evidence.decided and j not in failed and j not in evidence.skipped]
        if not active or (r >= min_rounds and time.monotonic() > deadline):
            break
        order = ("base", "head") if r % 2 == 0 else ("head", "base")
        for name in order:
            todo = active[:]
            rng.shuffle(todo)
            results, died = _one_process(python, suite, sides[name], todo, cache_dir,
                                         timeout=120 + 60 * len(todo))
            for job, result in results.items():
                _record(evidence, name, job, result)
            if died and not results:
                evidence.notes.append(f"round {r + 1}, {name}: {died}")
        failed |= set(evidence.errors["base"]) | set(evidence.errors["head"])
        evidence.rounds = r + 1
        interim_decisions(evidence, active, min_rounds, threshold, floor)
        if on_round:
            on_round(evidence, len(active))


def collect_counts(python: Path, suite: Path, side: Side, jobs: list[tuple[str, int]], evidence: Evidence) -> None:
    """Instruction counts of the TimerSuite cases among `jobs`, in one valgrind process for this side."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out = Path(tmp) / "jobs.json", Path(tmp) / "counts.json"
        jobs_file.write_text(json.dumps([list(j) for j in jobs]))
        proc = subprocess.run([str(python), *WORKER, "counts", str(suite), "--jobs", str(jobs_file), "--out",
                               str(out)], capture_output=True, text=True, env=side_env(side), timeout=3600)
        if proc.returncode != 0 or not out.exists():
            evidence.notes.append(f"instruction counts for {side.name} failed: "
                                  f"{last_line(proc.stderr)}")
            return
        for key, result in json.loads(out.read_text()).items():
            name, _, index = key.rpartition("|")
            if "counts" in result:
                evidence.counts[side.name][(name, int(index))] = result["counts"]
            else:
                evidence.notes.append(f"instruction counts of {name} [{index}] ({side.name}): {result['error']}")

