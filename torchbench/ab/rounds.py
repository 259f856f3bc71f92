"""Base and head measured in alternating processes, round after round, until decided.

A round is one base process and one head process (which goes first drawn at
random each round, and recorded), each measuring every benchmark still
undecided, in a shuffled order, with torchbench_core.asv_worker. A process is
the unit of evidence: its summary of a benchmark (stats.process_summary) is
one observation. Drift over time hits both sides alike.

Adaptive, with stated error (sequential.py): the looks are planned from the
suite's size and, after the first round, from the rounds the budget holds at
its rate (`plan_design`); at each, a benchmark stops when
it is clearly changed (its p-value below the look's share of its weighted BH
bar) or clearly unchanged (its interval at the look's level inside
+-threshold). A benchmark its instruction counts decide is no part of those
looks: it stops once it has counts.VETO_PROCESSES processes a side (6: the
veto's permutation test then sees past a slow process) and does not lean
against them (counts.opposite_p above 1/2); one that leans against them goes
on, so that the veto has processes to see it. After ESTIMATE_AFTER
rounds each benchmark's time per process is set where its variance is
(allocation.py). The rest go on, up to `max_rounds` or the time budget.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from torchbench_core.asv_worker import DUET_ENV

from .. import stats
from ..asv_bridge.worker import WORKER, read_json_lines
from ..errors import last_line
from . import design_choice, sequential
from .allocation import allocate
from .contrast import compare_row, slow_processes_moved
from .channels import COUNTS, deterministic_level, findings, wall_fdr
from .counts import NO_COUNTS, VETO_PROCESSES, count_change, opposite_p, processes, weights
from .evidence import Evidence, Job, Side
from .options import Policy, Rounds
from .sides import setup_cache_of, side_env

__all__ = ["duet_cores", "interim_decisions", "measure_rounds", "plan_design", "wall_check_rounds"]


class _Process:
    """One worker process measuring `jobs` for a side (each with its allocated run time, where it has one),
    started at once; `finish` waits for it and reads its results. `core`: the one CPU it may run on (duet
    rounds); `meet`: its two ends of the duet meeting pipes (read, write), handed to the worker."""

    def __init__(self, suite: Path, side: Side, jobs: list[Job], cache_dir: Path, run_time: dict[Job, float],
                 core: int | None = None, meet: tuple[int, int] | None = None):
        self.side, self.tmp = side, tempfile.TemporaryDirectory()
        tmp = Path(self.tmp.name)
        jobs_file, self.out, self.err = tmp / "jobs.json", tmp / "out.jsonl", tmp / "stderr.txt"
        jobs_file.write_text(json.dumps([list(j) for j in jobs]))
        env = side_env(side)
        side_cache = setup_cache_of(cache_dir, side)
        if run_time:
            times = tmp / "run_times.json"
            times.write_text(json.dumps({f"{name}|{index}": t for (name, index), t in run_time.items()}))
            env["TORCHBENCH_RUN_TIMES"] = str(times)
        if meet is not None:
            env[DUET_ENV] = f"{meet[0]},{meet[1]}"
        # stderr to a file, not a pipe: a duet's partner must never wait on a pipe nobody reads
        with open(self.err, "w") as err:
            self.proc = subprocess.Popen(
                [str(side.python), *WORKER, "run", str(suite), "--jobs", str(jobs_file), "--out", str(self.out),
                 "--cache-dir", str(side_cache)], stdout=subprocess.DEVNULL, stderr=err, env=env,
                pass_fds=meet or (), preexec_fn=None if core is None else (lambda: os.sched_setaffinity(0, {core})))

    def finish(self, timeout: float) -> tuple[dict[Job, dict], str | None]:
        """Results by job, and what went wrong with the process (None: nothing)."""
        try:
            self.proc.wait(timeout=max(timeout, 0.0))
            died = None if self.proc.returncode == 0 else (
                f"the process died (exit status {self.proc.returncode}): {last_line(self.err.read_text())}")
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            died = f"the process ran past its {timeout:.0f} s limit"
        records, bad = read_json_lines(self.out.read_text() if self.out.exists() else "",
                                       f"the {self.side.name} worker's output")
        self.tmp.cleanup()
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


def _one_process(suite: Path, side: Side, jobs: list[Job], cache_dir: Path,
                 timeout: float, run_time: dict[Job, float]) -> tuple[dict[Job, dict], str | None]:
    """Run `jobs` in one worker process, alone on the machine (the alternating design)."""
    return _Process(suite, side, jobs, cache_dir, run_time).finish(timeout)


def _relay(ends: list[tuple[int, int]]) -> None:
    """The duet's meeting point, in the parent: once both workers have written their byte, send each one. A
    worker that ends (end of file) ends the meetings: the other's pipe is closed, so it goes on alone."""
    try:
        while all(os.read(from_worker, 1) for from_worker, _ in ends):
            for _, to_worker in ends:
                os.write(to_worker, b".")
    except OSError:  # a worker gone while it was being answered: the same as an end of file
        pass
    finally:
        for from_worker, to_worker in ends:
            os.close(from_worker)
            os.close(to_worker)


def _duet(suite: Path, sides: dict[str, Side], order: tuple[str, str], jobs: list[Job], cache_dir: Path,
          timeout: float, run_time: dict[Job, float], cores: tuple[int, int]) -> dict[str, tuple[dict, str | None]]:
    """Both sides' processes at once, the first of `order` on cores[0], the other on cores[1], each meeting
    the other before every job's timed part (the worker's Meeting); each side's results and failure."""
    started, ends, theirs = {}, [], []
    try:
        for name, core in zip(order, cores):
            to_parent, to_worker = os.pipe(), os.pipe()  # (read, write) each
            theirs += [to_worker[0], to_parent[1]]
            ends.append((to_parent[0], to_worker[1]))
            started[name] = _Process(suite, sides[name], jobs, cache_dir, run_time, core=core,
                                     meet=(to_worker[0], to_parent[1]))
    except BaseException:  # the second could not start: the first must not wait for it
        for fd in [fd for pair in ends for fd in pair]:
            os.close(fd)
        for process in started.values():
            process.proc.kill()
            process.finish(5)
        raise
    finally:
        for fd in theirs:  # the workers' ends live in the workers now; an end of file must reach the parent
            os.close(fd)
    relay = threading.Thread(target=_relay, args=(ends,), daemon=True)
    relay.start()
    deadline = time.monotonic() + timeout
    found = {name: process.finish(deadline - time.monotonic()) for name, process in started.items()}
    relay.join(timeout=5)
    return found


def _record(evidence: Evidence, side: str, job: Job, result: dict, round_index: int | None = None) -> None:
    if "elapsed" in result:  # a worker of an older commit does not say
        evidence.seconds[side][job] = evidence.seconds[side].get(job, 0.0) + float(result["elapsed"])
    if "error" in result:
        evidence.errors[side][job] = result["error"]
    elif result.get("skipped"):
        evidence.skip(side, job, result.get("why", ""))
    elif "samples" in result:
        samples = np.asarray(result["samples"], dtype=float)
        evidence.add_value(side, job, stats.process_summary(samples), round_index)
        if len(samples) >= 2 and np.all(samples > 0):
            evidence.within[side].setdefault(job, []).append(
                (len(samples), float(np.var(np.log(samples), ddof=1)),
                 float(samples.sum() * result.get("number", 1))))
    else:
        evidence.add_value(side, job, float(result["value"]), round_index)


def plan_design(evidence: Evidence, jobs: list[Job], policy: Policy, rounds: Rounds,
                expected_rounds: int | None = None) -> None:
    """Before the looks: the wall-time family (the jobs the counts do not decide), its weights, its looks
    (up to expected_rounds, where the round rate says the budget ends the rounds sooner than max_rounds)."""
    level = deterministic_level(evidence, policy)
    labelled = [(job, count_change(evidence, job, policy.count_floor, level)) for job in jobs]
    family = [(job, NO_COUNTS if c is None else c.label) for job, c in labelled if not (c and c.decides)]
    evidence.weights = dict(zip([job for job, _ in family], weights([label for _, label in family])))
    evidence.design = sequential.plan(policy.family_size(len(family)), wall_fdr(evidence, policy), policy.confidence,
                                      rounds.min_rounds, rounds.max_rounds, expected_rounds)


def _least_rounds(evidence: Evidence, rounds: Rounds) -> int:
    """The rounds before which the deadline may not end them: every row must be able to reach its final
    bar at all (Design.reachable), or a changed row could only come out inconclusive."""
    if not rounds.until_reachable:
        return rounds.min_rounds
    return max(rounds.min_rounds, evidence.design.reachable(min(evidence.weights.values(), default=1.0)))


def wall_check_rounds(confidence: float) -> int:
    """The fewest processes a side at which the wall time's interval at `confidence` can exclude 1 (every
    head process beyond every base one: 2/C(2n, n) <= 1 - confidence; 4 at 95%): a row its counts decide
    leaves the rounds there, so that its wall time can still say whether it disagrees with the counts."""
    return sequential.fewest_processes(1 - confidence)


def _counts_stop(evidence: Evidence, job: Job, policy: Policy, level: float) -> str | None:
    """Why the row leaves the rounds now, where a deterministic channel decides it at `level`
    (deterministic_level)."""
    found = next((f for f in findings(evidence, job, policy.count_floor, level).values() if f.decides), None)
    base, head = evidence.wall_values(job)
    # a row stays until it has VETO_PROCESSES a side, and while its wall time leans against the channel, so
    # that the veto (verdict._by_channel) has the processes to see a move the other way past a slow process
    if found is not None and min(len(base), len(head)) >= VETO_PROCESSES \
            and opposite_p(base, head, found.delta) > 0.5:
        n = len(processes(evidence.counts_again["base"], job)) + 1  # the first process's and the draws'
        if found.channel == COUNTS and n == 1:  # counts decide on first processes past FIRST_CEILING alone
            margin = f", on first processes: beyond {found.margin:.0%}, which no layout of identical code reaches"
        else:
            margin = f", noise margin {found.margin:.2%}, {n} layouts a side" if found.margin == found.margin else ""
        return f"decided by {found.channel} ({found.text}{margin})"
    return None


def _interim(evidence: Evidence, job: Job, policy: Policy) -> str | None:
    design = evidence.design
    base, head = evidence.wall_values(job)
    if len(base) < 2 or len(head) < 2:
        return None
    bar = design.changed_bar(evidence.weights.get(job, 1.0))
    c = compare_row(evidence, job, policy, bar, design.interim_confidence, with_mde=False)
    evidence.looks.setdefault(job, []).append(c.p_value)
    if c.p_value <= bar and abs(c.ratio - 1) >= policy.floor and (c.ci_low > 1 or c.ci_high < 1):
        return f"clearly changed after {len(base)} processes a side (p={c.p_value:.1e} <= {bar:.1e})"
    if stats.within(c, policy.threshold) and not slow_processes_moved(evidence, job, policy, design.m):
        return (f"clearly within +-{policy.threshold:.0%} after {len(base)} processes a side "
                f"({design.interim_confidence:.2%} interval)")
    return None


def interim_decisions(evidence: Evidence, jobs: list[Job], policy: Policy) -> None:
    """After evidence.rounds rounds: the jobs among `jobs` that their instruction counts decide leave once
    their wall time can disagree (wall_check_rounds), not at the wall-time test's first look, which they are
    no part of; at a planned look, the jobs the wall time clearly decides."""
    undecided = [job for job in jobs if job not in evidence.decided]
    if evidence.rounds >= wall_check_rounds(policy.confidence):
        level = deterministic_level(evidence, policy)
        for job in undecided:
            why = _counts_stop(evidence, job, policy, level)
            if why:
                evidence.decided[job] = why
    if evidence.design is not None and evidence.rounds in evidence.design.looks:
        for job in undecided:
            if job not in evidence.decided:
                why = _interim(evidence, job, policy)
                if why:
                    evidence.decided[job] = why


def duet_cores() -> tuple[int, int] | None:
    """Two cores this process may use, for a duet's two processes; None where it has only one."""
    usable = sorted(os.sched_getaffinity(0))
    return (usable[0], usable[1]) if len(usable) >= 2 else None


def measure_rounds(suite: Path, sides: dict[str, Side], jobs: list[Job], evidence: Evidence, *,
                   rounds: Rounds, policy: Policy, deadline: float, cache_dir: Path, on_round=None,
                   seed: int = 0) -> None:
    """Base and head processes, round after round (alternating, in duets, or "auto": both tried first, then
    the better, design_choice.py; rounds.schedule), until every job is decided, rounds.max_rounds, or the
    deadline."""
    planned = evidence.design is not None  # a caller's own design is kept as it is
    if not planned:
        plan_design(evidence, jobs, policy, rounds)
    cores = duet_cores() if rounds.schedule != design_choice.ALTERNATING else None
    # "auto": the first rounds try both designs, then the rounds go on with the better (design_choice.py)
    trial = design_choice.start(evidence, rounds.schedule, rounds.max_rounds, cores is not None, seed)
    rng = random.Random(seed)
    failed: set[Job] = set()
    least = _least_rounds(evidence, rounds)
    for r in range(rounds.max_rounds):
        active = [j for j in jobs if j not in evidence.decided and j not in failed and j not in evidence.skipped]
        if not active or (r >= least and time.monotonic() > deadline):
            break
        # which side goes first (in a duet: takes the first core, so the sides swap cores at random): a fair
        # coin each round, so that under no change a round's two processes are exchangeable by design (what a
        # paired test of the round assumes), not by a fixed ABBA pattern
        order = ("base", "head") if rng.random() < 0.5 else ("head", "base")
        evidence.first.append(order[0])
        todo = active[:]
        rng.shuffle(todo)  # one order for both sides of the round
        round_started = time.monotonic()
        timeout = 120 + 60 * len(todo)
        design = trial[r] if r < len(trial) else evidence.schedule
        if design == design_choice.DUET:
            found = _duet(suite, sides, order, todo, cache_dir, timeout, evidence.run_time, cores)
            evidence.process_seconds += [time.monotonic() - round_started] * 2  # each ran the whole round
        else:
            found = {}
            for name in order:
                started = time.monotonic()
                found[name] = _one_process(suite, sides[name], todo, cache_dir, timeout=timeout,
                                           run_time=evidence.run_time)
                evidence.process_seconds.append(time.monotonic() - started)
        evidence.round_designs.append(design)
        evidence.round_seconds.append(time.monotonic() - round_started)
        for name in order:
            results, died = found[name]
            for job, result in results.items():
                _record(evidence, name, job, result, r)
            if died and not results:
                evidence.notes.append(f"round {r + 1}, {name}: {died}")
        failed |= set(evidence.errors["base"]) | set(evidence.errors["head"])
        evidence.rounds = r + 1
        if r == 0 and not planned:
            # the looks from the round rate: as many as the budget's rounds hold (no look comes before
            # min_rounds, so nothing has been looked at yet; the rate says nothing about any p-value)
            per_round = time.monotonic() - round_started
            left = max(0.0, deadline - time.monotonic())
            fit = 1 + int(left / per_round) if per_round > 0 else None
            plan_design(evidence, jobs, policy, rounds, fit)
            least = _least_rounds(evidence, rounds)
            if rounds.until_reachable and fit is not None and fit < least:
                # the budget ends the rounds within one round of its end, whatever a round costs (a suite whose
                # set-ups run a 15 s forward pass: 3 minutes a round); only --min-rounds, given, outlasts it
                evidence.notes.append(
                    f"wall time: the budget holds {fit} round(s) of {per_round:.0f} s, where every row needs "
                    f"{least} to reach its bar: rows the counts do not decide may end inconclusive; "
                    f"--budget-minutes {math.ceil(rounds.budget_minutes + (least - fit) * per_round / 60)} "
                    f"would hold {least}")
                least = fit
        allocate(evidence, active)
        if r + 1 == len(trial):
            design_choice.go_on(evidence, active, policy, seconds_left=deadline - time.monotonic(),
                                rounds_left=rounds.max_rounds - evidence.rounds)
        interim_decisions(evidence, active, policy)
        if on_round:
            on_round(evidence, len(active))

