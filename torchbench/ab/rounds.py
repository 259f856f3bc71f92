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
from pathlib import Path

from .. import stats
from ..asv_bridge.driver import install_env
from ..asv_bridge.worker import WORKER, read_json, read_json_lines
from ..errors import UserError, last_line
from .evidence import Evidence, Job, Side
from .options import Policy, Rounds

__all__ = ["collect_counts", "interim_decisions", "is_look", "measure_rounds", "side_env"]

INTERIM_P = 0.001
LOOK_GROWTH = 1.5  # an interim look each time the rounds have grown by this factor
INTERIM_RESAMPLES = 4000  # p-values down to 2.5e-4, below INTERIM_P


def side_env(side: Side) -> dict[str, str]:
    """The environment of a process that imports this side's installation."""
    return install_env(side.install)


def _one_process(python: Path, suite: Path, side: Side, jobs: list[Job], cache_dir: Path,
                 timeout: float) -> tuple[dict[Job, dict], str | None]:
    """Run `jobs` in one worker process; returns results by job, and what went wrong with the process."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out = Path(tmp) / "jobs.json", Path(tmp) / "out.jsonl"
        jobs_file.write_text(json.dumps([list(j) for j in jobs]))
        try:
            proc = subprocess.run([str(python), *WORKER, "run", str(suite), "--jobs", str(jobs_file), "--out",
                                   str(out), "--cache-dir", str(cache_dir)], capture_output=True, text=True,
                                  env=side_env(side), timeout=timeout)
            died = None if proc.returncode == 0 else (
                f"the process died (exit status {proc.returncode}): {last_line(proc.stderr)}")
        except subprocess.TimeoutExpired:
            died = f"the process ran past its {timeout:.0f} s limit"
        records, bad = read_json_lines(out.read_text() if out.exists() else "", f"the {side.name} worker's output")
    results, started = {}, None
    for record in records:
        if "start" in record:
            started = tuple(record["start"])
        else:
            results[tuple(record.pop("job"))] = record
            started = None
    if died and started is not None:
        results[started] = {"error": died}
    return results, died or bad


def _record(evidence: Evidence, side: str, job: Job, result: dict) -> None:
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


def _interim(evidence: Evidence, job: Job, policy: Policy) -> str | None:
    base, head = evidence.values["base"].get(job, []), evidence.values["head"].get(job, [])
    if len(base) < 2 or len(head) < 2:
        return None
    c = stats.compare(base, head, resamples=INTERIM_RESAMPLES)
    if c.p_value < INTERIM_P and abs(c.ratio - 1) >= policy.floor:
        return f"clearly changed after {len(base)} processes a side (p={c.p_value:.1e})"
    if stats.within(c, policy.threshold):
        return f"clearly within +-{policy.threshold:.0%} after {len(base)} processes a side"
    return None


def interim_decisions(evidence: Evidence, jobs: list[Job], min_rounds: int, policy: Policy) -> None:
    """After evidence.rounds rounds: at an interim look, mark the jobs among `jobs` that are clearly decided."""
    if is_look(evidence.rounds, min_rounds):
        for job in jobs:
            if job not in evidence.decided:
                why = _interim(evidence, job, policy)
                if why:
                    evidence.decided[job] = why


def measure_rounds(python: Path, suite: Path, sides: dict[str, Side], jobs: list[Job], evidence: Evidence, *,
                   rounds: Rounds, policy: Policy, deadline: float, cache_dir: Path, on_round=None,
                   seed: int = 0) -> None:
    """Alternate base and head processes until every job is decided, rounds.max_rounds, or the deadline."""
    rng = random.Random(seed)
    failed: set[Job] = set()
    for r in range(rounds.max_rounds):
        active = [j for j in jobs if j not in evidence.decided and j not in failed and j not in evidence.skipped]
        if not active or (r >= rounds.min_rounds and time.monotonic() > deadline):
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
        interim_decisions(evidence, active, rounds.min_rounds, policy)
        if on_round:
            on_round(evidence, len(active))


def collect_counts(python: Path, suite: Path, side: Side, jobs: list[Job], evidence: Evidence) -> None:
    """Instruction counts of the TimerSuite cases among `jobs`, in one valgrind process for this side."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out = Path(tmp) / "jobs.json", Path(tmp) / "counts.json"
        jobs_file.write_text(json.dumps([list(j) for j in jobs]))
        proc = subprocess.run([str(python), *WORKER, "counts", str(suite), "--jobs", str(jobs_file), "--out",
                               str(out)], capture_output=True, text=True, env=side_env(side), timeout=3600)
        if proc.returncode != 0 or not out.exists():
            evidence.notes.append(f"instruction counts for {side.name} failed: {last_line(proc.stderr)}")
            return
        try:
            found = read_json(out.read_text(), f"instruction counts for {side.name}")
        except UserError as e:
            evidence.notes.append(str(e))
            return
    for key, result in found.items():
        name, _, index = key.rpartition("|")
        if "counts" in result:
            evidence.counts[side.name][(name, int(index))] = result["counts"]
        else:
            evidence.notes.append(f"instruction counts of {name} [{index}] ({side.name}): {result['error']}")
