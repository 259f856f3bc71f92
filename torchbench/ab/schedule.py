"""What the deterministic channels measure, when, and at what cost: the one home of their schedule.

`measure_pair` (pair.py) calls `deterministic` between building the sides and the wall time's rounds. It runs,
each side beside the other (counts and system calls do not depend on what else runs, and on two cores this
halves the wait), in this order:

1. **Plans** (`count_plans`, natively, seconds). Every countable `time_` row's calls per counted run and
   warm-up calls, made once by the base's code and kept by suite (counts_cache.CountPlans), so that both sides
   and every later commit count a row under one plan. A `time_` method that times a Timer is planned as its
   statement's runs. A Timer-in-`track_` row is planned by the counting process itself the first time (running
   a suite's `track_` methods to plan them lost every row's plan when one crashed or hung); its plan and its
   kind (a statement's noise, count_decision.STATEMENT) are kept from that count on. A plan also times the
   row's setup natively; a row whose setup alone, at valgrind's least slowdown (VALGRIND_SLOWDOWN_FLOOR),
   would outlast the first processes' share is not planned further and never started under valgrind: its
   wall time decides it, with that reason (_left_to_wall_time).
2. **First counting processes** (one valgrind process a side, collect.collect_counts): every countable row, in
   one order for both sides, cheapest first by plan (rows with a slow setup last), so that a deadline leaves
   the fewest rows uncounted; a process stopped keeps the rows it counted.
   They may take FIRST_SHARE of the counting's share (Rounds.count_share of the budget); each row its share
   of the time left (callgrind._case_limit, at least 30 s): a row past it is stopped alone, the rest are
   counted in a fresh process, and what was counted is kept (cached by commit: a base counted once is never
   counted again).
3. **Confirming processes** (a valgrind process a side whose layout is jittered, each row in
   count_decision.DRAWS layout draws): the rows whose first counts or cycles moved beyond the floor
   (channels.to_confirm), queued as soon as a row's first counts are in on both sides (the worker streams
   them) and counted as soon as a core is idle: on a machine with cores to spare, beside the first processes
   (rows that move within GATHER_SECONDS share a process); where the first processes fill the cores, once
   they end, every candidate in one pass, or earlier, sharing the cores, where waiting would leave the pass
   too little of the counting's share (_Confirming); then, up to count_decision.MAX_PASSES, those still near
   their bar. Where both sides' first processes have counted every row, the rows left are counted in them,
   each side's valgrind process going on with them (collect.Continued: no second start-up, 15-20 s a side),
   unless a process of its own would cost less (one that need not simulate, for many rows). A pass simulates
   the caches only where simulated cycles may decide one of its rows (channels.simulating); a
   continued one does where its first process did. Confirming may run past the counting's share by
   Rounds.confirm_share of the budget, out of the rounds' time; a pass that would start after that does not,
   and its rows keep their wall time.
4. **System calls** (one process a side under strace, collect.collect_syscalls): every row, in the phase's
   own share (Rounds.syscall_share), each row its share of what is left; then the rows whose calls differed
   in a call that may decide are traced again in another process state (channels.to_retrace, SYSCALL_TRACES).

The log says what each phase counted, from the cache, failed or left, and each row's seconds in the valgrind
process (the costliest named); evidence.phases keeps each phase's seconds, evidence.count_tally and
syscall_tally the counts, and, for rows read from the cache, what had counted them (a nightly `torchbench run`,
an earlier alert: CountsCache.origins).
"""

from __future__ import annotations

import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import collect
from .channels import SYSCALL_TRACES, deterministic_level, simulating, to_confirm, to_retrace
from .count_decision import DRAWS, MAX_PASSES
from .counts_cache import CountPlans, CountsCache
from .evidence import SIDES, Evidence, Job, Side
from .options import Policy, Rounds

__all__ = ["CONTINUED_ROW_COST", "FIRST_SHARE", "GATHER_SECONDS", "PASS_ROW_COST", "SIMULATION_COST",
           "VALGRIND_SLOWDOWN_FLOOR", "count_both", "count_plans", "deterministic", "keep_statements", "learn",
           "trace_both"]

# the first valgrind processes' share of the counting's time; the rest confirms the rows that moved last (those
# that moved before are confirmed beside the first processes: _Confirming)
FIRST_SHARE = 0.8
# seconds a jittered pass beside the first processes waits, from its first row, for more rows that move (each
# pass costs a valgrind process's start-up, ~15 s: rows that move together are confirmed together)
GATHER_SECONDS = 15.0
# a confirmed row's seconds in a jittered pass (DRAWS layout draws, each its setup, 8 warm-up calls and a counted
# run) over its seconds in a first process (128 warm-up calls and three counted runs): 3.75 measured for
# einops' pack rows (4 rows, 1.2 s each in a first process, 18 s of draws beside a 17 s start-up)
PASS_ROW_COST = 4.0
# a row's seconds in a process that simulates the caches over its seconds in one that counts alone (einops' 42
# rows, two processes at once: 92.7 against 57.6 s with the branch predictors simulated too, docs/results.md;
# without them, since 2026-12-08, 11-13% less: not measured again, so an upper bound)
SIMULATION_COST = 1.6
# a row's DRAWS layout draws counted in its first process, going on after its rows (collect.Continued), over its
# seconds there: 2.2 measured (einops' 42 rows: 47.6 s of rows in the first process, 103.6 s of draws after them,
# simulated; a process started jittered for them, counts alone, 58 s of rows beside a 15 s start-up)
CONTINUED_ROW_COST = 2.2
# valgrind's least slowdown of a setup's code (measured here, callgrind instrumenting: a Python loop 50-80x,
# small torch ops 60x, a 256x256 matmul loop 1300x and more): a row whose native setup times this outlasts the
# first processes' share is never started under valgrind (_left_to_wall_time)
VALGRIND_SLOWDOWN_FLOOR = 50


def deterministic(root: Path, valgrind: Path | None, suite: Path, sides: dict[str, Side], jobs: list[Job],
                  evidence: Evidence, policy: Policy, rounds: Rounds, cache_dir: Path,
                  origin: str = "torchbench alert") -> None:
    """Counts (where valgrind is installed), then system calls, of `jobs` on both sides, each phase in its share
    of the budget, its seconds in evidence.phases. ROOT: the counts' cache (OUT/counts); `origin`: what counts
    (kept with each count: CountsCache.origins)."""
    start = time.monotonic()
    caches = _caches(root, valgrind, suite, sides, origin)  # both phases' (each a suite digest, two subprocesses)
    if valgrind is not None:
        count_both(root, valgrind, suite, sides, jobs, evidence, policy, cache_dir,
                   start + 60 * rounds.budget_minutes * rounds.count_share, origin, caches,
                   start + 60 * rounds.budget_minutes * (rounds.count_share + rounds.confirm_share))
    evidence.phases["instruction counts"] = time.monotonic() - start
    start = time.monotonic()
    trace_both(root, valgrind, suite, sides, jobs, evidence, cache_dir,
               start + 60 * rounds.budget_minutes * rounds.syscall_share, origin,
               {name: cache.view() for name, cache in caches.items()})
    evidence.phases["system calls"] = time.monotonic() - start


def count_both(root: Path, valgrind: Path, suite: Path, sides: dict[str, Side], jobs: list[Job],
               evidence: Evidence, policy: Policy, cache_dir: Path, deadline: float,
               origin: str = "torchbench alert", caches: dict[str, CountsCache] | None = None,
               confirm_until: float | None = None) -> None:
    """Both sides' instruction counts at once, one valgrind process each: counts do not depend on what else
    runs, and on two cores this halves the wait. As soon as a row's first counts are in on both sides and
    moved beyond the floor (channels.to_confirm), it is queued to be counted in a jittered process a side, in
    count_decision.DRAWS layout draws, as soon as a core is idle (_Confirming: beside the first processes
    where cores are to spare, after them, or as late as still fits, where they fill the cores). Then, up to
    count_decision.MAX_PASSES, a row still near its bar gets another jittered process, so that a count
    decision holds against the counts' noise between layouts (count_decision.py). Each valgrind process may
    take what is left until `deadline` (the counting's share of the budget), the first processes FIRST_SHARE
    of it, so that a row that moves last can still be confirmed; a pass that would start after it does not,
    and its rows keep their wall time. A row whose first counts came only at the first process's end (a C++
    statement) is confirmed after it. Each side has its own cache (its interpreter is part of the key:
    `caches`, made here where not given) and its own list of problems. The log and evidence.count_tally say,
    a side, what had counted the rows that came from the cache (`origin` is kept with these counts): a base
    counted by the history's nightly `torchbench run` costs the alert nothing. `confirm_until` (at or after
    `deadline`; Rounds.confirm_share): the jittered processes of the rows whose first counts moved may run
    until then, out of the rounds' time, and a note says by how much they did."""
    caches = caches or _caches(root, valgrind, suite, sides, origin)
    counting_share, deadline = deadline, max(deadline, confirm_until or deadline)
    # the native setup seconds the first processes could run under valgrind, at valgrind's least slowdown (a
    # setup quicker than collect.SLOW_SETUP is never the reason: such a row is tried, and stopped by its share)
    setup_limit = max(collect.SLOW_SETUP,
                      FIRST_SHARE * max(0.0, counting_share - time.monotonic()) / VALGRIND_SLOWDOWN_FLOOR)
    plans, setups = count_plans(root, suite, [sides[name] for name in SIDES], jobs, evidence, cache_dir,
                                setup_limit)
    print(f"== simulated cycles weigh a last-level miss at {caches['base'].miss_cycles} cycles (what one costs on "
          f"this machine: torchbench_core.memory_price)", flush=True)
    jobs = _left_to_wall_time(jobs, setups, setup_limit, evidence)

    def both_sides(todo: list[Job], jitter: int, until: float, confirming: _Confirming | None = None,
                   at_once: int = len(SIDES)) -> dict[str, dict[str, int]]:
        """Each side's valgrind process for `todo`, `at_once` of them at a time, each until `until`; a
        jittered pass (jitter > 0) says in the log what it counted and in how long."""
        simulate = not jitter or simulating(evidence, todo, policy.count_floor)
        began = time.monotonic()
        kept: set[Job] = set()
        if jitter:  # draws both sides' first processes made going on, in an earlier alert of the pair: read
            found = {name: collect.continued_in_cache(sides[name], todo, evidence, caches[name], jitter, DRAWS, plans)
                     for name in SIDES}
            kept = set(todo).intersection(*found.values())
            for name in SIDES:
                collect.place_continued(sides[name], {job: found[name][job] for job in todo if job in kept},
                                        evidence, DRAWS)
        rest = [job for job in todo if job not in kept]

        def side(name: str) -> dict[str, int]:
            try:
                return collect.collect_counts(
                    suite, sides[name], rest, evidence, caches[name].view() if jitter else caches[name],
                    jitter=jitter, plans=plans, cache_dir=cache_dir, timeout=max(1.0, until - time.monotonic()),
                    draws=DRAWS if jitter else 1,
                    on_row=(lambda job: confirming.first_counts_in(job, name)) if confirming else None,
                    setups=setups, simulate=simulate,
                    then=(lambda: confirming.next_pass(name)) if confirming else None)
            finally:
                if confirming:
                    confirming.first_done(name)

        with ThreadPoolExecutor(max_workers=at_once) as pool:
            found = dict(zip(SIDES, pool.map(side, SIDES)))
        for name in SIDES:
            found[name]["cached"] += len(kept)
        if jitter:
            _said(found, jitter, todo, time.monotonic() - began, simulate)
        return found

    began = time.monotonic()
    first_until = began + FIRST_SHARE * (counting_share - began)
    confirming = _Confirming(evidence, policy, lambda todo, at_once: both_sides(todo, 1, deadline, at_once=at_once),
                             deadline, first_until, len(jobs),
                             later=lambda k: to_confirm(evidence, jobs, policy.count_floor, k,
                                                        deterministic_level(evidence, policy)))
    try:
        tally = both_sides(jobs, 0, first_until, confirming)
    finally:
        first = (confirming.first_over or time.monotonic()) - began
        confirmed = confirming.finish()  # the rows that moved last are confirmed now
    for name in SIDES:
        t = tally[name]
        print(f"== instruction counts, {name}: {t['counted']} counted (one valgrind process), {t['cached']} from "
              f"the cache, {t['uncountable']} not countable, {t['failed']} failed; the first processes took "
              f"{first:.0f} s", flush=True)
        if t.get("cached_by"):  # where the cached counts came from
            print("   from the cache: " + ", ".join(f"{n} kept by {origin}" for origin, n in t["cached_by"].items()),
                  flush=True)
        elif "cached_by" in t:
            del t["cached_by"]
        costly = sorted(t.pop("seconds", {}).items(), key=lambda kv: -kv[1])
        if costly:  # what each row cost, the costliest first
            print(f"   per row, set-up included: {sum(s for _, s in costly):.0f} s in all; costliest "
                  + ", ".join(f"{row} {s:.1f} s" for row, s in costly[:5]), flush=True)
    learn(root, suite, tally, evidence)
    for name in SIDES:
        tally[name]["confirmed"] = confirmed[name] + tally[name].pop("continued", 0)
    for jitter in range(1, MAX_PASSES + 1):
        confirm = to_confirm(evidence, jobs, policy.count_floor, jitter, deterministic_level(evidence, policy))
        if not confirm:
            continue  # (the first pass's rows were confirmed beside the first processes)
        if time.monotonic() >= deadline:
            evidence.notes.append(f"instruction counts: the counting's share of the budget ran out before jittered "
                                  f"process {jitter} of {len(confirm)} row(s); their wall time decides them")
            break
        again = both_sides(confirm, jitter, deadline)
        for name in SIDES:
            tally[name]["confirmed"] += again[name]["counted"] + again[name]["cached"]
    evidence.count_tally = tally
    if time.monotonic() > counting_share + 1:
        evidence.notes.append(f"instruction counts: confirming the rows whose first counts moved ran "
                              f"{time.monotonic() - counting_share:.0f} s past the counting's share of the budget, "
                              f"out of the rounds' (Rounds.confirm_share)")


def _left_to_wall_time(jobs: list[Job], setups: dict[Job, float], limit: float, evidence: Evidence) -> list[Job]:
    """`jobs` less those whose setup alone, natively, takes longer than `limit` seconds (at valgrind's least
    slowdown, past the first counting processes' share): never started under valgrind, each with that reason
    on both sides (their wall time decides them), and one note naming them."""
    costly = [job for job in jobs if setups.get(job, 0.0) > limit]
    for job in costly:
        for name in SIDES:
            evidence.uncounted[name][job] = (
                f"not counted: its set-up takes {setups[job]:.1f} s natively, "
                f"{VALGRIND_SLOWDOWN_FLOOR * setups[job]:.0f} s or more under valgrind, past the counting's share of "
                f"the budget (its wall time decides it)")
    if costly:
        names = [evidence.jobs[job].name for job in costly]
        evidence.notes.append(
            f"instruction counts: {len(costly)} row(s) left to wall time before counting, their set-up alone "
            f"({', '.join(f'{setups[job]:.1f} s' for job in costly[:3])} natively) past the counting's share of "
            f"the budget at valgrind's least slowdown ({VALGRIND_SLOWDOWN_FLOOR}x): {', '.join(names[:3])}"
            + (f" and {len(names) - 3} more" if len(names) > 3 else ""))
    return [job for job in jobs if job not in costly]


def _said(again: dict[str, dict], jitter: int, rows: list[Job], seconds: float, simulated: bool) -> None:
    """The log's line for a jittered pass a side, which took `seconds` (`simulated`: the caches too)."""
    print(f"== instruction counts, jittered valgrind process {jitter} a side ({DRAWS} layout draws"
          f"{', caches simulated' if simulated else ', counts alone'}) for "
          f"the {len(rows)} row(s) whose counts moved beyond the floor: "
          f"{again['base']['counted'] + again['head']['counted']} counted, "
          f"{again['base']['cached'] + again['head']['cached']} from the cache, in {seconds:.0f} s", flush=True)
    for name in SIDES:
        for key in ("seconds", "statements", "cached_by", "continued"):
            again[name].pop(key, None)


def _cores() -> int:
    """The cores this process may run on (the valgrind processes' share of the machine)."""
    return len(os.sched_getaffinity(0))


class _Confirming:
    """The first jittered pass, run while the first processes count: `first_counts_in(job, side)` (from the
    threads that follow the first processes) queues a row whose first counts moved on both sides; a thread of
    its own counts the queue in a jittered process a side (`confirm(rows)`) as soon as a core is idle (fewer
    first processes still running, `first_done()`, than the machine has cores), GATHER_SECONDS after its first
    row came; on a machine whose cores the first processes fill (two sides on two cores), not before they end,
    so that the rows that move meanwhile gather into one pass (each pass costs a valgrind start-up a side) and
    no core runs two valgrind processes (on two cores, confirming beside the first processes cost these a
    third more: einops' slowed pair, 157-172 s of counting), unless the pass is not expected to fit after
    them (first_end: their rows to come at their mean seconds a row; pass_seconds: a start-up and its rows'
    seconds in the first processes, PASS_ROW_COST each): it then starts at the latest moment it still fits
    before `deadline`, sharing the cores. A pass runs as many of its processes at once as cores are idle
    (_at_once: beside the head's lone first process, where the base came from the cache, base's then head's).
    Once both sides' first processes have counted every row, each asks `next_pass(side)`: the rows left (those
    `later(k)` lists for the k-th jittered process, none of them in a pass under way) are counted in them,
    going on (collect.Continued), where that costs less than a pass of their own (_go_on).
    `finish()` (the first processes done) has it count what is left and returns each side's rows confirmed. A
    pass that would start after `deadline` does not (count_both's later look finds its rows unconfirmed and
    says so)."""

    def __init__(self, evidence: Evidence, policy: Policy, confirm, deadline: float, first_until: float,
                 rows: int, cores: int | None = None, later=None) -> None:
        self.evidence, self.policy, self.confirm, self.deadline = evidence, policy, confirm, deadline
        self.first_until, self.rows = first_until, rows  # the first processes' deadline and rows a side
        self.cores = cores or _cores()
        self.arrived = dict.fromkeys(SIDES, 0)  # each side's rows in
        self.queued: list[Job] = []
        self.seen: set[Job] = set()
        self.confirmed = dict.fromkeys(SIDES, 0)
        self.running = len(SIDES)  # the first processes still counting
        self.began = time.monotonic()
        self.last = dict.fromkeys(SIDES, self.began)  # each side's latest row in
        self.cost: dict[Job, float] = {}  # a row's seconds in the first processes (the slower side's)
        self.startup = 0.0  # a valgrind process's start-up, estimated (first_counts_in)
        self.later = later or (lambda k: [])  # the rows the k-th jittered process a side counts (to_confirm)
        self.flight: list[Job] = []  # the rows of the pass under way (_run)
        self.asked = dict.fromkeys(SIDES, 0)  # each first process's asks to go on (next_pass)
        self.ended: set[str] = set()  # the sides whose first process has ended (first_done)
        self.going_on: dict[int, collect.Continued | None] = {}  # the k-th ask's answer, both sides'
        self.first_over: float | None = None  # when both first processes had counted every row
        self.going_on_since = 0.0  # when the first processes went on with the rows left (_go_on)
        self.said: set[int] = set()  # the rounds of going on the log has a line for
        self.done = False
        self.error: BaseException | None = None
        self.lock = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="confirming counts", daemon=True)
        self.thread.start()

    def first_counts_in(self, job: Job, side: str) -> None:
        with self.lock:
            now = time.monotonic()
            # the longest wait for a row so far stands for a start-up (its first row's included: an estimate on
            # the safe side, a pass then starting earlier rather than too late)
            self.startup = max(self.startup, now - self.last[side])
            self.cost[job] = max(self.cost.get(job, 0.0), now - self.last[side])
            self.last[side] = now
            self.arrived[side] += 1
            if job in self.seen or not all(self.evidence.counts[name].get(job) for name in SIDES):
                return
            self.seen.add(job)
            # the first pass's test reads the first counts alone (the level is the later passes')
            if to_confirm(self.evidence, [job], self.policy.count_floor, 1, 0.0):
                self.queued.append(job)
                self.lock.notify()

    def first_done(self, side: str) -> None:
        with self.lock:
            self.running -= 1
            self.ended.add(side)
            if len(self.ended) == len(SIDES):  # a round of going on that no ask followed (a process that died)
                for k in self.going_on:
                    self._said_going_on(k)
            self.lock.notify_all()

    def next_pass(self, side: str) -> collect.Continued | None:
        """`side`'s first process has counted every row (or the rows it went on with): what it counts next in
        the same valgrind process. Both sides get the same answer, made once both have asked; None where the
        other side's process has ended (or never ran: its counts came from the cache), past the deadline, or
        where nothing is left or a pass of its own costs less (_go_on)."""
        with self.lock:
            self.asked[side] += 1
            k = self.asked[side]
            self.lock.notify_all()
            while k not in self.going_on:
                others = [name for name in SIDES if name != side]
                if all(self.asked[name] >= k for name in others):
                    if k == 1:
                        self.first_over = time.monotonic()
                    else:
                        self._said_going_on(k - 1)
                    self.going_on[k] = self._go_on(k)
                    self.lock.notify_all()
                elif any(name in self.ended for name in others) or time.monotonic() >= self.deadline:
                    self.going_on[k] = None
                    self.lock.notify_all()
                else:
                    self.lock.wait(1.0)
            return self.going_on[k]

    def _go_on(self, k: int) -> collect.Continued | None:
        """The rows both first processes count again as their k-th jittered process (lock held): those
        `later(k)` lists that no pass under way has, where counting them there costs no more than a pass of
        their own (_costs)."""
        if time.monotonic() >= self.deadline or k > MAX_PASSES:
            return None
        rows = [job for job in self.later(k) if job not in self.flight]
        if not rows:
            return None
        here, own = self._costs(rows)
        if here > own:
            return None
        self.queued = [job for job in self.queued if job not in rows]
        self.going_on_since = time.monotonic()
        return collect.Continued(rows, k, DRAWS, time.time() + self.deadline - time.monotonic())

    def _costs(self, rows: list[Job]) -> tuple[float, float]:
        """`rows`' draws' estimated seconds going on in the first processes (no start-up, simulated:
        CONTINUED_ROW_COST of their first seconds each), and in a process of their own (a start-up, and counts
        alone where simulated cycles decide none of them: SIMULATION_COST less)."""
        here = CONTINUED_ROW_COST * sum(self.cost.get(job, self.startup) for job in rows)
        return here, self.startup + (here if simulating(self.evidence, rows, self.policy.count_floor)
                                     else here / SIMULATION_COST)

    def _said_going_on(self, k: int) -> None:
        """The log's line for the k-th jittered process continued in the first processes, now done."""
        rows = self.going_on.get(k)
        if rows is None or k in self.said:
            return
        self.said.add(k)
        counted = sum(1 for job in rows.jobs for name in SIDES
                      if len(self.evidence.counts_again[name].get(job, [])) >= k * DRAWS)
        print(f"== instruction counts, jittered layouts {k} a side, counted in the first valgrind processes going "
              f"on (no second start-up; {DRAWS} layout draws, caches simulated) for the {len(rows.jobs)} row(s) "
              f"whose counts moved beyond the floor: {counted} counted, in "
              f"{time.monotonic() - self.going_on_since:.0f} s", flush=True)

    def finish(self) -> dict[str, int]:
        with self.lock:
            self.done = True
            self.lock.notify()
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.confirmed

    def pass_seconds(self, rows: list[Job]) -> float:
        """A jittered pass's estimated seconds for `rows`, alone on its cores: a valgrind start-up and each
        row's DRAWS draws at PASS_ROW_COST of its first-process seconds."""
        return self.startup + PASS_ROW_COST * sum(self.cost.get(job, self.startup) for job in rows)

    def first_end(self) -> float:
        """When the first processes are expected to end: each side's rows still to come at its mean seconds a
        row so far (its start-up included), the later side's; at the latest their deadline."""
        ends = []
        for side in SIDES:
            if not self.arrived[side]:
                return self.first_until
            mean = (self.last[side] - self.began) / self.arrived[side]
            ends.append(self.last[side] + max(0, self.rows - self.arrived[side]) * mean)
        return min(max(ends), self.first_until)

    def _start_at(self, gather: float) -> float:
        """When the queued rows' pass starts: at `gather` where a core is idle; otherwise when the first
        processes end (math.inf: waited for), where their confirmation is expected to fit after them (going on
        in them where both run, _costs), or else at the latest moment a pass of its own still fits before the
        deadline, sharing the cores with them."""
        if self.running < self.cores:
            return gather
        cost = self.pass_seconds(self.queued)
        after = min(self._costs(self.queued)) if not self.ended else cost
        if self.first_end() + after <= self.deadline:
            return math.inf
        shared = (self.running + len(SIDES)) / self.cores  # the pass's slowdown beside those still running
        return self.deadline - shared * cost

    def _at_once(self, rows: list[Job]) -> int:
        """How many of the pass's processes (one a side) run at once: as many as there are idle cores (with
        one idle core beside a first process, base's then head's, so that no core runs two valgrind
        processes), all of them where no core is idle (a pass started at its latest moment shares them), where
        the first process left is expected to end within half the pass, or where one after another would not
        end before the deadline."""
        with self.lock:
            idle = self.cores - self.running
            ending = self.first_end() - time.monotonic() < self.pass_seconds(rows) / 2
            if idle <= 0 or idle >= len(SIDES) or ending:  # (a first process ending within half the pass: its
                return len(SIDES)  # core is the pass's soon)
        one_by_one = math.ceil(len(SIDES) / idle) * self.pass_seconds(rows)
        return idle if time.monotonic() + one_by_one <= self.deadline else len(SIDES)

    def _run(self) -> None:
        try:
            while True:
                with self.lock:
                    while not self.queued and not self.done:
                        self.lock.wait()
                    if not self.queued:
                        return
                    gather = time.monotonic() + GATHER_SECONDS  # rows that move meanwhile join this pass
                    # (looked at again as rows queue and first processes end, at least every 5 s; rows the first
                    # processes went on with leave the queue: next_pass)
                    while not self.done and self.queued and \
                            time.monotonic() < (start := max(gather, self._start_at(gather))):
                        self.lock.wait(min(start - time.monotonic(), 5.0))
                    if not self.queued:
                        continue
                    at_once = self._at_once(self.queued)
                    rows, self.queued = self.queued, []
                    if time.monotonic() >= self.deadline:
                        continue  # left for count_both's passes after the first processes, which say so
                    self.flight = rows
                try:
                    again = self.confirm(rows, at_once)
                finally:
                    with self.lock:
                        self.flight = []
                for name in SIDES:
                    self.confirmed[name] += again[name]["counted"] + again[name]["cached"]
        except BaseException as e:  # raised again in the caller's thread, by finish()
            self.error = e


def learn(root: Path, suite: Path, tally: dict[str, dict], evidence: Evidence) -> None:
    """Keep what the first counting processes learned of rows no plan told: the Timer-in-`track_` rows they
    counted as statements, with the base's plan of each (the head's where the base made none), so that every
    later count of the suite plans them before counting, both sides alike, and knows their kind."""
    learned: dict[Job, tuple[int, int]] = {}
    for name in reversed(SIDES):  # the base's last: its plan wins
        learned.update(tally[name].pop("statements", {}))
    keep_statements(root, suite, learned, evidence)


def keep_statements(root: Path, suite: Path, learned: dict[Job, tuple[int, int]], evidence: Evidence) -> None:
    """Keep the plans the counting processes made of rows that time a Timer (collect_counts' "statements"), as
    statements, with the suite's plans (a row keeps its first plan): the alert's and the history's counts."""
    if learned:
        store = CountPlans(root, suite)
        store.store({CountsCache.case(job, evidence.jobs[job].params): plan for job, plan in learned.items()},
                    {CountsCache.case(job, evidence.jobs[job].params) for job in learned})
        evidence.notes.extend(store.problems)


def _caches(root: Path, valgrind: Path | None, suite: Path, sides: dict[str, Side],
            origin: str = "torchbench alert") -> dict[str, CountsCache]:
    """Each side's cache of counts and system calls (its interpreter is part of the key), with its own list of
    problems."""
    caches: dict[str, CountsCache] = {}
    for name, side in sides.items():
        same = next((c for other, c in caches.items() if sides[other].python == side.python), None)
        caches[name] = same.view() if same else CountsCache(root, side.python, suite, valgrind, origin)
    return caches


def trace_both(root: Path, valgrind: Path | None, suite: Path, sides: dict[str, Side], jobs: list[Job],
               evidence: Evidence, cache_dir: Path, deadline: float, origin: str = "torchbench alert",
               caches: dict[str, CountsCache] | None = None) -> None:
    """Both sides' system calls per call at once, one traced process each (collect.collect_syscalls): counts
    of calls, not times, so the process beside does not move them. Then the rows whose first traces differed
    in a call that may decide are traced again, SYSCALL_TRACES - 1 repeat traces a side in another process
    state each (channels.to_retrace), so that a decision rests on calls that repeat. Kept beside the counts,
    by commit. Every traced process may take what is left until `deadline` (the phase's share of the budget:
    collect.collect_syscalls gives each row its share of it); a repeat that would start after it does not.
    `caches`: each side's (made here where not given)."""
    caches = caches or _caches(root, valgrind, suite, sides, origin)

    def both_sides(todo: list[Job], repeat: int) -> dict[str, dict[str, int]]:
        left = max(1.0, deadline - time.monotonic())
        with ThreadPoolExecutor(max_workers=len(SIDES)) as pool:
            return dict(zip(SIDES, pool.map(lambda name: collect.collect_syscalls(
                suite, sides[name], todo, evidence, cache_dir, caches[name], repeat=repeat, timeout=left), SIDES)))

    tally = both_sides(jobs, 0)
    for name in SIDES:
        t = tally[name]
        print(f"== system calls, {name}: {t['traced']} traced (one process under strace), {t['cached']} from the "
              f"cache, {t['exact']} exact, {t['untraceable']} not traceable, {t['failed']} failed, {t['late']} past "
              f"the phase's share", flush=True)
    for name in SIDES:
        tally[name]["repeated"] = 0
    for repeat in range(1, SYSCALL_TRACES):
        again = to_retrace(evidence, jobs, repeat)
        if not again:
            break
        if time.monotonic() >= deadline:
            evidence.notes.append(f"system calls: the phase's share of the budget ran out before repeat trace "
                                  f"{repeat} of {len(again)} row(s); their calls decide nothing")
            break
        found = both_sides(again, repeat)
        print(f"== system calls, repeat trace {repeat} a side (another layout, the rows in reverse order) for the "
              f"{len(again)} row(s) whose calls differed: {found['base']['traced'] + found['head']['traced']} "
              f"traced, {found['base']['cached'] + found['head']['cached']} from the cache", flush=True)
        for name in SIDES:
            tally[name]["repeated"] += found[name]["traced"] + found[name]["cached"]
    for name in SIDES:
        evidence.notes.extend(caches[name].problems)
    evidence.syscall_tally = tally


def count_plans(root: Path, suite: Path, sides: list[Side], jobs: list[Job], evidence: Evidence,
                cache_dir: Path | None = None, setup_limit: float | None = None
                ) -> tuple[dict[Job, tuple[int, int]], dict[Job, float]]:
    """The plan of every countable `time_` case, and of every `track_` or `time_` case that times a Timer (its
    statement's runs), among `jobs`, and each one's setup seconds (natively): kept ones (CountPlans), the rest
    made now by the base's code (natively, a few seconds) and kept, so that both sides, and every later commit,
    count a case under one plan. A case whose setup takes longer than `setup_limit` is timed, not planned
    (collect.plan_counts), and one kept so is not planned again while that holds. A case counted as its
    Timer's statement is marked so in evidence.jobs (by_call False): its counts' noise is a statement's."""
    store = CountPlans(root, suite)
    kept, kept_statements, kept_setups = store.load(), store.statements(), store.setups()
    wanted = {job: CountsCache.case(job, evidence.jobs[job].params) for job in jobs
              if evidence.jobs[job].by_call and not evidence.jobs[job].uncountable}
    plans = {job: kept[case] for job, case in wanted.items() if case in kept}
    statements = {job for job, case in wanted.items() if case in kept_statements}
    setups = {job: kept_setups[case] for job, case in wanted.items() if case in kept_setups}
    todo = [job for job in wanted if job not in plans and job not in statements
            and not (setup_limit is not None and setups.get(job, 0.0) > setup_limit)]
    if todo:
        made = collect.plan_counts(suite, sides, todo, cache_dir, setup_limit)
        evidence.notes.extend(made.problems)
        store.store({wanted[job]: plan for job, plan in made.plans.items()},
                    {wanted[job] for job in made.statements},
                    {wanted[job]: seconds for job, seconds in made.setups.items()})
        plans.update(made.plans)
        statements |= made.statements
        setups.update(made.setups)
    for job in statements:
        evidence.jobs[job].by_call = False
    evidence.notes.extend(store.problems)
    return plans, setups
